/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/set/noise.h"

#include <math.h>

#include "app/set/draws.h"

/* Below it the Poisson count is drawn by inversion, above by PTRS
 * (Hormann 1993 recommends PTRS from mu = 10). */
#define NOISE_PTRS_FROM 10.0
/* Inversion steps at most (mu < 10: the tail past 200 is below 1e-200). */
#define NOISE_INVERSION_MAX 200
/* PTRS rounds at most: its acceptance is above 0.9 per round, so 1000
 * rejections in a row do not happen (the last candidate is taken). */
#define NOISE_PTRS_MAX 1000

static const double noise_tau = 0x1.921fb54442d18p+2;

/* u1, u2 of round r of pixel p of image k (draws.h, steps 1 and 2). */
static void noise_uniforms(uint64_t seed, uint32_t k, uint32_t p, uint32_t r, double *u1,
                           double *u2)
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const uint32_t ctr[4] = {p, k, r, DRAW_NOISE};
    uint32_t x[4];
    draw_philox4x32_10(ctr, key, x);
    *u1 = draw_u01(x[0], x[1]);
    *u2 = draw_u01(x[2], x[3]);
}

double noise_normal(uint64_t seed, uint32_t k, uint32_t p)
{
    double u1, u2;
    noise_uniforms(seed, k, p, 0, &u1, &u2);
    return sqrt(-2.0 * log(u1)) * cos(noise_tau * u2);
}

static double poisson_inversion(double u, double mu)
{
    double term = exp(-mu), cdf = term;
    int n = 0;
    while (u > cdf && n < NOISE_INVERSION_MAX) {
        ++n;
        term *= mu / n;
        cdf += term;
    }
    return n;
}

static double poisson_ptrs(uint64_t seed, uint32_t k, uint32_t p, double mu)
{
    double b = 0.931 + 2.53 * sqrt(mu), a = -0.059 + 0.02483 * b;
    double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
    double logmu = log(mu), n = 0.0;
    for (uint32_t r = 1; r <= NOISE_PTRS_MAX; ++r) {
        double u, v;
        noise_uniforms(seed, k, p, r, &u, &v);
        u -= 0.5;
        double us = 0.5 - fabs(u);
        n = floor((2.0 * a / us + b) * u + mu + 0.43);
        if (us >= 0.07 && v <= vr) return n;
        if (n < 0.0 || (us < 0.013 && v > us)) continue;
        if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <= -mu + n * logmu - lgamma(n + 1.0))
            return n;
    }
    return n < 0.0 ? 0.0 : n;
}

double noise_poisson(uint64_t seed, uint32_t k, uint32_t p, double mu)
{
    if (!(mu > 0.0)) return 0.0;
    if (mu < NOISE_PTRS_FROM) {
        double u1, u2;
        noise_uniforms(seed, k, p, 1, &u1, &u2);
        return poisson_inversion(u1, mu);
    }
    return poisson_ptrs(seed, k, p, mu);
}

double noise_electrons(const cfg_noise *n, uint32_t k, uint32_t p, float v)
{
    double source = v > 0.0f ? n->flux_photons * (double)v : 0.0; /* NaN: 0 */
    double e = noise_poisson(n->seed, k, p, source + n->background_e);
    if (n->read_noise_e > 0.0) e += n->read_noise_e * noise_normal(n->seed, k, p);
    return e;
}

void noise_image(const cfg_noise *n, uint32_t k, const float *img, size_t npixels, uint16_t *adu)
{
    double top = ldexp(1.0, n->bits) - 1.0;
    for (size_t i = 0; i < npixels; ++i) {
        double level = floor(noise_electrons(n, k, (uint32_t)i, img[i]) / n->gain_e_per_adu + 0.5);
        adu[i] = (uint16_t)(level < 0.0 ? 0.0 : level > top ? top : level);
    }
}
