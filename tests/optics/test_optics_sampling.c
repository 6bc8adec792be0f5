/* SPDX-License-Identifier: BSD-3-Clause */
/* Sampling: FFT size, pixel scales, fast sizes, argument checks
 * (docs/design.md, "Sampling"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "optics/sampling.h"

static void test_fft_size(void **state)
{
    (void)state;
    psf_sampling s;
    char err[256];
    assert_int_equal(sampling_init(128, 2.0, 1.0, &s, err, sizeof err), 0);
    assert_int_equal(s.npix, 256);
    assert_true(s.padding == 2.0);
    assert_true(fabs(s.dx_m - 1.0 / 128) < 1e-18);
    /* 2.55 * 100 = 254.99999999999997 in binary: floor(Q n + 0.5) = 255. */
    assert_int_equal(sampling_init(100, 2.55, 1.0, &s, err, sizeof err), 0);
    assert_int_equal(s.npix, 255);
    assert_true(fabs(s.padding - 2.55) < 1e-15);
    assert_int_equal(sampling_init(100, 1.0, 1.0, &s, err, sizeof err), 0);
    assert_int_equal(s.npix, 100);
    assert_int_equal(sampling_init(101, 1.5, 1.0, &s, err, sizeof err), 0);
    assert_int_equal(s.npix, 152); /* 151.5 rounds up */
    assert_true(fabs(s.padding - 152.0 / 101.0) < 1e-15);
    assert_int_equal(s.pupil_samples, 101);
    assert_true(s.diameter_m == 1.0);
}

static void test_pixel_scales(void **state)
{
    (void)state;
    psf_sampling s;
    /* n = 128, N = 300, D = 2.4 m, lambda = 500 nm, F/8. */
    assert_int_equal(sampling_init(128, 300.0 / 128.0, 2.4, &s, NULL, 0), 0);
    assert_int_equal(s.npix, 300);
    double lam = 500e-9;
    assert_true(fabs(sampling_pixscale_lambda_d(&s) - 128.0 / 300.0) < 1e-15);
    double rad = lam / 2.4 * 128.0 / 300.0; /* (n/N) lambda / D */
    assert_true(fabs(sampling_pixscale_rad(&s, lam) / rad - 1.0) < 1e-14);
    assert_true(fabs(sampling_pixscale_rad(&s, lam) - lam / (300 * (2.4 / 128))) < 1e-20);
    assert_true(fabs(sampling_pixscale_arcsec(&s, lam) / (rad * 180.0 / M_PI * 3600.0) - 1.0) <
                1e-14);
    /* (n/N) lambda F# = 0.42667 * 0.5 um * 8 = 1.70667 um. */
    assert_true(fabs(sampling_pixscale_um(&s, lam, 8.0) - 128.0 / 300.0 * 0.5 * 8.0) < 1e-12);
}

static void test_fast_sizes(void **state)
{
    (void)state;
    assert_int_equal(sampling_is_fast_size(256), 1);
    assert_int_equal(sampling_is_fast_size(210), 1); /* 2 3 5 7 */
    assert_int_equal(sampling_is_fast_size(1), 1);
    assert_int_equal(sampling_is_fast_size(2 * 3 * 5 * 7 * 49 * 8), 1);
    assert_int_equal(sampling_is_fast_size(257), 0); /* prime */
    assert_int_equal(sampling_is_fast_size(2 * 11), 0);
    assert_int_equal(sampling_is_fast_size(13 * 64), 0);
    assert_int_equal(sampling_is_fast_size(0), 0);
    assert_int_equal(sampling_is_fast_size(-4), 0);
}

static void test_rejects(void **state)
{
    (void)state;
    psf_sampling s;
    char err[256];
    err[0] = 0;
    assert_int_equal(sampling_init(7, 2.0, 1.0, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "pupil_samples"));
    err[0] = 0;
    assert_int_equal(sampling_init(64, 0.99, 1.0, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "padding"));
    assert_int_equal(sampling_init(64, NAN, 1.0, &s, err, sizeof err), -1);
    err[0] = 0;
    assert_int_equal(sampling_init(64, 2.0, 0.0, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "diameter"));
    assert_int_equal(sampling_init(64, 2.0, -1.0, &s, err, sizeof err), -1);
    assert_int_equal(sampling_init(64, 2.0, INFINITY, &s, err, sizeof err), -1);
    err[0] = 0;
    assert_int_equal(sampling_init(65536, 2.0, 1.0, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "65536"));
    assert_int_equal(sampling_init(8, 1.0, 1.0, &s, NULL, 0), 0); /* the smallest valid */
    assert_int_equal(s.npix, 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fft_size),
        cmocka_unit_test(test_pixel_scales),
        cmocka_unit_test(test_fast_sizes),
        cmocka_unit_test(test_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
