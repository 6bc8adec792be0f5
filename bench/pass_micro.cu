/* SPDX-License-Identifier: BSD-3-Clause */
/* Device time of one pass of the GPU backend as it now runs (CUDA events,
 * per PSF), beside the ceilings, for gpu/NOTES.md:
 *  - FFT sets: open-sample field kernel + out-of-place batched cuFFT +
 *    fused intensity kernel, against cuFFT + a plain |.|^2 pass (out of
 *    place and in place), and the previous pipeline (whole-grid field
 *    kernel + in-place cuFFT + intensity), each stage alone too;
 *  - MFT sets: open-sample field kernel on the G x G grid + the two batched
 *    cuBLAS products + the centred intensity kernel, and the products alone.
 * bench/gpu_micro.cu measures the host-side figures (latency, batches).
 * Built by bench/CMakeLists.txt as psfsim_pass_micro (with CUDA); run
 * build/bench/psfsim_pass_micro on the GPU machine. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

extern "C" {
#include "backend/backend.h"
}
#include "gpu/cuda_check.h"
#include "gpu/mft.h"
#include "gpu/plan_cache.h"
#include "gpu/intensity.h"
#include "gpu/pupil.h"

#define NTERMS 4
static const int MODE_N[NTERMS] = {2, 2, 3, 4}, MODE_M[NTERMS] = {0, 2, 1, 0};

static char g_err[1024];

static void die(const char *what)
{
    fprintf(stderr, "pass_micro: %s: %s\n", what, g_err);
    exit(1);
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        if (call) die(#call);                                                                      \
    } while (0)

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

__global__ static void abs2_kernel(const cufftComplex *f, float *out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = f[i].x * f[i].x + f[i].y * f[i].y;
}

/* One pupil of n = grid/2 samples across D = 1 m (FFT: N = 2n; MFT: the
 * G x G grid, G = n + 4) obscured 30%, batch fields of it with their
 * tables on the device, as the backend stages them. */
typedef struct {
    gpu_check chk;
    cudaStream_t s;
    int *modes;
    gpu_pupil_set ps;
    gpu_pupil pp, *dpp;
    gpu_field_desc *ddesc;
    double *dcoeff;
    float *dscale;
    gpu_pass_image *dim;
    cudaEvent_t e0, e1;
} bench;

