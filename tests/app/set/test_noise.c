/* SPDX-License-Identifier: BSD-3-Clause */
/* noise (app/set/noise.h): the Poisson counts' mean, variance and
 * probabilities against the distribution's (inversion below mean 10, PTRS
 * above), the whole model's mean and variance (source, background, read
 * noise) and its ADU (gain, rounding, clamp to the bits), all within five
 * standard errors of the sampling at a fixed seed; every draw a pure
 * function of (seed, image, pixel). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "app/set/noise.h"

#define NDRAW 200000

typedef struct {
    double mean, var;
} moments;

static moments poisson_moments(uint64_t seed, uint32_t k, double mu)
{
    double s = 0.0, s2 = 0.0;
    for (uint32_t p = 0; p < NDRAW; ++p) {
        double x = noise_poisson(seed, k, p, mu);
        assert_true(x >= 0.0 && x == floor(x));
        s += x;
        s2 += x * x;
    }
    moments m = {s / NDRAW, 0.0};
    m.var = (s2 - NDRAW * m.mean * m.mean) / (NDRAW - 1);
    return m;
}

/* Mean mu, variance mu: the standard errors sqrt(mu / N) and, for the
 * sample variance, sqrt((mu + 2 mu^2) / N) (the fourth central moment of
 * Poisson(mu) is mu + 3 mu^2). */
static void test_poisson_moments(void **state)
{
    (void)state;
    const double mus[] = {0.05, 0.5, 3.0, 9.99, 10.0, 37.2, 1000.0, 1e6, 1e12};
    for (size_t i = 0; i < sizeof mus / sizeof mus[0]; ++i) {
        double mu = mus[i];
        moments m = poisson_moments(7, (uint32_t)i, mu);
        double se_mean = sqrt(mu / NDRAW), se_var = sqrt((mu + 2 * mu * mu) / NDRAW);
        if (fabs(m.mean - mu) > 5 * se_mean || fabs(m.var - mu) > 5 * se_var)
            fail_msg("mu %g: mean %.9g (se %.3g), variance %.9g (se %.3g)", mu, m.mean, se_mean,
                     m.var, se_var);
    }
    assert_true(noise_poisson(7, 0, 0, 0.0) == 0.0);
    assert_true(noise_poisson(7, 0, 0, -1.0) == 0.0);
    assert_true(noise_poisson(7, 0, 0, NAN) == 0.0);
}

/* The frequencies of the counts near the mean against the probabilities
 * e^-mu mu^n / n!, each within five binomial standard errors: the shape,
 * not only two moments, on both sides of the switch to PTRS. */
static void test_poisson_probabilities(void **state)
{
    (void)state;
    const double mus[] = {2.5, 9.5, 10.5, 30.0};
    for (size_t i = 0; i < sizeof mus / sizeof mus[0]; ++i) {
        double mu = mus[i];
        int hist[128] = {0};
        for (uint32_t p = 0; p < NDRAW; ++p) {
            double x = noise_poisson(11, 100 + (uint32_t)i, p, mu);
            if (x < 128) hist[(int)x]++;
        }
        for (int n = 0; n < 2 * (int)mu + 4; ++n) {
            double pn = exp(-mu + n * log(mu) - lgamma(n + 1.0));
            double se = sqrt(NDRAW * pn * (1 - pn)) + 1e-9;
            if (fabs(hist[n] - NDRAW * pn) > 5 * se + 1)
                fail_msg("mu %g: P(%d) counted %d, expected %.1f (se %.1f)", mu, n, hist[n],
                         NDRAW * pn, se);
        }
    }
}

/* e = Poisson(flux v + background) + read noise: mean flux v + background,
 * variance that plus read_noise^2. */
