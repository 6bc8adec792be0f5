/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the aperture tests (tests/optics/test_optics_segments.c,
 * _hexagons.c, _vanes.c): a small deterministic random generator, the open
 * area of a filled grid, and the brute-force open fraction of a cell.
 * Include after cmocka.h. */
#ifndef PSFSIM_TESTS_APERTURE_TESTS_H
#define PSFSIM_TESTS_APERTURE_TESTS_H

#include <stdlib.h>

#include "optics/aperture.h"

/* Uniform in [0, 1) (24 bits of a linear congruential generator). */
static inline double at_urand(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return ((*seed >> 8) & 0xFFFFFF) / 16777216.0;
}

/* Sum of aperture_fill's grid times dx^2, m^2: n samples across D on an
 * npix x npix grid. */
static inline double at_grid_area(const psf_aperture *a, int n, int npix)
{
    float *amp = malloc((size_t)npix * npix * sizeof *amp);
    assert_non_null(amp);
    double dx = a->diameter_m / n, sum = 0.0;
    char err[256];
    assert_int_equal(aperture_fill(a, npix, dx, amp, err, sizeof err), 0);
    for (size_t i = 0; i < (size_t)npix * npix; ++i)
        sum += amp[i];
    free(amp);
    return sum * dx * dx;
}

/* Fraction of K x K points of the cell of side h at (x, y) that inside
 * (an independent point test, ctx its data) calls open. */
static inline double at_brute_fraction(int (*inside)(const void *ctx, double x, double y),
                                       const void *ctx, double x, double y, double h, int K)
{
    long in = 0;
    for (int i = 0; i < K; ++i)
        for (int j = 0; j < K; ++j)
            in += inside(ctx, x + ((j + 0.5) / K - 0.5) * h, y + ((i + 0.5) / K - 0.5) * h);
    return (double)in / ((double)K * K);
}

#endif
