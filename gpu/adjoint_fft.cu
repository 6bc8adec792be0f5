/* SPDX-License-Identifier: BSD-3-Clause */
/* The kernels of one batch of the GPU's gradients (gpu/adjoint.h) and its
 * batched Z2Z cuFFT plans: the field, the intensity, the cotangent's
 * product and dL/dW, each the CPU's arithmetic (cpu/adjoint_pupil.c,
 * cpu/adjoint_transform.c) in double. */
#include <math.h>

#include "gpu/adjoint.h"

void gpu_vjp_plans_init(gpu_vjp_plans *pc, int n, cudaStream_t stream)
{
    memset(pc, 0, sizeof *pc);
    pc->n = n;
    pc->stream = stream;
}

int gpu_vjp_plan(gpu_vjp_plans *pc, gpu_check *chk, int batch, cufftHandle *out)
{
    int slot = 0;
    for (int i = 0; i < GPU_VJP_PLANS; ++i) {
        if (pc->batch[i] == batch) {
            pc->used[i] = ++pc->tick;
            *out = pc->plan[i];
            return 0;
        }
        if (pc->used[i] < pc->used[slot]) slot = i;
    }
    if (pc->batch[slot]) cufftDestroy(pc->plan[slot]);
    pc->batch[slot] = 0;
    pc->used[slot] = 0;
    int dims[2] = {pc->n, pc->n}, nn = pc->n * pc->n;
    cufftHandle p;
    if (GPU_CUFFT(chk, cufftPlanMany(&p, 2, dims, NULL, 1, nn, NULL, 1, nn, CUFFT_Z2Z, batch)))
        return -1;
    if (GPU_CUFFT(chk, cufftSetStream(p, pc->stream))) {
        cufftDestroy(p);
        return -1;
    }
    pc->batch[slot] = batch;
    pc->plan[slot] = p;
    pc->made++;
    pc->used[slot] = ++pc->tick;
    *out = p;
    return 0;
}

void gpu_vjp_plans_free(gpu_vjp_plans *pc)
{
    for (int i = 0; i < GPU_VJP_PLANS; ++i)
        if (pc->batch[i]) cufftDestroy(pc->plan[i]);
    memset(pc, 0, sizeof *pc);
}

/* The image pixel of FFT output index q (fftshift: cpu/adjoint_transform.c,
 * shift_table). */
__device__ static inline size_t shift_of(size_t q, int n)
{
    size_t u = q / (size_t)n, v = q % (size_t)n, h = (size_t)(n / 2);
    return ((u + h) % (size_t)n) * (size_t)n + (v + h) % (size_t)n;
}

/* A exp(i 2 pi (w - floor w)) (cpu/adjoint_pupil.c, adj_pupil_field). */
__device__ static inline cuDoubleComplex field_of(double a, double w)
{
    double s, c;
    sincos(2.0 * M_PI * (w - floor(w)), &s, &c);
    return make_cuDoubleComplex(a * c, a * s);
}

/* The field of row r at pupil sample k: W read from w, or (a few rows,
 * coef given) formed as W = C B, the terms in order. The loop is
 * unrolled so that a thread's basis loads are in flight together: one
 * at a time, the kernel was their latency (ncu: 11 us for 3 rows). */
__global__ static void k_field(gpu_vjp_batch b)
{
    size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y;
    if (k >= b.nopen) return;
    size_t nn = (size_t)b.n * b.n;
    double w;
    if (b.coef) {
        const double *c = b.coef + (size_t)r * b.k;
        w = 0.0;
#pragma unroll 8
        for (int j = 0; j < b.k; ++j)
            w += c[j] * b.basis[(size_t)j * b.nopen + k];
        b.w[r * b.nopen + k] = w;
    } else {
        w = b.w[r * b.nopen + k];
    }
    b.grid[r * nn + b.dest[k]] = field_of(b.amp[k], w);
}

/* One thread per pixel q and run of rows of one image (the rows' images
 * are non-decreasing: gpu_vjp_ops.run checks), the run's first row's
 * thread adding the run's rows in order: no two threads write one pixel,
 * and the sums' order is fixed. */
__global__ static void k_intensity(gpu_vjp_batch b)
{
    size_t nn = (size_t)b.n * b.n, q = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y, img = b.image[r];
    if (q >= nn || (r > 0 && b.image[r - 1] == img)) return;
    double *out = b.images + (size_t)img * nn + shift_of(q, b.n);
    double v = *out;
    for (; r < b.rows && b.image[r] == img; ++r) {
        cuDoubleComplex e = b.grid[r * nn + q];
        v += b.scale[r] * (e.x * e.x + e.y * e.y);
    }
    *out = v;
}

__global__ static void k_cotangent(gpu_vjp_batch b)
{
    size_t nn = (size_t)b.n * b.n, q = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y;
    if (q >= nn) return;
    double v = b.scale[r] * b.cotangent[(size_t)b.image[r] * nn + shift_of(q, b.n)];
    cuDoubleComplex e = b.grid[r * nn + q];
    b.grid[r * nn + q] = make_cuDoubleComplex(v * e.x, v * e.y);
}

