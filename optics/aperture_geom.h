/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-sample aperture geometry shared by the CPU code and the CUDA kernels
 * (PSF_HD: no allocation, no recursion, no library calls but math.h), so both
 * backends evaluate the same transmission for every pupil sample.
 *
 * Conventions: docs/design.md, "Aperture". Lengths in metres, angles from +x
 * towards +y. The open region is the intersection of
 *   - the outer boundary: |p| <= R (circle) or the hexagon of circumradius R
 *     with vertices on the +x and -x axes (none for a FILE aperture), or the
 *     union of a segmented aperture's segments (aperture_seg.h) inside its
 *     optional circular stop,
 *   - |p| >= e R (central obscuration),
 *   - the outside of every spider vane: vane k has direction
 *     u_k = (cos phi_k, sin phi_k), phi_k = angle + k 360/count, and blocks
 *     the points with t = p.u_k >= 0 and |s| < w/2, s = p.(-sin phi_k, cos phi_k).
 *
 * Grey edges: a sample's value is the area fraction of its dx x dx cell inside
 * the open region. A cell that no boundary crosses is 0 or 1 at once; a cell
 * crossed by one boundary gets the exact area of a half-plane in a square
 * (circles linearised only where their curvature costs < 2e-4 per sample); a
 * cell crossed by two or more (corners) is split 4 x 4, down to three levels
 * (cells of dx/64), and the last level's corner cells are point-sampled 4 x 4.
 * Error budget per sample (tested against brute force in
 * tests/optics/test_optics_aperture.c): circle linearisation <= 0.35 APG_CURV_TOL
 * ~ 1.8e-4, and each point-sampled corner cell <= 1/8 of its (dx/64)^2 area,
 * 3e-5, so well under 1e-3 for the few corner cells a sample holds. */
#ifndef PSFSIM_APERTURE_GEOM_H
#define PSFSIM_APERTURE_GEOM_H

#include "optics/aperture_types.h"
#include "optics/aperture_seg.h"
#include "optics/psf_hd.h"

#include <math.h>

#define APG_PI 3.14159265358979323846
#define APG_SQRT3_2 0.86602540378443864676
/* Circles are replaced by their tangent line in a cell of side h only when
 * h^2 <= APG_CURV_TOL R dx: the arc-vs-chord area over the ~3 dx/h cells the
 * circle crosses in one sample then sums to <= 0.35 APG_CURV_TOL of dx^2. */
#define APG_CURV_TOL 5e-4

enum { APG_OUTER_NONE = 0, APG_OUTER_CIRCLE = 1, APG_OUTER_HEXAGON = 2, APG_OUTER_SEGMENTS = 3 };
enum { APG_OPEN = 0, APG_BLOCKED = 1, APG_FRAC = 2, APG_SPLIT = 3 };

/* The aperture's geometry, precomputed once (a POD the GPU can copy). */
typedef struct {
    int binary;         /* 1: EDGE_BINARY, 0: EDGE_GREY */
    int outer;          /* APG_OUTER_* */
    double r_out;       /* circle radius or hexagon circumradius D/2, metres */
    double hex_apothem; /* R sqrt(3)/2: the hexagon's flat sides' distance */
    double hex_nx[6];   /* hexagon edge outward unit normals, at 30 + 60 k deg */
    double hex_ny[6];
    int hex_rotated;    /* 1: the hexagon is rotated (its binary rim by point test) */
    double hex_rho1;    /* max over the six normals of |nx| + |ny| (a cell's reach) */
    double r_obs;       /* obscuration radius e R, metres; 0 = none */
    int obs_hex;        /* 1: the obscuration is a hexagon of circumradius r_obs */
    double obs_apothem; /* its flats' distance, r_obs sqrt(3)/2 */
    double obs_nx[6], obs_ny[6];
    double obs_ratio;       /* e, for the binary edges' exact rim test */
    int nvanes;             /* spider vanes; 0 = none (also when width is 0) */
    double vane_hw;         /* half width w/2, metres */
    double vane_angle0_deg; /* first vane's angle */
    double vane_step_deg;   /* 360 / nvanes */
    double vane_cos_step;   /* cos, sin of the step: rotates one vane onto the next */
    double vane_sin_step;
    psf_seg_geom seg; /* APG_OUTER_SEGMENTS only (aperture_seg.h) */
    int nlist;        /* listed vanes (psf_vane), each: direction, half width, offset, t range */
    double lux[APERTURE_MAX_VANES], luy[APERTURE_MAX_VANES], lhw[APERTURE_MAX_VANES];
    double loff[APERTURE_MAX_VANES], lt0[APERTURE_MAX_VANES], lt1[APERTURE_MAX_VANES];
} psf_aperture_geom;