static void bench_init(bench *b, int grid, int natural, double dx, int batch)
{
    memset(b, 0, sizeof *b);
    gpu_check_init(&b->chk, 0, g_err, sizeof g_err);
    b->chk.fail_at = 0;
    CK(GPU_CUDA(&b->chk, cudaStreamCreate(&b->s)));
    int nm[2 * NTERMS];
    memcpy(nm, MODE_N, sizeof MODE_N);
    memcpy(nm + NTERMS, MODE_M, sizeof MODE_M);
    CK(GPU_CUDA(&b->chk, cudaMalloc(&b->modes, sizeof nm)));
    CK(GPU_CUDA(&b->chk, cudaMemcpy(b->modes, nm, sizeof nm, cudaMemcpyHostToDevice)));
    psf_aperture ap;
    memset(&ap, 0, sizeof ap);
    ap.shape = APERTURE_CIRCULAR;
    ap.diameter_m = 1.0;
    ap.obscuration = 0.3;
    b->ps.npix = grid;
    b->ps.natural = natural;
    b->ps.radius_m = 0.5;
    aperture_geom_init(&ap, &b->ps.geom);
    b->ps.map_width_m = b->ps.map_height_m = 1.0;
    b->ps.opd_width_m = b->ps.opd_height_m = 1.0;
    b->ps.nterms = NTERMS;
    b->ps.ncoeff = NTERMS; /* coefficients per field: no segment terms */
    b->ps.modes = b->modes;
    b->ps.basis_max_bytes = GPU_PUPIL_BASIS_MAX_BYTES;
    CK(gpu_pupil_build(&b->pp, &b->ps, dx, b->s, &b->chk));
    CK(GPU_CUDA(&b->chk, cudaMalloc(&b->dpp, sizeof b->pp)));
    CK(GPU_CUDA(&b->chk, cudaMemcpy(b->dpp, &b->pp, sizeof b->pp, cudaMemcpyHostToDevice)));
    gpu_field_desc *desc = (gpu_field_desc *)calloc(batch, sizeof *desc);
    double *coeff = (double *)malloc((size_t)batch * NTERMS * sizeof *coeff);
    float *scale = (float *)malloc(batch * sizeof(float));
    gpu_pass_image *im = (gpu_pass_image *)calloc(batch, sizeof *im);
    for (int k = 0; k < batch; ++k) {
        for (int t = 0; t < NTERMS; ++t)
            coeff[k * NTERMS + t] = 0.05 * (t + 1) * sin(0.1 * k + t);
        scale[k] = 1e-9f;
        im[k].image = k;
        im[k].first_field = k;
        im[k].nfields = 1;
    }
    CK(GPU_CUDA(&b->chk, cudaMalloc(&b->ddesc, batch * sizeof *desc)));
    CK(GPU_CUDA(&b->chk, cudaMalloc(&b->dcoeff, (size_t)batch * NTERMS * sizeof *coeff)));
    CK(GPU_CUDA(&b->chk, cudaMalloc(&b->dscale, batch * sizeof(float))));
    CK(GPU_CUDA(&b->chk, cudaMalloc(&b->dim, batch * sizeof *im)));
    CK(GPU_CUDA(&b->chk, cudaMemcpy(b->ddesc, desc, batch * sizeof *desc, cudaMemcpyHostToDevice)));
    CK(GPU_CUDA(&b->chk, cudaMemcpy(b->dcoeff, coeff, (size_t)batch * NTERMS * sizeof *coeff,
                                    cudaMemcpyHostToDevice)));
    CK(GPU_CUDA(&b->chk,
                cudaMemcpy(b->dscale, scale, batch * sizeof(float), cudaMemcpyHostToDevice)));
    CK(GPU_CUDA(&b->chk, cudaMemcpy(b->dim, im, batch * sizeof *im, cudaMemcpyHostToDevice)));
    CK(GPU_CUDA(&b->chk, cudaEventCreate(&b->e0)));
    CK(GPU_CUDA(&b->chk, cudaEventCreate(&b->e1)));
    free(desc);
    free(coeff);
    free(scale);
    free(im);
}

static void bench_free(bench *b)
{
    gpu_pupil_free(&b->pp);
    cudaFree(b->dpp);
    cudaFree(b->ddesc);
    cudaFree(b->dcoeff);
    cudaFree(b->dscale);
    cudaFree(b->dim);
    cudaFree(b->modes);
    cudaEventDestroy(b->e0);
    cudaEventDestroy(b->e1);
    cudaStreamDestroy(b->s);
}

/* Milliseconds of iters repetitions of body (enqueued on b->s), the second
 * of two rounds (the first warms up). */
template <typename F> static float time_ms(bench *b, int iters, F body)
{
    float ms = 0.0f;
    for (int rep = 0; rep < 2; ++rep) {
        CK(GPU_CUDA(&b->chk, cudaEventRecord(b->e0, b->s)));
        for (int i = 0; i < iters; ++i)
            body();
        CK(GPU_CUDA(&b->chk, cudaEventRecord(b->e1, b->s)));
        CK(GPU_CUDA(&b->chk, cudaEventSynchronize(b->e1)));
        CK(GPU_CUDA(&b->chk, cudaEventElapsedTime(&ms, b->e0, b->e1)));
    }
    return ms;
}

