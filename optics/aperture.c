/* SPDX-License-Identifier: BSD-3-Clause */
/* Aperture validation and the pupil transmission grid. The per-sample
 * formulas live in aperture_geom.h and map_sample.h, shared with the GPU
 * kernels; this file only checks the description and loops over the grid. */
#include "optics/aperture.h"
#include "optics/aperture_geom.h"
#include "optics/map_sample.h"

#include <math.h>
#include <stdio.h>

static int fail(char *err, size_t errlen, const char *msg, double got)
{
    if (err && errlen) snprintf(err, errlen, "aperture: %s (got %g)", msg, got);
    return -1;
}

int aperture_segment_count(int rings)
{
    return 1 + 3 * rings * (rings + 1);
}

/* Axial coordinates (aperture_seg.h) of segment k >= 1: ring n, side
 * k' / n, step k' % n (k' = k - first of the ring), each side walked from
 * its corner towards the next one's. */
static void segment_axial(int k, int *q, int *r)
{
    int n = 1;
    while (k > 3 * n * (n + 1))
        ++n;
    int kk = k - (3 * n * (n - 1) + 1), side = kk / n, t = kk % n;
    static const int cq[6] = {1, 0, -1, -1, 0, 1}, cr[6] = {0, 1, 1, 0, -1, -1};
    static const int wq[6] = {-1, -1, 0, 1, 1, 0}, wr[6] = {1, 0, -1, -1, 0, 1};
    *q = n * cq[side] + t * wq[side];
    *r = n * cr[side] + t * wr[side];
}

int aperture_segment_center(const psf_segments *s, int k, double *x, double *y)
{
    if (k < 0 || s->rings < 0 || s->rings > APERTURE_SEG_MAX_RINGS ||
        k >= aperture_segment_count(s->rings))
        return -1;
    int q = 0, r = 0;
    if (k > 0) segment_axial(k, &q, &r);
    psf_seg_geom g;
    double c, sn;
    apg_unit_deg(s->angle_deg, &c, &sn);
    aps_init(s, c, sn, &g);
    aps_center(&g, q, r, x, y);
    return 0;
}

double aperture_segments_radius(const psf_segments *s)
{
    double far = 0.0, rc = s->flat_to_flat_m / sqrt(3.0); /* circumradius */
    int nseg = aperture_segment_count(s->rings);
    for (int k = 0; k < nseg; ++k) {
        if ((s->missing[k / 64] >> (k % 64)) & 1ULL) continue;
        double x, y, c, sn;
        aperture_segment_center(s, k, &x, &y);
        for (int v = 0; v < 6; ++v) {
            apg_unit_deg(s->angle_deg + 60.0 * v, &c, &sn);
            double d = hypot(x + rc * c, y + rc * sn);
            far = d > far ? d : far;
        }
    }
    return far;
}

/* The segmented aperture's own fields (psf_segments). */
static int segments_check(const psf_aperture *a, char *err, size_t errlen)
{
    const psf_segments *s = &a->seg;
    if (!(s->flat_to_flat_m > 0.0) || !isfinite(s->flat_to_flat_m))
        return fail(err, errlen, "segment flat_to_flat_m must be > 0", s->flat_to_flat_m);
    if (!(s->gap_m >= 0.0) || !isfinite(s->gap_m))
        return fail(err, errlen, "segment gap_m must be >= 0 (segments would overlap)", s->gap_m);
    if (!(s->gap_m < s->flat_to_flat_m))
        return fail(err, errlen, "segment gap_m must be < flat_to_flat_m", s->gap_m);
    if (s->rings < 0 || s->rings > APERTURE_SEG_MAX_RINGS)
        return fail(err, errlen, "segment rings must be in [0, 17] (APERTURE_SEG_MAX_RINGS)",
                    (double)s->rings);
    if (!isfinite(s->angle_deg))
        return fail(err, errlen, "segment angle_deg must be finite", s->angle_deg);
    if (!(s->stop_diameter_m >= 0.0) || !isfinite(s->stop_diameter_m))
        return fail(err, errlen, "segment stop diameter must be >= 0", s->stop_diameter_m);
    double need = 2.0 * aperture_segments_radius(s);
    if (s->stop_diameter_m > 0.0 && s->stop_diameter_m < need) need = s->stop_diameter_m;
    if (need > a->diameter_m * (1.0 + 1e-12)) {
        if (err && errlen)
            snprintf(err, errlen,
                     "aperture: the segments reach beyond diameter_m / 2: diameter_m must be >= "
                     "%.9g (got %g)",
                     need, a->diameter_m);
        return -1;
    }
    return 0;
}

