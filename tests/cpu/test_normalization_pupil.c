/* SPDX-License-Identifier: BSD-3-Clause */
/* normalization = "pupil" (POPPY's and WebbPSF's convention): unit power
 * through the entrance pupil. The FFT's whole field sums to 1 and equals
 * "sum"; an MFT window keeps "sum"'s shape scaled by the fraction of the
 * power it captures (image_info's captured_fraction), and the light inside
 * a radius r of an Airy pattern is the encircled energy
 * 1 - J0^2(x) - J1^2(x), x = pi r D / lambda (Born & Wolf, 7th ed., 8.5.2,
 * eq. 51). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/psf_harness.h"

#define AIRY_N(n, norm, grid)                                                                      \
    "name = \"p\";\n"                                                                              \
    "optics: { wavelength_nm = 500.0; aperture: { diameter_m = 1.0; }; };\n"                       \
    "sampling: { pupil_samples = " n "; };\n"                                                      \
    "normalization = \"" norm "\";\n"                                                              \
    "output: { " grid " png: { enabled = true; }; };\n"

#define AIRY(norm, grid) AIRY_N("128", norm, grid)

static double image_sum(const psf_result *r)
{
    double t = 0.0;
    for (size_t i = 0; i < (size_t)r->npix * r->npix; ++i)
        t += r->img[i];
    return t;
}

/* The FFT: the N x N field is one period and holds all the power. */
static void test_fft_sums_to_one(void **state)
{
    (void)state;
    psf_result p, s;
    assert_int_equal(harness_compute(AIRY("pupil", ""), 0, NULL, &p), 0);
    assert_int_equal(harness_compute(AIRY("sum", ""), 0, NULL, &s), 0);
    assert_true(fabs(p.captured - 1.0) < 1e-5);
    assert_true(fabs(image_sum(&p) - p.captured) < 1e-9);
    assert_memory_equal(p.img, s.img, (size_t)p.npix * p.npix * sizeof *p.img);
    assert_true(isnan(s.captured));
    harness_free(&p);
    harness_free(&s);
}

/* Encircled energy of the Airy pattern within r lambda/D (Born & Wolf). */
static double airy_ee(double r_ld)
{
    double x = M_PI * r_ld, a = j0(x), b = j1(x);
    return 1.0 - a * a - b * b;
}

/* The fraction of pixel (x, y) (centre offsets in pixels from the axis)
 * inside the circle of radius r pixels, from 16 x 16 sub-samples. */
static double pixel_in_circle(int x, int y, double r)
{
    const int sub = 16;
    int in = 0;
    for (int i = 0; i < sub; ++i)
        for (int j = 0; j < sub; ++j) {
            double u = x + (i + 0.5) / sub - 0.5, v = y + (j + 0.5) / sub - 0.5;
            in += u * u + v * v < r * r;
        }
    return (double)in / (sub * sub);
}

/* The MFT window: "sum"'s image times the captured fraction, which is below
 * 1 and matches the encircled energy of circles inside the window, with n
 * pupil samples across D. The sampled pupil's transform is periodic (n
 * lambda/D): its field holds the power the continuous Airy pattern spreads
 * beyond, so its encircled energy exceeds the closed form by O(1/n) (0.63/n
 * measured at n = 128 and 256): the tolerance is 0 < excess < 1/n. */
static void window_against_airy(const char *pupil_text, const char *sum_text, int n)
{
    const int m = 160;
    const double pix = 0.05, tol = 1.0 / n; /* lambda/D: the window is +-4 lambda/D */
    psf_result p, s;
    assert_int_equal(harness_compute(pupil_text, 0, NULL, &p), 0);
    assert_int_equal(harness_compute(sum_text, 0, NULL, &s), 0);
    assert_int_equal(p.npix, m);
    assert_true(fabs(image_sum(&p) - p.captured) < 1e-9);
    /* The square of half-width 4 lambda/D holds more than the circle of 4
     * and less than the circle through its corners. */
    assert_true(p.captured > airy_ee(4.0) && p.captured < airy_ee(4.0 * sqrt(2.0)) + tol);
    for (int i = 0; i < m * m; ++i)
        assert_true(fabs(p.img[i] - s.img[i] * p.captured) <= 1e-5 * s.img[m / 2 * m + m / 2]);
    const double radii[] = {0.5, 1.22, 1.635, 2.233, 3.0, 3.9};
    for (size_t k = 0; k < sizeof radii / sizeof radii[0]; ++k) {
        double in = 0.0, r = radii[k];
        for (int y = 0; y < m; ++y)
            for (int x = 0; x < m; ++x)
                in += p.img[y * m + x] * pixel_in_circle(x - m / 2, y - m / 2, r / pix);
        double excess = in - airy_ee(r);
        printf("n = %d, r = %g lambda/D: %.6f, Airy %.6f\n", n, r, in, airy_ee(r));
        assert_true(excess > 0.0 && excess < tol);
    }
    harness_free(&p);
    harness_free(&s);
}

static void test_mft_window_captures_encircled_energy(void **state)
{
    (void)state;
#define GRID "npix = 160; pixel_scale = 0.05;"
    window_against_airy(AIRY_N("128", "pupil", GRID), AIRY_N("128", "sum", GRID), 128);
    window_against_airy(AIRY_N("256", "pupil", GRID), AIRY_N("256", "sum", GRID), 256);
#undef GRID
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fft_sums_to_one),
        cmocka_unit_test(test_mft_window_captures_encircled_energy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
