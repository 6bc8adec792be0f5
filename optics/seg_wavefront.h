/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-segment wavefront terms of a segmented aperture, per pupil sample,
 * shared by the CPU code and the CUDA kernels (PSF_HD): docs/design.md,
 * "Aberrations", and docs/config.md, "Segmented apertures".
 *
 * A segment's terms are Zernike polynomials (zernike.h, unit RMS) over the
 * segment's circumscribed circle: centre the segment's centre c_s, radius
 * f / sqrt3 (f flat to flat: the circle through its six vertices), angle
 * from the world +x axis towards +y (not the array's angle_deg), so that
 * Noll 1 is a piston, 2 and 3 a tip and tilt along x and y, whatever the
 * array's rotation. A sample belongs to one segment: of the present
 * segments whose centres are the one whose hexagonal Voronoi cell (flat to
 * flat p, aperture_seg.h) holds the sample's centre and its six neighbours,
 * the one nearest to the sample's centre. That is the segment holding the
 * sample's centre when one does, and for a grey sample centred in a gap
 * the nearest segment it may touch. */
#ifndef PSFSIM_SEG_WAVEFRONT_H
#define PSFSIM_SEG_WAVEFRONT_H

#include "optics/aperture_seg.h"
#include "optics/psf_hd.h"
#include "optics/zernike.h"

#include <math.h>

/* Segment (numbering of psf_segments) the sample centred at (x, y) belongs
 * to (see above), its centre in (*cx, *cy); -1 when no present segment is
 * among the seven (the sample is closed then, but for pitches >= p / 4). */
PSF_HD int aps_segment_of(const psf_seg_geom *g, double x, double y, double *cx, double *cy)
{
    const int dq[7] = {0, 1, 0, -1, -1, 0, 1}, dr[7] = {0, 0, 1, 1, 0, -1, -1};
    int q0, r0, bq = 0, br = 0, found = 0;
    double best = 0.0;
    aps_nearest(g, x, y, &q0, &r0);
    for (int k = 0; k < 7; ++k) {
        int q = q0 + dq[k], r = r0 + dr[k];
        if (!aps_present(g, q, r)) continue;
        double sx, sy;
        aps_center(g, q, r, &sx, &sy);
        double d2 = (x - sx) * (x - sx) + (y - sy) * (y - sy);
        if (!found || d2 < best) {
            found = 1, best = d2, bq = q, br = r;
            *cx = sx, *cy = sy;
        }
        if (k == 0) break; /* the Voronoi cell's own centre is the nearest */
    }
    return found ? aps_index(bq, br) : -1;
}

/* The segment terms n[t], m[t] (t < nterms) at the sample centred at
 * (x, y): out[t * stride] = Z_t over its segment's circumscribed circle,
 * rounded to float (as the global basis is). Returns the segment, or -1
 * with the out values 0. */
PSF_HD int aps_segment_basis(const psf_seg_geom *g, int nterms, const int *n, const int *m,
                             double x, double y, float *out, size_t stride)
{
    double cx = 0.0, cy = 0.0;
    int s = aps_segment_of(g, x, y, &cx, &cy);
    double radius = 2.0 * g->apothem / APS_SQRT3;
    double dx = x - cx, dy = y - cy, rho = sqrt(dx * dx + dy * dy) / radius;
    double theta = atan2(dy, dx);
    for (int t = 0; t < nterms; ++t)
        out[(size_t)t * stride] = s < 0 ? 0.0f : (float)zernike_eval(n[t], m[t], rho, theta);
    return s;
}

#endif
