/* SPDX-License-Identifier: BSD-3-Clause */
/* Micro-benchmark of the CUDA backend (gpu/), run on the GPU machine:
 *  1. one PSF to host memory per run() call (latency), pinned and pageable;
 *  2. batches into pinned host memory (PSFs/s; the host link bounds it);
 *  3. device-side compute of one pass (pupil kernel + batched cuFFT + fused
 *     intensity kernel) against cuFFT + a plain |.|^2 pass alone, with CUDA
 *     events, and each stage on its own;
 *  4. device-side compute of a 10,000-image set at 256 x 256 without and
 *     with the detector stage (gpu/detector.h), in the backend's
 *     sub-batches, with CUDA events (issue 14: <= 1.5x); then where the
 *     time goes (detector_step rows: the set cut after each step, field, C2C,
 *     intensity, R2C, multiply or fold, C2R, us per image), the A/B of the
 *     images a thread of the multiply and the fold takes (detector_variant),
 *     the packed-pair path against the R2C one at s = 1 and 4 with their
 *     steps (detector_packed: one C2C of n/2 pairs, the fold of both images
 *     of a pair, the C2R; the default, GPU_DETECTOR_PACKED, marked),
 *     and the transforms alone (detector_fft: R2C of n vs C2C of n/2 pairs,
 *     C2R vs inverse C2C, a device copy as the bandwidth's reference).
 * Usage: psfsim_gpu_micro            all four parts
 *        psfsim_gpu_micro detector [IMAGES [BATCH]]   part 4 only
 * Exits 77 (skipped) without a CUDA device.
 * Built by bench/CMakeLists.txt as psfsim_gpu_micro; by hand, after the
 * project's build in build:
 *   nvcc -O3 -std=c++17 -arch=sm_90 -I. bench/gpu_micro.cu build/libpsfsim_gpu.a \
 *        build/libpsfsim_optics.a -lcufft -o gpu_micro && ./gpu_micro */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <cufft.h>

extern "C" {
#include "backend/backend.h"
#include "backend/detector.h"
}
#include "backend/gpu_abi.h"
#include "gpu/cuda_check.h"
#include "gpu/detector.h"
#include "gpu/plan_cache.h"
#include "gpu/intensity.h"
#include "gpu/pupil.h"

#define NTERMS 4
static const int MODE_N[NTERMS] = {2, 2, 3, 4}, MODE_M[NTERMS] = {0, 2, 1, 0};

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static void die(const char *what, const char *err)
{
    fprintf(stderr, "gpu_micro: %s: %s\n", what, err);
    exit(1);
}

/* N = 2n: n = N/2 samples across D = 1 m, obscured 30%. */
static void make_desc(int npix, int max_batch, psf_problem *d)
{
    static int n[NTERMS], m[NTERMS];
    memcpy(n, MODE_N, sizeof n);
    memcpy(m, MODE_M, sizeof m);
    memset(d, 0, sizeof *d);
    d->npix = npix;
    d->aperture.shape = APERTURE_CIRCULAR;
    d->aperture.diameter_m = 1.0;
    d->aperture.obscuration = 0.3;
    d->modes.nterms = NTERMS;
    d->modes.n = n;
    d->modes.m = m;
    d->max_batch = max_batch;
    d->nimages = 1000000;
}

static psf_job *make_jobs(int npix, int count, double **coeff_out)
{
    psf_job *jobs = (psf_job *)calloc((size_t)count, sizeof *jobs);
    double *coeff = (double *)malloc((size_t)count * NTERMS * sizeof *coeff);
    for (int k = 0; k < count; ++k) {
        for (int t = 0; t < NTERMS; ++t)
            coeff[k * NTERMS + t] = 0.05 * (t + 1) * sin(0.1 * k + t);
        jobs[k].ncomp = 1;
        jobs[k].comp[0].wavelength_m = 500e-9;
        jobs[k].comp[0].dx_m = 2.0 / npix;
        jobs[k].comp[0].scale = 1e-9;
        jobs[k].comp[0].coeff_waves = coeff + k * NTERMS;
    }
    *coeff_out = coeff;
    return jobs;
}

