/* SPDX-License-Identifier: BSD-3-Clause */
/* The field group (docs/config.md, "Field-dependent aberrations"): the
 * detector positions of the set's field axis (field.grid or
 * field.positions_px), the optical axis and field radius that normalise
 * them, and the model of the aberrations over the field (field.zernike's
 * polynomials or field.table's measured points). Read after the sweep
 * (its bounds use the set's wavelengths); app/set/field_model.c evaluates
 * the model at each position. */
#include "app/config/config_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLD "field"

/* A finite number at s within +-CFG_FIELD_MAX_PX (key names it). */
static int pixel_value(cfg_ctx *c, const config_setting_t *s, const char *key, double *v)
{
    if (!cfg_is_number(s))
        return cfg_error(c, s, key, "expected a number, pixels (got %s)",
                         cfg_type_name(config_setting_type(s)));
    *v = cfg_number(s);
    if (!isfinite(*v)) return cfg_error(c, s, key, "must be a finite number");
    return cfg_check_bounds(c, s, key, NULL, *v, -CFG_FIELD_MAX_PX, CFG_FIELD_MAX_PX,
                            "a sanity bound on detector pixels");
}

/* key = [a, b]: two pixel values into out. */
static int read_px_pair(cfg_ctx *c, const config_setting_t *s, const char *key, const char *what,
                        double out[2])
{
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
        return cfg_error(c, s, key, "expected %s, two numbers (got %s)", what, cfg_type_name(t));
    if (config_setting_length(s) != 2)
        return cfg_error(c, s, key, "expected %s, two numbers (got %d)", what,
                         config_setting_length(s));
    for (int i = 0; i < 2; ++i) {
        char k[96];
        snprintf(k, sizeof k, "%s[%d]", key, i);
        if (pixel_value(c, config_setting_get_elem(s, (unsigned)i), k, &out[i])) return -1;
    }
    return 0;
}

/* field.grid: nx x ny positions, x fastest, x_i = x0 + i (x1 - x0) / (nx - 1). */
static int read_grid(cfg_ctx *c, psf_config *cfg)
{
    cfg_field *f = &cfg->field;
    const char *axis[2] = {"x", "y"};
    long long cnt[2] = {0, 0};
    double span[2][2];
    for (int a = 0; a < 2; ++a) {
        char key[64];
        snprintf(key, sizeof key, FLD ".grid.n%s", axis[a]);
        int rc = cfg_read_int(c, key, 1, CFG_MAX_IMAGES, &cnt[a]);
        if (rc < 0) return -1;
        if (rc == 0)
            return cfg_error(c, cfg_get(c, FLD ".grid"), key,
                             "required key missing (field.grid is given)");
        snprintf(key, sizeof key, FLD ".grid.%s_px", axis[a]);
        const config_setting_t *s = cfg_get(c, key);
        if (!s)
            return cfg_error(c, cfg_get(c, FLD ".grid"), key,
                             "required key missing (field.grid is given)");
        if (read_px_pair(c, s, key, "[first, last]", span[a])) return -1;
        if (cnt[a] == 1 && span[a][0] != span[a][1])
            return cfg_error(c, s, key,
                             "n%s = 1 makes one position: give [v, v] (got two different "
                             "values)",
                             axis[a]);
        if (cnt[a] > 1 && !(span[a][0] < span[a][1]))
            return cfg_error(c, s, key, "must be [first, last] with first < last (n%s = %lld)",
                             axis[a], cnt[a]);
    }
    if ((double)cnt[0] * (double)cnt[1] > (double)CFG_MAX_IMAGES)
        return cfg_error(c, cfg_get(c, FLD ".grid"), FLD ".grid",
                         "makes %.0f positions, more than the limit of %lld images",
                         (double)cnt[0] * (double)cnt[1], CFG_MAX_IMAGES);
    f->nx = (int)cnt[0];
    f->ny = (int)cnt[1];
    f->npos = cnt[0] * cnt[1];
    f->x_px = malloc((size_t)f->npos * sizeof *f->x_px);
    f->y_px = malloc((size_t)f->npos * sizeof *f->y_px);
    if (!f->x_px || !f->y_px)
        return cfg_error(c, cfg_get(c, FLD ".grid"), FLD ".grid", "out of memory");
    for (long long iy = 0; iy < cnt[1]; ++iy)
        for (long long ix = 0; ix < cnt[0]; ++ix) {
            long long k = iy * cnt[0] + ix;
            f->x_px[k] = cnt[0] > 1 ? span[0][0] + (double)ix * (span[0][1] - span[0][0]) /
                                                       (double)(cnt[0] - 1)
                                    : span[0][0];
            f->y_px[k] = cnt[1] > 1 ? span[1][0] + (double)iy * (span[1][1] - span[1][0]) /
                                                       (double)(cnt[1] - 1)
                                    : span[1][0];
            if (ix == cnt[0] - 1) f->x_px[k] = span[0][1]; /* the last exactly as written */
            if (iy == cnt[1] - 1) f->y_px[k] = span[1][1];
        }
    return 0;
}

