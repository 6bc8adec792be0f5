/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-sample geometry of segmented apertures (psf_segments, aperture_types.h),
 * shared by the CPU code and the CUDA kernels (PSF_HD, as aperture_geom.h,
 * which includes this file and combines it with the other boundaries).
 *
 * Lattice. In the array's own frame (rotated by angle_deg) the centres are
 * q a1 + r a2 with a1 = p (sqrt3/2, 1/2), a2 = p (0, 1), p = flat_to_flat +
 * gap, (q, r) integer ("axial" coordinates; s = -q - r the third cube
 * coordinate, Hexagonal grids, A. Patel, redblobgames.com, 2013). Since a1
 * and a2 are equally long 60 degrees apart, rounding the cube coordinates
 * (fixing the one rounded farthest) gives the centre whose Voronoi cell,
 * the hexagon of flat-to-flat p with the segments' orientation, holds the
 * point. The ring of (q, r) is max(|q|, |r|, |s|).
 *
 * Grey edges. A segment lies inside its Voronoi cell (gap >= 0), so the open
 * region near a cell of side h <= p / (2 sqrt2) meets at most the nearest
 * centre's segment and its six neighbours' (any other centre is >= sqrt3 p
 * - p/sqrt3 = 1.15 p away from a point of the nearest's Voronoi cell, more
 * than a segment's circumradius f/sqrt3 plus the cell's half diagonal). The
 * segments are disjoint, so the cell's open fraction is the sum of its
 * fractions in each: exact when each segment either misses the cell, holds
 * it, or has one flat through it (a half-plane, aperture_halfplane_fraction);
 * a cell a segment's corner (two flats) may cut is split as for the single
 * hexagon. */
#ifndef PSFSIM_APERTURE_SEG_H
#define PSFSIM_APERTURE_SEG_H

#include "optics/aperture_types.h"
#include "optics/psf_hd.h"

#include <math.h>

#define APS_SQRT3 1.73205080756887729353

/* A segmented aperture's geometry, precomputed (a POD the GPU can copy). */
typedef struct {
    int rings;
    double pitch;        /* p, metres */
    double apothem;      /* f / 2: a flat's distance from its segment's centre */
    double rc, rs;       /* cos, sin of the array's angle */
    double nx[6], ny[6]; /* outward normals of a segment's flats, 30 + 60 k deg + angle */
    double stop_r;       /* outer circular stop's radius; 0 = none */
    unsigned long long missing[APERTURE_SEG_WORDS];
} psf_seg_geom;

/* Index of the segment at axial (q, r) (numbering of psf_segments). */
PSF_HD int aps_index(int q, int r)
{
    int s = -q - r;
    int aq = q < 0 ? -q : q, ar = r < 0 ? -r : r, as = s < 0 ? -s : s;
    int n = aq > ar ? aq : ar;
    n = n > as ? n : as;
    if (n == 0) return 0;
    int side, t;
    if (s == -n && r >= 0 && r <= n - 1)
        side = 0, t = r;
    else if (r == n && q <= 0)
        side = 1, t = -q;
    else if (q == -n && r >= 1)
        side = 2, t = n - r;
    else if (s == n && r <= 0)
        side = 3, t = -r;
    else if (r == -n && q >= 0)
        side = 4, t = q;
    else
        side = 5, t = r + n;
    return 3 * n * (n - 1) + 1 + side * n + t;
}

/* Whether segment (q, r) is built: within the rings and not left out. */
PSF_HD int aps_present(const psf_seg_geom *g, int q, int r)
{
    int s = -q - r;
    int aq = q < 0 ? -q : q, ar = r < 0 ? -r : r, as = s < 0 ? -s : s;
    if (aq > g->rings || ar > g->rings || as > g->rings) return 0;
    int k = aps_index(q, r);
    return !((g->missing[k / 64] >> (k % 64)) & 1ULL);
}

/* Axial coordinates of the centre nearest to (x, y) (world frame). */
PSF_HD void aps_nearest(const psf_seg_geom *g, double x, double y, int *q, int *r)
{
    double xl = g->rc * x + g->rs * y, yl = -g->rs * x + g->rc * y;
    double qf = 2.0 * xl / (APS_SQRT3 * g->pitch), rf = yl / g->pitch - 0.5 * qf, sf = -qf - rf;
    double qr = floor(qf + 0.5), rr = floor(rf + 0.5), sr = floor(sf + 0.5);
    double dq = fabs(qr - qf), dr = fabs(rr - rf), ds = fabs(sr - sf);
    if (dq > dr && dq > ds)
        qr = -rr - sr;
    else if (dr > ds)
        rr = -qr - sr;
    *q = (int)qr, *r = (int)rr;
}

/* World coordinates of the centre of segment (q, r). */
PSF_HD void aps_center(const psf_seg_geom *g, int q, int r, double *x, double *y)
{
    double xl = 0.5 * APS_SQRT3 * g->pitch * q, yl = g->pitch * (0.5 * q + r);
    *x = g->rc * xl - g->rs * yl;
    *y = g->rs * xl + g->rc * yl;
}

/* Precompute g from s (which aperture_check has accepted). */
PSF_HD void aps_init(const psf_segments *s, double rc, double rsn, psf_seg_geom *g)
{
    g->rings = s->rings;
    g->pitch = s->flat_to_flat_m + s->gap_m;
    g->apothem = 0.5 * s->flat_to_flat_m;
    g->rc = rc, g->rs = rsn;
    const double c0[6] = {0.5 * APS_SQRT3,  0.0, -0.5 * APS_SQRT3,
                          -0.5 * APS_SQRT3, 0.0, 0.5 * APS_SQRT3};
    const double s0[6] = {0.5, 1.0, 0.5, -0.5, -1.0, -0.5};
    for (int k = 0; k < 6; ++k) {
        g->nx[k] = rc * c0[k] - rsn * s0[k];
        g->ny[k] = rsn * c0[k] + rc * s0[k];
    }
    g->stop_r = s->stop_diameter_m > 0.0 ? 0.5 * s->stop_diameter_m : 0.0;
    for (int w = 0; w < APERTURE_SEG_WORDS; ++w)
        g->missing[w] = s->missing[w];
}

/* 1 when (x, y) is inside a present segment (flats counting as inside). */
PSF_HD int aps_point_in(const psf_seg_geom *g, double x, double y)
{
    int q, r;
    aps_nearest(g, x, y, &q, &r);
    if (!aps_present(g, q, r)) return 0;
    double cx, cy;
    aps_center(g, q, r, &cx, &cy);
    for (int k = 0; k < 6; ++k)
        if (g->nx[k] * (x - cx) + g->ny[k] * (y - cy) > g->apothem) return 0;
    return 1;
}

#endif
