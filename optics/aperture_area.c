/* SPDX-License-Identifier: BSD-3-Clause */
/* Analytic open area of a circular or hexagonal aperture with a central
 * obscuration and spider vanes (docs/design.md, "Aperture").
 *
 * Equally spaced half-strip vanes (count c, half width hw) overlap near the
 * axis. For c >= 3, adjacent vanes' facing edges meet at P_k, at distance
 * d = hw / sin(pi/c) on the bisector of the two vanes, so the union of the
 * vanes is the regular c-gon P_0 .. P_{c-1} plus c disjoint arms
 * {|s| < hw, t >= t0}, t0 = hw / tan(pi/c), each starting at the polygon's
 * side across its vane. For c <= 2 there is no overlap of positive area:
 * t0 = 0 and no polygon. Every vane overlap is then counted once, wherever
 * it lies (inside or outside the obscuration). Areas clipped by a circle use
 * the circular segment, rho^2 acos(a/rho) - a sqrt(rho^2 - a^2), and
 * int sqrt(rho^2 - s^2) ds = (s sqrt(rho^2 - s^2) + rho^2 asin(s/rho)) / 2
 * (Gradshteyn & Ryzhik, sec. 2.27); areas clipped by the hexagon are
 * polygons clipped by its six edges (Sutherland & Hodgman, CACM 17, 32,
 * 1974) and measured with the shoelace formula.
 *
 * Exact for every circular aperture and for hexagons whose obscuration fits
 * inside the hexagon (e <= sqrt(3)/2); beyond that the vanes' part inside
 * the obscuration is taken as if the obscuration were not cut by the
 * hexagon's sides, an error below the area of the vanes in the hexagon's
 * corners outside the obscuration's inscribed part. */
#include "optics/aperture.h"
#include "optics/aperture_geom.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    double x, y;
} pt2;

/* Area of the regular c-gon of circumradius d intersected with the
 * concentric disk of radius rho. The disk's parts beyond the c sides are
 * disjoint segments while rho < d. */
static double polygon_disk_area(int c, double d, double rho)
{
    if (rho <= 0.0) return 0.0;
    double ap = d * cos(APG_PI / c);
    if (rho <= ap) return APG_PI * rho * rho;
    if (rho >= d) return 0.5 * c * d * d * sin(2.0 * APG_PI / c);
    double seg = rho * rho * acos(ap / rho) - ap * sqrt(rho * rho - ap * ap);
    return APG_PI * rho * rho - c * seg;
}

/* Area of {|s| < hw, t >= t0, s^2 + t^2 < rho^2}, t0 >= 0:
 * 2 int_0^s* (sqrt(rho^2 - s^2) - t0) ds, s* = min(hw, sqrt(rho^2 - t0^2)). */
static double arm_disk_area(double hw, double t0, double rho)
{
    if (rho <= t0) return 0.0;
    double s = sqrt(rho * rho - t0 * t0);
    if (s > hw) s = hw;
    double q = s / rho > 1.0 ? 1.0 : s / rho;
    return s * sqrt(rho * rho - s * s) + rho * rho * asin(q) - 2.0 * t0 * s;
}

/* Keep the part of the convex polygon in[0..n-1] where nx x + ny y <= a;
 * writes out (room for n + 1 points), returns its vertex count. */
static int clip_halfplane(const pt2 *in, int n, double nx, double ny, double a, pt2 *out)
{
    int m = 0;
    for (int k = 0; k < n; ++k) {
        pt2 p = in[k], q = in[(k + 1) % n];
        double dp = nx * p.x + ny * p.y - a, dq = nx * q.x + ny * q.y - a;
        if (dp <= 0.0) out[m++] = p;
        if ((dp < 0.0 && dq > 0.0) || (dp > 0.0 && dq < 0.0)) {
            double f = dp / (dp - dq);
            out[m].x = p.x + f * (q.x - p.x);
            out[m].y = p.y + f * (q.y - p.y);
            ++m;
        }
    }
    return m;
}

/* Area of the convex polygon a[0..n-1] (room for n + 6 points in a and b)
 * inside the hexagon of geometry g. */
static double hexagon_clip_area(const psf_aperture_geom *g, pt2 *a, pt2 *b, int n)
{
    for (int k = 0; k < 6 && n > 0; ++k) {
        n = clip_halfplane(a, n, g->hex_nx[k], g->hex_ny[k], g->hex_apothem, b);
        pt2 *t = a;
        a = b, b = t;
    }
    double s = 0.0;
    for (int k = 0; k < n; ++k) {
        pt2 p = a[k], q = a[(k + 1) % n];
        s += p.x * q.y - q.x * p.y;
    }
    return 0.5 * fabs(s);
}

