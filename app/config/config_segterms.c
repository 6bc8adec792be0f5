/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-segment Zernike terms of a segmented aperture (docs/config.md,
 * "Segmented apertures"): optics.aperture.segments.zernike
 * ( (segment, j, coefficient), ... ) and sweep.segment_zernike
 * ( (segment, j, [values]), ... ). */
#include "app/config/config_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const conv_names[] = {"noll", "ansi", "fringe"};

double cfg_coeff_bound(const psf_config *cfg, char *why, size_t whylen)
{
    double wl_lo, wl_hi;
    config_wavelength_span(cfg, &wl_lo, &wl_hi);
    return config_coeff_limit(cfg, wl_lo, why, whylen);
}

/* Element i of the triples list l at path (or l itself, written alone). */
static const config_setting_t *triple_at(const config_setting_t *l, int single, int i,
                                         const char *path, char *key, size_t keylen)
{
    if (single) {
        snprintf(key, keylen, "%s", path);
        return l;
    }
    snprintf(key, keylen, "%s[%d]", path, i);
    return config_setting_get_elem(l, (unsigned)i);
}

int cfg_read_segment(cfg_ctx *c, const psf_aperture *a, const config_setting_t *p, const char *key,
                     int *segment)
{
    const config_setting_t *s = config_setting_get_elem(p, 0);
    int nseg = aperture_segment_count(a->seg.rings);
    char got[64];
    cfg_fmt_double(cfg_number(s), got, sizeof got);
    if (!cfg_is_integer(s) || cfg_integer(s) < 0 || cfg_integer(s) >= nseg)
        return cfg_error(c, s, key,
                         "the segment must be an index, an integer in [0, %d] for %d ring%s "
                         "(got %s)",
                         nseg - 1, a->seg.rings, a->seg.rings == 1 ? "" : "s",
                         cfg_is_number(s) ? got : cfg_type_name(config_setting_type(s)));
    int k = (int)cfg_integer(s);
    if ((a->seg.missing[k / 64] >> (k % 64)) & 1ULL)
        return cfg_error(c, s, key,
                         "segment %d is left out (optics.aperture.segments.missing): it has no "
                         "wavefront",
                         k);
    *segment = k;
    return 0;
}

int cfg_segment_j(cfg_ctx *c, const config_setting_t *s, const char *key, zernike_convention conv,
                  int *j, int *n, int *m)
{
    if (!cfg_is_integer(s))
        return cfg_error(c, s, key, "expected the index j to be an integer (got %s)",
                         cfg_type_name(config_setting_type(s)));
    long long jj = cfg_integer(s);
    if (cfg_zernike_j(c, s, key, conv, jj, n, m)) return -1;
    if (*n > CFG_SEG_MAX_ORDER)
        return cfg_error(c, s, key,
                         "j = %lld is of radial order %d: a segment's terms go up to radial "
                         "order %d (Noll j <= 15; %s convention)",
                         jj, *n, CFG_SEG_MAX_ORDER, conv_names[conv]);
    *j = (int)jj;
    return 0;
}

/* A number within +-lim at s (what: "the coefficient", "the value 2"). */
static int bounded_value(cfg_ctx *c, const config_setting_t *s, const char *key, const char *what,
                         double lim, const char *why, double *v)
{
    if (!cfg_is_number(s))
        return cfg_error(c, s, key, "expected %s to be a number (got %s)", what,
                         cfg_type_name(config_setting_type(s)));
    *v = cfg_number(s);
    if (!isfinite(*v)) return cfg_error(c, s, key, "%s must be a finite number", what);
    return cfg_check_bounds(c, s, key, what, *v, -lim, lim, why);
}

/* The value of triple p: a coefficient (values NULL) or a list of values. */
static int read_value(cfg_ctx *c, const config_setting_t *p, const char *key, int swept,
                      const psf_config *cfg, cfg_segment_term *t)
{
    char why[256];
    double lim = cfg_coeff_bound(cfg, why, sizeof why);
    const config_setting_t *vs = config_setting_get_elem(p, 2);
    if (!swept) return bounded_value(c, vs, key, "the coefficient", lim, why, &t->coeff);
    int type = config_setting_type(vs);
    if (type != CONFIG_TYPE_ARRAY && type != CONFIG_TYPE_LIST)
        return cfg_error(c, vs, key, "expected a list of values [a, b, ...] (got %s)",
                         cfg_type_name(type));
    int nv = config_setting_length(vs);
    if (nv == 0) return cfg_error(c, vs, key, "must hold at least one value");
    t->values = malloc((size_t)nv * sizeof *t->values);
    if (!t->values) return cfg_error(c, vs, key, "out of memory");
    t->nvalues = nv;
    for (int e = 0; e < nv; ++e) {
        char what[32];
        snprintf(what, sizeof what, "the value %d", e);
        if (bounded_value(c, config_setting_get_elem(vs, (unsigned)e), key, what, lim, why,
                          &t->values[e]))
            return -1;
    }
    return 0;
}

/* The triples at path into *out, *n (each (segment, j) once). */
static int read_list(cfg_ctx *c, psf_config *cfg, const char *path, int swept,
                     cfg_segment_term **out, int *n)
{
    const config_setting_t *l = cfg_get(c, path);
    if (!l) return 0;
    if (cfg->aperture.shape != APERTURE_SEGMENTED)
        return cfg_error(c, l, path, "only used with optics.aperture.shape = \"segmented\"");
    const char *shape = swept ? "(segment, j, [values])" : "(segment, j, coefficient)";
    int single = config_setting_length(l) == 3 && cfg_is_number(config_setting_get_elem(l, 0));
    int np = single ? 1 : config_setting_length(l);
    if (np == 0) return cfg_error(c, l, path, "must hold at least one %s triple", shape);
    *out = calloc((size_t)np, sizeof **out);
    if (!*out) return cfg_error(c, l, path, "out of memory");
    for (int i = 0; i < np; ++i) {
        char key[80];
        const config_setting_t *p = triple_at(l, single, i, path, key, sizeof key);
        int type = config_setting_type(p);
        if (type != CONFIG_TYPE_LIST && type != CONFIG_TYPE_ARRAY)
            return cfg_error(c, p, key, "expected a triple %s (got %s)", shape,
                             cfg_type_name(type));
        if (config_setting_length(p) != 3)
            return cfg_error(c, p, key, "expected a triple %s (got %d elements)", shape,
                             config_setting_length(p));
        cfg_segment_term *t = &(*out)[i];
        *n = i + 1; /* values freed by config_free from here on */
        if (cfg_read_segment(c, &cfg->aperture, p, key, &t->segment) ||
            cfg_segment_j(c, config_setting_get_elem(p, 1), key, cfg->zconv, &t->j, &t->n, &t->m))
            return -1;
        for (int k = 0; k < i; ++k)
            if ((*out)[k].segment == t->segment && (*out)[k].j == t->j)
                return cfg_error(
                    c, p, key, "duplicate term (segment %d, j = %d) (first on line %u)", t->segment,
                    t->j, config_setting_source_line(config_setting_get_elem(l, (unsigned)k)));
        if (read_value(c, p, key, swept, cfg, t)) return -1;
    }
    return 0;
}

int cfg_read_segment_terms(cfg_ctx *c, psf_config *cfg)
{
    if (read_list(c, cfg, "optics.aperture.segments.zernike", 0, &cfg->seg_zernike,
                  &cfg->nseg_zernike) ||
        read_list(c, cfg, "sweep.segment_zernike", 1, &cfg->sweep_seg_zernike,
                  &cfg->n_sweep_seg_zernike))
        return -1;
    return 0;
}
