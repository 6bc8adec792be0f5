/* The segmented aperture's keys, optics.aperture.segments (docs/config.md,
 * "Segmented apertures"), read after optics.aperture.shape and diameter_m. */
#include "app/config/config_priv.h"

#include <math.h>
#include <stdio.h>

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
    double need = 2.0 * aperture_segments_radius(&a->seg);
    if (a->seg.stop_diameter_m > 0.0 && a->seg.stop_diameter_m < need)
        need = a->seg.stop_diameter_m;
    if (!have_diameter) {
        a->diameter_m = need;
        return 0;
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
