/* SPDX-License-Identifier: BSD-3-Clause */
/* The noise of a simulated exposure (detector.noise, docs/config.md): each
 * pixel's draw a pure function of (seed, image index, pixel index), so a
 * set's noisy images are the same whoever computes them (backend, lanes,
 * GPUs, ranks, a resumed run) and can be made again from the seed.
 *
 * Model, for pixel p of image k with value v (the image as written, in its
 * normalisation):
 *   mu  = flux_photons * v + background_e           (v < 0 or NaN: 0)
 *   e   = Poisson(mu) + read_noise_e * z            (z standard normal)
 *   ADU = clamp(floor(e / gain_e_per_adu + 1/2), 0, 2^bits - 1)
 *
 * Draws: the words of Philox4x32-10 (app/set/draws.h, steps 1 and 2) with
 *   key = {seed mod 2^32, seed div 2^32}, counter = {p, k, r, 3}
 * (purpose 3, DRAW_NOISE), each round r giving two uniforms u1, u2 in
 * (0, 1) as draws.h's step 2 makes them. Round 0 is the read noise:
 * z = sqrt(-2 log u1) cos(tau u2) (Box-Muller, as draws.h). Rounds 1, 2,
 * ... are the Poisson count:
 *  - mu = 0: 0;
 *  - mu < 10: inversion by sequential search on u1 of round 1 (Devroye,
 *    Non-Uniform Random Variate Generation, 1986, X.3.3): the least n with
 *    u1 <= sum_{i <= n} e^-mu mu^i / i!;
 *  - mu >= 10: Hormann's transformed rejection with squeeze, PTRS
 *    (W. Hormann, "The transformed rejection method for generating Poisson
 *    random variables", Insurance: Mathematics and Economics 12, 1993,
 *    39-45), U = u1 - 1/2, V = u2 of round r = 1, 2, ... until accepted:
 *      b = 0.931 + 2.53 sqrt(mu), a = -0.059 + 0.02483 b,
 *      inv_alpha = 1.1239 + 1.1328 / (b - 3.4), v_r = 0.9277 - 3.6224 / (b - 2),
 *      us = 1/2 - |U|, n = floor((2 a / us + b) U + mu + 0.43);
 *      accept when us >= 0.07 and V <= v_r; reject when n < 0 or
 *      (us < 0.013 and V > us); else accept when
 *      log(V inv_alpha / (a / us^2 + b)) <= -mu + n log(mu) - lgamma(n + 1).
 */
#ifndef PSFSIM_NOISE_H
#define PSFSIM_NOISE_H

#include <stddef.h>
#include <stdint.h>

#include "app/config/config.h"

#define DRAW_NOISE 3u /* draws.h's purpose word for the noise */

/* Poisson(mu) of pixel p of image k under seed (the rounds 1, 2, ... above);
 * mu finite and >= 0 (below 0 or NaN: 0). Returns the count as a double
 * (exact: mu is held far below 2^53 by the config). */
double noise_poisson(uint64_t seed, uint32_t k, uint32_t p, double mu);

/* The read noise's standard normal z of pixel p of image k (round 0). */
double noise_normal(uint64_t seed, uint32_t k, uint32_t p);

/* The electrons e of pixel p of image k whose value is v (the model). */
double noise_electrons(const cfg_noise *n, uint32_t k, uint32_t p, float v);

/* The noisy image k: adu[i] for img[i], i = 0 .. npixels - 1 (row-major as
 * img, pixel index i), the model's ADU. No errors. */
void noise_image(const cfg_noise *n, uint32_t k, const float *img, size_t npixels, uint16_t *adu);

#endif
