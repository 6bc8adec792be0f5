/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage of the GPU's gradients and its transpose
 * (gpu/adjoint.h; cpu/adjoint_detector.c's arithmetic in double): the
 * convolution by batched D2Z and Z2D cuFFT with the transfer function
 * (which holds the 1/N^2), the sampling, and backwards the sampling's
 * scatter and the convolution with conj(T). */
#include "gpu/adjoint.h"

void gpu_vjp_det_free(gpu_vjp_det *d)
{
    cudaFree(d->otf);
    cudaFree(d->spec);
    cudaFree(d->out);
    cudaFree(d->cot);
    if (d->plan_batch) {
        cufftDestroy(d->d2z);
        cufftDestroy(d->z2d);
    }
    memset(d, 0, sizeof *d);
}

int gpu_vjp_det_set(gpu_vjp_det *d, gpu_check *chk, int n, const gpu_vjp_detector *desc)
{
    gpu_vjp_det_free(d);
    d->n = n;
    d->m = desc->m;
    d->s = desc->s > 1 ? desc->s : 1;
    d->off = desc->off;
    d->sample = desc->sample;
    d->bins = desc->bins;
    d->convolve = desc->convolve && desc->otf;
    if (d->m < 1 || d->m > n || (!d->sample && d->m != n) ||
        (d->sample && ((long long)(d->m - 1) * d->s + d->off + d->s > n || d->off < 0))) {
        snprintf(chk->err, chk->errlen,
                 "gpu: a detector stage of %d x %d from %d x %d: out of range", d->m, d->m, n, n);
        return -1;
    }
    size_t nc = (size_t)n * (size_t)(n / 2 + 1);
    if (d->convolve && (GPU_CUDA(chk, cudaMalloc(&d->otf, nc * sizeof *d->otf)) ||
                        GPU_CUDA(chk, cudaMemcpy(d->otf, desc->otf, nc * sizeof *d->otf,
                                                 cudaMemcpyHostToDevice)))) {
        gpu_vjp_det_free(d);
        return -1;
    }
    d->active = 1;
    return 0;
}

int gpu_vjp_det_reserve(gpu_vjp_det *d, gpu_check *chk, int nimages, cudaStream_t s)
{
    size_t nc = (size_t)d->n * (size_t)(d->n / 2 + 1), mm = (size_t)d->m * d->m;
    if (nimages > d->cap) {
        cudaFree(d->spec);
        cudaFree(d->out);
        cudaFree(d->cot);
        d->spec = NULL;
        d->out = d->cot = NULL;
        d->cap = 0;
        if ((d->convolve &&
             GPU_CUDA(chk, cudaMalloc(&d->spec, (size_t)nimages * nc * sizeof *d->spec))) ||
            GPU_CUDA(chk, cudaMalloc(&d->out, (size_t)nimages * mm * sizeof *d->out)) ||
            GPU_CUDA(chk, cudaMalloc(&d->cot, (size_t)nimages * mm * sizeof *d->cot)))
            return -1;
        d->cap = nimages;
    }
    if (!d->convolve || d->plan_batch == nimages) return 0;
    if (d->plan_batch) {
        cufftDestroy(d->d2z);
        cufftDestroy(d->z2d);
        d->plan_batch = 0;
    }
    int dims[2] = {d->n, d->n};
    if (GPU_CUFFT(chk, cufftPlanMany(&d->d2z, 2, dims, NULL, 1, 0, NULL, 1, 0, CUFFT_D2Z, nimages)))
        return -1;
    if (GPU_CUFFT(chk,
                  cufftPlanMany(&d->z2d, 2, dims, NULL, 1, 0, NULL, 1, 0, CUFFT_Z2D, nimages))) {
        cufftDestroy(d->d2z);
        return -1;
    }
    d->plan_batch = nimages;
    if (GPU_CUFFT(chk, cufftSetStream(d->d2z, s)) || GPU_CUFFT(chk, cufftSetStream(d->z2d, s)))
        return -1;
    return 0;
}

/* spec[k] *= T[k mod nc] (or conj T). */
__global__ static void k_otf(cuDoubleComplex *spec, const cuDoubleComplex *otf, size_t nc,
                             size_t total, int conj)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    cuDoubleComplex a = spec[i], t = otf[i % nc];
    double c = t.x, e = conj ? -t.y : t.y;
    spec[i] = make_cuDoubleComplex(a.x * c - a.y * e, a.x * e + a.y * c);
}

