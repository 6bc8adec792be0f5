/* SPDX-License-Identifier: BSD-3-Clause */
/* The retrieval's loss and Fisher products on the device (gpu/fit.h):
 * lib/fit/objective.c's normal equations, residual and cotangent and
 * lib/fit/fisher.c's weighted Jacobian, as kernels over images kept on
 * the GPU. A reduction is GPU_FIT_BLOCKS blocks per image, each a fixed
 * tree over its threads, and the blocks' sums are added in block order:
 * the same bits every call whatever the timing. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu/fit.h"

#define THREADS 256

/* sh[q][0] = the sum of sh[q][0 .. THREADS) for q < nq (a fixed tree). */
__device__ static void block_sum(double (*sh)[THREADS], int nq)
{
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s)
            for (int q = 0; q < nq; ++q)
                sh[q][threadIdx.x] += sh[q][threadIdx.x + s];
        __syncthreads();
    }
}

/* Image blockIdx.y's normal-equation sums over block blockIdx.x's pixels:
 * sum w, w I, w I^2, w d, w I d (objective.c's solve_linear). */
__global__ static void k_sums(const double *d, const double *w, const double *im, size_t n,
                              double *part)
{
    __shared__ double sh[5][THREADS];
    size_t o = (size_t)blockIdx.y * n;
    double a[5] = {0, 0, 0, 0, 0};
    for (size_t i = (size_t)blockIdx.x * THREADS + threadIdx.x; i < n;
         i += (size_t)GPU_FIT_BLOCKS * THREADS) {
        double wi = w[o + i] * im[o + i];
        a[0] += w[o + i];
        a[1] += wi;
        a[2] += wi * im[o + i];
        a[3] += w[o + i] * d[o + i];
        a[4] += wi * d[o + i];
    }
    for (int q = 0; q < 5; ++q)
        sh[q][threadIdx.x] = a[q];
    __syncthreads();
    block_sum(sh, 5);
    if (threadIdx.x < 5)
        part[((size_t)blockIdx.y * GPU_FIT_BLOCKS + blockIdx.x) * 5 + threadIdx.x] =
            sh[threadIdx.x][0];
}

/* solve_linear's flux and background from the sums (the same branches). */
__device__ static void solve(const double *sum, int fit, double *f, double *b)
{
    double sw = sum[0], swi = sum[1], swii = sum[2], swd = sum[3], swid = sum[4];
    if ((fit & 1) && (fit & 2)) {
        double det = sw * swii - swi * swi;
        if (det > 1e-12 * sw * swii) {
            *f = (sw * swid - swi * swd) / det;
            *b = (swii * swd - swi * swid) / det;
        }
    } else if (fit & 1) {
        if (swii > 0) *f = (swid - *b * swi) / swii;
    } else if ((fit & 2) && sw > 0) {
        *b = (swd - *f * swi) / sw;
    }
}

/* Image blockIdx.y: its flux and background (each block solves them from
 * the partial sums, in block order), then over this block's pixels the
 * cotangent -f w r and the sum of w r^2 (residual()'s). res[k][0], [1]:
 * f, b (block 0); res[k][2 + block]: the block's sum. */
__global__ static void k_residual(const double *d, const double *w, const double *im, size_t n,
                                  int fit, const double *fix, const double *part, double *cot,
                                  double *res)
{
    __shared__ double sh[1][THREADS];
    __shared__ double sum[5], fb[2];
    int k = blockIdx.y;
    if (fit && threadIdx.x < 5) {
        double s = 0;
        for (int b = 0; b < GPU_FIT_BLOCKS; ++b)
            s += part[((size_t)k * GPU_FIT_BLOCKS + b) * 5 + threadIdx.x];
        sum[threadIdx.x] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double f = fix[2 * k], b = fix[2 * k + 1];
        if (fit) solve(sum, fit, &f, &b);
        fb[0] = f;
        fb[1] = b;
        if (blockIdx.x == 0) {
            res[(size_t)k * (GPU_FIT_BLOCKS + 2)] = f;
            res[(size_t)k * (GPU_FIT_BLOCKS + 2) + 1] = b;
        }
    }
    __syncthreads();
    double f = fb[0], b = fb[1], acc = 0;
    size_t o = (size_t)k * n;
    for (size_t i = (size_t)blockIdx.x * THREADS + threadIdx.x; i < n;
         i += (size_t)GPU_FIT_BLOCKS * THREADS) {
        double r = d[o + i] - (f * im[o + i] + b), wr = w[o + i] * r;
        acc += wr * r;
        cot[o + i] = -f * wr;
    }
    sh[0][threadIdx.x] = acc;
    __syncthreads();
    block_sum(sh, 1);
    if (threadIdx.x == 0) res[(size_t)k * (GPU_FIT_BLOCKS + 2) + 2 + blockIdx.x] = sh[0][0];
}