/* (cos, sin) of deg degrees, exact at multiples of 90 so that vanes along the
 * axes have exactly axis-parallel edges. */
PSF_HD void apg_unit_deg(double deg, double *c, double *s)
{
    double a = fmod(deg, 360.0);
    if (a < 0.0) a += 360.0;
    if (a >= 360.0) a -= 360.0;
    if (a == 0.0) {
        *c = 1.0, *s = 0.0;
    } else if (a == 90.0) {
        *c = 0.0, *s = 1.0;
    } else if (a == 180.0) {
        *c = -1.0, *s = 0.0;
    } else if (a == 270.0) {
        *c = 0.0, *s = -1.0;
    } else {
        double r = a * (APG_PI / 180.0);
        *c = cos(r), *s = sin(r);
    }
}

/* Precompute g from a (which aperture_check has accepted). */
PSF_HD void aperture_geom_init(const psf_aperture *a, psf_aperture_geom *g)
{
    double r = 0.5 * a->diameter_m;
    g->binary = a->edge == EDGE_BINARY;
    g->outer = a->shape == APERTURE_CIRCULAR    ? APG_OUTER_CIRCLE
               : a->shape == APERTURE_HEXAGON   ? APG_OUTER_HEXAGON
               : a->shape == APERTURE_SEGMENTED ? APG_OUTER_SEGMENTS
                                                : APG_OUTER_NONE;
    g->r_out = r;
    g->hex_apothem = r * APG_SQRT3_2;
    /* Edge normals at 30, 90, ..., 330 deg: vertices at 0 and 180 deg
     * (then rotated by the hexagon's angle). */
    g->hex_nx[0] = APG_SQRT3_2, g->hex_ny[0] = 0.5;
    g->hex_nx[1] = 0.0, g->hex_ny[1] = 1.0;
    g->hex_nx[2] = -APG_SQRT3_2, g->hex_ny[2] = 0.5;
    g->hex_nx[3] = -APG_SQRT3_2, g->hex_ny[3] = -0.5;
    g->hex_nx[4] = 0.0, g->hex_ny[4] = -1.0;
    g->hex_nx[5] = APG_SQRT3_2, g->hex_ny[5] = -0.5;
    double hc = 1.0, hs = 0.0; /* the hexagons' rotation */
    if (a->shape == APERTURE_HEXAGON) apg_unit_deg(a->angle_deg, &hc, &hs);
    if (a->shape == APERTURE_SEGMENTED) apg_unit_deg(a->seg.angle_deg, &hc, &hs);
    g->hex_rotated = a->shape == APERTURE_HEXAGON && !(hc == 1.0 && hs == 0.0);
    for (int k = 0; k < 6; ++k) {
        double nx = g->hex_nx[k] * hc - g->hex_ny[k] * hs,
               ny = g->hex_nx[k] * hs + g->hex_ny[k] * hc;
        g->obs_nx[k] = nx, g->obs_ny[k] = ny;
        if (a->shape == APERTURE_HEXAGON) g->hex_nx[k] = nx, g->hex_ny[k] = ny;
    }
    g->hex_rho1 = 0.5 + APG_SQRT3_2; /* unrotated: the largest, at 30 + 60 k, k != 1, 4 */
    for (int k = 0; k < 6; ++k) {
        double m = fabs(g->hex_nx[k]) + fabs(g->hex_ny[k]);
        g->hex_rho1 = m > g->hex_rho1 ? m : g->hex_rho1;
    }
    g->r_obs = a->obscuration > 0.0 ? a->obscuration * r : 0.0;
    g->obs_ratio = a->obscuration > 0.0 ? a->obscuration : 0.0;
    g->obs_hex = a->obscuration_hexagon && g->r_obs > 0.0;
    g->obs_apothem = g->r_obs * APG_SQRT3_2;
    g->nvanes = (a->spider_count > 0 && a->spider_width_m > 0.0) ? a->spider_count : 0;
    g->vane_hw = 0.5 * a->spider_width_m;
    g->vane_angle0_deg = a->spider_angle_deg;
    g->vane_step_deg = g->nvanes > 0 ? 360.0 / g->nvanes : 360.0;
    apg_unit_deg(g->vane_step_deg, &g->vane_cos_step, &g->vane_sin_step);
    double sc = 1.0, ss = 0.0;
    if (g->outer == APG_OUTER_SEGMENTS) apg_unit_deg(a->seg.angle_deg, &sc, &ss);
    aps_init(&a->seg, sc, ss, &g->seg);
    g->nlist = 0;
    for (int k = 0; k < a->nvanes && k < APERTURE_MAX_VANES; ++k) {
        const psf_vane *v = &a->vanes[k];
        if (!(v->width_m > 0.0)) continue;
        int n = g->nlist++;
        apg_unit_deg(v->angle_deg, &g->lux[n], &g->luy[n]);
        g->lhw[n] = 0.5 * v->width_m;
        g->loff[n] = v->offset_m;
        g->lt0[n] = v->r_start_m;
        g->lt1[n] = v->r_end_m > 0.0 ? v->r_end_m : 1e300;
    }
}

