/* SPDX-License-Identifier: BSD-3-Clause */
/* Aperture grids filled once per set and shared. A set fills the aperture
 * at each pupil pitch twice otherwise: once for its normalisation sums
 * (app/set/image_set.c) and once for the CPU backend's pupil (cpu/pupil.c),
 * each an O(N^2) grey-edge fill (1.4 ms at 64x64 with spiders, 0.3 s at
 * 4096x4096 on 2 cores: about half of a 64x64 single-image run's CPU time,
 * issue 4). The cache holds copies of the grids of ONE aperture, keyed by
 * grid size and pitch, up to a byte budget; past it, grids are filled as
 * before. Thread-safe (one mutex): CPU lanes build their pupils side by
 * side while the image loop adds pitches. */
#ifndef PSFSIM_APERTURE_CACHE_H
#define PSFSIM_APERTURE_CACHE_H

#include <stddef.h>

#include "optics/aperture.h"

typedef struct aperture_cache aperture_cache;

/* A cache for aperture a (copied; its map, if any, must outlive the
 * cache) holding at most max_bytes of grids. NULL when out of memory
 * (callers then pass NULL below: plain fills). */
aperture_cache *aperture_cache_create(const psf_aperture *a, size_t max_bytes);

void aperture_cache_free(aperture_cache *c);

/* amp[npix * npix] (layout and units as aperture_fill) for the cache's
 * aperture at pitch dx_m: a copy of a held grid of the same npix and a
 * pitch equal to 1e-12 relative, else aperture_fill's result, then held
 * while the budget allows. c == NULL: aperture_fill(a, ...). a must be
 * the cache's aperture (the grids are only valid for it). Returns 0, or
 * -1 with err as aperture_fill. */
int aperture_cache_fill(aperture_cache *c, const psf_aperture *a, int npix, double dx_m, float *amp,
                        char *err, size_t errlen);

/* Grids held now (tests). */
int aperture_cache_count(aperture_cache *c);

#endif
