/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage's fold (backend/detector.h, psf_detector_fold: the
 * detector image's half spectrum as the sum of the grid spectrum's aliases,
 * then one M x M C2R; the GPU's path when it samples) against the CPU's
 * stage (cpu/detector.h: the N x N C2R, then D = s^2 G[i s + o][j s + o]),
 * both with FFTW: the same detector image to float rounding (relative L2
 * and peak-relative max error <= 1e-6) for s = 1, 2, 3, 4, even and odd M
 * (the offset o's phase), even and odd N, every effect on and an
 * asymmetric IPC kernel. Control: without the offset's phase the odd-M
 * images differ (> 1e-3), so the check can fail. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fftw3.h>

#include "backend/backend.h"
#include "backend/detector.h"
#include "cpu/detector.h"
#include "tests/support/testutil.h"

#define TOL 1e-6

/* Asymmetric: the fold must keep the IPC kernel's phase. */
static const double IPC[9] = {0.001, 0.02, 0.003, 0.015, 0.92, 0.017, 0.002, 0.019, 0.003};

static psf_problem problem(int npix, int s)
{
    psf_problem p;
    memset(&p, 0, sizeof p);
    p.npix = npix;
    psf_detector *d = &p.detector;
    d->oversample = s;
    d->sample = 1;
    d->pixel_response = 1;
    d->jitter_px[0] = 0.15;
    d->jitter_px[1] = 0.3;
    d->diffusion_px = 0.25;
    d->ipc = 1;
    memcpy(d->ipc_kernel, IPC, sizeof IPC);
    return p;
}

/* A positive grid image with no symmetry: two off-axis Gaussian cores, a
 * tilted ridge, and a small pseudo-random floor (an LCG). */
static void grid_image(int npix, float *g)
{
    unsigned long long r = 12345;
    for (int i = 0; i < npix; ++i)
        for (int j = 0; j < npix; ++j) {
            double y = i - npix / 2 - 1.3, x = j - npix / 2 + 2.1;
            double v = exp(-(x * x + y * y) / 6.0) + 0.4 * exp(-((x - 7) * (x - 7) + y * y) / 2.0) +
                       0.05 * exp(-(x + 0.5 * y) * (x + 0.5 * y) / 3.0);
            r = r * 6364136223846793005ULL + 1442695040888963407ULL;
            g[(size_t)i * npix + j] = (float)(v + 1e-3 * (double)(r >> 40) / (double)(1 << 24));
        }
}

/* The CPU stage's detector image (M^2). */
static float *reference(const psf_problem *p, const float *grid)
{
    cpu_detector d;
    char err[256];
    assert_int_equal(cpu_detector_create(&d, p, err, sizeof err), 0);
    cpu_detector_work w;
    assert_int_equal(cpu_detector_work_alloc(&d, &w), 0);
    int m = psf_detector_out_npix(p);
    float *out = malloc((size_t)m * m * sizeof *out);
    assert_non_null(out);
    cpu_detector_apply(&d, &w, grid, out);
    cpu_detector_work_free(&w);
    cpu_detector_destroy(&d);
    return out;
}

/* The folded image: R2C (N), psf_detector_fold, C2R (M); without the
 * offset's phase when no_phase (the control). */
static float *folded(const psf_problem *p, const float *grid, int no_phase)
{
    int n = p->npix, s = p->detector.oversample, m = n / s, nc = n / 2 + 1;
    float *real = fftwf_malloc((size_t)n * n * sizeof *real);
    fftwf_complex *spec = fftwf_malloc((size_t)n * nc * sizeof *spec);
    fftwf_complex *z = fftwf_malloc((size_t)m * (m / 2 + 1) * sizeof *z);
    float *out = fftwf_malloc((size_t)m * m * sizeof *out);
    float *otf = malloc(psf_detector_otf_bytes(n)), *phase = malloc(2 * (size_t)n * sizeof *phase);
    assert_true(real && spec && z && out && otf && phase);
    memcpy(real, grid, (size_t)n * n * sizeof *real);
    fftwf_plan r2c = fftwf_plan_dft_r2c_2d(n, n, real, spec, FFTW_ESTIMATE);
    fftwf_plan c2r = fftwf_plan_dft_c2r_2d(m, m, z, out, FFTW_ESTIMATE);
    assert_true(r2c && c2r);
    fftwf_execute(r2c);
    psf_detector_otf(&p->detector, n, otf);
    psf_detector_fold_phase(n, s, phase);
    psf_detector_fold((const float *)spec, otf, no_phase ? NULL : phase, n, s, (float *)z);
    fftwf_execute(c2r);
    float *res = malloc((size_t)m * m * sizeof *res);
    assert_non_null(res);
    memcpy(res, out, (size_t)m * m * sizeof *res);
    fftwf_destroy_plan(r2c);
    fftwf_destroy_plan(c2r);
    fftwf_free(real);
    fftwf_free(spec);
    fftwf_free(z);
    fftwf_free(out);
    free(otf);
    free(phase);
    return res;
}

/* Largest |a - b| over the largest |b|. */
static double peak_rel(const float *a, const float *b, size_t len)
{
    double d = 0.0, peak = 0.0;
    for (size_t i = 0; i < len; ++i) {
        double e = fabs((double)a[i] - b[i]);
        if (e > d) d = e;
        if (fabs(b[i]) > peak) peak = fabs(b[i]);
    }
    return d / peak;
}

/* The fold's image against the stage's for the grid npix, oversample s
 * (no_phase as folded's). Returns the relative L2 difference. */
static double compare(int npix, int s, int no_phase)
{
    psf_problem p = problem(npix, s);
    float *grid = malloc((size_t)npix * npix * sizeof *grid);
    assert_non_null(grid);
    grid_image(npix, grid);
    float *ref = reference(&p, grid), *fold = folded(&p, grid, no_phase);
    int m = npix / s;
    size_t len = (size_t)m * m;
    double l2 = tu_rel_l2(fold, ref, len), mx = peak_rel(fold, ref, len);
    printf("N=%-4d s=%d M=%-4d o=%d %-10s rel L2 %.3g, max/peak %.3g\n", npix, s, m,
           psf_detector_sample_offset(npix, s), no_phase ? "(no phase)" : "fold", l2, mx);
    if (!no_phase) {
        assert_true(l2 <= TOL);
        assert_true(mx <= TOL);
    }
    free(grid);
    free(ref);
    free(fold);
    return l2;
}

static void test_fold_equals_stage(void **state)
{
    (void)state;
    static const int cases[][2] = {{64, 1}, {96, 2}, {90, 2}, {96, 3}, {75, 3},
                                   {45, 3}, {96, 4}, {60, 4}, {84, 4}, {100, 5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        compare(cases[i][0], cases[i][1], 0);
}

static void test_controls(void **state)
{
    (void)state;
    assert_true(compare(90, 2, 1) > 1e-3); /* odd M: o = 1 */
    assert_true(compare(60, 4, 1) > 1e-3); /* odd M: o = 2 */
    assert_true(compare(75, 3, 1) > 1e-3); /* odd N and M: o = 1 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold_equals_stage),
        cmocka_unit_test(test_controls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