/* Latency of one-image runs and throughput of batch-image runs at N. */
static void host_figures(int npix, int batch, int nsingle, int nbatch)
{
    const psf_backend_ops *ops = psf_gpu_module_entry.backend; /* linked in, not loaded */
    psf_problem d;
    make_desc(npix, batch, &d);
    char err[1024];
    psf_backend *b;
    double t0 = now_us();
    if (ops->create(&d, NULL, &b, err, sizeof err)) die("create", err);
    double t_create = now_us() - t0;
    size_t plane = (size_t)npix * npix;
    float *pinned = ops->alloc_images(b, (size_t)batch * plane);
    float *pageable = (float *)malloc((size_t)batch * plane * sizeof(float));
    double *coeff;
    psf_job *jobs = make_jobs(npix, batch, &coeff);
    t0 = now_us();
    if (ops->run(b, jobs, 1, pinned, err, sizeof err)) die("run", err);
    double t_first = now_us() - t0;
    for (int i = 0; i < 20; ++i)
        if (ops->run(b, jobs + i % batch, 1, pinned, err, sizeof err)) die("run", err);
    double best = 1e30;
    t0 = now_us();
    for (int i = 0; i < nsingle; ++i) {
        double t1 = now_us();
        if (ops->run(b, jobs + i % batch, 1, pinned, err, sizeof err)) die("run", err);
        double dt = now_us() - t1;
        if (dt < best) best = dt;
    }
    double t_single = (now_us() - t0) / nsingle;
    t0 = now_us();
    for (int i = 0; i < nsingle / 4; ++i)
        if (ops->run(b, jobs + i % batch, 1, pageable, err, sizeof err)) die("run", err);
    double t_single_pageable = (now_us() - t0) / (nsingle / 4);
    if (ops->run(b, jobs, batch, pinned, err, sizeof err)) die("run", err); /* plans */
    t0 = now_us();
    for (int i = 0; i < nbatch; ++i)
        if (ops->run(b, jobs, batch, pinned, err, sizeof err)) die("run", err);
    double t_batch = (now_us() - t0) / nbatch;
    if (ops->run(b, jobs, batch, pageable, err, sizeof err)) die("run", err);
    t0 = now_us();
    for (int i = 0; i < nbatch; ++i)
        if (ops->run(b, jobs, batch, pageable, err, sizeof err)) die("run", err);
    double t_batch_pageable = (now_us() - t0) / nbatch;
    double mb = batch * plane * 4.0 / 1e6;
    printf("N=%5d create %8.1f us, first run %8.1f us | single: %7.1f us mean, %7.1f us best, "
           "%7.1f us pageable | batch %4d: %8.0f PSF/s pinned (%5.1f GB/s), %8.0f PSF/s "
           "pageable\n",
           npix, t_create, t_first, t_single, best, t_single_pageable, batch, batch / t_batch * 1e6,
           mb / t_batch * 1e3, batch / t_batch_pageable * 1e6);
    ops->free_images(b, pinned);
    ops->destroy(b);
    free(pageable);
    free(jobs);
    free(coeff);
}

