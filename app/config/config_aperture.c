/* SPDX-License-Identifier: BSD-3-Clause */
/* The segmented aperture's keys, optics.aperture.segments (docs/config.md,
 * "Segmented apertures"), read after optics.aperture.shape and diameter_m,
 * and the listed spider vanes, optics.aperture.spiders.vanes. */
#include "app/config/config_priv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SEG "optics.aperture.segments"

/* missing = [k, ...]: each an integer segment index in range, once. */
static int read_missing(cfg_ctx *c, psf_segments *s)
{
    const config_setting_t *l = cfg_get(c, SEG ".missing");
    if (!l) return 0;
    int nseg = aperture_segment_count(s->rings), len = config_setting_length(l);
    for (int i = 0; i < len; ++i) {
        const config_setting_t *e = config_setting_get_elem(l, (unsigned)i);
        char key[64], got[64];
        snprintf(key, sizeof key, SEG ".missing[%d]", i);
        cfg_fmt_double(cfg_number(e), got, sizeof got);
        if (!cfg_is_integer(e) || cfg_integer(e) < 0 || cfg_integer(e) >= nseg)
            return cfg_error(c, e, key,
                             "must be a segment index, an integer in [0, %d] for %d ring%s "
                             "(got %s)",
                             nseg - 1, s->rings, s->rings == 1 ? "" : "s", got);
        int k = (int)cfg_integer(e);
        if ((s->missing[k / 64] >> (k % 64)) & 1ULL)
            return cfg_error(c, e, key, "segment %d is already listed", k);
        s->missing[k / 64] |= 1ULL << (k % 64);
    }
    if (len == nseg) return cfg_error(c, l, SEG ".missing", "leaves out every segment");
    return 0;
}

/* The sizes: flat_to_flat_m (required), gap_m in [0, flat_to_flat_m). */
static int read_sizes(cfg_ctx *c, psf_segments *s)
{
    int r = cfg_read_float(c, SEG ".flat_to_flat_m", 0.0, 1, &s->flat_to_flat_m);
    if (r < 0) return -1;
    if (r == 0) return cfg_missing(c, SEG ".flat_to_flat_m", "(shape = \"segmented\")");
    if (cfg_read_float(c, SEG ".gap_m", -HUGE_VAL, 0, &s->gap_m) < 0) return -1;
    char got[64], f[64];
    cfg_fmt_double(s->gap_m, got, sizeof got);
    cfg_fmt_double(s->flat_to_flat_m, f, sizeof f);
    if (s->gap_m < 0.0)
        return cfg_error(c, cfg_get(c, SEG ".gap_m"), SEG ".gap_m",
                         "must be >= 0: neighbouring segments would overlap (got %s)", got);
    if (s->gap_m >= s->flat_to_flat_m)
        return cfg_error(c, cfg_get(c, SEG ".gap_m"), SEG ".gap_m",
                         "must be < " SEG ".flat_to_flat_m (%s) (got %s)", f, got);
    return 0;
}

/* diameter_m against the segments: at least what holds them (inside the
 * stop); that value when diameter_m is not given. */
static int fit_diameter(cfg_ctx *c, psf_aperture *a, int have_diameter)
{
    const double span = 2.0 * aperture_segments_radius(&a->seg);
    const int stopped = a->seg.stop_diameter_m > 0.0 && a->seg.stop_diameter_m < span;
    double need = stopped ? a->seg.stop_diameter_m : span;
    if (!have_diameter) {
        a->diameter_m = need;
        if (need >= CFG_MIN_DIAMETER_M && need <= CFG_MAX_DIAMETER_M) return 0;
        char d[64], sp[64];
        cfg_fmt_double(need, d, sizeof d);
        cfg_fmt_double(span, sp, sizeof sp);
        /* Name the key that sets the diameter: the outer stop when it cuts
         * the segments (a stop of 1e-9 m closes them), else their span. */
        if (stopped)
            return cfg_error(c, cfg_get(c, SEG ".outer_diameter_m"), SEG ".outer_diameter_m",
                             "the outer stop's diameter %s m (inside the segments' span, %s m) "
                             "is the aperture's: it must be in [%g, %g] m",
                             d, sp, CFG_MIN_DIAMETER_M, CFG_MAX_DIAMETER_M);
        return cfg_error(c, cfg_get(c, SEG ".flat_to_flat_m"), SEG ".flat_to_flat_m",
                         "the segments span %s m: the aperture's diameter must be in [%g, %g] m", d,
                         CFG_MIN_DIAMETER_M, CFG_MAX_DIAMETER_M);
    }
    if (a->diameter_m >= need * (1.0 - 1e-12)) return 0;
    char got[64], want[64];
    cfg_fmt_double(a->diameter_m, got, sizeof got);
    cfg_fmt_double(need, want, sizeof want);
    return cfg_error(c, cfg_get(c, "optics.aperture.diameter_m"), "optics.aperture.diameter_m",
                     "must hold every segment: >= %s m, the segments' circumscribed diameter "
                     "(or the outer stop's), for shape = \"segmented\" (got %s)",
                     want, got);
}

