/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-segment wavefront terms (psf_problem.seg_modes, optics/seg_wavefront.h)
 * on the CPU backend, against closed forms, with raw images (scale 1:
 * |F{A e^{i 2 pi W}}|^2, the DFT of the sampled pupil):
 *  - two segments (0 and 1 of one ring, 0.1 m gaps), a half-wave piston on
 *    segment 1: F = F0 - F1, so the axis is dark (F0(0) = sum of segment 0's
 *    samples, F1(0) segment 1's: equal areas to the grey edges' rounding),
 *    I_0 + I_pi = 2 (|F0|^2 + |F1|^2) exactly (the parallelogram law; F0, F1
 *    computed alone), and I_pi = |F0|^2 2 (1 - cos(2 pi k.d / (N dx))), the
 *    two-aperture fringes (Goodman, Fourier Optics, 4.2: F1 = F0 shifted by
 *    the centres' separation d), to the sampling of the shifted segment;
 *  - a full ring with half-wave pistons on segments 1, 3, 5: the axis
 *    intensity is |sum_s (+-1) F_s(0)|^2 from each segment's own image;
 *  - a tip (Noll 2) or tilt (Noll 3) on one segment of 2 c / R_s waves per
 *    metre moves its pattern by 2 c N dx / R_s pixels along x or y
 *    (a linear phase shifts the DFT, Goodman 2.1), R_s = f / sqrt3. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "optics/aperture.h"

#define N 256
#define NS 128 /* pupil samples across D */
#define WL 1e-6
#define F2F 1.0
#define GAP 0.1

static const int piston_n[1] = {0}, piston_m[1] = {0};
static const int tip_n[2] = {1, 1}, tip_m[2] = {1, -1};

/* Segments of one ring (f = 1 m, 0.1 m gaps) with only those in keep[0..nkeep-1]. */
static psf_aperture ring(const int *keep, int nkeep)
{
    psf_aperture a;
    memset(&a, 0, sizeof a);
    a.shape = APERTURE_SEGMENTED;
    a.seg.flat_to_flat_m = F2F;
    a.seg.gap_m = GAP;
    a.seg.rings = 1;
    a.seg.missing[0] = 0x7FULL;
    for (int i = 0; i < nkeep; ++i)
        a.seg.missing[0] &= ~(1ULL << keep[i]);
    a.diameter_m = 4.0; /* every set the same grid: holds the whole ring (3.35 m) */
    return a;
}

/* The raw image of aperture a with segment modes (nt, n, m) and
 * coefficients c[7 * nt] (waves), into img[N * N]. */
static void image(const psf_aperture *a, int nt, const int *n, const int *m, const double *c,
                  float *img)
{
    psf_problem p;
    memset(&p, 0, sizeof p);
    p.npix = N;
    p.aperture = *a;
    p.seg_modes.nterms = nt;
    p.seg_modes.n = n;
    p.seg_modes.m = m;
    p.max_batch = 1;
    p.nimages = 1;
    assert_int_equal(psf_coeff_count(&p), 7 * nt);
    psf_job job;
    memset(&job, 0, sizeof job);
    job.ncomp = 1;
    job.comp[0].wavelength_m = WL;
    job.comp[0].dx_m = a->diameter_m / NS;
    job.comp[0].scale = 1.0;
    job.comp[0].coeff_waves = c;
    psf_backend *b = NULL;
    char err[512] = "";
    if (psf_backend_cpu.create(&p, NULL, &b, err, sizeof err) != 0) fail_msg("%s", err);
    if (psf_backend_cpu.run(b, &job, 1, img, err, sizeof err) != 0) fail_msg("%s", err);
    psf_backend_cpu.destroy(b);
}

static double peak(const float *img)
{
    double p = 0.0;
    for (size_t i = 0; i < (size_t)N * N; ++i)
        p = img[i] > p ? img[i] : p;
    return p;
}

static float *grid(void)
{
    float *g = calloc((size_t)N * N, sizeof *g);
    assert_non_null(g);
    return g;
}

static void test_two_segments_half_wave(void **state)
{
    (void)state;
    const int both[2] = {0, 1}, only0[1] = {0}, only1[1] = {1};
    psf_aperture a2 = ring(both, 2), a0 = ring(only0, 1), a1 = ring(only1, 1);
    double c0[7] = {0}, cpi[7] = {0};
    cpi[1] = 0.5; /* Noll 1 is 1 over the segment: 0.5 waves RMS = half a wave */
    float *i0 = grid(), *ipi = grid(), *f0 = grid(), *f1 = grid();
    image(&a2, 1, piston_n, piston_m, c0, i0);
    image(&a2, 1, piston_n, piston_m, cpi, ipi);
    image(&a0, 0, NULL, NULL, NULL, f0);
    image(&a1, 0, NULL, NULL, NULL, f1);
    size_t axis = (size_t)(N / 2) * N + N / 2;
    double top = peak(i0);
    printf("axis: I_0 %.6g I_pi %.3g (ratio %.2g)\n", i0[axis], ipi[axis], ipi[axis] / i0[axis]);
    /* sqrt(I_pi(0)) = |A0 - A1|: the segments' sampled areas differ by the
     * grey edges' rounding only, well under 1e-3 of A. */
    assert_true(ipi[axis] <= 1e-6 * i0[axis]);
    assert_true(fabs(i0[axis] - top) <= 1e-6 * top); /* in phase: the axis is the peak */
    /* The parallelogram law, pixel by pixel (float transforms: 1e-5 of the peak). */
    double worst = 0.0;
    for (size_t i = 0; i < (size_t)N * N; ++i)
        worst = fmax(worst, fabs(i0[i] + ipi[i] - 2.0 * (f0[i] + f1[i])));
    printf("parallelogram: worst %.3g of the peak\n", worst / top);
    assert_true(worst <= 1e-5 * top);
    /* The fringes: d = p (cos 30, sin 30), k.d / (N dx) in cycles. */
    double p = F2F + GAP, dx = a2.diameter_m / NS, dxs = p * sqrt(3.0) / 2.0, dys = p / 2.0;
    double fw = 0.0, best = -1.0, best_delta = 0.0;
    for (int r = 0; r < N; ++r)
        for (int c = 0; c < N; ++c) {
            size_t i = (size_t)r * N + c;
            double delta = 2.0 * M_PI * ((c - N / 2) * dxs + (r - N / 2) * dys) / (N * dx);
            double pred = 2.0 * f0[i] * (1.0 - cos(delta));
            fw = fmax(fw, fabs(ipi[i] - pred));
            if (ipi[i] > best) best = ipi[i], best_delta = delta;
        }
    printf("fringes: worst %.3g of the peak; brightest %.4g of I_0's peak at delta = %.3f pi\n",
           fw / top, best / top, best_delta / M_PI);
    /* Segment 1's samples are segment 0's shifted by d only to within the
     * grey edges (d is no multiple of dx): measured 2e-4 of the peak. */
    assert_true(fw <= 1e-3 * top);
    /* The energy went to the two first fringe maxima, delta = +-pi pulled
     * towards the axis by the segment's envelope |F0|^2 (which falls from
     * the axis): 0.5 .. 1 pi, and brighter than half I_0's peak. */
    assert_true(fabs(best_delta) > 0.5 * M_PI && fabs(best_delta) <= 1.0 * M_PI);
    assert_true(best > 0.5 * top);
    free(i0), free(ipi), free(f0), free(f1);
}

static void test_ring_alternating_pistons(void **state)
{
    (void)state;
    const int all[7] = {0, 1, 2, 3, 4, 5, 6};
    psf_aperture a = ring(all, 7);
    double c[7] = {0, 0.5, 0, 0.5, 0, 0.5, 0};
    float *img = grid(), *one = grid();
    image(&a, 1, piston_n, piston_m, c, img);
    size_t axis = (size_t)(N / 2) * N + N / 2;
    double sum = 0.0, flat = 0.0;
    for (int s = 0; s < 7; ++s) {
        psf_aperture as = ring(&all[s], 1);
        image(&as, 0, NULL, NULL, NULL, one);
        double fs = sqrt(one[axis]); /* F_s(0) = sum of its samples, real and > 0 */
        sum += (s % 2 ? -1.0 : 1.0) * fs;
        flat += fs;
    }
    printf("ring: axis %.9g predicted %.9g (flat %.6g)\n", img[axis], sum * sum, flat * flat);
    assert_true(fabs(img[axis] - sum * sum) <= 1e-5 * sum * sum);
    assert_true(fabs(img[axis] / (flat * flat) - 1.0 / 49.0) <= 1e-3); /* 7 equal segments */
    free(img), free(one);
}

/* Tip (t = 0) or tilt (t = 1) of one segment: the image shifts by `shift`
 * pixels along x (columns) or y (rows). */
static void tip_case(int t, int shift)
{
    const int seg[1] = {4};
    psf_aperture a = ring(seg, 1);
    double dx = a.diameter_m / NS, rs = F2F / sqrt(3.0);
    double c[14] = {0};
    c[4 * 2 + t] = shift * rs / (2.0 * N * dx); /* Z2 = 2 rho cos theta: 2 c / R_s waves per m */
    float *flat = grid(), *tip = grid();
    image(&a, 2, tip_n, tip_m, (double[14]){0}, flat);
    image(&a, 2, tip_n, tip_m, c, tip);
    double top = peak(flat), worst = 0.0;
    for (int r = 0; r < N; ++r)
        for (int col = 0; col < N; ++col) {
            int r0 = t ? (r - shift + N) % N : r, c0 = t ? col : (col - shift + N) % N;
            worst = fmax(worst, fabs(tip[(size_t)r * N + col] - flat[(size_t)r0 * N + c0]));
        }
    printf("tip j=%d by %d px: worst %.3g of the peak\n", 2 + t, shift, worst / top);
    assert_true(worst <= 1e-5 * top);
    free(flat), free(tip);
}

static void test_tip_tilt_moves_segment(void **state)
{
    (void)state;
    tip_case(0, 8);
    tip_case(1, -5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_segments_half_wave),
        cmocka_unit_test(test_ring_alternating_pistons),
        cmocka_unit_test(test_tip_tilt_moves_segment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
