/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage's fold (backend/detector.h, psf_detector_fold: the
 * detector image's half spectrum as the sum of the grid spectrum's aliases,
 * then one M x M C2R; the GPU's path when it samples) against the CPU's
 * stage (cpu/detector.h: the N x N C2R, then D = s^2 G[i s + o][j s + o]),
 * both with FFTW: the same detector image to float rounding (relative L2
 * and peak-relative max error <= 1e-6) for s = 1, 2, 3, 4, even and odd M
 * (the offset o's phase), even and odd N, every effect on and an
 * asymmetric IPC kernel. Control: without the offset's phase the odd-M
 * images differ (> 1e-3), so the check can fail. The packed pair
 * (psf_detector_fold_pair, the GPU's packed path: z = g1 + i g2, one C2C,
 * both images folded from it) against the unpacked fold of each, s = 1..5,
 * even and odd N and M: <= 2.2e-7 with the pair's spectrum assembled from
 * the images' own R2C (the separation alone), <= 1e-6 with its own C2C;
 * control: image 1 against image 2's differs (> 1e-2). */
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
#include "tests/support/detector_cases.h"
#include "tests/support/testutil.h"

#define TOL 1e-6

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
    psf_detector_fold_otf(&p->detector, n, otf);
    psf_detector_fold_phase(&p->detector, n, phase);
    psf_detector_fold((const float *)spec, otf, no_phase ? NULL : phase, n, s, (float *)z);
    fftwf_execute(c2r);
    float *res = malloc((size_t)m * m * sizeof *res);
    assert_non_null(res);
    memcpy(res, out, (size_t)m * m * sizeof *res);
    psf_detector_clamp(res, (size_t)m * m); /* the stage's last step, as the GPU's */
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
 * (no_phase as folded's), psfsim's detector or WebbPSF's blocks (the CPU
 * bins the convolved grid, the fold's table holds the block's sum).
 * Returns the relative L2 difference. */
static double compare_with(int npix, int s, int no_phase, int blocks)
{
    psf_problem p = detector_case_problem(npix, s, 1);
    p.detector.blocks = blocks;
    float *grid = malloc((size_t)npix * npix * sizeof *grid);
    assert_non_null(grid);
    detector_case_grid(npix, 0, grid);
    float *ref = reference(&p, grid), *fold = folded(&p, grid, no_phase);
    int m = npix / s;
    size_t len = (size_t)m * m;
    double l2 = tu_rel_l2(fold, ref, len), mx = peak_rel(fold, ref, len);
    printf("N=%-4d s=%d M=%-4d o=%d %-10s%s rel L2 %.3g, max/peak %.3g\n", npix, s, m,
           psf_detector_sample_offset(&p.detector, npix), no_phase ? "(no phase)" : "fold",
           blocks ? " blocks" : "", l2, mx);
    if (!no_phase) {
        assert_true(l2 <= TOL);
        assert_true(mx <= TOL);
    }
    free(grid);
    free(ref);
    free(fold);
    return l2;
}

static double compare(int npix, int s, int no_phase)
{
    return compare_with(npix, s, no_phase, 0);
}

static void test_fold_equals_stage(void **state)
{
    (void)state;
    static const int cases[][2] = {{64, 1}, {96, 2}, {90, 2}, {96, 3}, {75, 3},
                                   {45, 3}, {96, 4}, {60, 4}, {84, 4}, {100, 5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        compare(cases[i][0], cases[i][1], 0);
}

/* X(k) of a real image's R2C half spectrum x at any (k1, k2) (Hermitian). */
static void full_at(const fftwf_complex *x, int n, int k1, int k2, float *v)
{
    int nc = n / 2 + 1, st = k2 < nc;
    const float *e = x[st ? (size_t)k1 * nc + k2 : (size_t)(k1 ? n - k1 : 0) * nc + (n - k2)];
    v[0] = e[0];
    v[1] = st ? e[1] : -e[1];
}

/* zs = X1 + i X2 from the two images' own R2C spectra (from_r2c: the
 * separation alone, no C2C's rounding in the comparison). */
static void pair_from_r2c(const float *g1, const float *g2, int n, fftwf_complex *zs)
{
    size_t nh = (size_t)n * (n / 2 + 1);
    float *real = fftwf_malloc((size_t)n * n * sizeof *real);
    fftwf_complex *x = fftwf_malloc(2 * nh * sizeof *x);
    assert_true(real && x);
    fftwf_plan r2c = fftwf_plan_dft_r2c_2d(n, n, real, x, FFTW_ESTIMATE);
    assert_non_null(r2c);
    for (int h = 0; h < 2; ++h) {
        memcpy(real, h ? g2 : g1, (size_t)n * n * sizeof *real);
        fftwf_execute_dft_r2c(r2c, real, x + h * nh);
    }
    for (int k1 = 0; k1 < n; ++k1)
        for (int k2 = 0; k2 < n; ++k2) {
            float a[2], b[2];
            full_at(x, n, k1, k2, a);
            full_at(x + nh, n, k1, k2, b);
            zs[(size_t)k1 * n + k2][0] = a[0] - b[1];
            zs[(size_t)k1 * n + k2][1] = a[1] + b[0];
        }
    fftwf_destroy_plan(r2c);
    fftwf_free(real);
    fftwf_free(x);
}

/* The packed pair's detector images (psf_detector_fold_pair: one C2C of
 * z = g1 + i g2, or pair_from_r2c when from_r2c, the fold of both, two
 * M x M C2R) into d1, d2 (M^2 each). */
static void folded_pair(const psf_problem *p, const float *g1, const float *g2, int from_r2c,
                        float *d1, float *d2)
{
    int n = p->npix, s = p->detector.oversample, m = n / s;
    size_t nn = (size_t)n * n, nz = (size_t)m * (m / 2 + 1), mm = (size_t)m * m;
    fftwf_complex *zs = fftwf_malloc(nn * sizeof *zs), *z = fftwf_malloc(2 * nz * sizeof *z);
    float *out = fftwf_malloc(mm * sizeof *out);
    float *otf = malloc(psf_detector_otf_bytes(n)), *phase = malloc(2 * (size_t)n * sizeof *phase);
    assert_true(zs && z && out && otf && phase);
    fftwf_plan c2c = fftwf_plan_dft_2d(n, n, zs, zs, FFTW_FORWARD, FFTW_ESTIMATE);
    fftwf_plan c2r = fftwf_plan_dft_c2r_2d(m, m, z, out, FFTW_ESTIMATE);
    assert_true(c2c && c2r);
    for (size_t i = 0; i < nn; ++i) {
        zs[i][0] = g1[i];
        zs[i][1] = g2[i];
    }
    if (from_r2c)
        pair_from_r2c(g1, g2, n, zs);
    else
        fftwf_execute(c2c);
    psf_detector_fold_otf(&p->detector, n, otf);
    psf_detector_fold_phase(&p->detector, n, phase);
    psf_detector_fold_pair((const float *)zs, otf, phase, n, s, (float *)z, (float *)(z + nz));
    for (int h = 0; h < 2; ++h) {
        fftwf_execute_dft_c2r(c2r, z + h * nz, out);
        psf_detector_clamp(out, mm); /* as folded's */
        memcpy(h ? d2 : d1, out, mm * sizeof *out);
    }
    fftwf_destroy_plan(c2c);
    fftwf_destroy_plan(c2r);
    fftwf_free(zs);
    fftwf_free(z);
    fftwf_free(out);
    free(otf);
    free(phase);
}

/* The packed pair's images against the unpacked fold of each (folded) for
 * the grid npix, oversample s: both <= tol relative (L2 and peak-relative
 * max): PAIR_TOL with the pair's spectrum from the images' R2C (the
 * separation and the fold's arithmetic alone), TOL with its own C2C (the
 * GPU's path: the two FFTs' rounding differs). Returns the relative L2 of
 * image 1 against image `against` (1: its own; 2: the other's, the control). */
#define PAIR_TOL 2.2e-7
static double compare_pair(int npix, int s, int from_r2c, int against)
{
    psf_problem p = detector_case_problem(npix, s, 1);
    int m = npix / s;
    size_t nn = (size_t)npix * npix, mm = (size_t)m * m;
    float *g1 = malloc(nn * sizeof *g1), *g2 = malloc(nn * sizeof *g2);
    float *d1 = malloc(mm * sizeof *d1), *d2 = malloc(mm * sizeof *d2);
    assert_true(g1 && g2 && d1 && d2);
    detector_case_grid(npix, 0, g1);
    detector_case_grid(npix, 1, g2);
    folded_pair(&p, g1, g2, from_r2c, d1, d2);
    float *r1 = folded(&p, g1, 0), *r2 = folded(&p, g2, 0);
    double l1 = tu_rel_l2(d1, against == 1 ? r1 : r2, mm), l2 = tu_rel_l2(d2, r2, mm);
    double x1 = peak_rel(d1, r1, mm), x2 = peak_rel(d2, r2, mm);
    double tol = from_r2c ? PAIR_TOL : TOL;
    printf("N=%-4d s=%d M=%-4d pair %-8s %s: rel L2 %.3g %.3g, max/peak %.3g %.3g\n", npix, s, m,
           from_r2c ? "from R2C" : "C2C", against == 1 ? "vs unpacked" : "(control)", l1, l2, x1,
           x2);
    if (against == 1) {
        assert_true(l1 <= tol && l2 <= tol);
        assert_true(x1 <= tol && x2 <= tol);
    }
    free(g1);
    free(g2);
    free(d1);
    free(d2);
    free(r1);
    free(r2);
    return l1;
}

static void test_pair_equals_unpacked(void **state)
{
    (void)state;
    static const int cases[][2] = {{64, 1}, {45, 1}, {96, 2}, {90, 2}, {96, 3},  {75, 3},
                                   {45, 3}, {96, 4}, {60, 4}, {84, 4}, {100, 5}, {95, 5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        for (int from_r2c = 0; from_r2c < 2; ++from_r2c)
            compare_pair(cases[i][0], cases[i][1], from_r2c, 1);
    /* Control: image 1 of the pair is not image 2's (the separation matters). */
    assert_true(compare_pair(60, 4, 0, 2) > 1e-2);
    assert_true(compare_pair(75, 3, 1, 2) > 1e-2);
}

/* WebbPSF's blocks (output.orientation "poppy", issue 26): the fold of the
 * table with the block's sum B in it (psf_detector_fold_otf, o = 0) is the
 * CPU stage's binned grid, even and odd s, M and N. Control: the same fold
 * without B (psfsim's table, no box) differs. */
static void test_fold_equals_binned_stage(void **state)
{
    (void)state;
    static const int cases[][2] = {{64, 1}, {96, 2}, {90, 2}, {96, 3}, {75, 3},
                                   {96, 4}, {60, 4}, {84, 4}, {100, 5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        compare_with(cases[i][0], cases[i][1], 0, 1);
    for (int s = 2; s <= 4; s += 2) {
        psf_problem p = detector_case_problem(64, s, 1);
        p.detector.blocks = 1;
        float *otf = malloc(psf_detector_otf_bytes(64)), *fotf = malloc(psf_detector_otf_bytes(64));
        assert_true(otf && fotf);
        psf_detector_otf(&p.detector, 64, otf);
        psf_detector_fold_otf(&p.detector, 64, fotf);
        size_t len = psf_detector_otf_bytes(64) / sizeof(float);
        assert_true(tu_rel_l2(otf, fotf, len) > 1e-2); /* B is there */
        free(otf);
        free(fotf);
    }
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
        cmocka_unit_test(test_fold_equals_binned_stage),
        cmocka_unit_test(test_controls),
        cmocka_unit_test(test_pair_equals_unpacked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