/* Area of the union of the vanes inside the hexagon, or -1 if out of memory. */
static double vanes_in_hexagon(const psf_aperture_geom *g, double t0, double d)
{
    int c = g->nvanes;
    double hw = g->vane_hw, far = t0 + 2.0 * g->r_out, total = 0.0;
    pt2 a[16], b[16];
    for (int k = 0; k < c; ++k) {
        double ux, uy;
        apg_unit_deg(g->vane_angle0_deg + k * g->vane_step_deg, &ux, &uy);
        a[0] = (pt2){t0 * ux + hw * uy, t0 * uy - hw * ux};
        a[1] = (pt2){far * ux + hw * uy, far * uy - hw * ux};
        a[2] = (pt2){far * ux - hw * uy, far * uy + hw * ux};
        a[3] = (pt2){t0 * ux - hw * uy, t0 * uy + hw * ux};
        total += hexagon_clip_area(g, a, b, 4);
    }
    if (c < 3) return total;
    if (d <= g->hex_apothem) return total + 0.5 * c * d * d * sin(2.0 * APG_PI / c);
    pt2 *pa = malloc(2 * ((size_t)c + 8) * sizeof *pa);
    if (!pa) return -1.0;
    for (int k = 0; k < c; ++k) {
        double ux, uy;
        apg_unit_deg(g->vane_angle0_deg + (k + 0.5) * g->vane_step_deg, &ux, &uy);
        pa[k] = (pt2){d * ux, d * uy};
    }
    total += hexagon_clip_area(g, pa, pa + c + 8, c);
    free(pa);
    return total;
}

/* Area of the union of the vanes inside the disk of radius rho. */
static double vanes_in_disk(const psf_aperture_geom *g, double t0, double d, double rho)
{
    int c = g->nvanes;
    if (c == 0) return 0.0;
    double poly = c >= 3 ? polygon_disk_area(c, d, rho) : 0.0;
    return poly + c * arm_disk_area(g->vane_hw, t0, rho);
}

/* A hexagonal obscuration (circumradius e R, inside the outer boundary
 * when it fits the outer's inscribed circle, or has the outer hexagon's
 * orientation): the outer area minus 3 sqrt(3)/2 (e R)^2; -1 with spiders,
 * segments, or an obscuration that may cross the outer hexagon's sides. */
static double hex_obscured_area(const psf_aperture *a)
{
    double r = 0.5 * a->diameter_m, ro = a->obscuration * r;
    if (a->shape == APERTURE_SEGMENTED || (a->spider_count > 0 && a->spider_width_m > 0.0))
        return -1.0;
    double obs = 1.5 * sqrt(3.0) * ro * ro;
    if (a->shape == APERTURE_CIRCULAR) return APG_PI * r * r - obs;
    return 1.5 * sqrt(3.0) * r * r - obs; /* HEXAGON: same angle, so inside */
}

double aperture_area_m2(const psf_aperture *a)
{
    if (aperture_check(a, NULL, 0) || a->shape == APERTURE_FILE || a->nvanes > 0) return -1.0;
    if (a->obscuration_hexagon && a->obscuration > 0.0) return hex_obscured_area(a);
    if (a->shape == APERTURE_SEGMENTED) {
        if (a->seg.stop_diameter_m > 0.0 || a->obscuration > 0.0 ||
            (a->spider_count > 0 && a->spider_width_m > 0.0))
            return -1.0;
        int n = 0, nseg = aperture_segment_count(a->seg.rings);
        for (int k = 0; k < nseg; ++k)
            n += !((a->seg.missing[k / 64] >> (k % 64)) & 1ULL);
        return n * 0.5 * sqrt(3.0) * a->seg.flat_to_flat_m * a->seg.flat_to_flat_m;
    }
    psf_aperture_geom g;
    aperture_geom_init(a, &g);
    double r = g.r_out, ro = g.r_obs;
    int c = g.nvanes;
    double t0 = 0.0, d = 0.0;
    if (c >= 3) {
        t0 = g.vane_hw / tan(APG_PI / c);
        d = g.vane_hw / sin(APG_PI / c);
    }
    double in_obs = vanes_in_disk(&g, t0, d, ro);
    if (g.outer == APG_OUTER_CIRCLE)
        return APG_PI * (r * r - ro * ro) - (vanes_in_disk(&g, t0, d, r) - in_obs);
    double hex = 1.5 * sqrt(3.0) * r * r - polygon_disk_area(6, r, ro);
    if (c == 0) return hex;
    double vh = vanes_in_hexagon(&g, t0, d);
    if (vh < 0.0) return -1.0;
    return hex - (vh - in_obs);
}
