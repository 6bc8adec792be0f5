/* SPDX-License-Identifier: BSD-3-Clause */
/* Where a map (optics.aperture.file, aberrations.opd_map.file) lies on the
 * entrance pupil: stretched over the D x D square (no pixel scale: the
 * behaviour before issue 15), or placed at its pixel scale, centred on the
 * axis (docs/config.md, "Maps"). */
#ifndef PSFSIM_MAP_PLACE_H
#define PSFSIM_MAP_PLACE_H

#include <stddef.h>

#include "app/config/config.h"

/* A map's placement: width_m = height_m = 0 when stretched over D x D
 * (optics/map_sample.h, map_extent_m), else cols x scale by rows x scale. */
typedef struct {
    double scale_m;           /* metres per map pixel at the entrance pupil; 0: stretched */
    double width_m, height_m; /* the extent the map covers, centred on the axis; 0: D */
    char source[80];          /* what the scale was read from, for -v: the key or a keyword */
} map_placement;

/* The pixel scale of the map at path: config_scale_m when > 0 (the config
 * key scale_key), else for a FITS map its image header's PUPLSCAL (POPPY's
 * and WebbPSF's pupil scale, metres per pixel), else its PIXELSCL when
 * PIXUNIT says metres ('meter', 'metre', 'm', any case, plural too: POPPY
 * writes PIXELSCL in metres per pixel with PIXUNIT = 'meter' for pupil
 * planes, in arcsec with 'arcsecond' for image planes, which are ignored
 * here), else none: into out (scale_m, source; width and height 0). Returns 0, or -1 with err
 * naming path: PUPLSCAL, or PIXELSCL with a metre PIXUNIT, that is not a number > 0. */
int map_pixel_scale(const char *path, double config_scale_m, const char *scale_key,
                    map_placement *out, char *err, size_t errlen);

/* Place a map of rows x cols pixels read from path (the config key
 * file_key; its scale key scale_key, given as config_scale_m, 0 when not
 * written) at the scale map_pixel_scale put in pl, on the pupil of
 * diameter D = cfg->aperture.diameter_m. Without a scale pl stays
 * stretched (width = height = 0). With one the map covers
 * cols s x rows s metres centred on the axis (its array centre, pixel
 * ((cols - 1) / 2, (rows - 1) / 2), on the axis: POPPY's pupil-plane
 * convention), and must cover the D x D square holding the aperture's open
 * samples: else -1 with err "FILE:LINE: KEY: PATH: the map covers W m x H m
 * (C x R pixels of S m), the aperture needs D m ...", KEY the scale key when
 * the config gives it, else file_key; also -1 for an extent that is not
 * finite. On success the placement is logged (log_info). */
int map_place(const psf_config *cfg, const char *file_key, const char *scale_key, const char *path,
              double config_scale_m, int rows, int cols, map_placement *pl, char *err,
              size_t errlen);

#endif