/* Fraction of the square [-h/2, h/2]^2 where a x + b y <= s, for a unit
 * normal (a, b). With X, Y uniform on [-h/2, h/2], a X + b Y is the sum of
 * two uniforms on [-u, u] and [-v, v] (u = |a| h/2 >= v = |b| h/2, swapped if
 * not), whose CDF is the integral of their trapezoidal convolution density
 * (Papoulis & Pillai, Probability, Random Variables and Stochastic
 * Processes, 4th ed., sec. 6-2): 0, (s+u+v)^2/(8uv), (s+u)/(2u),
 * 1 - (u+v-s)^2/(8uv), 1 on the five intervals split at -(u+v), -(u-v), u-v,
 * u+v. v -> 0 (an axis-parallel edge) falls into the middle, linear piece. */
PSF_HD double aperture_halfplane_fraction(double a, double b, double s, double h)
{
    double u = 0.5 * h * fabs(a), v = 0.5 * h * fabs(b);
    if (v > u) {
        double t = u;
        u = v, v = t;
    }
    if (s <= -(u + v)) return 0.0;
    if (s >= u + v) return 1.0;
    if (s < v - u) return (s + u + v) * (s + u + v) / (8.0 * u * v);
    if (s > u - v) return 1.0 - (u + v - s) * (u + v - s) / (8.0 * u * v);
    return (s + u) / (2.0 * u);
}

/* Rotate the unit vector (*ux, *uy) by the angle of cosine c and sine s. */
PSF_HD void apg_rotate(double c, double s, double *ux, double *uy)
{
    double x = *ux * c - *uy * s;
    *uy = *ux * s + *uy * c;
    *ux = x;
}

/* Direction of the vane at or just clockwise of the direction of (x, y):
 * the start of the two sweeps over the vanes near a point. */
PSF_HD void apg_vane_first(const psf_aperture_geom *g, double x, double y, double *ux, double *uy)
{
    double a = atan2(y, x) * (180.0 / APG_PI) - g->vane_angle0_deg;
    a -= 360.0 * floor(a / 360.0);
    int k = (int)floor(a / g->vane_step_deg);
    if (k >= g->nvanes) k = g->nvanes - 1;
    if (k < 0) k = 0;
    apg_unit_deg(g->vane_angle0_deg + k * g->vane_step_deg, ux, uy);
}

/* One vane (direction (ux, uy), half width hw) against the cell of side h
 * centred at (cx, cy). *frac: the open fraction when APG_FRAC. The vane is
 * the intersection of s <= hw, s >= -hw and t >= 0: it is open when one of
 * them fails everywhere in the cell, blocked when all hold everywhere, and
 * exact when only the two long edges or only the end cut the cell. */
