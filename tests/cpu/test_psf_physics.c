/* SPDX-License-Identifier: BSD-3-Clause */
/* The PSF against closed forms: Airy pattern (first dark ring at 1.2197
 * lambda/D, 83.8% encircled energy inside it; Born & Wolf, 7th ed., 8.5.2),
 * on-axis intensity of pure defocus (sin x / x)^2 (Mahajan, Optical Imaging
 * and Aberrations II, 1.3), the Marechal approximation exp(-(2 pi sigma)^2),
 * Parseval, centring and symmetry for odd and even grids, tilt direction and
 * pixel scale. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "optics/aperture.h"
#include "optics/metrics.h"
#include "tests/support/psf_harness.h"
#include "tests/support/testutil.h"

#define CIRCULAR(n, q, extra)                                                                      \
    tu_format("name = \"t\"; optics: { wavelength_nm = 500; aperture: { diameter_m = 1.0; }; };"   \
              " sampling: { pupil_samples = %d; padding = %.6f; }; %s",                            \
              (n), (double)(q), (extra))

/* Airy: first minimum of the azimuthal profile at 1.2197 lambda/D, and 83.8%
 * of the energy through the aperture inside it (Born & Wolf 8.5.2). */
static void test_airy_first_zero_and_ee(void **state)
{
    (void)state;
    const int n = 64, q = 32; /* lambda/D = 32 pixels */
    psf_result r;
    assert_int_equal(harness_compute(CIRCULAR(n, q, ""), 0, NULL, &r), 0);
    int npix = r.npix, h = npix / 2;
    /* Along the four half-axes from the axis pixel: the minimum near 1.22
     * lambda/D and the vertex of the parabola through it and its neighbours. */
    const int dir[4][2] = {{0, 1}, {0, -1}, {1, 0}, {-1, 0}};
    double r0 = 0.0;
    for (int d = 0; d < 4; ++d) {
        double prof[56];
        for (int k = 0; k < 56; ++k)
            prof[k] = r.img[(size_t)(h + dir[d][0] * k) * npix + h + dir[d][1] * k];
        int b = 30;
        for (int k = 30; k < 50; ++k)
            if (prof[k] < prof[b]) b = k;
        r0 += (b + 0.5 * (prof[b - 1] - prof[b + 1]) / (prof[b - 1] - 2 * prof[b] + prof[b + 1])) /
              (4.0 * q);
    }
    printf("first dark ring at %.4f lambda/D\n", r0);
    assert_true(fabs(r0 - 1.2197) < 0.002);
    /* Energy through the aperture: (sum A) in units where the unaberrated
     * peak (sum A)^2 / N^2... is 1, i.e. N^2 / sum A (Parseval on the
     * continuous aperture); the grid's own total misses what grey edges
     * filter out and what falls outside its field. */
    float *amp = malloc((size_t)npix * npix * sizeof *amp);
    psf_aperture ap = {.shape = APERTURE_CIRCULAR, .diameter_m = 1.0};
    char err[256];
    assert_int_equal(aperture_fill(&ap, npix, 1.0 / n, amp, err, sizeof err), 0);
    double sum_a = 0;
    for (size_t i = 0; i < (size_t)npix * npix; ++i)
        sum_a += amp[i];
    free(amp);
    double ee_img = metrics_encircled_energy(r.img, npix, h, h, 1.2197 * q);
    double ee = ee_img * metrics_total(r.img, npix) / ((double)npix * npix / sum_a);
    printf("encircled energy inside it %.4f (of the image total: %.4f)\n", ee, ee_img);
    assert_true(fabs(ee - 0.8378) < 0.002);
    assert_true(fabs(r.strehl - 1.0) < 1e-5); /* "peak" normalisation */
    harness_free(&r);
}

/* Axial intensity of a RMS waves of pure defocus is (sin x / x)^2, x = 2 sqrt(3) pi a. */
static void test_defocus_axial_intensity(void **state)
{
    (void)state;
    const double a[] = {0.05, 0.1, 0.2, 0.3};
    for (int i = 0; i < 4; ++i) {
        char extra[128];
        snprintf(extra, sizeof extra, "aberrations: { zernike = ((4, %.3f)); };", a[i]);
        psf_result r;
        assert_int_equal(harness_compute(CIRCULAR(256, 2, extra), 0, NULL, &r), 0);
        double x = 2.0 * sqrt(3.0) * M_PI * a[i], want = pow(sin(x) / x, 2);
        printf("defocus %.2f waves: axial %.5f, expected %.5f\n", a[i], r.axial, want);
        assert_true(fabs(r.axial - want) < 1e-3);
        harness_free(&r);
    }
}

/* Marechal: Strehl ~ exp(-(2 pi sigma)^2) for small aberrations (Born & Wolf 9.3). */
static void test_marechal(void **state)
{
    (void)state;
    /* sigma^2 = 0.02^2 + 0.015^2 + 0.02^2 (orthonormal terms add in quadrature) */
    const char *ab = "aberrations: { zernike = ((7, 0.02), (11, 0.015), (22, 0.02)); };";
    psf_result r;
    assert_int_equal(harness_compute(CIRCULAR(256, 2, ab), 0, NULL, &r), 0);
    double s2 = 0.02 * 0.02 + 0.015 * 0.015 + 0.02 * 0.02;
    double want = exp(-4 * M_PI * M_PI * s2);
    printf("Strehl %.5f, Marechal %.5f\n", r.strehl, want);
    assert_true(fabs(r.strehl - want) < 0.003);
    harness_free(&r);
}

