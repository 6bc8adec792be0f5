/* SPDX-License-Identifier: BSD-3-Clause */
/* The PSF of a segmented aperture keeps the aperture's symmetries (issue:
 * "a 6-fold aperture gives a 6-fold PSF"): two full rings of hexagonal
 * segments (18, the centre left out, gaps) are unchanged by turns of 60
 * degrees and by the mirrors x -> -x, y -> -y, so is |F{A}|^2 (the Fourier
 * transform commutes with rotations and reflections; Goodman, Fourier
 * Optics, 2.1). On the square pixel grid the mirrors are exact: the image
 * equals its mirror images to the float transform's rounding. A turn of 60
 * degrees is checked by bilinear interpolation at 8 pixels per lambda/D
 * (error <= (2 pi / P)^2 / 8 of the local amplitude for fringes of period
 * P pixels): the 6-fold aperture stays within 0.5% of the peak on rings of
 * 6 .. 60 pixels, and a control with one more segment left out (no longer
 * 6-fold) differs by more than 4 times that, so the check can fail. */
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

#define N 1024
#define NS 128 /* samples across D: Q = 8 */
#define WL 1e-6
#define TOL 5e-3 /* of the peak, for the 60-degree turn */

/* Two rings of 1 m segments with 5 cm gaps, segment 0 and the segments of
 * the mask extra left out. */
static psf_aperture rings2(unsigned long long extra)
{
    psf_aperture a;
    memset(&a, 0, sizeof a);
    a.shape = APERTURE_SEGMENTED;
    a.seg.flat_to_flat_m = 1.0;
    a.seg.gap_m = 0.05;
    a.seg.rings = 2;
    a.seg.missing[0] = 1ULL | extra;
    a.diameter_m = 6.0; /* holds both rings (5.4 m across) */
    return a;
}

static float *image(const psf_aperture *a)
{
    psf_problem p;
    memset(&p, 0, sizeof p);
    p.npix = N;
    p.aperture = *a;
    p.max_batch = 1;
    p.nimages = 1;
    psf_job job;
    memset(&job, 0, sizeof job);
    job.ncomp = 1;
    job.comp[0].wavelength_m = WL;
    job.comp[0].dx_m = a->diameter_m / NS;
    job.comp[0].scale = 1.0;
    float *img = calloc((size_t)N * N, sizeof *img);
    assert_non_null(img);
    psf_backend *b = NULL;
    char err[512] = "";
    if (psf_backend_cpu.create(&p, NULL, &b, err, sizeof err) != 0) fail_msg("%s", err);
    if (psf_backend_cpu.run(b, &job, 1, img, err, sizeof err) != 0) fail_msg("%s", err);
    psf_backend_cpu.destroy(b);
    return img;
}

static double peak(const float *img)
{
    double p = 0.0;
    for (size_t i = 0; i < (size_t)N * N; ++i)
        p = img[i] > p ? img[i] : p;
    return p;
}

/* img at (x, y) pixels from the axis (N/2, N/2), x along columns. */
static double bilinear(const float *img, double x, double y)
{
    double u = x + N / 2, v = y + N / 2;
    int j = (int)floor(u), i = (int)floor(v);
    double fu = u - j, fv = v - i;
    const float *r0 = img + (size_t)i * N, *r1 = r0 + N;
    return (1 - fv) * ((1 - fu) * r0[j] + fu * r0[j + 1]) +
           fv * ((1 - fu) * r1[j] + fu * r1[j + 1]);
}

/* The largest |I(r, t) - I(r, t + 60 deg)| / peak over rings of 6 .. 60 pixels. */
static double worst_turn(const float *img)
{
    double top = peak(img), worst = 0.0;
    for (int r = 6; r <= 60; r += 3)
        for (int k = 0; k < 36; ++k) {
            double t = k * M_PI / 18.0, t6 = t + M_PI / 3.0;
            double d =
                bilinear(img, r * cos(t), r * sin(t)) - bilinear(img, r * cos(t6), r * sin(t6));
            worst = fmax(worst, fabs(d) / top);
        }
    return worst;
}

/* The largest |I(y, x) - I(y, -x)| and |I(y, x) - I(-y, x)| / peak. */
static double worst_mirror(const float *img)
{
    double top = peak(img), worst = 0.0;
    for (int i = 1; i < N; ++i)
        for (int j = 1; j < N; ++j) {
            double v = img[(size_t)i * N + j];
            worst = fmax(worst, fabs(v - img[(size_t)i * N + (N - j)]) / top);
            worst = fmax(worst, fabs(v - img[(size_t)(N - i) * N + j]) / top);
        }
    return worst;
}

static void test_six_fold(void **state)
{
    (void)state;
    psf_aperture a = rings2(0);
    float *img = image(&a);
    double turn = worst_turn(img), mirror = worst_mirror(img);
    printf("6-fold aperture: turn of 60 deg %.3g, mirrors %.3g (of the peak)\n", turn, mirror);
    assert_true(mirror <= 1e-5);
    assert_true(turn <= TOL);
    free(img);
}

static void test_control_is_not(void **state)
{
    (void)state;
    psf_aperture a = rings2(1ULL << 8); /* one outer segment more: not 6-fold */
    float *img = image(&a);
    double turn = worst_turn(img);
    printf("control (segment 8 left out too): turn of 60 deg %.3g of the peak\n", turn);
    assert_true(turn > 4.0 * TOL);
    free(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_six_fold),
                                       cmocka_unit_test(test_control_is_not)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