PSF_HD int apg_vane_cell(double ux, double uy, double hw, double cx, double cy, double h,
                         double *frac)
{
    double t = cx * ux + cy * uy, s = cy * ux - cx * uy;
    double rho = 0.5 * h * (fabs(ux) + fabs(uy)); /* range of t and s over the cell */
    double e1 = s - hw, e2 = -s - hw, e3 = -t;    /* > 0: outside the vane */
    if (e1 >= rho || e2 >= rho || e3 >= rho) return APG_OPEN;
    if (e3 <= -rho) {
        if (e1 <= -rho && e2 <= -rho) return APG_BLOCKED;
        /* Only the long edges: blocked part = F(s <= hw) - F(s <= -hw). */
        *frac = 1.0 - aperture_halfplane_fraction(-uy, ux, hw - s, h) +
                aperture_halfplane_fraction(-uy, ux, -hw - s, h);
        return APG_FRAC;
    }
    if (e1 <= -rho && e2 <= -rho) { /* only the end: open where t < 0 */
        *frac = aperture_halfplane_fraction(ux, uy, -t, h);
        return APG_FRAC;
    }
    return APG_SPLIT;
}

/* Listed vane n against the cell of side h centred at (cx, cy): the
 * intersection of off - hw < s < off + hw and t0 <= t <= t1. Open when one
 * of the four fails everywhere in the cell, blocked when all hold
 * everywhere, exact when only the long edges, or only one end, cut it. */
PSF_HD int apg_listvane_cell(const psf_aperture_geom *g, int n, double cx, double cy, double h,
                             double *frac)
{
    double ux = g->lux[n], uy = g->luy[n], hw = g->lhw[n], off = g->loff[n];
    double t = cx * ux + cy * uy, s = cy * ux - cx * uy;
    double rho = 0.5 * h * (fabs(ux) + fabs(uy));
    double e1 = s - off - hw, e2 = off - hw - s, e3 = g->lt0[n] - t, e4 = t - g->lt1[n];
    if (e1 >= rho || e2 >= rho || e3 >= rho || e4 >= rho) return APG_OPEN;
    int sides_in = e1 <= -rho && e2 <= -rho, ends_in = e3 <= -rho && e4 <= -rho;
    if (sides_in && ends_in) return APG_BLOCKED;
    if (ends_in) {
        *frac = 1.0 - aperture_halfplane_fraction(-uy, ux, off + hw - s, h) +
                aperture_halfplane_fraction(-uy, ux, off - hw - s, h);
        return APG_FRAC;
    }
    if (sides_in && e4 <= -rho) { /* only the start: open where t < t0 */
        *frac = aperture_halfplane_fraction(ux, uy, e3, h);
        return APG_FRAC;
    }
    if (sides_in && e3 <= -rho) { /* only the end: open where t > t1 */
        *frac = 1.0 - aperture_halfplane_fraction(ux, uy, -e4, h);
        return APG_FRAC;
    }
    return APG_SPLIT;
}

/* 1 when (x, y) is under listed vane n (its ends block, its sides not). */
PSF_HD int apg_point_under_listvane(const psf_aperture_geom *g, int n, double x, double y)
{
    double t = x * g->lux[n] + y * g->luy[n], s = y * g->lux[n] - x * g->luy[n];
    return t >= g->lt0[n] && t <= g->lt1[n] && fabs(s - g->loff[n]) < g->lhw[n];
}

/* Circle of radius rc against the cell of side h centred at (cx, cy), r = its
 * distance from the axis. side = +1: open inside (outer rim), -1: open outside
 * (obscuration). lin: the tangent-line approximation is allowed. */
PSF_HD int apg_circle_cell(double cx, double cy, double r, double rc, double side, double h,
                           int lin, double *frac)
{
    double hd = 0.70710678118654752 * h; /* half diagonal */
    double d = side * (r - rc);          /* > 0 on the blocked side */
    if (d >= hd) return APG_BLOCKED;
    if (d <= -hd) return APG_OPEN;
    if (!lin || r <= 0.0) return APG_SPLIT;
    *frac = aperture_halfplane_fraction(side * cx / r, side * cy / r, -d, h);
    return APG_FRAC;
}

