/* SPDX-License-Identifier: BSD-3-Clause */
/* output.fits.cube: the whole set as one FITS cube NAME_cube.fits (plane k =
 * image k) with a PLANES table of per-plane parameters (index, wavelength,
 * swept values, pixel scale, Strehl, axial intensity, each mode's total
 * coefficient). The main thread writes planes as batches complete; the file
 * appears (renamed from a temp name) only when every plane is in. An
 * interrupted cube is discarded: --resume recomputes it; a complete one
 * --resume keeps (app/output/resume.h, resume_whole_cube). */
#ifndef PSFSIM_CUBE_WRITER_H
#define PSFSIM_CUBE_WRITER_H

#include <stddef.h>

#include "app/output/fits_header.h"
#include "app/formats/fits.h"
#include "app/set/image_set.h"
#include "app/output/image_result.h"

/* The PLANES table's columns: 7 and, per mode (at most FITS_HEADER_ZMAX:
 * fits_header_check), its total and, when swept, its swept value. */
#define CUBE_MAX_COLS (7 + 2 * FITS_HEADER_ZMAX + 4) /* + FIELDX, FIELDY, FIELDHX, FIELDHY */

/* output.psf_grid's DET_YX<i> keywords and values while the header is made. */
typedef struct {
    char keys[100][12];
    char values[100][64];
} cube_grid_text;

typedef struct {
    psf_fits_cube *cube;
    char name[300]; /* NAME_cube.fits */
    int ncols;
    char names[CUBE_MAX_COLS][24];
    const char *units[CUBE_MAX_COLS];
    double *cols[CUBE_MAX_COLS]; /* [nimages] each */
    float plane_gain;            /* each plane written times this: cube_grid_gain */
    float *scaled;               /* [npix^2]: a plane times plane_gain; NULL when 1 */
} cube_writer;

/* Keywords common to every plane, for the cube's primary header, into kvs
 * (FITS_HEADER_MAX; zkeys as fits_header_build's): the image header less
 * its per-image values (WAVELEN, PIXELSCL, PIXSCLUM, STREHL, AXIALINT,
 * BACKEND, Z<j>: in the table). Returns their number. */
int cube_writer_common_keys(const image_set *s, fits_kv *kvs, char (*zkeys)[12]);

/* Columns of set s's PLANES table (INDEX .. AXIALINT, ZSWEEP<j>, Z<j>). */
int cube_writer_columns(const image_set *s);

/* Open NAME_cube.fits's temp file for set s in the directory dirfd (dir:
 * for messages). 0 or -1 with err. */
int cube_writer_open(cube_writer *w, const image_set *s, int dirfd, const char *dir, char *err,
                     size_t errlen);

/* Plane k: img (N*N) and its row of the PLANES table. 0 or -1 with err. */
int cube_writer_add(cube_writer *w, const image_set *s, const image_info *info,
                    const image_result *res, const float *img, char *err, size_t errlen);

/* Write the table and rename the cube into place. 0 or -1 with err. */
int cube_writer_commit(cube_writer *w, char *err, size_t errlen);

/* Discard the temp cube (interrupted or failed run). */
void cube_writer_abort(cube_writer *w);

#endif