/* out[img][i][j] from grid[img]: the block's sum, or s^2 its first sample
 * (psf_detector_sample_at in double). */
__global__ static void k_sample(gpu_vjp_det d, const double *grid, size_t total)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total) return;
    size_t mm = (size_t)d.m * d.m, nn = (size_t)d.n * d.n, img = t / mm, ij = t % mm;
    int i = (int)(ij / (size_t)d.m), j = (int)(ij % (size_t)d.m), s = d.s;
    const double *p = grid + img * nn + (size_t)(i * s + d.off) * d.n + (size_t)(j * s + d.off);
    double v = 0.0;
    for (int a = 0; d.bins && a < s; ++a)
        for (int b = 0; b < s; ++b)
            v += p[(size_t)a * d.n + b];
    d.out[t] = d.bins ? v : (double)s * s * p[0];
}

/* The sampling's transpose into the zeroed grid (blocks never overlap). */
__global__ static void k_scatter(gpu_vjp_det d, double *grid, size_t total)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total) return;
    size_t mm = (size_t)d.m * d.m, nn = (size_t)d.n * d.n, img = t / mm, ij = t % mm;
    int i = (int)(ij / (size_t)d.m), j = (int)(ij % (size_t)d.m), s = d.s;
    double *p = grid + img * nn + (size_t)(i * s + d.off) * d.n + (size_t)(j * s + d.off);
    double v = d.cot[t];
    if (!d.bins) {
        p[0] += (double)s * s * v;
        return;
    }
    for (int a = 0; a < s; ++a)
        for (int b = 0; b < s; ++b)
            p[(size_t)a * d.n + b] += v;
}

#define THREADS 256

static unsigned blocks_of(size_t n)
{
    return (unsigned)((n + THREADS - 1) / THREADS);
}

/* grid = C2R(R2C(grid) T) (or conj T) for nimages grids. */
static int convolve(gpu_vjp_det *d, gpu_check *chk, cudaStream_t s, double *grid, int nimages,
                    int conj)
{
    size_t nc = (size_t)d->n * (size_t)(d->n / 2 + 1), total = (size_t)nimages * nc;
    if (GPU_CUFFT(chk, cufftExecD2Z(d->d2z, grid, d->spec))) return -1;
    k_otf<<<blocks_of(total), THREADS, 0, s>>>(d->spec, d->otf, nc, total, conj);
    if (GPU_LAUNCH(chk, "k_otf")) return -1;
    return GPU_CUFFT(chk, cufftExecZ2D(d->z2d, d->spec, grid));
}

int gpu_vjp_det_forward(gpu_vjp_det *d, gpu_check *chk, cudaStream_t s, double *grid, int nimages)
{
    if (d->convolve && convolve(d, chk, s, grid, nimages, 0)) return -1;
    size_t total = (size_t)nimages * d->m * d->m;
    if (!d->sample)
        return GPU_CUDA(chk, cudaMemcpyAsync(d->out, grid, total * sizeof(double),
                                             cudaMemcpyDeviceToDevice, s));
    k_sample<<<blocks_of(total), THREADS, 0, s>>>(*d, grid, total);
    return GPU_LAUNCH(chk, "k_sample");
}

int gpu_vjp_det_adjoint(gpu_vjp_det *d, gpu_check *chk, cudaStream_t s, double *grid, int nimages)
{
    size_t total = (size_t)nimages * d->m * d->m, nn = (size_t)d->n * d->n;
    if (!d->sample) {
        if (GPU_CUDA(chk, cudaMemcpyAsync(grid, d->cot, total * sizeof(double),
                                          cudaMemcpyDeviceToDevice, s)))
            return -1;
    } else {
        if (GPU_CUDA(chk, cudaMemsetAsync(grid, 0, (size_t)nimages * nn * sizeof(double), s)))
            return -1;
        k_scatter<<<blocks_of(total), THREADS, 0, s>>>(*d, grid, total);
        if (GPU_LAUNCH(chk, "k_scatter")) return -1;
    }
    return d->convolve ? convolve(d, chk, s, grid, nimages, 1) : 0;
}