/* The present segments against the cell of side h centred at (cx, cy)
 * (aperture_seg.h, "Grey edges"): APG_OPEN inside one segment, APG_BLOCKED
 * in no segment, APG_FRAC with the exact open fraction when every segment
 * near it misses it, or cuts it with one flat, else APG_SPLIT (also for a
 * cell too large for the seven-centre search). */
PSF_HD int apg_segments_cell(const psf_seg_geom *g, double cx, double cy, double h, double *frac)
{
    if (h > 0.25 * g->pitch) return APG_SPLIT; /* h sqrt2 / 2 <= p / (4 sqrt2) < p / 4 */
    const int dq[7] = {0, 1, 0, -1, -1, 0, 1}, dr[7] = {0, 0, 1, 1, 0, -1, -1};
    int q0, r0, touched = 0;
    double sum = 0.0;
    aps_nearest(g, cx, cy, &q0, &r0);
    for (int n = 0; n < 7; ++n) {
        int q = q0 + dq[n], r = r0 + dr[n], ncut = 0, out = 0;
        if (!aps_present(g, q, r)) continue;
        double sx, sy, f = 1.0;
        aps_center(g, q, r, &sx, &sy);
        for (int k = 0; k < 6 && !out; ++k) {
            double rho = 0.5 * h * (fabs(g->nx[k]) + fabs(g->ny[k]));
            double d = g->nx[k] * (cx - sx) + g->ny[k] * (cy - sy) - g->apothem;
            if (d >= rho)
                out = 1;
            else if (d > -rho) {
                ++ncut;
                f = aperture_halfplane_fraction(g->nx[k], g->ny[k], -d, h);
            }
        }
        if (out) continue;
        if (ncut == 0) return APG_OPEN;
        if (ncut > 1) return APG_SPLIT;
        sum += f;
        touched = 1;
    }
    if (!touched) return APG_BLOCKED;
    *frac = sum > 1.0 ? 1.0 : sum;
    return APG_FRAC;
}

/* 1 when (x, y) is inside the hexagonal obscuration (its flats open). */
PSF_HD int apg_in_obs_hexagon(const psf_aperture_geom *g, double x, double y)
{
    for (int k = 0; k < 6; ++k)
        if (g->obs_nx[k] * x + g->obs_ny[k] * y >= g->obs_apothem) return 0;
    return 1;
}

/* The hexagonal obscuration against the cell of side h centred at (cx, cy):
 * open when the cell lies beyond one flat, blocked when inside all six,
 * exact (the part beyond that flat) when one flat alone cuts it. */
PSF_HD int apg_obs_hexagon_cell(const psf_aperture_geom *g, double cx, double cy, double h,
                                double *frac)
{
    int ncut = 0;
    double f = 0.0;
    for (int k = 0; k < 6; ++k) {
        double rho = 0.5 * h * (fabs(g->obs_nx[k]) + fabs(g->obs_ny[k]));
        double d = g->obs_nx[k] * cx + g->obs_ny[k] * cy - g->obs_apothem;
        if (d >= rho) return APG_OPEN;
        if (d > -rho) {
            ++ncut;
            f = 1.0 - aperture_halfplane_fraction(g->obs_nx[k], g->obs_ny[k], -d, h);
        }
    }
    if (ncut == 0) return APG_BLOCKED;
    if (ncut > 1) return APG_SPLIT;
    *frac = f;
    return APG_FRAC;
}

/* Count one boundary's verdict on a cell; returns 1 when it blocks the cell. */
PSF_HD int apg_tally(int st, double f, int *ncut, int *split, double *frac)
{
    if (st == APG_BLOCKED) return 1;
    if (st != APG_OPEN) {
        ++*ncut;
        if (st == APG_SPLIT) *split = 1;
        *frac = f;
    }
    return 0;
}

/* Open fraction of the cell of side h centred at (cx, cy) when one decision
 * settles it, else -1 (split it). dx: the sample pitch (sets how fine a
 * circle must be cut); last: finest level, where circles are linearised
 * regardless. */
