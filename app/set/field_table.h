/* SPDX-License-Identifier: BSD-3-Clause */
/* The measured field model, field.table (field_model.h): a CSV of field
 * points (columns x_px, y_px and z<j>, read by table_load as sweep.table's),
 * triangulated by Qhull (libqhull_r, Delaunay "d Qt Qbb Qc Qz") and
 * interpolated linearly (barycentric weights) at each field position. */
#ifndef PSFSIM_FIELD_TABLE_H
#define PSFSIM_FIELD_TABLE_H

#include <stddef.h>

#include "app/set/axes.h"

/* Fill ax->nfterms, ax->fterms (the z<j> columns in column order) and
 * ax->fvalues for cfg->field's positions from cfg->field.table_file:
 *   a position equal to a table point (x_px, y_px bit for bit): that row's
 *   values, exactly;
 *   else inside the hull: sum_i w_i z_i over the Delaunay triangle that holds
 *   it (w_i its barycentric weights, each >= -1e-12, the triangle holding
 *   the position with the largest smallest weight), so a field linear in
 *   (x, y) is reproduced to rounding;
 *   outside the points' convex hull: refused.
 * The search is over every triangle for each position: O(positions x points).
 * Returns 0, or -1 with "CFG:LINE: field.table: WHY" in err:
 *   PATH...: table_load_rows' messages (sweep.table's, but "no data rows
 *     after the header (one measured field point per row)")
 *   PATH:H:C (NAME): unknown column (allowed: x_px, y_px, z<j> with j an index in the C convention)
 *   PATH: needs the columns x_px, y_px and at least one z<j>
 *   PATH:L: the point (X, Y) repeats line L0's (one value per point)
 *   PATH: the table's N points are collinear (or coincide): a triangulation
 *     needs three points not on one line (Qhull QH6154)  (Qhull's error
 *     code, or "found no triangle")
 *   PATH: the position (X, Y) px is outside the convex hull of the table's N
 *     points (interpolated only inside them; measure the field out to the
 *     set's positions or move them in)
 *   out of memory. */
int field_table_interpolate(set_axes *ax, char *err, size_t errlen);

#endif
