/* SPDX-License-Identifier: BSD-3-Clause */
/* Aperture (pupil transmission) masks: circular, annular obscuration, spiders,
 * hexagon, or a transmission map, with area-weighted ("grey") edge pixels;
 * the types that describe them are in aperture_types.h. Geometry
 * conventions: docs/design.md, "Aperture" and "Sampling". */
#ifndef PSFSIM_APERTURE_H
#define PSFSIM_APERTURE_H

#include <stddef.h>

#include "optics/aperture_types.h"

/* Returns 0 when a describes a valid aperture (known shape and edge mode,
 * 0 < D finite, obscuration in [0, 1), spider count >= 0, spider width >= 0
 * and angle finite when count > 0, a map of rows x cols >= 1 for
 * APERTURE_FILE), else -1 with a message in err (err may be NULL). Shared
 * by aperture_fill and the backends that build the pupil on the device. */
int aperture_check(const psf_aperture *a, char *err, size_t errlen);

/* Segments of a segmented aperture's rings: 1 + 3 rings (rings + 1). */
int aperture_segment_count(int rings);

/* Centre (x, y) in metres of segment k (numbering of psf_segments) of s;
 * returns 0, or -1 when k is outside 0 .. aperture_segment_count - 1. */
int aperture_segment_center(const psf_segments *s, int k, double *x, double *y);

/* Largest distance from the axis of a point of a present segment (its
 * farthest vertex), metres: the smallest diameter_m / 2 that holds them. */
double aperture_segments_radius(const psf_segments *s);

/* Fill amp[N*N] (row-major, row i at y = (i - N/2) dx, column j at
 * x = (j - N/2) dx, metres) with the transmission in [0, 1] for pupil pitch
 * dx_m. Grey edges: each sample's value is the fraction of its dx x dx cell
 * inside the open region, to within 1e-3. Returns 0, or -1 with a message in
 * err for invalid geometry (D <= 0, obscuration outside [0,1), a missing map). */
int aperture_fill(const psf_aperture *a, int npix, double dx_m, float *amp, char *err,
                  size_t errlen);

/* Area of the open region in m^2, analytic for circular/hexagon shapes with
 * obscuration and spiders (overlaps of vanes near the axis counted once),
 * and for segmented ones without stop, obscuration or spiders (present
 * segments times sqrt(3)/2 f^2, f flat to flat). Used by tests and to
 * report the collecting area. Returns < 0 for FILE, other segmented
 * apertures and any with listed vanes. */
double aperture_area_m2(const psf_aperture *a);

#endif