PSF_HD double apg_cell(const psf_aperture_geom *g, double cx, double cy, double h, double dx,
                       int last)
{
    int ncut = 0, split = 0, st = APG_OPEN;
    double frac = 1.0, f = 1.0;
    double r = sqrt(cx * cx + cy * cy);
    if (g->outer == APG_OUTER_CIRCLE) {
        int lin = last || h * h <= APG_CURV_TOL * g->r_out * dx;
        st = apg_circle_cell(cx, cy, r, g->r_out, 1.0, h, lin, &f);
        if (apg_tally(st, f, &ncut, &split, &frac)) return 0.0;
    } else if (g->outer == APG_OUTER_HEXAGON) {
        double rho = 0.5 * h * g->hex_rho1;
        for (int k = 0; k < 6; ++k) {
            double d = g->hex_nx[k] * cx + g->hex_ny[k] * cy - g->hex_apothem;
            if (d >= rho) return 0.0;
            if (d > -rho) {
                ncut++;
                frac = aperture_halfplane_fraction(g->hex_nx[k], g->hex_ny[k], -d, h);
            }
        }
    } else if (g->outer == APG_OUTER_SEGMENTS) {
        st = apg_segments_cell(&g->seg, cx, cy, h, &f);
        if (apg_tally(st, f, &ncut, &split, &frac)) return 0.0;
        if (g->seg.stop_r > 0.0) {
            int lin = last || h * h <= APG_CURV_TOL * g->seg.stop_r * dx;
            st = apg_circle_cell(cx, cy, r, g->seg.stop_r, 1.0, h, lin, &f);
            if (apg_tally(st, f, &ncut, &split, &frac)) return 0.0;
        }
    }
    if (g->obs_hex) {
        st = apg_obs_hexagon_cell(g, cx, cy, h, &f);
        if (apg_tally(st, f, &ncut, &split, &frac)) return 0.0;
    } else if (g->r_obs > 0.0) {
        int lin = last || h * h <= APG_CURV_TOL * g->r_obs * dx;
        st = apg_circle_cell(cx, cy, r, g->r_obs, -1.0, h, lin, &f);
        if (apg_tally(st, f, &ncut, &split, &frac)) return 0.0;
    }
    if (g->nvanes > 0) {
        /* Sweep the vanes outward from the point's direction on both sides;
         * the distance from the centre to a vane's ray grows monotonically
         * with the angle on each side, so the first vane farther than
         * hw + half diagonal ends that side. */
        double lim = (g->vane_hw + 0.70710678118654752 * h) * (1.0 + 1e-12);
        double ux0, uy0, ux, uy, t, s, dist;
        int seen = 0;
        apg_vane_first(g, cx, cy, &ux0, &uy0);
        for (int side = 0; side < 2; ++side) {
            double sn = side ? g->vane_sin_step : -g->vane_sin_step;
            ux = ux0, uy = uy0;
            if (side) {
                apg_rotate(g->vane_cos_step, sn, &ux, &uy);
            }
            while (seen < g->nvanes) {
                t = cx * ux + cy * uy, s = cy * ux - cx * uy;
                dist = t >= 0.0 ? fabs(s) : r;
                if (dist > lim) break;
                seen++;
                st = apg_vane_cell(ux, uy, g->vane_hw, cx, cy, h, &f);
                if (apg_tally(st, f, &ncut, &split, &frac)) return 0.0;
                apg_rotate(g->vane_cos_step, sn, &ux, &uy);
            }
        }
    }
    for (int n = 0; n < g->nlist; ++n) {
        st = apg_listvane_cell(g, n, cx, cy, h, &f);
        if (apg_tally(st, f, &ncut, &split, &frac)) return 0.0;
    }
    if (ncut == 0) return 1.0;
    if (ncut == 1 && !split) return frac;
    return -1.0;
}

/* 1 when the point (x, y), at r = |(x, y)| from the axis, is under a vane
 * (g->nvanes > 0; the vane's end, t = 0, blocks). */