/* sw = sqrt(w), swi = sqrt(w) I over total values. */
__global__ static void k_sqrtw(const double *w, const double *im, size_t total, double *sw,
                               double *swi)
{
    size_t t = (size_t)blockIdx.x * THREADS + threadIdx.x;
    if (t >= total) return;
    sw[t] = sqrt(w[t]);
    swi[t] = sw[t] * im[t];
}

/* Column blockIdx.y of U: sqrt(w) (f_k / h) (plus - I) (fisher.c's). */
__global__ static void k_jacobian(double *plus, const double *im, const double *sw,
                                  const double *flux, double h, size_t n, size_t total)
{
    size_t t = (size_t)blockIdx.x * THREADS + threadIdx.x;
    if (t >= total) return;
    double *u = plus + (size_t)blockIdx.y * total + t;
    double c = flux[t / n] / h;
    *u = sw[t] * c * (*u - im[t]);
}

static unsigned blocks(size_t n)
{
    return (unsigned)((n + THREADS - 1) / THREADS);
}

/* The scratch for K images (and, with total > 0, the Fisher step's of
 * total values and P parameters). */
static int reserve(gpu_fit *f, gpu_check *chk, int K, size_t total, int P)
{
    if (K > f->cap) {
        cudaFree(f->part);
        cudaFree(f->res);
        cudaFree(f->fix);
        cudaFreeHost(f->host);
        f->part = f->res = f->fix = f->host = NULL;
        f->cap = 0;
        size_t r = (size_t)K * (GPU_FIT_BLOCKS + 2);
        if (GPU_CUDA(chk, cudaMalloc(&f->part, (size_t)K * GPU_FIT_BLOCKS * 5 * sizeof(double))) ||
            GPU_CUDA(chk, cudaMalloc(&f->res, r * sizeof(double))) ||
            GPU_CUDA(chk, cudaMalloc(&f->fix, 2 * (size_t)K * sizeof(double))) ||
            GPU_CUDA(chk, cudaMallocHost(&f->host, (r + 2 * (size_t)K) * sizeof(double))))
            return -1;
        f->cap = K;
    }
    if (total > f->cap_sw) {
        cudaFree(f->sw);
        f->sw = NULL;
        f->cap_sw = 0;
        if (GPU_CUDA(chk, cudaMalloc(&f->sw, 2 * total * sizeof(double)))) return -1;
        f->cap_sw = total;
    }
    size_t gy = (size_t)P * P + 2 * (size_t)K * P;
    if (P > 0 && gy > f->cap_gy) {
        cudaFree(f->gy);
        f->gy = NULL;
        f->cap_gy = 0;
        if (GPU_CUDA(chk, cudaMalloc(&f->gy, gy * sizeof(double)))) return -1;
        f->cap_gy = gy;
    }
    return 0;
}

int gpu_fit_loss_enqueue(gpu_fit *f, gpu_check *chk, cudaStream_t s, int nimages, size_t npix,
                         const double *data, const double *w, const double *images, int fit,
                         const double *fixed, double *cot)
{
    if (nimages < 1 || nimages > 65535 || npix < 1) {
        snprintf(chk->err, chk->errlen, "gpu: the fit's loss of %d images of %zu pixels", nimages,
                 npix);
        return -1;
    }
    if (reserve(f, chk, nimages, 0, 0)) return -1;
    size_t r = (size_t)nimages * (GPU_FIT_BLOCKS + 2);
    double *staged = f->host + r; /* pinned: the copy is a plain DMA */
    gpu_fit_stage(f, nimages, fixed);
    if (GPU_CUDA(chk, cudaMemcpyAsync(f->fix, staged, 2 * (size_t)nimages * sizeof(double),
                                      cudaMemcpyHostToDevice, s)))
        return -1;
    dim3 grid(GPU_FIT_BLOCKS, (unsigned)nimages);
    if (fit) {
        k_sums<<<grid, THREADS, 0, s>>>(data, w, images, npix, f->part);
        if (GPU_LAUNCH(chk, "k_sums")) return -1;
    }
    k_residual<<<grid, THREADS, 0, s>>>(data, w, images, npix, fit, f->fix, f->part, cot, f->res);
    return GPU_LAUNCH(chk, "k_residual") ||
                   GPU_CUDA(chk, cudaMemcpyAsync(f->host, f->res, r * sizeof(double),
                                                 cudaMemcpyDeviceToHost, s))
               ? -1
               : 0;
}