int cfg_read_segments(cfg_ctx *c, psf_aperture *a, int have_diameter)
{
    const config_setting_t *g = cfg_get(c, SEG);
    if (a->shape != APERTURE_SEGMENTED) {
        if (g) return cfg_error(c, g, SEG, "only used with shape = \"segmented\"");
        return 0;
    }
    if (!g) return cfg_missing(c, SEG ".flat_to_flat_m", "(shape = \"segmented\")");
    psf_segments *s = &a->seg;
    if (read_sizes(c, s)) return -1;
    long long rings = 0;
    int r = cfg_read_int(c, SEG ".rings", 0, APERTURE_SEG_MAX_RINGS, &rings);
    if (r < 0) return -1;
    if (r == 0) return cfg_missing(c, SEG ".rings", "(shape = \"segmented\")");
    s->rings = (int)rings;
    if (read_missing(c, s)) return -1;
    if (cfg_read_float(c, SEG ".angle_deg", -HUGE_VAL, 0, &s->angle_deg) < 0 ||
        cfg_bound_key(c, SEG ".angle_deg", s->angle_deg, -CFG_MAX_ANGLE_DEG, CFG_MAX_ANGLE_DEG,
                      NULL))
        return -1;
    if (cfg_read_float(c, SEG ".outer_diameter_m", 0.0, 1, &s->stop_diameter_m) < 0) return -1;
    return fit_diameter(c, a, have_diameter);
}

#define VANES "optics.aperture.spiders.vanes"

/* Member name of vane i (the setting, or NULL when absent) into key. */
static const config_setting_t *vane_member(const config_setting_t *v, int i, const char *name,
                                           char *key, size_t len)
{
    snprintf(key, len, VANES "[%d].%s", i, name);
    return config_setting_get_member(v, name);
}

/* A number member of vane i: required or not, > lo_gt when lo_gt is not
 * -HUGE_VAL. Returns 1 when read, 0 when absent, -1 on error. */
static int vane_number(cfg_ctx *c, const config_setting_t *v, int i, const char *name, int required,
                       double *out)
{
    char key[128];
    const config_setting_t *m = vane_member(v, i, name, key, sizeof key);
    if (!m) return required ? cfg_error(c, v, key, "required key missing") : 0;
    if (!cfg_is_number(m))
        return cfg_error(c, m, key, "expected a number (got %s)",
                         cfg_type_name(config_setting_type(m)));
    *out = cfg_number(m);
    if (!isfinite(*out)) return cfg_error(c, m, key, "must be finite");
    return 1;
}

/* Vane i's values against the aperture of radius R. */
static int vane_bounds(cfg_ctx *c, const config_setting_t *v, int i, const psf_vane *w, double R)
{
    char key[128], got[64], r[64];
    cfg_fmt_double(R, r, sizeof r);
    const config_setting_t *m = vane_member(v, i, "width_m", key, sizeof key);
    cfg_fmt_double(w->width_m, got, sizeof got);
    if (!(w->width_m >= CFG_MIN_SPIDER_WIDTH_M))
        return cfg_error(c, m, key, "must be >= %g (got %s)", CFG_MIN_SPIDER_WIDTH_M, got);
    if (fabs(w->angle_deg) > CFG_MAX_ANGLE_DEG) {
        m = vane_member(v, i, "angle_deg", key, sizeof key);
        cfg_fmt_double(w->angle_deg, got, sizeof got);
        return cfg_error(c, m, key, "must be in [-360, 360] (got %s)", got);
    }
    if (fabs(w->offset_m) - 0.5 * w->width_m >= R) {
        m = vane_member(v, i, "offset_m", key, sizeof key);
        cfg_fmt_double(w->offset_m, got, sizeof got);
        return cfg_error(c, m, key,
                         "the vane lies outside the aperture: |offset_m| - width_m / 2 must be < "
                         "diameter_m / 2 = %s (got %s)",
                         r, got);
    }
    if (w->r_start_m >= R) {
        m = vane_member(v, i, "r_start_m", key, sizeof key);
        cfg_fmt_double(w->r_start_m, got, sizeof got);
        return cfg_error(c, m, key,
                         "the vane starts outside the aperture: must be < diameter_m / 2 = %s "
                         "(got %s)",
                         r, got);
    }
    if (w->r_end_m != 0.0 && !(w->r_end_m > w->r_start_m)) {
        m = vane_member(v, i, "r_end_m", key, sizeof key);
        cfg_fmt_double(w->r_end_m, got, sizeof got);
        return cfg_error(c, m, key, "must be > r_start_m, or 0 for no end (got %s)", got);
    }
    return 0;
}

