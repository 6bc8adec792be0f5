/* SPDX-License-Identifier: BSD-3-Clause */
/* PSFs over a detector (docs/config.md, "output.psf_grid"): a listed set's
 * field_x_px and field_y_px columns give each row's PSF a detector
 * position (a label: psfsim has no field-dependent aberration model, the
 * row's own z<j> are its aberrations), and output.psf_grid writes the set's
 * cube in the layout photutils' GriddedPSFModel reads (WebbPSF's psf_grid:
 * DET_YX<i>, OVERSAMP, NUM_PSFS). */
#ifndef PSFSIM_FIELD_GRID_H
#define PSFSIM_FIELD_GRID_H

#include "app/set/axes.h"

/* Most positions of a grid: DET_YX0 .. DET_YX99, the 8 characters a FITS
 * keyword holds. */
#define FIELD_GRID_MAX 100

/* The columns and output.psf_grid of ax's set, before any work
 * (image_set_init, right after axes_init): field_x_px and field_y_px come
 * together, and not with the field group; output.psf_grid needs them (or
 * the field group), one image per row (position; no other axis),
 * distinct positions and at most FIELD_GRID_MAX rows (positions).
 * Returns 0, or -1 with "CFG:LINE: KEY: WHY" in err:
 *   sweep.table: PATH:H:C (field_x_px): needs a field_y_px column too (...)
 *   output.psf_grid: needs a sweep.table with field_x_px and field_y_px columns ...
 *   output.psf_grid: the other axes make N images per table row: ... positions repeat
 *   output.psf_grid: PATH:L: the position (x, y) repeats line L0's ...
 *   output.psf_grid: PATH: N rows, more than the 100 positions ... */
int field_grid_check(const set_axes *ax, char *err, size_t errlen);

/* Image k's detector position (pixels): 1 with *x, *y, or 0 when the set
 * has no field columns nor field group (the field group's position first). */
int field_grid_position(const set_axes *ax, long long k, double *x, double *y);

/* Image k's normalised field coordinates (hx, hy) (field_model_h): 1 with
 * *hx, *hy, or 0 without the field group. */
int field_grid_h(const set_axes *ax, long long k, double *hx, double *hy);

#endif
