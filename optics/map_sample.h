/* SPDX-License-Identifier: BSD-3-Clause */
/* Bilinear sampling of a map (an OPD or transmission map) that covers the
 * D x D square centred on the optical axis, shared by the CPU code and the
 * CUDA kernels (PSF_HD, no allocation, no library calls but math.h). */
#ifndef PSFSIM_MAP_SAMPLE_H
#define PSFSIM_MAP_SAMPLE_H

#include "optics/psf_hd.h"

#include <math.h>

/* Value of map (rows x cols, row-major, row 0 at y = -D/2, column 0 at
 * x = -D/2) at (x_m, y_m), metres. Map pixel (r, c) has its centre at
 * x = ((c + 0.5) / cols - 0.5) D, y = ((r + 0.5) / rows - 0.5) D; between
 * centres the value is bilinear, between the outermost centres and the
 * square's edge it is the edge pixel's (no extrapolation), outside the
 * square (|x| or |y| > D/2, with a 1e-9 D allowance for rounding in the
 * sample coordinates) it is 0. */
PSF_HD float map_bilinear(const float *map, int rows, int cols, double diameter_m, double x_m,
                          double y_m)
{
    double half = 0.5 * diameter_m * (1.0 + 2e-9);
    if (fabs(x_m) > half || fabs(y_m) > half) return 0.0f;
    double u = (x_m / diameter_m + 0.5) * cols - 0.5; /* fractional column */
    double v = (y_m / diameter_m + 0.5) * rows - 0.5; /* fractional row */
    u = u < 0.0 ? 0.0 : (u > cols - 1 ? cols - 1 : u);
    v = v < 0.0 ? 0.0 : (v > rows - 1 ? rows - 1 : v);
    int c0 = (int)u, r0 = (int)v;
    int c1 = c0 + 1 < cols ? c0 + 1 : c0, r1 = r0 + 1 < rows ? r0 + 1 : r0;
    double fu = u - c0, fv = v - r0;
    const float *a = map + (long long)r0 * cols, *b = map + (long long)r1 * cols;
    double top = a[c0] + fu * ((double)a[c1] - a[c0]);
    double bot = b[c0] + fu * ((double)b[c1] - b[c0]);
    return (float)(top + fv * (bot - top));
}

#endif