/* FFT sets: N x N, batch fields per pass. */
static void fft_figures(int npix, int batch, int iters)
{
    bench b;
    bench_init(&b, npix, 0, 2.0 / npix, batch);
    size_t plane = (size_t)npix * npix, n = (size_t)batch * plane;
    cufftComplex *field, *spec;
    float *img;
    CK(GPU_CUDA(&b.chk, cudaMalloc(&field, n * sizeof *field)));
    CK(GPU_CUDA(&b.chk, cudaMalloc(&spec, n * sizeof *spec)));
    CK(GPU_CUDA(&b.chk, cudaMalloc(&img, n * sizeof *img)));
    gpu_plan_cache pc;
    gpu_plan_cache_init(&pc, npix, b.s);
    cufftHandle plan;
    CK(gpu_plan_cache_get(&pc, &b.chk, batch, &plan));
    int basis = b.pp.basis != NULL;
    unsigned blocks = (unsigned)((n + 255) / 256);
    auto dense = [&] {
        CK(gpu_pupil_field(&b.ps, b.dpp, basis, b.ddesc, b.dcoeff, batch, field, b.s, &b.chk));
    };
    auto open = [&] {
        CK(gpu_pupil_field_open(&b.ps, b.dpp, basis, b.ddesc, b.dcoeff, batch, b.pp.nopen, field,
                                b.s, &b.chk));
    };
    auto fft_oop = [&] { CK(GPU_CUFFT(&b.chk, cufftExecC2C(plan, field, spec, CUFFT_FORWARD))); };
    auto fft_ip = [&] { CK(GPU_CUFFT(&b.chk, cufftExecC2C(plan, field, field, CUFFT_FORWARD))); };
    auto intensity = [&](const cufftComplex *src) {
        CK(gpu_psf_intensity(src, b.dscale, b.dim, batch, npix, img, b.s, &b.chk));
    };
    auto abs2 = [&](const cufftComplex *src) {
        abs2_kernel<<<blocks, 256, 0, b.s>>>(src, img, n);
        CK(GPU_LAUNCH(&b.chk, "abs2_kernel"));
    };
    dense(); /* the zeros the open-sample kernel relies on */
    float t_new = time_ms(&b, iters, [&] {
        open();
        fft_oop();
        intensity(spec);
    });
    float t_ceil = time_ms(&b, iters, [&] {
        fft_oop();
        abs2(spec);
    });
    float t_open = time_ms(&b, iters, open);
    float t_fft = time_ms(&b, iters, fft_oop);
    float t_int = time_ms(&b, iters, [&] { intensity(spec); });
    /* The previous pipeline (in place: the field is rewritten whole). */
    float t_old = time_ms(&b, iters, [&] {
        dense();
        fft_ip();
        intensity(field);
    });
    float t_ceil_ip = time_ms(&b, iters, [&] {
        fft_ip();
        abs2(field);
    });
    float t_dense = time_ms(&b, iters, dense);
    float t_fft_ip = time_ms(&b, iters, fft_ip);
    double per = 1e3 / ((double)iters * batch); /* ms -> us per PSF */
    printf("FFT N=%5d batch %4d (%zu open of %zu): new %.3f us/PSF vs ceiling %.3f (oop): %.0f%% "
           "(%.2fx) | old %.3f vs %.3f (in place): %.0f%% (%.2fx) | open field %.3f, FFT oop "
           "%.3f, intensity %.3f; dense field %.3f, FFT in place %.3f\n",
           npix, batch, b.pp.nopen, plane, t_new * per, t_ceil * per, 100.0 * t_ceil / t_new,
           t_new / t_ceil, t_old * per, t_ceil_ip * per, 100.0 * t_ceil_ip / t_old,
           t_old / t_ceil_ip, t_open * per, t_fft * per, t_int * per, t_dense * per,
           t_fft_ip * per);
    gpu_plan_cache_destroy(&pc);
    cudaFree(field);
    cudaFree(spec);
    cudaFree(img);
    bench_free(&b);
}

/* MFT sets: n samples across the pupil on the G = n + 4 grid, M x M images
 * at 0.25 lambda/D, batch fields per pass. */