__global__ static void k_dw(gpu_vjp_batch b)
{
    size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y;
    if (k >= b.nopen) return;
    size_t nn = (size_t)b.n * b.n;
    double *w = b.w + r * b.nopen + k;
    cuDoubleComplex u = field_of(b.amp[k], *w), g = b.grid[r * nn + b.dest[k]];
    *w = 4.0 * M_PI * (g.y * u.x - g.x * u.y); /* Im(B conj(U)) */
}

#define THREADS 256

#define GCOEF_THREADS 1024 /* 32 warps: k_gcoef's second tree is one warp's */

/* Block (j, r): gcoef[r][j] = sum_s basis[j][s] w[r][s]: each thread's
 * strided sum (unrolled: its loads in flight together), then fixed trees,
 * within each warp by shuffles and over the warps' sums: the same bits
 * each call. A thousand threads a block: the grid is only K x R blocks. */
__global__ static void __launch_bounds__(GCOEF_THREADS) k_gcoef(gpu_vjp_batch b)
{
    __shared__ double sh[GCOEF_THREADS / 32];
    int j = blockIdx.x, r = blockIdx.y, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const double *bj = b.basis + (size_t)j * b.nopen, *wr = b.w + (size_t)r * b.nopen;
    double a = 0.0;
#pragma unroll 4
    for (size_t s = threadIdx.x; s < b.nopen; s += GCOEF_THREADS)
        a += bj[s] * wr[s];
    for (int h = 16; h > 0; h >>= 1)
        a += __shfl_down_sync(0xffffffffu, a, h);
    if (lane == 0) sh[warp] = a;
    __syncthreads();
    if (warp != 0) return;
    a = sh[lane]; /* GCOEF_THREADS / 32 == 32 warps' sums */
    for (int h = 16; h > 0; h >>= 1)
        a += __shfl_down_sync(0xffffffffu, a, h);
    if (lane == 0) b.gcoef[(size_t)r * b.k + j] = a;
}

static unsigned blocks(size_t n)
{
    return (unsigned)((n + THREADS - 1) / THREADS);
}

int gpu_vjp_field(gpu_check *chk, cudaStream_t s, const gpu_vjp_batch *b)
{
    size_t nn = (size_t)b->n * b->n;
    if (GPU_CUDA(chk, cudaMemsetAsync(b->grid, 0, (size_t)b->rows * nn * sizeof *b->grid, s)))
        return -1;
    if (b->nopen == 0) return 0;
    k_field<<<dim3(blocks(b->nopen), (unsigned)b->rows), THREADS, 0, s>>>(*b);
    return GPU_LAUNCH(chk, "k_field");
}

int gpu_vjp_intensity(gpu_check *chk, cudaStream_t s, const gpu_vjp_batch *b)
{
    k_intensity<<<dim3(blocks((size_t)b->n * b->n), (unsigned)b->rows), THREADS, 0, s>>>(*b);
    return GPU_LAUNCH(chk, "k_intensity");
}

int gpu_vjp_cotangent(gpu_check *chk, cudaStream_t s, const gpu_vjp_batch *b)
{
    k_cotangent<<<dim3(blocks((size_t)b->n * b->n), (unsigned)b->rows), THREADS, 0, s>>>(*b);
    return GPU_LAUNCH(chk, "k_cotangent");
}

int gpu_vjp_dw(gpu_check *chk, cudaStream_t s, const gpu_vjp_batch *b)
{
    if (b->nopen == 0) return 0;
    k_dw<<<dim3(blocks(b->nopen), (unsigned)b->rows), THREADS, 0, s>>>(*b);
    return GPU_LAUNCH(chk, "k_dw");
}

int gpu_vjp_gcoef(gpu_check *chk, cudaStream_t s, const gpu_vjp_batch *b)
{
    k_gcoef<<<dim3((unsigned)b->k, (unsigned)b->rows), GCOEF_THREADS, 0, s>>>(*b);
    return GPU_LAUNCH(chk, "k_gcoef");
}

/* dst[i][p] = src[i][turn ? mm - 1 - p : p] over nimages images of mm
 * values, converted (float to double, double to float: rounded to
 * nearest, as a cast). */
template <typename D, typename S>
__global__ static void k_convert(D *dst, const S *src, size_t mm, size_t total, int turn)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total) return;
    size_t i = t / mm, p = t % mm;
    dst[t] = (D)src[i * mm + (turn ? mm - 1 - p : p)];
}

int gpu_vjp_convert(gpu_check *chk, cudaStream_t s, void *dst, int dst_double, const void *src,
                    int src_double, int nimages, size_t mm, int turn)
{
    size_t total = (size_t)nimages * mm;
    if (total == 0) return 0;
    unsigned nb = blocks(total);
    if (dst_double && src_double)
        k_convert<double, double>
            <<<nb, THREADS, 0, s>>>((double *)dst, (const double *)src, mm, total, turn);
    else if (dst_double)
        k_convert<double, float>
            <<<nb, THREADS, 0, s>>>((double *)dst, (const float *)src, mm, total, turn);
    else if (src_double)
        k_convert<float, double>
            <<<nb, THREADS, 0, s>>>((float *)dst, (const double *)src, mm, total, turn);
    else
        k_convert<float, float>
            <<<nb, THREADS, 0, s>>>((float *)dst, (const float *)src, mm, total, turn);
    return GPU_LAUNCH(chk, "k_convert");
}
