/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU backend's single-image plan (gpu/memory_plan.cu: one grid
 * transformed in place, one image buffer, pupils built in them and kept
 * without an index) against the CPU backend: at N = 4096, the prime
 * N = 4099 (cuFFT's Bluestein path) and the odd N = 4107, one and two
 * components (two pupils, the second field's intensity added over a
 * second pass), with and without the kept Zernike basis, the same images
 * to relative L2 <= 1e-5; a job run after another is the same bits as run
 * first (the grid is zeroed before each field: the in-place transform
 * leaves it full). With device memory held by the test, create refuses
 * the plan naming its need, which is memory_need's figure plus the cuFFT
 * work area the message gives. Skipped (exit 77) without the GPU module or
 * a CUDA device. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifdef PSFSIM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "backend/backend.h"
#include "tests/support/psf_harness.h"
#include "tests/support/testutil.h"

#define TOL 1e-5

static const psf_backend_ops *gpu;
static const int g_n[4] = {2, 2, 3, 4}, g_m[4] = {0, 2, 1, 0};
static const double g_ca[4] = {0.05, -0.1, 0.08, 0.2}, g_cb[4] = {-0.2, 0.15, 0.0, -0.05};

/* N x N, one image per run (the single-image plan from N = 4096), an
 * obscured circular pupil of N/2 samples across D = 1 m, four modes. */
static psf_problem lean_problem(int npix)
{
    psf_problem p;
    memset(&p, 0, sizeof p);
    p.npix = npix;
    p.aperture.shape = APERTURE_CIRCULAR;
    p.aperture.diameter_m = 1.0;
    p.aperture.obscuration = 0.3;
    p.modes.nterms = 4;
    p.modes.n = g_n;
    p.modes.m = g_m;
    p.max_batch = 1;
    p.nimages = 4;
    p.pupil_samples = npix / 2 + 1;
    p.pupil_pitches = 2;
    return p;
}

/* ncomp components: 500 nm at pitch 2/N (Q = 2), then 600 nm at 5/6 of it. */
static psf_job lean_job(int npix, int ncomp, const double *coeff)
{
    psf_job job;
    memset(&job, 0, sizeof job);
    job.ncomp = ncomp;
    for (int c = 0; c < ncomp; ++c) {
        job.comp[c].wavelength_m = c ? 600e-9 : 500e-9;
        job.comp[c].dx_m = (c ? 5.0 / 6.0 : 1.0) * 2.0 / npix;
        job.comp[c].scale = c ? 0.7e-9 : 1e-9;
        job.comp[c].coeff_waves = coeff;
    }
    return job;
}

/* The images of jobs[0 .. n-1], one run each, on ops. */
static float *run_jobs(const psf_backend_ops *ops, const psf_problem *p, const psf_job *jobs, int n)
{
    char err[1024] = "";
    psf_backend *b = NULL;
    int rc = ops->create(p, NULL, &b, err, sizeof err);
    if (rc != 0) printf("%s create: %s\n", ops->name, err);
    assert_int_equal(rc, 0);
    size_t plane = (size_t)p->npix * p->npix;
    float *img = malloc((size_t)n * plane * sizeof *img);
    assert_non_null(img);
    for (int k = 0; k < n; ++k) {
        rc = ops->run(b, &jobs[k], 1, img + (size_t)k * plane, err, sizeof err);
        if (rc != 0) printf("%s run: %s\n", ops->name, err);
        assert_int_equal(rc, 0);
    }
    ops->destroy(b);
    return img;
}

/* Jobs A, B, A on both backends: each image within TOL of the CPU's, the
 * second A the same bits as the first. */
static void compare(int npix, int ncomp, const char *what)
{
    psf_problem p = lean_problem(npix);
    psf_job jobs[3] = {lean_job(npix, ncomp, g_ca), lean_job(npix, ncomp, g_cb),
                       lean_job(npix, ncomp, g_ca)};
    size_t plane = (size_t)npix * npix;
    float *cpu = run_jobs(&psf_backend_cpu, &p, jobs, 2);
    float *dev = run_jobs(gpu, &p, jobs, 3);
    double worst = 0.0, peak = 0.0;
    for (int k = 0; k < 2; ++k) {
        double d = tu_rel_l2(dev + k * plane, cpu + k * plane, plane);
        if (!(d <= worst)) worst = d; /* NaN sticks */
    }
    for (size_t i = 0; i < plane; ++i)
        peak = fmax(peak, cpu[i]);
    printf("N = %d, %d component(s)%s: worst rel L2 %.3g to the CPU (peak %.4g)\n", npix, ncomp,
           what, worst, peak);
    assert_true(peak > 0.0);
    assert_true(worst <= TOL);
    assert_memory_equal(dev + 2 * plane, dev, plane * sizeof *dev);
    free(cpu);
    free(dev);
}

static void test_n4096(void **state)
{
    (void)state;
    compare(4096, 1, "");
}

/* 4099 is prime (past cuFFT's direct radices: Bluestein, as 46341 = 9 x 19
 * x 271 is); 4107 = 3 x 37^2 is odd with direct radices. */
static void test_n4099_two_components(void **state)
{
    (void)state;
    compare(4099, 2, "");
}

static void test_n4107(void **state)
{
    (void)state;
    compare(4107, 1, "");
}

/* Pupils kept without their basis: field_open_kernel<false> evaluates the
 * Zernike modes per image. */
static void test_no_basis(void **state)
{
    (void)state;
    setenv("PSFSIM_GPU_BASIS_MAX_MB", "0", 1);
    compare(4096, 2, " without the basis");
    unsetenv("PSFSIM_GPU_BASIS_MAX_MB");
}

#ifdef PSFSIM_HAVE_CUDA
/* "need X MiB (... cuFFT's work area W MiB ...)" from create's refusal. */
static void parse_need(const char *err, double *need, double *work)
{
    const char *a = strstr(err, "need "), *w = strstr(err, "cuFFT's work area ");
    assert_non_null(a);
    assert_non_null(w);
    assert_int_equal(sscanf(a, "need %lf MiB", need), 1);
    assert_int_equal(sscanf(w, "cuFFT's work area %lf MiB", work), 1);
}
#endif

/* With all but 512 MiB of the device held here, an 8192 x 8192 image (12
 * N^2 = 768 MiB of buffers alone) is refused, with the need memory_need
 * gives plus the work area, to the message's 0.1 MiB. */
static void test_refused_exactly(void **state)
{
    (void)state;
#ifdef PSFSIM_HAVE_CUDA
    size_t free_b = 0, total_b = 0;
    assert_int_equal(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
    void *held = NULL;
    size_t keep = (size_t)512 << 20;
    assert_true(free_b > keep);
    assert_int_equal(cudaMalloc(&held, free_b - keep), cudaSuccess);
    psf_problem p = lean_problem(8192);
    psf_memory_need m;
    char err[1024] = "";
    assert_int_equal(gpu->memory_need(&p, NULL, &m, err, sizeof err), 0);
    psf_backend *b = NULL;
    int rc = gpu->create(&p, NULL, &b, err, sizeof err);
    assert_int_equal(cudaFree(held), cudaSuccess);
    printf("refused: %s\n", err);
    assert_int_equal(rc, -1);
    assert_null(b);
    assert_non_null(strstr(err, "not enough device memory for one 8192x8192 image"));
    double need, work;
    parse_need(err, &need, &work);
    double want = (double)m.device / 1048576.0 + work;
    printf("memory_need %.1f MiB + work area %.1f MiB = %.1f MiB; the message: %.1f MiB\n",
           m.device / 1048576.0, work, want, need);
    assert_true(fabs(need - want) <= 0.15);
    assert_true(need >= 12.0 * 8192 * 8192 / 1048576.0);
#else
    skip();
#endif
}

int main(void)
{
    unsetenv("PSFSIM_GPU_FAIL_AT");
    unsetenv("PSFSIM_GPU_BASIS_MAX_MB");
    char why[1100];
    if (!(gpu = harness_gpu(why, sizeof why))) { /* tests/support/psf_harness.h */
        printf("skipped: %s\n", why);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_n4096),           cmocka_unit_test(test_n4099_two_components),
        cmocka_unit_test(test_n4107),           cmocka_unit_test(test_no_basis),
        cmocka_unit_test(test_refused_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