static void test_model_moments(void **state)
{
    (void)state;
    cfg_noise n = {1, 1e5, 10.0, 5.0, 2.0, 16, 3};
    float v = 1e-3f; /* 100 source electrons */
    double mu = n.flux_photons * (double)v + n.background_e, var = mu + 25.0;
    double s = 0.0, s2 = 0.0;
    for (uint32_t p = 0; p < NDRAW; ++p) {
        double e = noise_electrons(&n, 5, p, v);
        s += e;
        s2 += e * e;
    }
    double mean = s / NDRAW, sv = (s2 - NDRAW * mean * mean) / (NDRAW - 1);
    /* The fourth central moment of the sum: Poisson's mu + 3 mu^2, the
     * normal's 3 r^4, and 6 mu r^2 across. */
    double m4 = mu + 3 * mu * mu + 3 * 625.0 + 6 * mu * 25.0;
    assert_true(fabs(mean - mu) < 5 * sqrt(var / NDRAW));
    assert_true(fabs(sv - var) < 5 * sqrt((m4 - var * var) / NDRAW));
    /* Read noise alone: a standard normal scaled. */
    cfg_noise r = {1, 1e5, 0.0, 5.0, 2.0, 16, 3};
    s = s2 = 0.0;
    for (uint32_t p = 0; p < NDRAW; ++p) {
        double e = noise_electrons(&r, 6, p, 0.0f);
        s += e;
        s2 += e * e;
    }
    mean = s / NDRAW;
    sv = (s2 - NDRAW * mean * mean) / (NDRAW - 1);
    assert_true(fabs(mean) < 5 * sqrt(25.0 / NDRAW));
    assert_true(fabs(sv - 25.0) < 5 * sqrt(2 * 625.0 / NDRAW));
}

/* ADU = clamp(round(e / gain), 0, 2^bits - 1): each pixel equals the
 * electrons it was drawn from, rounded; the mean over many is mu / gain. */
static void test_adu(void **state)
{
    (void)state;
    enum { M = 256 };
    float *img = malloc(sizeof(float) * M * M);
    uint16_t *adu = malloc(sizeof(uint16_t) * M * M);
    assert_non_null(img);
    assert_non_null(adu);
    for (int i = 0; i < M * M; ++i)
        img[i] = 2e-3f;
    cfg_noise n = {1, 1e5, 10.0, 5.0, 2.0, 16, 9};
    noise_image(&n, 4, img, (size_t)M * M, adu);
    double s = 0.0;
    for (int i = 0; i < M * M; ++i) {
        double e = noise_electrons(&n, 4, (uint32_t)i, img[i]);
        assert_int_equal(adu[i], (int)floor(e / 2.0 + 0.5));
        s += adu[i];
    }
    double mu = (1e5 * (double)2e-3f + 10.0) / 2.0, var = (210.0 + 25.0) / 4.0 + 1.0 / 12;
    assert_true(fabs(s / (M * M) - mu) < 5 * sqrt(var / (M * M)));
    /* The clamp: 8 bits hold 255 at most; no pixel goes below 0. */
    cfg_noise hot = {1, 1e9, 0.0, 0.0, 1.0, 8, 9};
    noise_image(&hot, 4, img, (size_t)M * M, adu);
    for (int i = 0; i < M * M; ++i)
        assert_int_equal(adu[i], 255);
    cfg_noise cold = {1, 1.0, 0.0, 50.0, 1.0, 16, 9};
    int zeros = 0;
    for (int i = 0; i < M * M; ++i)
        img[i] = 0.0f;
    noise_image(&cold, 4, img, (size_t)M * M, adu);
    for (int i = 0; i < M * M; ++i)
        zeros += adu[i] == 0;
    assert_true(zeros > M * M / 3); /* half the normal draws are below 0 */
    free(img);
    free(adu);
}

/* A pure function of (seed, image, pixel): the same in any order, and
 * another seed, image or pixel gives another draw. */
static void test_determinism(void **state)
{
    (void)state;
    cfg_noise n = {1, 1e5, 10.0, 5.0, 2.0, 16, 1};
    double a = noise_electrons(&n, 3, 1000, 1e-3f);
    for (uint32_t p = 0; p < 5000; ++p)
        (void)noise_electrons(&n, 2, p, 1e-3f);
    assert_true(noise_electrons(&n, 3, 1000, 1e-3f) == a);
    assert_true(noise_electrons(&n, 4, 1000, 1e-3f) != a);
    assert_true(noise_electrons(&n, 3, 1001, 1e-3f) != a);
    n.seed = 2;
    assert_true(noise_electrons(&n, 3, 1000, 1e-3f) != a);
    assert_true(noise_normal(1, 3, 1000) != noise_normal(1, 3, 1001));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_poisson_moments), cmocka_unit_test(test_poisson_probabilities),
        cmocka_unit_test(test_model_moments),   cmocka_unit_test(test_adu),
        cmocka_unit_test(test_determinism),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