static void mft_figures(int n, int m, int batch, int iters)
{
    int g = n + 4;
    bench b;
    bench_init(&b, g, 1, 1.0 / n, batch);
    cublasHandle_t h;
    CK(GPU_CUBLAS(&b.chk, cublasCreate(&h)));
    CK(GPU_CUBLAS(&b.chk, cublasSetStream(h, b.s)));
    gpu_mft_table t;
    double t0 = now_us();
    CK(gpu_mft_table_build(&t, 0.25 / n, m, g, b.s, &b.chk));
    CK(GPU_CUDA(&b.chk, cudaStreamSynchronize(b.s)));
    double t_table = now_us() - t0;
    size_t pp = (size_t)g * g, mg = (size_t)m * g, mm = (size_t)m * m;
    cufftComplex *field, *tmp, *e;
    float *img;
    CK(GPU_CUDA(&b.chk, cudaMalloc(&field, batch * pp * sizeof *field)));
    CK(GPU_CUDA(&b.chk, cudaMalloc(&tmp, batch * mg * sizeof *tmp)));
    CK(GPU_CUDA(&b.chk, cudaMalloc(&e, batch * mm * sizeof *e)));
    CK(GPU_CUDA(&b.chk, cudaMalloc(&img, batch * mm * sizeof *img)));
    void **ptr = (void **)malloc(4 * (size_t)batch * sizeof *ptr), **dptr;
    for (int f = 0; f < batch; ++f) {
        ptr[f] = t.w;
        ptr[batch + f] = field + f * pp;
        ptr[2 * batch + f] = tmp + f * mg;
        ptr[3 * batch + f] = e + f * mm;
    }
    CK(GPU_CUDA(&b.chk, cudaMalloc(&dptr, 4 * (size_t)batch * sizeof *ptr)));
    CK(GPU_CUDA(&b.chk,
                cudaMemcpy(dptr, ptr, 4 * (size_t)batch * sizeof *ptr, cudaMemcpyHostToDevice)));
    int basis = b.pp.basis != NULL;
    CK(gpu_pupil_field(&b.ps, b.dpp, basis, b.ddesc, b.dcoeff, batch, field, b.s, &b.chk));
    auto open = [&] {
        CK(gpu_pupil_field_open(&b.ps, b.dpp, basis, b.ddesc, b.dcoeff, batch, b.pp.nopen, field,
                                b.s, &b.chk));
    };
    auto apply = [&] {
        CK(gpu_mft_apply(h, m, g, (const cuComplex *const *)dptr,
                         (const cuComplex *const *)(dptr + batch),
                         (cuComplex *const *)(dptr + 2 * batch),
                         (cuComplex *const *)(dptr + 3 * batch), batch, &b.chk));
    };
    auto intensity = [&] {
        CK(gpu_psf_intensity_centred(e, b.dscale, b.dim, batch, m, img, b.s, &b.chk));
    };
    float t_pass = time_ms(&b, iters, [&] {
        open();
        apply();
        intensity();
    });
    float t_apply = time_ms(&b, iters, apply);
    float t_open = time_ms(&b, iters, open);
    float t_int = time_ms(&b, iters, intensity);
    double per = 1e3 / ((double)iters * batch);
    double flops = 8.0 * ((double)m * g * g + (double)m * m * g); /* per field */
    printf("MFT n=%4d G=%4d M=%5d batch %3d: pass %.2f us/PSF (products %.2f = %.1f TFLOP/s, "
           "open field %.2f, intensity %.2f); matrix built in %.0f us\n",
           n, g, m, batch, t_pass * per, t_apply * per, flops / (t_apply * per * 1e-6) * 1e-12,
           t_open * per, t_int * per, t_table);
    cudaFree(dptr);
    free(ptr);
    cudaFree(field);
    cudaFree(tmp);
    cudaFree(e);
    cudaFree(img);
    gpu_mft_table_free(&t);
    cublasDestroy(h);
    bench_free(&b);
}

int main(void)
{
    fft_figures(256, 256, 20);
    fft_figures(64, 1024, 20);
    fft_figures(1024, 32, 20);
    fft_figures(2048, 8, 20);
    fft_figures(4096, 1, 20);
    fft_figures(4096, 4, 10);
    mft_figures(128, 256, 64, 10);
    mft_figures(256, 512, 16, 10);
    mft_figures(512, 1024, 4, 10);
    mft_figures(256, 128, 64, 10);
    return 0;
}