/* "sum" normalisation: the image sums to 1 (Parseval), in double. */
static void test_sum_normalisation(void **state)
{
    (void)state;
    const char *ab = "normalization = \"sum\"; aberrations: { zernike = ((5, 0.3), (8, -0.2)); };";
    psf_result r;
    assert_int_equal(harness_compute(CIRCULAR(64, 3, ab), 0, NULL, &r), 0);
    double total = metrics_total(r.img, r.npix);
    printf("sum %.8f\n", total);
    assert_true(fabs(total - 1.0) < 1e-5);
    harness_free(&r);
}

/* Peak at (N/2, N/2) and centro-symmetric, for odd and even N and n. */
static void test_centring_odd_even(void **state)
{
    (void)state;
    const int ns[] = {32, 32, 33, 33};
    const double qs[] = {2.0, 2.03, 2.0, 1.97}; /* N = 64, 65, 66, 65 */
    const char *spiders = "";
    for (int c = 0; c < 4; ++c) {
        char text[4096];
        snprintf(text, sizeof text,
                 "name = \"t\"; optics: { wavelength_nm = 500; aperture: { diameter_m = 1.0; "
                 "obscuration = 0.3; spiders: { count = 4; width_m = 0.03; angle_deg = 10; }; }; "
                 "}; sampling: { pupil_samples = %d; padding = %.3f; }; %s",
                 ns[c], qs[c], spiders);
        psf_result r;
        assert_int_equal(harness_compute(text, 0, NULL, &r), 0);
        int npix = r.npix, h = npix / 2;
        psf_peak pk = metrics_peak(r.img, npix);
        printf("n = %d, N = %d: peak at (%d, %d)\n", ns[c], npix, pk.row, pk.col);
        assert_int_equal(pk.row, h);
        assert_int_equal(pk.col, h);
        double worst = 0;
        for (int i = 0; i < npix; ++i)
            for (int j = 0; j < npix; ++j) {
                int i2 = 2 * h - i, j2 = 2 * h - j;
                if (i2 < 0 || i2 >= npix || j2 < 0 || j2 >= npix) continue;
                double d = fabs(r.img[(size_t)i * npix + j] - r.img[(size_t)i2 * npix + j2]);
                if (d > worst) worst = d;
            }
        assert_true(worst < 1e-5 * pk.value);
        harness_free(&r);
    }
}

/* +/- defocus give the same image for a centro-symmetric, aberration-free system. */
static void test_defocus_sign_symmetry(void **state)
{
    (void)state;
    const char *text =
        "name = \"t\"; optics: { wavelength_nm = 600; aperture: { diameter_m = 2.4; "
        "obscuration = 0.33; spiders: { count = 4; width_m = 0.0264; angle_deg = 45; }; }; }; "
        "sampling: { pupil_samples = 128; padding = 2; }; sweep: { defocus = [-0.4, 0.4]; };";
    long long nimg;
    int npix;
    float *imgs = harness_compute_all(text, NULL, &nimg, &npix);
    assert_non_null(imgs);
    assert_int_equal(nimg, 2);
    size_t plane = (size_t)npix * npix;
    double d = tu_rel_l2(imgs, imgs + plane, plane);
    printf("relative L2 between -0.4 and +0.4 waves: %.3g\n", d);
    assert_true(d < 1e-5);
    free(imgs);
}

/* A tilt of a waves RMS moves the PSF 4 a (N/n) pixels: +Noll 2 towards
 * larger columns, +Noll 3 towards larger rows (docs/design.md). */
static void test_tilt_direction_and_pixel_scale(void **state)
{
    (void)state;
    psf_result r;
    assert_int_equal(
        harness_compute(CIRCULAR(64, 2, "aberrations: { zernike = ((2, 0.5)); };"), 0, NULL, &r),
        0);
    psf_peak pk = metrics_peak(r.img, r.npix);
    assert_int_equal(pk.row, r.npix / 2);
    assert_int_equal(pk.col, r.npix / 2 + 4); /* 4 * 0.5 * 2 */
    assert_true(r.strehl > 0.999);            /* tilt does not lower the Strehl */
    assert_true(r.axial < 0.05);
    harness_free(&r);
    assert_int_equal(
        harness_compute(CIRCULAR(64, 3, "aberrations: { zernike = ((3, 0.25)); };"), 0, NULL, &r),
        0);
    pk = metrics_peak(r.img, r.npix);
    assert_int_equal(pk.row, r.npix / 2 + 3); /* 4 * 0.25 * 3 */
    assert_int_equal(pk.col, r.npix / 2);
    harness_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_airy_first_zero_and_ee),
        cmocka_unit_test(test_defocus_axial_intensity),
        cmocka_unit_test(test_marechal),
        cmocka_unit_test(test_sum_normalisation),
        cmocka_unit_test(test_centring_odd_even),
        cmocka_unit_test(test_defocus_sign_symmetry),
        cmocka_unit_test(test_tilt_direction_and_pixel_scale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
