/* SPDX-License-Identifier: BSD-3-Clause */
/* Bilinear sampling of a map (an OPD or transmission map) that covers the
 * D x D square centred on the optical axis, or a rectangle of its own
 * extent (a map placed at its pixel scale), shared by the CPU code and the
 * CUDA kernels (PSF_HD, no allocation, no library calls but math.h). */
#ifndef PSFSIM_MAP_SAMPLE_H
#define PSFSIM_MAP_SAMPLE_H

#include "optics/psf_hd.h"

#include <math.h>

/* Value of map (rows x cols, row-major) covering the width_m x height_m
 * rectangle centred on the optical axis (row 0 at y = -height/2, column 0
 * at x = -width/2) at (x_m, y_m), metres: map pixel (r, c) has its centre
 * at x = ((c + 0.5) / cols - 0.5) width, y = ((r + 0.5) / rows - 0.5)
 * height, so the array's centre ((cols - 1) / 2, (rows - 1) / 2) is on the
 * axis (POPPY's pupil-plane convention). Between centres the value is
 * bilinear, between the outermost centres and the rectangle's edge it is
 * the edge pixel's (no extrapolation), outside the rectangle (with a 1e-9
 * allowance for rounding in the sample coordinates) it is 0. */
PSF_HD float map_bilinear_wh(const float *map, int rows, int cols, double width_m, double height_m,
                             double x_m, double y_m)
{
    double half_w = 0.5 * width_m * (1.0 + 2e-9), half_h = 0.5 * height_m * (1.0 + 2e-9);
    if (fabs(x_m) > half_w || fabs(y_m) > half_h) return 0.0f;
    double u = (x_m / width_m + 0.5) * cols - 0.5;  /* fractional column */
    double v = (y_m / height_m + 0.5) * rows - 0.5; /* fractional row */
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

/* map_bilinear_wh of a map stretched over the D x D square (the same
 * arithmetic with width = height = D). */
PSF_HD float map_bilinear(const float *map, int rows, int cols, double diameter_m, double x_m,
                          double y_m)
{
    return map_bilinear_wh(map, rows, cols, diameter_m, diameter_m, x_m, y_m);
}

/* A map's extent along one axis, metres: extent_m when it was placed at
 * its pixel scale (> 0), else D (stretched over D x D). */
PSF_HD double map_extent_m(double extent_m, double diameter_m)
{
    return extent_m > 0.0 ? extent_m : diameter_m;
}

#endif