void gpu_fit_stage(gpu_fit *f, int nimages, const double *fixed)
{
    size_t r = (size_t)nimages * (GPU_FIT_BLOCKS + 2);
    memcpy(f->host + r, fixed, 2 * (size_t)nimages * sizeof(double));
}

void gpu_fit_loss_collect(const gpu_fit *f, int nimages, double *out)
{
    for (int k = 0; k < nimages; ++k) {
        const double *h = f->host + (size_t)k * (GPU_FIT_BLOCKS + 2);
        double loss = 0;
        for (int b = 0; b < GPU_FIT_BLOCKS; ++b)
            loss += h[2 + b];
        out[3 * k] = h[0];
        out[3 * k + 1] = h[1];
        out[3 * k + 2] = 0.5 * loss;
    }
}

int gpu_fit_fisher(gpu_fit *f, gpu_check *chk, cudaStream_t s, cublasHandle_t blas, int nimages,
                   size_t npix, int nparams, const double *w, const double *images, double *plus,
                   const double *flux, double h, double *G, double *y)
{
    size_t total = (size_t)nimages * npix;
    if (nimages < 1 || nparams < 1 || nparams > 65535 || total > (size_t)1 << 30 || !(h > 0)) {
        snprintf(chk->err, chk->errlen,
                 "gpu: the Fisher products of %d images of %zu pixels, %d parameters", nimages,
                 npix, nparams);
        return -1;
    }
    if (reserve(f, chk, nimages, total, nparams) ||
        GPU_CUDA(chk, cudaMemcpyAsync(f->fix, flux, (size_t)nimages * sizeof(double),
                                      cudaMemcpyHostToDevice, s)))
        return -1;
    double *sw = f->sw, *swi = f->sw + total;
    k_sqrtw<<<blocks(total), THREADS, 0, s>>>(w, images, total, sw, swi);
    if (GPU_LAUNCH(chk, "k_sqrtw")) return -1;
    k_jacobian<<<dim3(blocks(total), (unsigned)nparams), THREADS, 0, s>>>(plus, images, sw, f->fix,
                                                                          h, npix, total);
    if (GPU_LAUNCH(chk, "k_jacobian")) return -1;
    int P = nparams, T = (int)total, n = (int)npix, one = 1;
    const double d1 = 1.0, d0 = 0.0;
    double *gy = f->gy, *yd = f->gy + (size_t)P * P;
    /* column-major G (P x P, upper) = U^T U, U column-major T x P */
    if (GPU_CUBLAS(chk, cublasDsyrk(blas, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, P, T, &d1, plus, T,
                                    &d0, gy, P)))
        return -1;
    for (int k = 0; k < nimages; ++k)
        for (int c = 0; c < 2; ++c) {
            const double *x = (c == 0 ? swi : sw) + (size_t)k * npix;
            if (GPU_CUBLAS(chk, cublasDgemv(blas, CUBLAS_OP_T, n, P, &d1, plus + (size_t)k * npix,
                                            T, x, one, &d0, yd + ((size_t)k * 2 + c) * P, one)))
                return -1;
        }
    if (GPU_CUDA(chk, cudaMemcpyAsync(G, gy, (size_t)P * P * sizeof(double), cudaMemcpyDeviceToHost,
                                      s)) ||
        GPU_CUDA(chk, cudaMemcpyAsync(y, yd, 2 * (size_t)nimages * P * sizeof(double),
                                      cudaMemcpyDeviceToHost, s)) ||
        GPU_CUDA(chk, cudaStreamSynchronize(s)))
        return -1;
    /* the upper triangle of column-major G is the lower of row-major G */
    for (int a = 0; a < P; ++a)
        for (int b = a + 1; b < P; ++b)
            G[(size_t)a * P + b] = G[(size_t)b * P + a];
    return 0;
}

void gpu_fit_free(gpu_fit *f)
{
    cudaFree(f->part);
    cudaFree(f->res);
    cudaFree(f->fix);
    cudaFreeHost(f->host);
    cudaFree(f->sw);
    cudaFree(f->gy);
    memset(f, 0, sizeof *f);
}
