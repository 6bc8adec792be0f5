/* SPDX-License-Identifier: BSD-3-Clause */
/* Map files named in a config: aperture transmission (shape = "file") and
 * OPD maps, read as PNG (grayscale; 16-bit for OPD) or FITS (also .fits.gz)
 * by file extension. A map covers D x D: a non-square one is stretched
 * over it, with a warning (log_warn) naming the file and its shape; or,
 * with a pixel scale (app/set/map_place.h), its own extent (the _placed
 * loaders, which do not warn). */
#ifndef PSFSIM_MAPS_H
#define PSFSIM_MAPS_H

#include <stddef.h>

#include "app/config/config.h"

/* Load a transmission map: PNG grey levels / maxval (any bit depth: 1, 2,
 * 4, 8 or 16), FITS values as they are; values outside [0, 1] are an
 * error. Returns 0 or -1 with err naming the file. *data: malloc'd rows x
 * cols, row 0 at y = -D/2 (the PNG's top row, the FITS's first row). */
int maps_load_transmission(const char *path, float **data, int *rows, int *cols, char *err,
                           size_t errlen);

/* maps_load_transmission without the warning for a non-square map: for a
 * map placed at its pixel scale (map_place.h), not stretched. */
int maps_load_transmission_placed(const char *path, float **data, int *rows, int *cols, char *err,
                                  size_t errlen);

/* 1 when path names a FITS map (.fits, .fit, .fts, any case, optionally
 * .gz), as the loaders read it; else 0. */
int maps_is_fits(const char *path);

/* The unit of a loaded OPD map's values, and what it was read from. */
typedef struct {
    zernike_units units; /* ZUNITS_NM: OPD in nm; ZUNITS_WAVES: in waves at
                            each image's wavelength */
    char what[160];      /* e.g. "m (the map's BUNIT = 'meter')", for -v and
                            the timing log */
} maps_opd_units;

/* Load an OPD map: 16-bit PNG grey levels (a PNG of 8 bits or fewer is
 * refused: 256 levels are too coarse for an OPD) or FITS values, times
 * scale (NaN in FITS become 0), in the unit of the FITS image's BUNIT (FITS
 * 4.0 sec. 4.4.2.1; case-insensitive), converted to nm or waves:
 *   m, meter(s), metre(s)                        x 1e9       -> nm
 *   um, micron(s), micrometer(s), micrometre(s)  x 1e3       -> nm
 *   nm, nanometer(s), nanometre(s)               x 1         -> nm
 *   rad, radian(s)                               x 1/(2 pi)  -> waves
 *   wave(s)                                      x 1         -> waves
 * rad is a phase phi at each image's wavelength lambda, W = phi lambda /
 * (2 pi); waves: W = v lambda (so a phase map gives the same phase at
 * every wavelength of a broadband image, as aberrations.units = waves).
 * With no BUNIT (a PNG, a FITS without one or with a blank one) the values
 * are in fallback (aberrations.opd_map.units: nm, or waves). *units says
 * which, and the unit is logged (log_info). Returns 0, or -1 with err
 * naming the file: unreadable or refused map, a BUNIT that is not a
 * string or not one of these units ("PATH: BUNIT = 'furlong' is not a unit
 * of OPD ..."), a non-finite value or scale. */
int maps_load_opd(const char *path, double scale, zernike_units fallback, float **data, int *rows,
                  int *cols, maps_opd_units *units, char *err, size_t errlen);

/* maps_load_opd without the warning for a non-square map (a placed map). */
int maps_load_opd_placed(const char *path, double scale, zernike_units fallback, float **data,
                         int *rows, int *cols, maps_opd_units *units, char *err, size_t errlen);

/* How messages name a map given in memory, where a file's path goes. */
#define MAPS_ARRAY_LABEL "<array>"

/* The name of a map in messages: MAPS_ARRAY_LABEL when array holds values,
 * else file (the resolved path). */
const char *maps_name(const char *file, const cfg_map_array *array);

/* A map given in memory for its file key (config.h, cfg_map_array: the
 * library's psfsim_map), copied into *data and read as a FITS map of the
 * same values is (float32 as they are, NaN -> 0), with the same checks and
 * messages, label ("<array>") standing for the file's path in them;
 * stretched: warn when non-square, as the unplaced loaders do. An OPD
 * array has no BUNIT: its unit is fallback (aberrations.opd_map.units).
 * Returns 0, or -1 with err. */
int maps_transmission_array(const cfg_map_array *a, const char *label, int stretched, float **data,
                            int *rows, int *cols, char *err, size_t errlen);
int maps_opd_array(const cfg_map_array *a, const char *label, int stretched, double scale,
                   zernike_units fallback, float **data, int *rows, int *cols,
                   maps_opd_units *units, char *err, size_t errlen);

#endif
