/* SPDX-License-Identifier: BSD-3-Clause */
/* Counter-based random draws for random aberration sets (sweep.random):
 * every value is a pure function of (seed, draw index d, term, purpose), so
 * image d of a set can be made alone, on any rank, in any order, and a user
 * can regenerate the labels of a set from its seed (docs/config.md).
 *
 * The exact algorithm (tests/app/set/draws_reference.py does it in Python):
 *  1. Words. x0..x3 = Philox4x32-10(counter, key) (Salmon et al. 2011,
 *     "Parallel random numbers: as easy as 1, 2, 3", SC11; Random123's
 *     philox4x32 with its default 10 rounds), with
 *       key     = {seed mod 2^32, seed div 2^32}       (seed: 64-bit unsigned)
 *       counter = {d mod 2^32, d div 2^32, term, purpose}
 *     term is the Zernike index j in the config's convention for purpose 0
 *     (DRAW_ZERNIKE), 0 for purposes 1 and 2; purpose 1 is the focus
 *     shift choice, 2 the wavelength choice, 16 a segment's Zernike term
 *     (sweep.random.segment_zernike: term = segment * 256 + j, j in the
 *     config's convention), the others are reserved.
 *  2. Uniforms strictly inside (0, 1), exact in binary64:
 *       k1 = (x0 >> 6) * 2^26 + (x1 >> 6)    (52 bits: the top 26 of each word)
 *       u1 = (2 k1 + 1) / 2^53
 *     and u2 likewise from x2, x3. u takes the 2^52 odd multiples of 2^-53,
 *     so 2^-53 <= u <= 1 - 2^-53, the set is symmetric about 1/2 and
 *     2 u - 1 is exact and never 0.
 *  3. Values (binary64, evaluated in this order, no fused multiply-add):
 *       normal  = sigma * z,  z = sqrt(-2 * log(u1)) * cos(tau * u2)
 *                 (Box-Muller, Box & Muller 1958, first output only;
 *                 tau = 2 pi rounded to binary64, 0x1.921fb54442d18p+2)
 *       uniform = half_width * (2 * u1 - 1)             (in (-w, w))
 *       choice  = min(n - 1, floor(u1 * n))              (in 0..n-1)
 * Steps 1 and 2 are exact integer arithmetic; step 3 is bit-identical
 * wherever log and cos return the same bits (Python's math module on the
 * same machine calls the same libm; another libm may differ in the last
 * bit of the normal draws, never in the uniform draws or the choices). */
#ifndef PSFSIM_DRAWS_H
#define PSFSIM_DRAWS_H

#include <stddef.h>
#include <stdint.h>

#include "optics/zernike.h"

typedef enum {
    DRAW_ZERNIKE = 0,     /* a Zernike term; term = its j */
    DRAW_FOCUS_SHIFT = 1, /* a choice among the listed focus shifts; term = 0 */
    DRAW_WAVELENGTH = 2,  /* a choice among the listed wavelengths; term = 0 */
    /* 3 .. 15: reserved (noise) */
    DRAW_SEGMENT_ZERNIKE = 16 /* a segment's Zernike term: term = segment * 256 + j */
} draw_purpose;

typedef enum { DRAW_NORMAL = 0, DRAW_UNIFORM = 1 } draw_dist;

/* Which value: the counter and key of step 1. */
typedef struct {
    uint64_t seed;
    uint64_t d; /* draw index: the image's index in the random set */
    uint32_t term;
    uint32_t purpose; /* a draw_purpose */
} draw_id;

/* Philox4x32-10 of ctr[4] under key[2] into out[4] (Random123's
 * philox4x32; out may not alias ctr). */
void draw_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Step 1: the four words x[4] of id. */
void draw_words(draw_id id, uint32_t x[4]);

/* Step 2: (2 k + 1) / 2^53, k = (hi >> 6) * 2^26 + (lo >> 6). */
double draw_u01(uint32_t hi, uint32_t lo);

/* Step 3. sigma and half_width in the caller's unit (finite, >= 0; not
 * checked here: the config is). n >= 1 (n <= 0 returns 0). */
double draw_normal(draw_id id, double sigma);
double draw_uniform(draw_id id, double half_width);
int draw_choice(draw_id id, int n);
/* draw_normal (width = sigma) or draw_uniform (width = half-width). */
double draw_value(draw_id id, draw_dist dist, double width);

/* Zernike term j of image d: draw_value at {seed, d, j, DRAW_ZERNIKE}. */
double draw_zernike(uint64_t seed, uint64_t d, int j, draw_dist dist, double width);

/* "normal" or "uniform" into *dist: 0, or -1 (dist untouched). */
int draw_dist_from_name(const char *name, draw_dist *dist);

/* The spectrum's per-term sigmas: every j in j_min..j_max of convention
 * conv (Noll, ANSI, Fringe: optics/zernike.h), with radial order n_j,
 *     sigma_j = total_rms * n_j^power / sqrt(sum_k n_k^(2 power))
 * into sigma[j - j_min] (j_max - j_min + 1 doubles), so that the expected
 * total RMS sqrt(sum_j sigma_j^2) is total_rms (the terms are orthonormal
 * over the pupil: Noll 1976). total_rms in the coefficients' unit.
 * Evaluated as S = sum over j = j_min..j_max in order of pow(n_j, 2 power),
 * scale = total_rms / sqrt(S), sigma_j = scale * pow(n_j, power).
 * Returns 0, or -1 with err (sigma untouched) when j_min > j_max, either
 * end is not an index of conv, the range holds piston (n = 0), total_rms
 * is not finite and >= 0, power is not finite, or S is not a normal
 * binary64 number (|power| far too large: S overflows or underflows). */
int draw_spectrum_sigma(zernike_convention conv, int j_min, int j_max, double total_rms,
                        double power, double *sigma, char *err, size_t errlen);

#endif