/* field.positions_px: ( (x, y), ... ) or one (x, y). */
static int read_positions(cfg_ctx *c, psf_config *cfg)
{
    const char *path = FLD ".positions_px";
    cfg_field *f = &cfg->field;
    const config_setting_t *l = cfg_get(c, path);
    int single = config_setting_length(l) == 2 && cfg_is_number(config_setting_get_elem(l, 0));
    int n = single ? 1 : config_setting_length(l);
    if (n == 0) return cfg_error(c, l, path, "must hold at least one position (x, y)");
    f->npos = n;
    f->x_px = malloc((size_t)n * sizeof *f->x_px);
    f->y_px = malloc((size_t)n * sizeof *f->y_px);
    if (!f->x_px || !f->y_px) return cfg_error(c, l, path, "out of memory");
    for (int i = 0; i < n; ++i) {
        char key[80];
        const config_setting_t *p = l;
        snprintf(key, sizeof key, "%s", path);
        if (!single) {
            snprintf(key, sizeof key, "%s[%d]", path, i);
            p = config_setting_get_elem(l, (unsigned)i);
        }
        double xy[2];
        if (read_px_pair(c, p, key, "a position (x, y)", xy)) return -1;
        f->x_px[i] = xy[0];
        f->y_px[i] = xy[1];
    }
    return 0;
}

/* A monomial (p, q, c) of term key: p, q integers in 0..CFG_FIELD_MAX_POWER,
 * c within the coefficient bound. */
static int read_monomial(cfg_ctx *c, const config_setting_t *e, const char *key, double lim,
                         const char *why, cfg_field_monomial *mo)
{
    int t = config_setting_type(e);
    if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
        return cfg_error(c, e, key, "expected a monomial (p, q, c): c hx^p hy^q (got %s)",
                         cfg_type_name(t));
    if (config_setting_length(e) != 3)
        return cfg_error(c, e, key,
                         "expected a monomial (p, q, c): c hx^p hy^q, three values (got %d)",
                         config_setting_length(e));
    int pq[2];
    for (int i = 0; i < 2; ++i) {
        const config_setting_t *s = config_setting_get_elem(e, (unsigned)i);
        if (!cfg_is_integer(s) || cfg_integer(s) < 0 || cfg_integer(s) > CFG_FIELD_MAX_POWER) {
            char got[64];
            if (cfg_is_integer(s))
                snprintf(got, sizeof got, "%lld", cfg_integer(s));
            else
                snprintf(got, sizeof got, "%s", cfg_type_name(config_setting_type(s)));
            return cfg_error(c, s, key, "the power %s must be an integer in [0, %d] (got %s)",
                             i ? "q" : "p", CFG_FIELD_MAX_POWER, got);
        }
        pq[i] = (int)cfg_integer(s);
    }
    const config_setting_t *s = config_setting_get_elem(e, 2);
    if (!cfg_is_number(s))
        return cfg_error(c, s, key, "expected the coefficient c to be a number (got %s)",
                         cfg_type_name(config_setting_type(s)));
    double v = cfg_number(s);
    if (!isfinite(v)) return cfg_error(c, s, key, "the coefficient c must be a finite number");
    if (cfg_check_bounds(c, s, key, "the coefficient c", v, -lim, lim, why)) return -1;
    *mo = (cfg_field_monomial){pq[0], pq[1], v};
    return 0;
}

/* The monomials ( (p, q, c), ... ) at ml (key names the term) into
 * *mono, *nmono (j: the term's, for messages). */