__global__ static void abs2_kernel(const cufftComplex *f, float *out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = f[i].x * f[i].x + f[i].y * f[i].y;
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        if (call) die(#call, err);                                                                 \
    } while (0)

/* The device buffers of one pass of `batch` one-field images at N, as
 * gpu/backend.cu has them: the pupil (built in build_us), the field tables,
 * pupil fields, their out-of-place transforms (part 4's; the detector's
 * spectrum scratch too), the images, the cuFFT plans. Parts 3 and 4. */
typedef struct {
    int npix, batch;
    gpu_pupil_set ps;
    gpu_pupil pp, *dpp;
    int *modes;
    gpu_field_desc *ddesc;
    double *dcoeff;
    float *dscale, *img;
    gpu_pass_image *dim;
    cufftComplex *field, *spec;
    gpu_plan_cache pc;
    double build_us;
} micro_pass;

static void micro_tables(micro_pass *p, gpu_check *chk, char *err)
{
    int batch = p->batch;
    gpu_field_desc *desc = (gpu_field_desc *)calloc(batch, sizeof *desc);
    double *coeff = (double *)malloc((size_t)batch * NTERMS * sizeof *coeff);
    float *scale = (float *)malloc(batch * sizeof(float));
    gpu_pass_image *im = (gpu_pass_image *)calloc(batch, sizeof *im);
    if (!desc || !coeff || !scale || !im) die("tables", "out of host memory");
    for (int k = 0; k < batch; ++k) {
        for (int t = 0; t < NTERMS; ++t)
            coeff[k * NTERMS + t] = 0.05 * (t + 1) * sin(0.1 * k + t);
        scale[k] = 1e-9f;
        im[k].image = k;
        im[k].first_field = k;
        im[k].nfields = 1;
    }
    CK(GPU_CUDA(chk, cudaMalloc(&p->ddesc, batch * sizeof *desc)));
    CK(GPU_CUDA(chk, cudaMalloc(&p->dcoeff, (size_t)batch * NTERMS * sizeof *coeff)));
    CK(GPU_CUDA(chk, cudaMalloc(&p->dscale, batch * sizeof(float))));
    CK(GPU_CUDA(chk, cudaMalloc(&p->dim, batch * sizeof *im)));
    CK(GPU_CUDA(chk, cudaMemcpy(p->ddesc, desc, batch * sizeof *desc, cudaMemcpyHostToDevice)));
    CK(GPU_CUDA(chk, cudaMemcpy(p->dcoeff, coeff, (size_t)batch * NTERMS * sizeof *coeff,
                                cudaMemcpyHostToDevice)));
    CK(GPU_CUDA(chk, cudaMemcpy(p->dscale, scale, batch * sizeof(float), cudaMemcpyHostToDevice)));
    CK(GPU_CUDA(chk, cudaMemcpy(p->dim, im, batch * sizeof *im, cudaMemcpyHostToDevice)));
    free(desc);
    free(coeff);
    free(scale);
    free(im);
}

/* Exits (die) on a failure, as every part does. */
static void micro_pass_create(micro_pass *p, int npix, int batch, cudaStream_t s, gpu_check *chk,
                              char *err)
{
    memset(p, 0, sizeof *p);
    p->npix = npix;
    p->batch = batch;
    psf_problem d;
    make_desc(npix, batch, &d);
    int nm[2 * NTERMS];
    memcpy(nm, MODE_N, sizeof MODE_N);
    memcpy(nm + NTERMS, MODE_M, sizeof MODE_M);
    CK(GPU_CUDA(chk, cudaMalloc(&p->modes, sizeof nm)));
    CK(GPU_CUDA(chk, cudaMemcpy(p->modes, nm, sizeof nm, cudaMemcpyHostToDevice)));
    gpu_pupil_set *ps = &p->ps;
    ps->npix = npix;
    ps->radius_m = 0.5;
    aperture_geom_init(&d.aperture, &ps->geom);
    ps->map_width_m = ps->map_height_m = 1.0;
    ps->opd_width_m = ps->opd_height_m = 1.0;
    ps->nterms = NTERMS;
    ps->ncoeff = NTERMS;
    ps->modes = p->modes;
    ps->basis_max_bytes = GPU_PUPIL_BASIS_MAX_BYTES;
    double t0 = now_us();
    CK(gpu_pupil_build(&p->pp, ps, 2.0 / npix, s, chk));
    p->build_us = now_us() - t0;
    CK(GPU_CUDA(chk, cudaMalloc(&p->dpp, sizeof p->pp)));
    CK(GPU_CUDA(chk, cudaMemcpy(p->dpp, &p->pp, sizeof p->pp, cudaMemcpyHostToDevice)));
    micro_tables(p, chk, err);
    size_t n = (size_t)batch * npix * npix;
    CK(GPU_CUDA(chk, cudaMalloc(&p->field, n * sizeof *p->field)));
    CK(GPU_CUDA(chk, cudaMalloc(&p->spec, n * sizeof *p->spec)));
    /* One image more: an odd batch's last packed pair (gpu_detector_grid_images). */
    CK(GPU_CUDA(chk, cudaMalloc(&p->img, (n + (size_t)npix * npix) * sizeof *p->img)));
    gpu_plan_cache_init(&p->pc, npix, s);
}

static void micro_pass_destroy(micro_pass *p)
{
    gpu_plan_cache_destroy(&p->pc);
    gpu_pupil_free(&p->pp);
    cudaFree(p->dpp);
    cudaFree(p->ddesc);
    cudaFree(p->dcoeff);
    cudaFree(p->dscale);
    cudaFree(p->dim);
    cudaFree(p->field);
    cudaFree(p->spec);
    cudaFree(p->img);
    cudaFree(p->modes);
}

/* Device-side time per PSF of the pipeline's pass and of its parts. */
static void device_figures(int npix, int batch, int iters)
{
    char err[1024];
    gpu_check chk;
    gpu_check_init(&chk, 0, err, sizeof err);
    chk.fail_at = 0;
    size_t plane = (size_t)npix * npix;
    cudaStream_t s;
    CK(GPU_CUDA(&chk, cudaStreamCreate(&s)));
    micro_pass p;
    micro_pass_create(&p, npix, batch, s, &chk, err);
    cufftComplex *field = p.field;
    cufftHandle plan;
    CK(gpu_plan_cache_get(&p.pc, &chk, batch, &plan));
    cudaEvent_t e0, e1;
    CK(GPU_CUDA(&chk, cudaEventCreate(&e0)));
    CK(GPU_CUDA(&chk, cudaEventCreate(&e1)));
    float ms[5];
    for (int variant = 0; variant < 5; ++variant) {
        for (int rep = 0; rep < 2; ++rep) { /* the first repetition warms up */
            CK(GPU_CUDA(&chk, cudaEventRecord(e0, s)));
            for (int i = 0; i < iters; ++i) {
                if (variant == 0 || variant == 2)
                    CK(gpu_pupil_field(&p.ps, p.dpp, p.pp.basis != NULL, p.ddesc, p.dcoeff, batch,
                                       field, s, &chk));
                if (variant == 0 || variant == 1 || variant == 3)
                    CK(GPU_CUFFT(&chk, cufftExecC2C(plan, field, field, CUFFT_FORWARD)));
                if (variant == 0 || variant == 4)
                    CK(gpu_psf_intensity(field, p.dscale, p.dim, batch, npix, p.img, s, &chk));
                if (variant == 1) {
                    size_t n = (size_t)batch * plane;
                    abs2_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(field, p.img, n);
                    CK(GPU_LAUNCH(&chk, "abs2_kernel"));
                }
            }
            CK(GPU_CUDA(&chk, cudaEventRecord(e1, s)));
            CK(GPU_CUDA(&chk, cudaEventSynchronize(e1)));
            CK(GPU_CUDA(&chk, cudaEventElapsedTime(&ms[variant], e0, e1)));
        }
    }
    double per = 1e3 / ((double)iters * batch); /* ms -> us per PSF */
    double bytes = plane * (8.0 + 8.0 + 4.0);   /* field write, field read, image write */
    printf("N=%5d batch %4d (pupil build %.0f us, %zu open samples): pipeline %.3f us/PSF; "
           "cuFFT + |.|^2 alone %.3f us/PSF: %.0f%% | field %.3f, FFT %.3f, intensity %.3f us; "
           "field+intensity at %.0f GB/s\n",
           npix, batch, p.build_us, p.pp.nopen, ms[0] * per, ms[1] * per, 100.0 * ms[1] / ms[0],
           ms[2] * per, ms[3] * per, ms[4] * per, bytes / ((ms[2] + ms[4]) * per * 1e-6) * 1e-9);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    micro_pass_destroy(&p);
    cudaStreamDestroy(s);
}

/* Cold cuFFT costs at N (first use of the size in the process): the size
 * query the memory estimate makes, the plan, the first transform. */
static void plan_figures(int npix, int batch)
{
    char err[1024];
    gpu_check chk;
    gpu_check_init(&chk, 0, err, sizeof err);
    chk.fail_at = 0;
    cudaStream_t s;
    CK(GPU_CUDA(&chk, cudaStreamCreate(&s)));
    cufftComplex *buf;
    CK(GPU_CUDA(&chk, cudaMalloc(&buf, (size_t)batch * npix * npix * sizeof *buf)));
    size_t work;
    double t0 = now_us();
    CK(gpu_plan_estimate(&chk, npix, batch, &work));
    double t1 = now_us();
    gpu_plan_cache pc;
    gpu_plan_cache_init(&pc, npix, s);
    cufftHandle plan;
    CK(gpu_plan_cache_get(&pc, &chk, batch, &plan));
    double t2 = now_us();
    CK(GPU_CUFFT(&chk, cufftExecC2C(plan, buf, buf, CUFFT_FORWARD)));
    CK(GPU_CUDA(&chk, cudaStreamSynchronize(s)));
    double t3 = now_us();
    CK(gpu_plan_cache_get(&pc, &chk, batch + 1, &plan));
    double t4 = now_us();
    printf("N=%5d batch %4d cold: size query %8.1f us, plan %8.1f us, first FFT %8.1f us, "
           "plan for batch+1 %8.1f us, work area %zu B\n",
           npix, batch, t1 - t0, t2 - t1, t3 - t2, t4 - t3, work);
    gpu_plan_cache_destroy(&pc);
    cudaFree(buf);
    cudaStreamDestroy(s);
}

/* Part 4: the detector stage's device cost (issue 14). gpu/memory_plan.cu sizes
 * sub-batches by GPU_SUBBATCH_BYTES (16 MiB) of images, so 64 at 256^2. */
#define DET_BATCH_256 64

static const double DET_IPC[9] = {0.0, 0.02, 0.0, 0.02, 0.92, 0.02, 0.0, 0.02, 0.0};

/* Every effect on, at oversample s, the values of bench/bench_detector.c's "all". */
static void det_all_effects(psf_detector *d, int s)
{
    memset(d, 0, sizeof *d);
    d->oversample = s;
    d->sample = 1;
    d->pixel_response = 1;
    d->jitter_px[0] = d->jitter_px[1] = 0.2;
    d->diffusion_px = 0.25;
    d->ipc = 1;
    memcpy(d->ipc_kernel, DET_IPC, sizeof DET_IPC);
}

/* Enqueue the set of nimages in sub-batches of at most p->batch, sized as
 * gpu/run.cu's subbatch_size does (evened out, at most two sizes):
 * pupil field, out-of-place C2C, intensity (the first base_steps of these
 * three; as packed pairs when det takes them, gpu_detector_packs), then
 * det's stage when det. */
static void det_set_enqueue(micro_pass *p, gpu_detector *det, int base_steps, long long nimages,
                            cudaStream_t s, gpu_check *chk, char *err)
{
    long long most = (nimages + 1) / 2, nsub;
    int per = (int)(most < p->batch ? most : p->batch);
    nsub = (nimages + per - 1) / per;
    per = (int)((nimages + nsub - 1) / nsub);
    for (long long j0 = 0, k = 0; j0 < nimages; j0 += per, ++k) {
        int n = (int)(nimages - j0 < per ? nimages - j0 : per);
        cufftHandle plan;
        CK(gpu_pupil_field(&p->ps, p->dpp, p->pp.basis != NULL, p->ddesc, p->dcoeff, n, p->field, s,
                           chk));
        CK(gpu_plan_cache_get(&p->pc, chk, n, &plan));
        if (base_steps > 1)
            CK(GPU_CUFFT(chk, cufftExecC2C(plan, p->field, p->spec, CUFFT_FORWARD)));
        float *result;
        if (base_steps > 2 && det && gpu_detector_fuses(det)) { /* as gpu/run.cu fuses */
            CK(gpu_detector_rows_from_fields(det, p->spec, p->dscale, p->dim, n, 0, p->img, chk));
            CK(gpu_detector_finish(det, p->img, n, (int)(k & 1), &result, chk));
            continue;
        }
        if (base_steps > 2 && det && gpu_detector_packs(det, n))
            CK(gpu_psf_intensity_pairs(p->spec, p->dscale, p->dim, n, p->npix, 0, p->img, s, chk));
        else if (base_steps > 2)
            CK(gpu_psf_intensity(p->spec, p->dscale, p->dim, n, p->npix, p->img, s, chk));
        if (det) CK(gpu_detector_apply(det, p->img, n, p->spec, (int)(k & 1), &result, chk));
    }
}

/* What one timed run enqueues: the set (det_set_enqueue's arguments) or,
 * with kind >= 0, one transform per sub-batch (det_fft_step). */
typedef struct {
    micro_pass *p;
    gpu_detector *det;
    int base_steps, kind, n;
    cufftHandle plan;
    long long nimages, nsub;
} det_run;

static void det_run_enqueue(const det_run *r, cudaStream_t s, gpu_check *chk, char *err);

/* Best of 5 timed runs of r (after one that makes the plans), ms. */
static float det_best_ms(const det_run *r, cudaStream_t s, gpu_check *chk, char *err)
{
    cudaEvent_t e0, e1;
    CK(GPU_CUDA(chk, cudaEventCreate(&e0)));
    CK(GPU_CUDA(chk, cudaEventCreate(&e1)));
    float best = 1e30f;
    for (int rep = 0; rep < 6; ++rep) {
        CK(GPU_CUDA(chk, cudaEventRecord(e0, s)));
        det_run_enqueue(r, s, chk, err);
        CK(GPU_CUDA(chk, cudaEventRecord(e1, s)));
        CK(GPU_CUDA(chk, cudaEventSynchronize(e1)));
        float ms;
        CK(GPU_CUDA(chk, cudaEventElapsedTime(&ms, e0, e1)));
        if (rep > 0 && ms < best) best = ms;
    }
    CK(GPU_CUDA(chk, cudaEventDestroy(e0)));
    CK(GPU_CUDA(chk, cudaEventDestroy(e1)));
    return best;
}

/* The whole set through det (NULL: none) after the first base_steps, ms. */
static float det_set_ms(micro_pass *p, gpu_detector *det, int base_steps, long long nimages,
                        cudaStream_t s, gpu_check *chk, char *err)
{
    det_run r = {p, det, base_steps, -1, 0, 0, nimages, 0};
    return det_best_ms(&r, s, chk, err);
}

/* Where the time goes: the set timed cut after each step (the base pass's
 * field, C2C, intensity; then det[v]'s R2C, multiply or fold, C2R, v = 1,
 * 2: gpu_detector.steps), each step's cost the difference of consecutive
 * totals, in us per image (the steps overlap little: one stream). */
static void det_breakdown(micro_pass *p, gpu_detector *det, const char *const *name,
                          long long nimages, cudaStream_t s, gpu_check *chk, char *err)
{
    static const char *const base_step[3] = {"field", "c2c", "intensity"};
    static const char *const det_step[2][3] = {{"r2c", "multiply", "c2r"},
                                               {"r2c", "fold", "c2r_mxm"}};
    static const char *const pair_step[2][3] = {{"c2c_pairs", "multiply_pairs", "c2r"},
                                                {"c2c_pairs", "fold_pairs", "c2r_mxm"}};
    printf("detector_step,mode,step,us_per_image,us_cumulative\n");
    float prev = 0.0f, base = 0.0f;
    for (int b = 1; b <= 3; ++b) {
        float ms = det_set_ms(p, NULL, b, nimages, s, chk, err);
        printf("detector_step,none,%s,%.4f,%.4f\n", base_step[b - 1], (ms - prev) * 1e3 / nimages,
               ms * 1e3 / nimages);
        prev = base = ms;
    }
    for (int v = 1; v < 3; ++v) {
        prev = base;
        for (int k = 1; k <= 3; ++k) {
            det[v].steps = k < 3 ? k : 0;
            float ms = det_set_ms(p, &det[v], 3, nimages, s, chk, err);
            const char *step = det[v].packed ? pair_step[v - 1][k - 1] : det_step[v - 1][k - 1];
            printf("detector_step,%s,%s,%.4f,%.4f\n", name[v], step, (ms - prev) * 1e3 / nimages,
                   ms * 1e3 / nimages);
            prev = ms;
        }
        det[v].steps = 0;
    }
}

/* The A/B of the multiply's and the fold's images per thread
 * (gpu_detector.multiply_per, fold_per; the backend's defaults marked)
 * and the fold kernel's general loop against its unrolled s = 4 one,
 * the whole set as the backend runs it: the R2C path's knobs (packed 0;
 * the packed path takes one pair a thread). */
static void det_variants(micro_pass *p, gpu_detector *det, float none_ms, long long nimages,
                         cudaStream_t s, gpu_check *chk, char *err)
{
    static const int per[4] = {1, 2, 4, 8};
    det[1].packed = det[2].packed = 0;
    printf("detector_variant,mode,images_per_thread,default,us_per_image,ratio_to_none\n");
    for (int v = 1; v < 3; ++v) {
        int *knob = v == 1 ? &det[v].multiply_per : &det[v].fold_per, keep = *knob;
        for (int k = 0; k < 4; ++k) {
            *knob = per[k];
            float ms = det_set_ms(p, &det[v], 3, nimages, s, chk, err);
            printf("detector_variant,%s,%d,%s,%.4f,%.3f\n", v == 1 ? "all" : "all4", per[k],
                   per[k] == keep ? "yes" : "no", ms * 1e3 / nimages, ms / none_ms);
        }
        *knob = keep;
    }
    det[2].fold_unroll = 0;
    float ms = det_set_ms(p, &det[2], 3, nimages, s, chk, err);
    det[2].fold_unroll = 1;
    printf("detector_variant,all4_fold_not_unrolled,%d,no,%.4f,%.3f\n", det[2].fold_per,
           ms * 1e3 / nimages, ms / none_ms);
    det[1].packed = det[2].packed = GPU_DETECTOR_PACKED;
}

/* The packed-pair path (gpu_detector.packed 1) against the R2C one (0)
 * at s = 1 (det[1]) and 4 (det[2]): per path its steps (the forward
 * transform, the multiply or fold, the C2R: the set cut after each, as
 * det_breakdown; us per image, the step's cost the difference from the
 * cut before, the first from the base pass) and its total's ratio to the
 * base pass; then packed / unpacked per s. */
static void det_packed(micro_pass *p, gpu_detector *det, float none_ms, long long nimages,
                       cudaStream_t s, gpu_check *chk, char *err)
{
    static const char *const step[2][2][3] = {
        {{"r2c", "multiply", "c2r"}, {"c2c_pairs", "multiply_pairs", "c2r"}},
        {{"r2c", "fold", "c2r_mxm"}, {"c2c_pairs", "fold_pairs", "c2r_mxm"}}};
    printf("detector_packed,mode,path,default,step,us_per_image,us_cumulative,ratio_to_none\n");
    for (int v = 1; v < 3; ++v) {
        float total[2];
        for (int packed = 0; packed < 2; ++packed) {
            det[v].packed = packed;
            float prev = none_ms;
            for (int k = 1; k <= 3; ++k) {
                det[v].steps = k < 3 ? k : 0;
                float ms = det_set_ms(p, &det[v], 3, nimages, s, chk, err);
                printf("detector_packed,%s,%s,%s,%s,%.4f,%.4f,%.3f\n", v == 1 ? "all" : "all4",
                       packed ? "packed" : "r2c", packed == GPU_DETECTOR_PACKED ? "yes" : "no",
                       step[v - 1][packed][k - 1], (ms - prev) * 1e3 / nimages, ms * 1e3 / nimages,
                       ms / none_ms);
                prev = ms;
            }
            total[packed] = prev;
            det[v].steps = 0;
        }
        det[v].packed = GPU_DETECTOR_PACKED;
        printf("# detector %s: packed / r2c %.3f, to the base pass %.3f (packed) vs %.3f (r2c); "
               "target <= 1.5\n",
               v == 1 ? "all (s = 1)" : "all4 (s = 4)", total[1] / total[0], total[1] / none_ms,
               total[0] / none_ms);
    }
}

/* One transform of the pair A/B (det_fft_figures): kind 0 R2C of n real
 * grids, 1 C2C of n/2 complex ones on the same bytes (a pair packed as one
 * image: re = image 2p, im = 2p+1), 2 C2R of n, 3 C2C inverse of n/2, 4 a
 * device copy of n grids (the bandwidth's reference). */
static void det_fft_step(cufftHandle plan, int kind, micro_pass *p, int n, cudaStream_t s,
                         gpu_check *chk, char *err)
{
    cufftComplex *grid = (cufftComplex *)p->img;
    size_t bytes = (size_t)n * p->npix * p->npix * sizeof(float);
    if (kind == 0) CK(GPU_CUFFT(chk, cufftExecR2C(plan, p->img, p->spec)));
    if (kind == 1) CK(GPU_CUFFT(chk, cufftExecC2C(plan, grid, p->spec, CUFFT_FORWARD)));
    if (kind == 2) CK(GPU_CUFFT(chk, cufftExecC2R(plan, p->spec, p->img)));
    if (kind == 3) CK(GPU_CUFFT(chk, cufftExecC2C(plan, p->spec, grid, CUFFT_INVERSE)));
    if (kind == 4)
        CK(GPU_CUDA(chk, cudaMemcpyAsync(p->spec, p->img, bytes, cudaMemcpyDeviceToDevice, s)));
}

/* The transforms alone, us per image over the set's sub-batches of
 * p->batch (even): R2C of n vs C2C of n/2 (candidate (a) of issue 14: the
 * pair as one complex image) and C2R vs inverse C2C, with a device copy
 * of the grids as the reference. Best of 5 after one untimed. */
static void det_fft_figures(micro_pass *p, long long nimages, cudaStream_t s, gpu_check *chk,
                            char *err)
{
    static const char *const name[5] = {"r2c_n", "c2c_pairs_n/2", "c2r_n", "c2c_inv_pairs_n/2",
                                        "copy_n"};
    static const cufftType type[4] = {CUFFT_R2C, CUFFT_C2C, CUFFT_C2R, CUFFT_C2C};
    int n = p->batch & ~1, dims[2] = {p->npix, p->npix};
    long long nsub = (nimages + n - 1) / n;
    printf("detector_fft,transform,npix,batch,us_per_image\n");
    for (int kind = 0; kind < 5 && n >= 2; ++kind) {
        cufftHandle plan = 0;
        if (kind < 4) {
            int count = kind & 1 ? n / 2 : n;
            CK(GPU_CUFFT(chk,
                         cufftPlanMany(&plan, 2, dims, NULL, 1, 0, NULL, 1, 0, type[kind], count)));
            CK(GPU_CUFFT(chk, cufftSetStream(plan, s)));
        }
        det_run r = {p, NULL, 3, kind, n, plan, nimages, nsub};
        float best = det_best_ms(&r, s, chk, err);
        printf("detector_fft,%s,%d,%d,%.4f\n", name[kind], p->npix, n,
               best * 1e3 / (double)(nsub * n));
        if (kind < 4) CK(GPU_CUFFT(chk, cufftDestroy(plan)));
    }
}

static void det_run_enqueue(const det_run *r, cudaStream_t s, gpu_check *chk, char *err)
{
    if (r->kind < 0) {
        det_set_enqueue(r->p, r->det, r->base_steps, r->nimages, s, chk, err);
        return;
    }
    for (long long k = 0; k < r->nsub; ++k)
        det_fft_step(r->plan, r->kind, r->p, r->n, s, chk, err);
}

/* Device compute of nimages npix^2 images: (a) no detector stage, (b) every
 * effect at oversample 1, (c) every effect at oversample 4, through
 * gpu_detector_apply as gpu/run.cu runs it (its default path: the
 * separable one, gpu/detector_sep.h, at npix a power of two). CSV rows and
 * the ratios (b)/(a), (c)/(a); then both paths, and the cuFFT path's
 * steps and variants (R2C or packed C2C, multiply or fold, C2R). */
static void detector_figures(int npix, int batch, long long nimages)
{
    char err[1024];
    gpu_check chk;
    gpu_check_init(&chk, 0, err, sizeof err);
    chk.fail_at = 0;
    cudaStream_t s;
    CK(GPU_CUDA(&chk, cudaStreamCreate(&s)));
    micro_pass p;
    micro_pass_create(&p, npix, batch, s, &chk, err);
    static const char *const name[3] = {"none", "all", "all4"};
    static const int oversample[3] = {0, 1, 4};
    gpu_detector det[3];
    memset(det, 0, sizeof det);
    float ms[3];
    printf("detector_device,mode,npix,out_npix,images,batch,ms_total,us_per_image,ratio_to_none\n");
    for (int v = 0; v < 3; ++v) {
        psf_problem d;
        make_desc(npix, batch, &d);
        if (v > 0) det_all_effects(&d.detector, oversample[v]);
        CK(gpu_detector_create(&det[v], &d, batch, s, &chk));
        ms[v] = det_set_ms(&p, v > 0 ? &det[v] : NULL, 3, nimages, s, &chk, err);
        printf("detector_device,%s,%d,%d,%lld,%d,%.3f,%.4f,%.3f\n", name[v], npix,
               psf_detector_out_npix(&d), nimages, batch, ms[v], ms[v] * 1e3 / nimages,
               ms[v] / ms[0]);
    }
    printf("# detector all effects / none, device compute: %.3f (oversample 1, %d -> %d), "
           "%.3f (oversample 4, %d -> %d); target <= 1.5\n",
           ms[1] / ms[0], npix, npix, ms[2] / ms[0], npix, npix / 4);
    /* The separable path (the default where it applies) against the cuFFT
     * one, same set, same run; the rows below time the cuFFT path's steps. */
    printf("detector_path,mode,path,default,ms_total,us_per_image,ratio_to_none\n");
    static const char *const path_name[4] = {"separable_fused", "separable", "cufft",
                                             "separable_fused_rows_only"};
    for (int v = 1; v < 3; ++v) {
        int sep = det[v].separable, fuse = det[v].fuse;
        for (int path = 0; path < 4; ++path) {
            det[v].separable = path != 2 && sep;
            det[v].fuse = (path == 0 || path == 3) && fuse;
            det[v].steps = path == 3;
            if (path != 2 && !sep) continue;
            float t = det_set_ms(&p, &det[v], 3, nimages, s, &chk, err);
            printf("detector_path,%s,%s,%s,%.3f,%.4f,%.3f\n", name[v], path_name[path],
                   path == 0 && sep && fuse ? "yes" : "no", t, t * 1e3 / nimages, t / ms[0]);
        }
        det[v].steps = 0;
        det[v].fuse = fuse;
        det[v].separable = 0;
    }
    det_breakdown(&p, det, name, nimages, s, &chk, err);
    det_variants(&p, det, ms[0], nimages, s, &chk, err);
    det_packed(&p, det, ms[0], nimages, s, &chk, err);
    det_fft_figures(&p, nimages, s, &chk, err);
    for (int v = 0; v < 3; ++v)
        gpu_detector_destroy(&det[v]);
    micro_pass_destroy(&p);
    CK(GPU_CUDA(&chk, cudaStreamDestroy(s)));
}

/* Arguments of part 4 alone: detector [IMAGES [BATCH]]. Returns 0, or -1
 * (usage). */
static int detector_args(int argc, char **argv, long long *images, int *batch)
{
    *images = argc > 2 ? atoll(argv[2]) : 10000;
    *batch = argc > 3 ? atoi(argv[3]) : DET_BATCH_256;
    if (strcmp(argv[1], "detector") != 0 || argc > 4 || *images < 1 || *batch < 1 || *batch > 65535)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    long long det_images = 10000;
    int det_batch = DET_BATCH_256;
    if (argc > 1 && detector_args(argc, argv, &det_images, &det_batch) != 0) {
        fprintf(stderr, "usage: %s [detector [IMAGES [BATCH]]]\n", argv[0]);
        return 2;
    }
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        char why[256];
        gpu_no_device_reason(e, why, sizeof why);
        printf("gpu_micro: skipped: no CUDA device (%s)\n", why);
        return 77;
    }
    if (argc > 1) {
        detector_figures(256, det_batch, det_images);
        return 0;
    }
    double t0 = now_us();
    if (cudaFree(0) != cudaSuccess) die("cudaFree(0)", "CUDA start failed");
    printf("CUDA start (cudaFree(0)): %.1f ms\n", (now_us() - t0) * 1e-3);
    plan_figures(256, 64);
    plan_figures(1024, 4);
    plan_figures(2048, 1);
    plan_figures(101, 16);
    plan_figures(512, 16);
    host_figures(256, 1024, 2000, 10);
    host_figures(64, 1024, 2000, 20);
    host_figures(512, 256, 500, 10);
    host_figures(1024, 64, 200, 5);
    host_figures(2048, 16, 50, 5);
    device_figures(256, 256, 20);
    device_figures(64, 1024, 20);
    device_figures(1024, 32, 20);
    device_figures(2048, 8, 20);
    device_figures(4096, 1, 20);
    host_figures(4096, 4, 20, 5);
    detector_figures(256, DET_BATCH_256, 10000);
    return 0;
}