PSF_HD int apg_point_under_vane(const psf_aperture_geom *g, double x, double y, double r)
{
    double lim = g->vane_hw * (1.0 + 1e-12);
    double ux0, uy0, ux, uy, t, s;
    int seen = 0;
    apg_vane_first(g, x, y, &ux0, &uy0);
    for (int side = 0; side < 2; ++side) {
        double sn = side ? g->vane_sin_step : -g->vane_sin_step;
        ux = ux0, uy = uy0;
        if (side) {
            apg_rotate(g->vane_cos_step, sn, &ux, &uy);
        }
        while (seen < g->nvanes) {
            t = x * ux + y * uy, s = y * ux - x * uy;
            if (t >= 0.0 && fabs(s) < g->vane_hw) return 1;
            if ((t >= 0.0 ? fabs(s) : r) > lim) break;
            seen++;
            apg_rotate(g->vane_cos_step, sn, &ux, &uy);
        }
    }
    return 0;
}

/* 1 when the point (x, y) is in the open region, boundaries counting as open
 * (the vane's end, t = 0, blocks as the definition above says). */
PSF_HD int aperture_point_open(const psf_aperture_geom *g, double x, double y)
{
    double r2 = x * x + y * y;
    if (g->outer == APG_OUTER_CIRCLE && r2 > g->r_out * g->r_out) return 0;
    if (g->outer == APG_OUTER_HEXAGON)
        for (int k = 0; k < 6; ++k)
            if (g->hex_nx[k] * x + g->hex_ny[k] * y > g->hex_apothem) return 0;
    if (g->outer == APG_OUTER_SEGMENTS) {
        if (g->seg.stop_r > 0.0 && r2 > g->seg.stop_r * g->seg.stop_r) return 0;
        if (!aps_point_in(&g->seg, x, y)) return 0;
    }
    if (g->obs_hex ? apg_in_obs_hexagon(g, x, y) : r2 < g->r_obs * g->r_obs) return 0;
    if (g->nvanes > 0 && apg_point_under_vane(g, x, y, sqrt(r2))) return 0;
    for (int n = 0; n < g->nlist; ++n)
        if (apg_point_under_listvane(g, n, x, y)) return 0;
    return 1;
}

/* Finest level (cells of dx/64): settle it, else count 4 x 4 points. */
PSF_HD double apg_leaf(const psf_aperture_geom *g, double cx, double cy, double h, double dx)
{
    double f = apg_cell(g, cx, cy, h, dx, 1);
    if (f >= 0.0) return f;
    int n = 0;
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            n += aperture_point_open(g, cx + (j - 1.5) * 0.25 * h, cy + (i - 1.5) * 0.25 * h);
    return n / 16.0;
}

/* Cells of dx/16: settle, else split into 4 x 4 leaves. */
PSF_HD double apg_level2(const psf_aperture_geom *g, double cx, double cy, double h, double dx)
{
    double f = apg_cell(g, cx, cy, h, dx, 0);
    if (f >= 0.0) return f;
    double sum = 0.0, q = 0.25 * h;
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            sum += apg_leaf(g, cx + (j - 1.5) * q, cy + (i - 1.5) * q, q, dx);
    return sum / 16.0;
}

/* Cells of dx/4: settle, else split into 4 x 4 cells of dx/16. */
PSF_HD double apg_level1(const psf_aperture_geom *g, double cx, double cy, double h, double dx)
{
    double f = apg_cell(g, cx, cy, h, dx, 0);
    if (f >= 0.0) return f;
    double sum = 0.0, q = 0.25 * h;
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            sum += apg_level2(g, cx + (j - 1.5) * q, cy + (i - 1.5) * q, q, dx);
    return sum / 16.0;
}

/* Binary edges of the sample at integer offsets (di, dj) (rows, columns)
 * from the axis sample, pitch dx_m: the rims decided in exact arithmetic
 * on the offsets, so that a sample exactly on a rim is open (docs/design.md,
 * "Aperture") whatever D's value, on both backends (x*x + y*y > R*R in
 * metres with an inexact D/n closed some, and nvcc contracted it into an
 * FMA). With q = D / dx samples across D (rounded to the integer n when
 * within 1e-9 relative: dx = D/n is D/n rounded), X = 2 dj, Y = 2 di:
 * circle open iff X^2 + Y^2 <= q^2; obscuration closed iff X^2 + Y^2 <
 * (e q)^2; hexagon (vertices on the x axis) open iff 4 Y^2 <= 3 q^2 and
 * |X| <= q and Y^2 <= 3 (q - |X|)^2 (the flat sides |y| <= R sqrt3/2 and
 * sqrt3/2 |x| + |y|/2 <= R sqrt3/2, squared). The left sides are integers
 * (|X|, |Y| <= 2^17: exact in 64 bits and in double); with an integer q
 * the circle and hexagon tests are exact, e q is one rounding of the
 * config's e times n. Spiders, segments and their stop, a rotated hexagon
 * and a hexagonal obscuration: the point test at (dj dx, di dx) (their
 * edges are not on the sample lattice). */