static int read_monomials(cfg_ctx *c, const config_setting_t *ml, const char *key, int j,
                          double lim, const char *why, cfg_field_monomial **mono, int *nmono)
{
    int mt = config_setting_type(ml);
    if (mt != CONFIG_TYPE_LIST && mt != CONFIG_TYPE_ARRAY)
        return cfg_error(c, ml, key, "expected the monomials ( (p, q, c), ... ) (got %s)",
                         cfg_type_name(mt));
    int single = config_setting_length(ml) == 3 && cfg_is_number(config_setting_get_elem(ml, 0));
    int nm = single ? 1 : config_setting_length(ml);
    if (nm == 0) return cfg_error(c, ml, key, "must hold at least one monomial (p, q, c)");
    if (nm > CFG_FIELD_MAX_MONOMIALS)
        return cfg_error(c, ml, key, "more than %d monomials (every p + q <= %d)",
                         CFG_FIELD_MAX_MONOMIALS, CFG_FIELD_MAX_POWER);
    *mono = calloc((size_t)nm, sizeof **mono);
    if (!*mono) return cfg_error(c, ml, key, "out of memory");
    for (int i = 0; i < nm; ++i) {
        const config_setting_t *e = single ? ml : config_setting_get_elem(ml, (unsigned)i);
        char k[120];
        snprintf(k, sizeof k, "%s[%d]", key, i);
        if (read_monomial(c, e, k, lim, why, &(*mono)[i])) return -1;
        for (int q = 0; q < i; ++q)
            if ((*mono)[q].p == (*mono)[i].p && (*mono)[q].q == (*mono)[i].q)
                return cfg_error(c, e, k, "duplicate monomial (p, q) = (%d, %d) of term j = %d",
                                 (*mono)[i].p, (*mono)[i].q, j);
        *nmono = i + 1;
    }
    return 0;
}

/* Term i of field.zernike: (j, ( (p, q, c), ... )). */
static int read_term(cfg_ctx *c, psf_config *cfg, const config_setting_t *p, const char *key,
                     double lim, const char *why, cfg_field_term *t)
{
    int type = config_setting_type(p);
    if ((type != CONFIG_TYPE_LIST && type != CONFIG_TYPE_ARRAY) || config_setting_length(p) != 2)
        return cfg_error(c, p, key, "expected a term (j, ( (p, q, c), ... ))");
    const config_setting_t *js = config_setting_get_elem(p, 0);
    if (!cfg_is_integer(js))
        return cfg_error(c, js, key, "expected the index j to be an integer (got %s)",
                         cfg_type_name(config_setting_type(js)));
    long long j = cfg_integer(js);
    if (cfg_zernike_j(c, js, key, cfg->zconv, j, &t->n, &t->m)) return -1;
    t->j = (int)j;
    return read_monomials(c, config_setting_get_elem(p, 1), key, t->j, lim, why, &t->mono,
                          &t->nmono);
}

/* Item i of a list of terms at path, and its key ("path[i]"); a single
 * term written without the outer list (single) is the setting itself,
 * keyed by path. */
static const config_setting_t *list_item(const config_setting_t *l, int single, int i,
                                         const char *path, char *key, size_t keylen)
{
    if (single) {
        snprintf(key, keylen, "%s", path);
        return l;
    }
    snprintf(key, keylen, "%s[%d]", path, i);
    return config_setting_get_elem(l, (unsigned)i);
}

/* field.segment_zernike: ( (segment, j, ( (p, q, c), ... )), ... ). */
static int read_segment_terms(cfg_ctx *c, psf_config *cfg)
{
    const char *path = FLD ".segment_zernike";
    cfg_field *f = &cfg->field;
    const config_setting_t *l = cfg_get(c, path);
    if (!l) return 0;
    if (cfg->aperture.shape != APERTURE_SEGMENTED)
        return cfg_error(c, l, path, "only used with optics.aperture.shape = \"segmented\"");
    int single = config_setting_length(l) == 3 && cfg_is_integer(config_setting_get_elem(l, 0));
    int n = single ? 1 : config_setting_length(l);
    if (n == 0)
        return cfg_error(c, l, path, "must hold at least one (segment, j, ( (p, q, c), ... ))");
    f->segterms = calloc((size_t)n, sizeof *f->segterms);
    if (!f->segterms) return cfg_error(c, l, path, "out of memory");
    char why[256];
    double lim = cfg_coeff_bound(cfg, why, sizeof why);
    for (int i = 0; i < n; ++i) {
        char key[80];
        const config_setting_t *p = list_item(l, single, i, path, key, sizeof key);
        cfg_field_segterm *t = &f->segterms[i];
        f->nsegterms = i + 1;
        int type = config_setting_type(p);
        if ((type != CONFIG_TYPE_LIST && type != CONFIG_TYPE_ARRAY) ||
            config_setting_length(p) != 3)
            return cfg_error(c, p, key, "expected a term (segment, j, ( (p, q, c), ... ))");
        if (cfg_read_segment(c, &cfg->aperture, p, key, &t->segment) ||
            cfg_segment_j(c, config_setting_get_elem(p, 1), key, cfg->zconv, &t->j, &t->n, &t->m))
            return -1;
        for (int q = 0; q < i; ++q)
            if (f->segterms[q].segment == t->segment && f->segterms[q].j == t->j)
                return cfg_error(
                    c, p, key, "duplicate term (segment %d, j = %d) (first on line %u)", t->segment,
                    t->j, config_setting_source_line(config_setting_get_elem(l, (unsigned)q)));
        if (read_monomials(c, config_setting_get_elem(p, 2), key, t->j, lim, why, &t->mono,
                           &t->nmono))
            return -1;
    }
    return 0;
}

