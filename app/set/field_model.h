/* SPDX-License-Identifier: BSD-3-Clause */
/* The field model (docs/config.md, "Field-dependent aberrations"): each
 * field position's Zernike terms, from the field group's polynomials
 * (field.zernike) or its measured table (field.table), evaluated once when
 * the set's axes are built and added to every image of the position
 * (jobs_coefficients).
 *
 * Segment terms (field.segment_zernike) are polynomials too, evaluated the
 * same way into ax->fsegvalues, added by segterms_coefficients.
 *
 * Polynomial: at (x, y) pixels, (hx, hy) = ((x, y) - centre_px) / radius_px
 * and term j's value is the sum, in the order written and starting from 0,
 * of c * pow(hx, p) * pow(hy, q) (C's pow: Python's float ** int gives the
 * same bits).
 *
 * Table: the CSV's rows are measured points (x_px, y_px and z<j> columns,
 * pixels and the config's units); the points are triangulated (Delaunay,
 * Qhull) and each position's terms interpolated linearly over the triangle
 * that holds it (barycentric weights): a position equal to a table point
 * takes that row's values exactly, a field linear in (x, y) is reproduced
 * everywhere inside the points' convex hull (to rounding), and a position
 * outside the hull is refused. */
#ifndef PSFSIM_FIELD_MODEL_H
#define PSFSIM_FIELD_MODEL_H

#include <stddef.h>

#include "app/set/axes.h"

/* Fill ax->nfterms, ax->fterms and ax->fvalues ([nfield * nfterms]) from
 * ax->cfg->field (nothing without the group or without a model). Every
 * value within config_coeff_limit at the set's shortest wavelength.
 * Returns 0, or -1 with "CFG:LINE: KEY: WHY" in err:
 *   field.zernike: term j = J at the position (X, Y) px (hx HX, hy HY) is V:
 *     must be in [-L, L] (WHY)
 *   field.table: PATH:L:C (NAME): ... (the CSV's, as sweep.table's)
 *   field.table: PATH: needs x_px, y_px and at least one z<j> column ...
 *   field.table: PATH: the position (X, Y) px is outside the convex hull of
 *     the table's N points (linear interpolation only inside them) ...
 *   out of memory. */
int field_model_init(set_axes *ax, char *err, size_t errlen);

/* Position f's normalised field coordinates (hx, hy). */
void field_model_h(const psf_config *cfg, long long f, double *hx, double *hy);

#endif