/* Vane i: a group of the five known members. */
static int read_vane(cfg_ctx *c, const config_setting_t *v, int i, psf_vane *w, double R)
{
    static const char *const names[] = {"angle_deg", "width_m", "offset_m", "r_start_m", "r_end_m"};
    char key[128];
    snprintf(key, sizeof key, VANES "[%d]", i);
    if (config_setting_type(v) != CONFIG_TYPE_GROUP)
        return cfg_error(c, v, key, "expected a group { angle_deg; width_m; ... } (got %s)",
                         cfg_type_name(config_setting_type(v)));
    for (int e = 0; e < config_setting_length(v); ++e) {
        const config_setting_t *m = config_setting_get_elem(v, (unsigned)e);
        const char *name = config_setting_name(m);
        int known = 0;
        for (int k = 0; k < 5; ++k)
            known |= strcmp(name, names[k]) == 0;
        snprintf(key, sizeof key, VANES "[%d].%s", i, name);
        if (!known)
            return cfg_error(c, m, key,
                             "unknown key (known keys here: angle_deg, width_m, offset_m, "
                             "r_start_m, r_end_m)");
    }
    memset(w, 0, sizeof *w);
    if (vane_number(c, v, i, "angle_deg", 1, &w->angle_deg) < 0 ||
        vane_number(c, v, i, "width_m", 1, &w->width_m) < 0 ||
        vane_number(c, v, i, "offset_m", 0, &w->offset_m) < 0 ||
        vane_number(c, v, i, "r_start_m", 0, &w->r_start_m) < 0 ||
        vane_number(c, v, i, "r_end_m", 0, &w->r_end_m) < 0)
        return -1;
    return vane_bounds(c, v, i, w, R);
}

int cfg_read_vanes(cfg_ctx *c, psf_aperture *a)
{
    const config_setting_t *l = cfg_get(c, VANES);
    if (!l) return 0;
    int n = config_setting_length(l);
    if (n < 1 || n > APERTURE_MAX_VANES)
        return cfg_error(c, l, VANES, "must hold 1 to %d vanes (got %d)", APERTURE_MAX_VANES, n);
    for (int i = 0; i < n; ++i)
        if (read_vane(c, config_setting_get_elem(l, (unsigned)i), i, &a->vanes[i],
                      0.5 * a->diameter_m))
            return -1;
    a->nvanes = n;
    return 0;
}

int cfg_read_aperture_extras(cfg_ctx *c, psf_aperture *a)
{
    static const char *const obs[] = {"circle", "hexagon"};
    const char *akey = "optics.aperture.angle_deg";
    const config_setting_t *as = cfg_get(c, akey);
    if (as && a->shape != APERTURE_HEXAGON)
        return cfg_error(c, as, akey,
                         "only used with shape = \"hexagon\" (segments: "
                         "optics.aperture.segments.angle_deg)");
    if (cfg_read_float(c, akey, -HUGE_VAL, 0, &a->angle_deg) < 0 ||
        cfg_bound_key(c, akey, a->angle_deg, -CFG_MAX_ANGLE_DEG, CFG_MAX_ANGLE_DEG, NULL))
        return -1;
    int v = 0;
    if (cfg_read_enum(c, "optics.aperture.obscuration_shape", obs, 2, 0, &v) < 0) return -1;
    a->obscuration_hexagon = v;
    return 0;
}