static int read_terms(cfg_ctx *c, psf_config *cfg)
{
    const char *path = FLD ".zernike";
    cfg_field *f = &cfg->field;
    const config_setting_t *l = cfg_get(c, path);
    if (!l) return 0;
    int single = config_setting_length(l) == 2 && cfg_is_integer(config_setting_get_elem(l, 0));
    int n = single ? 1 : config_setting_length(l);
    if (n == 0) return cfg_error(c, l, path, "must hold at least one term (j, ( (p, q, c), ... ))");
    f->terms = calloc((size_t)n, sizeof *f->terms);
    if (!f->terms) return cfg_error(c, l, path, "out of memory");
    char why[256];
    double lim = cfg_coeff_bound(cfg, why, sizeof why);
    for (int i = 0; i < n; ++i) {
        char key[80];
        const config_setting_t *p = list_item(l, single, i, path, key, sizeof key);
        f->nterms = i + 1; /* monomials freed by config_free from here on */
        if (read_term(c, cfg, p, key, lim, why, &f->terms[i])) return -1;
        for (int q = 0; q < i; ++q)
            if (f->terms[q].j == f->terms[i].j)
                return cfg_error(
                    c, p, key, "duplicate term j = %d (first on line %u)", f->terms[i].j,
                    config_setting_source_line(config_setting_get_elem(l, (unsigned)q)));
    }
    return 0;
}

int cfg_read_field(cfg_ctx *c, psf_config *cfg)
{
    cfg_field *f = &cfg->field;
    const config_setting_t *g = cfg_get(c, FLD);
    if (!g) return 0;
    f->enabled = 1;
    const config_setting_t *grid = cfg_get(c, FLD ".grid"), *list = cfg_get(c, FLD ".positions_px");
    if (grid && list)
        return cfg_error(c, list, FLD ".positions_px",
                         "give field.grid or field.positions_px, not both");
    if (!grid && !list)
        return cfg_error(c, g, FLD, "needs the positions: field.grid or field.positions_px");
    f->grid = grid != NULL;
    if (grid ? read_grid(c, cfg) : read_positions(c, cfg)) return -1;
    const config_setting_t *cs = cfg_get(c, FLD ".centre_px");
    if (!cs)
        return cfg_error(c, g, FLD ".centre_px",
                         "required key missing (the optical axis on the detector, pixels)");
    if (read_px_pair(c, cs, FLD ".centre_px", "[x, y]", f->centre_px)) return -1;
    int rc = cfg_read_float(c, FLD ".radius_px", 0.0, 1, &f->radius_px);
    if (rc < 0) return -1;
    if (rc == 0)
        return cfg_error(c, g, FLD ".radius_px",
                         "required key missing (the field radius: |h| = 1 there, pixels)");
    if (cfg_bound_key(c, FLD ".radius_px", f->radius_px, 0.0, CFG_FIELD_MAX_PX,
                      "a sanity bound on detector pixels"))
        return -1;
    if (read_terms(c, cfg) || read_segment_terms(c, cfg)) return -1;
    char given[CFG_PATH_MAX];
    rc = cfg_read_string(c, FLD ".table", given, sizeof given);
    if (rc < 0) return -1;
    if (rc > 0) {
        if (f->nterms > 0)
            return cfg_error(c, cfg_get(c, FLD ".table"), FLD ".table",
                             "give field.zernike or field.table, not both (one model of the "
                             "field)");
        if (cfg_resolve_file(c, cfg_get(c, FLD ".table"), FLD ".table", given, f->table_file,
                             sizeof f->table_file))
            return -1;
    }
    long long inner = config_image_count(cfg) / f->npos; /* the other axes' images */
    if ((double)inner * (double)f->npos > (double)CFG_MAX_IMAGES)
        return cfg_error(c, grid ? grid : list, grid ? FLD ".grid" : FLD ".positions_px",
                         "%lld positions make %.0f images with the other axes (x %lld), more "
                         "than the limit of %lld",
                         f->npos, (double)inner * (double)f->npos, inner, CFG_MAX_IMAGES);
    return 0;
}

void cfg_field_free(cfg_field *f)
{
    free(f->x_px);
    free(f->y_px);
    for (int i = 0; f->terms && i < f->nterms; ++i)
        free(f->terms[i].mono);
    free(f->terms);
    for (int i = 0; f->segterms && i < f->nsegterms; ++i)
        free(f->segterms[i].mono);
    free(f->segterms);
    memset(f, 0, sizeof *f);
}