/* One listed vane: finite, a width > 0, inside the radius R. */
static int vane_check(const psf_vane *v, double R, char *err, size_t errlen)
{
    if (!isfinite(v->angle_deg) || !isfinite(v->offset_m) || !isfinite(v->r_start_m) ||
        !isfinite(v->r_end_m))
        return fail(err, errlen, "vane angle, offset and radii must be finite", v->angle_deg);
    if (!(v->width_m > 0.0) || !isfinite(v->width_m))
        return fail(err, errlen, "vane width_m must be > 0", v->width_m);
    if (fabs(v->offset_m) - 0.5 * v->width_m >= R)
        return fail(err, errlen, "vane lies outside the aperture: |offset_m| - width_m/2 >= D/2",
                    v->offset_m);
    if (v->r_start_m >= R) return fail(err, errlen, "vane r_start_m must be < D/2", v->r_start_m);
    if (v->r_end_m != 0.0 && !(v->r_end_m > v->r_start_m))
        return fail(err, errlen, "vane r_end_m must be > r_start_m (or 0: no end)", v->r_end_m);
    return 0;
}

int aperture_check(const psf_aperture *a, char *err, size_t errlen)
{
    if (!a) return fail(err, errlen, "no aperture given", 0.0);
    if (a->shape != APERTURE_CIRCULAR && a->shape != APERTURE_HEXAGON &&
        a->shape != APERTURE_FILE && a->shape != APERTURE_SEGMENTED)
        return fail(err, errlen, "unknown shape", (double)a->shape);
    if (a->edge != EDGE_GREY && a->edge != EDGE_BINARY)
        return fail(err, errlen, "unknown edge mode", (double)a->edge);
    if (!(a->diameter_m > 0.0) || !isfinite(a->diameter_m))
        return fail(err, errlen, "diameter_m must be > 0", a->diameter_m);
    if (!(a->obscuration >= 0.0 && a->obscuration < 1.0))
        return fail(err, errlen, "obscuration must be in [0, 1)", a->obscuration);
    if (a->spider_count < 0)
        return fail(err, errlen, "spider count must be >= 0", (double)a->spider_count);
    if (a->spider_count > 0) {
        if (!(a->spider_width_m >= 0.0) || !isfinite(a->spider_width_m))
            return fail(err, errlen, "spider width_m must be >= 0", a->spider_width_m);
        if (!isfinite(a->spider_angle_deg))
            return fail(err, errlen, "spider angle_deg must be finite", a->spider_angle_deg);
    }
    if (a->shape == APERTURE_FILE && (!a->map || a->map_rows < 1 || a->map_cols < 1))
        return fail(err, errlen, "shape \"file\" needs a transmission map, rows x cols >= 1",
                    (double)a->map_rows);
    if (!(a->map_width_m >= 0.0 && isfinite(a->map_width_m) && a->map_height_m >= 0.0 &&
          isfinite(a->map_height_m)))
        return fail(err, errlen, "the map's width and height must be >= 0 (0: D)", a->map_width_m);
    if (!isfinite(a->angle_deg)) return fail(err, errlen, "angle_deg must be finite", a->angle_deg);
    if (a->nvanes < 0 || a->nvanes > APERTURE_MAX_VANES)
        return fail(err, errlen, "listed vanes must number 0..16", (double)a->nvanes);
    for (int k = 0; k < a->nvanes; ++k)
        if (vane_check(&a->vanes[k], 0.5 * a->diameter_m, err, errlen)) return -1;
    if (a->shape == APERTURE_SEGMENTED) return segments_check(a, err, errlen);
    return 0;
}

int aperture_fill(const psf_aperture *a, int npix, double dx_m, float *amp, char *err,
                  size_t errlen)
{
    if (aperture_check(a, err, errlen)) return -1;
    if (npix < 1) return fail(err, errlen, "grid size N must be >= 1", (double)npix);
    if (!(dx_m > 0.0) || !isfinite(dx_m))
        return fail(err, errlen, "pupil pitch dx must be > 0", dx_m);
    if (!amp) return fail(err, errlen, "no output buffer", 0.0);
    psf_aperture_geom g;
    aperture_geom_init(a, &g);
    const int c = npix / 2;
    for (int i = 0; i < npix; ++i) {
        double y = (double)(i - c) * dx_m;
        float *row = amp + (size_t)i * npix;
        for (int j = 0; j < npix; ++j) {
            double x = (double)(j - c) * dx_m;
            float t = aperture_sample_index(&g, i - c, j - c, dx_m);
            if (a->shape == APERTURE_FILE && t != 0.0f)
                t *= map_bilinear_wh(a->map, a->map_rows, a->map_cols,
                                     map_extent_m(a->map_width_m, a->diameter_m),
                                     map_extent_m(a->map_height_m, a->diameter_m), x, y);
            row[j] = t;
        }
    }
    return 0;
}
