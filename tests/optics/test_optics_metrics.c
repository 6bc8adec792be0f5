/* SPDX-License-Identifier: BSD-3-Clause */
/* PSF metrics against closed forms: uniform disks and Gaussians. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "optics/metrics.h"

/* Gaussian of standard deviation s pixels centred at (rc, cc). */
static float *gaussian(int n, double rc, double cc, double s)
{
    float *img = malloc(sizeof *img * (size_t)n * n);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            double r2 = (i - rc) * (i - rc) + (j - cc) * (j - cc);
            img[i * n + j] = (float)exp(-r2 / (2 * s * s));
        }
    return img;
}

/* Disk of radius r0 at (c, c), each pixel its area fraction (64 x 64 points). */
static float *disk(int n, double c, double r0)
{
    float *img = malloc(sizeof *img * (size_t)n * n);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            int in = 0;
            for (int a = 0; a < 64; ++a)
                for (int b = 0; b < 64; ++b) {
                    double y = i - c + (a + 0.5) / 64 - 0.5, x = j - c + (b + 0.5) / 64 - 0.5;
                    in += x * x + y * y <= r0 * r0;
                }
            img[i * n + j] = in / 4096.0f;
        }
    return img;
}

static void test_peak(void **state)
{
    (void)state;
    float img[25] = {0};
    img[2 * 5 + 3] = 4.0f;
    img[4 * 5 + 0] = 4.0f; /* equal later maximum: the first one wins */
    img[0] = -1.0f;
    img[1] = NAN;
    psf_peak p = metrics_peak(img, 5);
    assert_int_equal(p.row, 2);
    assert_int_equal(p.col, 3);
    assert_true(p.value == 4.0);
    float *g = gaussian(64, 40, 21, 3.0);
    p = metrics_peak(g, 64);
    assert_int_equal(p.row, 40);
    assert_int_equal(p.col, 21);
    assert_true(p.value == 1.0);
    /* Total: sum of a Gaussian is 2 pi s^2. */
    assert_true(fabs(metrics_total(g, 64) / (2 * M_PI * 9.0) - 1.0) < 1e-6);
    free(g);
}

static void test_ee_uniform_disk(void **state)
{
    (void)state;
    const int n = 64;
    float *img = disk(n, 32, 20.0);
    /* A uniform disk of radius 20: EE(r) = (r / 20)^2 inside, 1 outside. */
    double radii[] = {5.0, 10.0, 13.7, 19.0};
    for (size_t k = 0; k < sizeof radii / sizeof radii[0]; ++k) {
        double ee = metrics_encircled_energy(img, n, 32, 32, radii[k]);
        double want = radii[k] * radii[k] / 400.0;
        assert_true(fabs(ee - want) < 2e-3 * want);
    }
    assert_true(fabs(metrics_encircled_energy(img, n, 32, 32, 29.0) - 1.0) < 1e-9);
    assert_true(metrics_encircled_energy(img, n, 32, 32, 0.0) == 0.0);
    free(img);
}

static void test_ee_gaussian(void **state)
{
    (void)state;
    const int n = 128;
    const double s = 5.0;
    float *img = gaussian(n, 64, 64, s);
    double radii[] = {3.0, 5.0, 7.5, 10.0, 15.0};
    for (size_t k = 0; k < sizeof radii / sizeof radii[0]; ++k) {
        double r = radii[k], want = 1.0 - exp(-r * r / (2 * s * s));
        double ee = metrics_encircled_energy(img, n, 64, 64, r);
        assert_true(fabs(ee / want - 1.0) < 0.01);
    }
    /* A circle larger than the image holds everything. */
    assert_true(fabs(metrics_encircled_energy(img, n, 64, 64, 200.0) - 1.0) < 1e-12);
    /* Uniform image: EE = the circle's area over the image's, also for a
     * centre between pixels. */
    for (int i = 0; i < n * n; ++i)
        img[i] = 1.0f;
    double ee = metrics_encircled_energy(img, n, 60.5, 70.25, 10.0);
    assert_true(fabs(ee / (M_PI * 100.0 / (n * n)) - 1.0) < 1e-3);
    free(img);
}

static void test_fwhm_gaussian(void **state)
{
    (void)state;
    static const double sigmas[] = {1.5, 3.0, 4.0, 8.0};
    for (size_t k = 0; k < sizeof sigmas / sizeof sigmas[0]; ++k) {
        double s = sigmas[k];
        float *img = gaussian(128, 64, 60, s);
        double f = metrics_fwhm(img, 128);
        assert_true(fabs(f / (2.0 * sqrt(2.0 * log(2.0)) * s) - 1.0) < 0.02);
        free(img);
    }
    /* No peak, or no fall below half: -1. */
    float *flat = calloc(64, sizeof *flat);
    assert_true(metrics_fwhm(flat, 8) == -1.0);
    for (int i = 0; i < 64; ++i)
        flat[i] = 1.0f;
    assert_true(metrics_fwhm(flat, 8) == -1.0);
    free(flat);
}

static void test_radial_profile(void **state)
{
    (void)state;
    const int n = 64;
    float *img = malloc(sizeof *img * n * n);
    for (int i = 0; i < n * n; ++i)
        img[i] = 2.5f;
    double prof[80];
    /* Farthest pixel from (32, 32) is at r = sqrt(32^2 + 32^2) = 45.25. */
    int filled = metrics_radial_profile(img, n, 32, 32, 1.0, 80, prof);
    assert_int_equal(filled, 46);
    for (int b = 0; b < 46; ++b)
        assert_true(prof[b] == 2.5);
    for (int b = 46; b < 80; ++b)
        assert_true(prof[b] == 0.0);
    filled = metrics_radial_profile(img, n, 32, 32, 1.0, 30, prof);
    assert_int_equal(filled, 30);
    /* A ramp in r: each bin's mean lies in it. */
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            img[i * n + j] = (float)hypot(i - 32, j - 32);
    filled = metrics_radial_profile(img, n, 32, 32, 2.0, 10, prof);
    assert_int_equal(filled, 10);
    for (int b = 0; b < 10; ++b)
        assert_true(prof[b] >= 2.0 * b && prof[b] < 2.0 * (b + 1));
    assert_int_equal(metrics_radial_profile(img, n, 32, 32, 0.0, 10, prof), -1);
    assert_int_equal(metrics_radial_profile(img, n, 32, 32, 1.0, 0, prof), -1);
    free(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peak),           cmocka_unit_test(test_ee_uniform_disk),
        cmocka_unit_test(test_ee_gaussian),    cmocka_unit_test(test_fwhm_gaussian),
        cmocka_unit_test(test_radial_profile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
