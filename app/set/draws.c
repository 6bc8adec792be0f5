/* SPDX-License-Identifier: BSD-3-Clause */
/* Counter-based draws (Philox4x32-10) and the spectrum's sigmas: see
 * draws.h for the exact algorithm. */
#include "app/set/draws.h"

#include <Random123/philox.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* 2 pi rounded to binary64 (Python's math.tau). */
static const double draw_tau = 0x1.921fb54442d18p+2;

void draw_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    philox4x32_ctr_t c = {{ctr[0], ctr[1], ctr[2], ctr[3]}};
    philox4x32_key_t k = {{key[0], key[1]}};
    philox4x32_ctr_t r = philox4x32_R(10, c, k);
    memcpy(out, r.v, sizeof r.v);
}

void draw_words(draw_id id, uint32_t x[4])
{
    const uint32_t ctr[4] = {(uint32_t)id.d, (uint32_t)(id.d >> 32), id.term, id.purpose};
    const uint32_t key[2] = {(uint32_t)id.seed, (uint32_t)(id.seed >> 32)};
    draw_philox4x32_10(ctr, key, x);
}

double draw_u01(uint32_t hi, uint32_t lo)
{
    uint64_t k = ((uint64_t)(hi >> 6) << 26) | (uint64_t)(lo >> 6);
    return (double)(2 * k + 1) * 0x1p-53; /* 2 k + 1 < 2^53: exact */
}

double draw_normal(draw_id id, double sigma)
{
    uint32_t x[4];
    draw_words(id, x);
    double u1 = draw_u01(x[0], x[1]), u2 = draw_u01(x[2], x[3]);
    double z = sqrt(-2.0 * log(u1)) * cos(draw_tau * u2);
    return sigma * z;
}

double draw_uniform(draw_id id, double half_width)
{
    uint32_t x[4];
    draw_words(id, x);
    return half_width * (2.0 * draw_u01(x[0], x[1]) - 1.0);
}

int draw_choice(draw_id id, int n)
{
    if (n <= 0) return 0;
    uint32_t x[4];
    draw_words(id, x);
    /* u1 < 1, but u1 * n may round up to n for a large n. */
    double c = floor(draw_u01(x[0], x[1]) * (double)n);
    return c >= (double)(n - 1) ? n - 1 : (int)c;
}

double draw_value(draw_id id, draw_dist dist, double width)
{
    return dist == DRAW_UNIFORM ? draw_uniform(id, width) : draw_normal(id, width);
}

double draw_zernike(uint64_t seed, uint64_t d, int j, draw_dist dist, double width)
{
    draw_id id = {seed, d, (uint32_t)j, DRAW_ZERNIKE};
    return draw_value(id, dist, width);
}

int draw_dist_from_name(const char *name, draw_dist *dist)
{
    if (strcmp(name, "normal") == 0)
        *dist = DRAW_NORMAL;
    else if (strcmp(name, "uniform") == 0)
        *dist = DRAW_UNIFORM;
    else
        return -1;
    return 0;
}

static const char *conv_label(zernike_convention conv)
{
    return conv == ZCONV_ANSI ? "ANSI" : conv == ZCONV_FRINGE ? "Fringe" : "Noll";
}

/* The range's ends are indices of conv, in order, past piston. */
static int check_range(zernike_convention conv, int j_min, int j_max, char *err, size_t errlen)
{
    int n, m;
    if (j_min > j_max) {
        snprintf(err, errlen, "spectrum: j_min (%d) is above j_max (%d)", j_min, j_max);
        return -1;
    }
    if (zernike_index_to_nm(conv, j_min, &n, &m) != 0 ||
        zernike_index_to_nm(conv, j_max, &n, &m) != 0) {
        int bad = zernike_index_to_nm(conv, j_min, &n, &m) != 0 ? j_min : j_max;
        snprintf(err, errlen,
                 "spectrum: j = %d is not an index in the %s convention (radial orders 0..%d)", bad,
                 conv_label(conv), ZERNIKE_MAX_ORDER);
        return -1;
    }
    /* Every convention numbers piston first, so only j_min can be piston. */
    zernike_index_to_nm(conv, j_min, &n, &m);
    if (n == 0) {
        snprintf(err, errlen,
                 "spectrum: j_min = %d is piston (n = 0) in %s; start at %d (piston has no "
                 "radial order to scale and does not change the PSF)",
                 j_min, conv_label(conv), j_min + 1);
        return -1;
    }
    return 0;
}

int draw_spectrum_sigma(zernike_convention conv, int j_min, int j_max, double total_rms,
                        double power, double *sigma, char *err, size_t errlen)
{
    if (check_range(conv, j_min, j_max, err, errlen) != 0) return -1;
    if (!isfinite(total_rms) || total_rms < 0) {
        snprintf(err, errlen, "spectrum: total_rms = %g must be finite and >= 0", total_rms);
        return -1;
    }
    if (!isfinite(power)) {
        snprintf(err, errlen, "spectrum: power = %g must be finite", power);
        return -1;
    }
    double sum = 0.0;
    for (int j = j_min; j <= j_max; ++j) {
        int n, m;
        zernike_index_to_nm(conv, j, &n, &m);
        sum += pow((double)n, 2.0 * power);
    }
    if (!isnormal(sum)) { /* a subnormal S would lose the scale's digits */
        snprintf(err, errlen,
                 "spectrum: power = %g makes the sum of n^(2 power) over j = %d..%d %s in "
                 "double precision",
                 power, j_min, j_max, isfinite(sum) ? "underflow" : "overflow");
        return -1;
    }
    double scale = total_rms / sqrt(sum);
    for (int j = j_min; j <= j_max; ++j) {
        int n, m;
        zernike_index_to_nm(conv, j, &n, &m);
        sigma[j - j_min] = scale * pow((double)n, power);
    }
    return 0;
}
