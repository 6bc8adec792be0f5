/* SPDX-License-Identifier: BSD-3-Clause */
#include "gpu/mft.h"

#include <math.h>
#include <string.h>

#define TWO_PI 6.283185307179586476925286766559
/* Threads of a block of the table kernel: 256 image pixels k of one pupil
 * column j (coalesced stores along k). */
#define TABLE_THREADS 256

size_t gpu_mft_table_bytes(int npix, int grid)
{
    return (size_t)(npix > 0 ? npix : 0) * (size_t)(grid > 0 ? grid : 0) * sizeof(cuComplex);
}

/* W[k][j] for k = blockIdx.x * 256 + threadIdx.x, j = blockIdx.y: the
 * arithmetic of cpu_mft_table_build (cpu/mft.c) in the same order, so the
 * float values agree but for the last bit of the double sine and cosine. */
__global__ static void table_kernel(double a, int npix, int centre2, int grid, cuComplex *w)
{
    int k = blockIdx.x * TABLE_THREADS + threadIdx.x, j = blockIdx.y;
    if (k >= npix) return;
    long long jj = (long long)j - grid / 2;
    double turns = (double)(jj * (2LL * k - centre2)) * (0.5 * a);
    turns -= floor(turns);
    double s, c;
    sincos(TWO_PI * turns, &s, &c);
    w[(size_t)j * npix + k] = make_float2((float)c, (float)-s);
}

int gpu_mft_table_build(gpu_mft_table *t, double a, int npix, int grid, cudaStream_t stream,
                        gpu_check *chk)
{
    return gpu_mft_table_build_centred(t, a, npix, 2 * (npix / 2), grid, stream, chk);
}

int gpu_mft_table_build_centred(gpu_mft_table *t, double a, int npix, int centre2, int grid,
                                cudaStream_t stream, gpu_check *chk)
{
    memset(t, 0, sizeof *t);
    if (!(a > 0.0) || !isfinite(a) || npix < 1 || grid < 1 || grid > 65535) {
        if (chk->err && chk->errlen)
            snprintf(chk->err, chk->errlen,
                     "gpu: MFT matrix: bad arguments (a = %g, M = %d, pupil grid %d)", a, npix,
                     grid);
        return -1;
    }
    if (GPU_CUDA(chk, cudaMalloc(&t->w, gpu_mft_table_bytes(npix, grid)))) {
        t->w = NULL;
        return -1;
    }
    dim3 blocks((unsigned)((npix + TABLE_THREADS - 1) / TABLE_THREADS), (unsigned)grid);
    table_kernel<<<blocks, TABLE_THREADS, 0, stream>>>(a, npix, centre2, grid, t->w);
    if (GPU_LAUNCH(chk, "table_kernel")) {
        cudaStreamSynchronize(stream); /* nothing queued may write what is freed */
        gpu_mft_table_free(t);
        return -1;
    }
    t->a = a;
    t->npix = npix;
    t->grid = grid;
    return 0;
}

void gpu_mft_table_free(gpu_mft_table *t)
{
    cudaFree(t->w);
    memset(t, 0, sizeof *t);
}

int gpu_mft_apply(cublasHandle_t h, int npix, int grid, const cuComplex *const *w,
                  const cuComplex *const *p, cuComplex *const *t, cuComplex *const *e, int nfields,
                  gpu_check *chk)
{
    if (nfields < 1) return 0;
    const cuComplex one = make_float2(1.0f, 0.0f), zero = make_float2(0.0f, 0.0f);
    /* T = W Pc: (M x G) (G x G). beta = 0: T is not read. */
    if (GPU_CUBLAS(chk, cublasCgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, npix, grid, grid, &one, w,
                                           npix, p, grid, &zero, t, npix, nfields)))
        return -1;
    /* Ec = T W^T: (M x G) (G x M); the transpose, not the conjugate. */
    return GPU_CUBLAS(chk, cublasCgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, npix, npix, grid, &one,
                                              (const cuComplex *const *)t, npix, w, npix, &zero, e,
                                              npix, nfields));
}

int gpu_mft_load_kernels(gpu_check *chk)
{
    cudaFuncAttributes attr;
    return GPU_CUDA(chk, cudaFuncGetAttributes(&attr, table_kernel));
}