PSF_HD int aperture_index_open(const psf_aperture_geom *g, int di, int dj, double dx_m)
{
    long long X = 2LL * dj, Y = 2LL * di, X2 = X * X, Y2 = Y * Y, AX = X < 0 ? -X : X;
    double q = 2.0 * g->r_out / dx_m, qn = floor(q + 0.5);
    int whole = fabs(q - qn) <= 1e-9 * q && qn <= 1e9; /* 3 n^2 fits in 64 bits */
    long long n = (long long)qn;
    if (g->outer == APG_OUTER_CIRCLE && (whole ? X2 + Y2 > n * n : (double)(X2 + Y2) > q * q))
        return 0;
    if (g->outer == APG_OUTER_HEXAGON && !g->hex_rotated) {
        if (whole ? (4 * Y2 > 3 * n * n || AX > n || Y2 > 3 * (n - AX) * (n - AX))
                  : (4.0 * (double)Y2 > 3.0 * q * q || (double)AX > q ||
                     (double)Y2 > 3.0 * (q - (double)AX) * (q - (double)AX)))
            return 0;
    }
    if (g->obs_ratio > 0.0 && !g->obs_hex) {
        double eq = g->obs_ratio * (whole ? qn : q);
        if ((double)(X2 + Y2) < eq * eq) return 0;
    }
    double x = (double)dj * dx_m, y = (double)di * dx_m; /* vanes, segments: not on the lattice */
    if (g->outer == APG_OUTER_HEXAGON && g->hex_rotated)
        for (int k = 0; k < 6; ++k)
            if (g->hex_nx[k] * x + g->hex_ny[k] * y > g->hex_apothem) return 0;
    if (g->obs_hex && apg_in_obs_hexagon(g, x, y)) return 0;
    if (g->outer == APG_OUTER_SEGMENTS) {
        double r2 = x * x + y * y;
        if (g->seg.stop_r > 0.0 && r2 > g->seg.stop_r * g->seg.stop_r) return 0;
        if (!aps_point_in(&g->seg, x, y)) return 0;
    }
    for (int v = 0; v < g->nlist; ++v)
        if (apg_point_under_listvane(g, v, x, y)) return 0;
    if (g->nvanes == 0) return 1;
    return !apg_point_under_vane(g, x, y, sqrt(x * x + y * y));
}

/* Transmission of the pupil sample centred at (x_m, y_m) with pitch dx_m:
 * binary edges: 1 when the centre is open, else 0; grey edges: the open
 * fraction of the dx x dx cell, within 1e-3 (see the top of this file). */
PSF_HD float aperture_sample(const psf_aperture_geom *g, double x_m, double y_m, double dx_m)
{
    if (g->binary) return aperture_point_open(g, x_m, y_m) ? 1.0f : 0.0f;
    double f = apg_cell(g, x_m, y_m, dx_m, dx_m, 0);
    if (f >= 0.0) return (float)f;
    double sum = 0.0, q = 0.25 * dx_m;
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            sum += apg_level1(g, x_m + (j - 1.5) * q, y_m + (i - 1.5) * q, q, dx_m);
    return (float)(sum / 16.0);
}

/* aperture_sample of the sample at integer offsets (di, dj) from the axis
 * sample (x = dj dx, y = di dx): binary edges by aperture_index_open, grey
 * edges as aperture_sample. Used by aperture_fill and the GPU's pupil. */
PSF_HD float aperture_sample_index(const psf_aperture_geom *g, int di, int dj, double dx_m)
{
    if (g->binary) return aperture_index_open(g, di, dj, dx_m) ? 1.0f : 0.0f;
    return aperture_sample(g, (double)dj * dx_m, (double)di * dx_m, dx_m);
}

#endif
