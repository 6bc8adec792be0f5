/* SPDX-License-Identifier: BSD-3-Clause */
/* The aberrations and sweep blocks of a config: Zernike term lists
 * ( (j, coefficient), ... ) and ( (j, [values]), ... ), the OPD map, the
 * swept lists and the image-count limit (see config_priv.h). */
#include "app/config/config_priv.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const conv_names[] = {"noll", "ansi", "fringe"};

/* A pairs key written as one pair, e.g. zernike = (4, 0.25): a list of two
 * whose first element is an integer (a list of pairs holds only lists). */
static int is_single_pair(const config_setting_t *s)
{
    return config_setting_type(s) == CONFIG_TYPE_LIST && config_setting_length(s) == 2 &&
           cfg_is_integer(config_setting_get_elem(s, 0));
}

/* Pair i of the pairs list at path: a list or array of two elements whose
 * first is an integer j. Writes the pair's key for messages ("path[i]", or
 * "path" for the one-pair form) to key. */
static int get_pair(cfg_ctx *c, const config_setting_t *list, const char *path, int i, int single,
                    const char *shape, char *key, size_t keylen, const config_setting_t **pair,
                    long long *j)
{
    const config_setting_t *p = single ? list : config_setting_get_elem(list, (unsigned)i);
    if (single)
        snprintf(key, keylen, "%s", path);
    else
        snprintf(key, keylen, "%s[%d]", path, i);
    *pair = p;
    int t = config_setting_type(p);
    if (t != CONFIG_TYPE_LIST && t != CONFIG_TYPE_ARRAY)
        return cfg_error(c, p, key, "expected a pair %s (got %s)", shape, cfg_type_name(t));
    if (config_setting_length(p) != 2)
        return cfg_error(c, p, key, "expected a pair %s (got %d elements)", shape,
                         config_setting_length(p));
    const config_setting_t *js = config_setting_get_elem(p, 0);
    if (!cfg_is_integer(js))
        return cfg_error(c, js, key, "expected the index j to be an integer (got %s)",
                         cfg_type_name(config_setting_type(js)));
    *j = cfg_integer(js);
    return 0;
}

int cfg_zernike_j(cfg_ctx *c, const config_setting_t *s, const char *key, zernike_convention conv,
                  long long j, int *n, int *m)
{
    long long jmin = conv == ZCONV_ANSI ? 0 : 1;
    if (j < jmin)
        return cfg_error(c, s, key, "j must be >= %lld in the %s convention (got %lld)", jmin,
                         conv_names[conv], j);
    if (j > INT_MAX || zernike_index_to_nm(conv, (int)j, n, m) != 0)
        return cfg_error(c, s, key,
                         "j = %lld is beyond radial order %d, the largest supported (%s "
                         "convention)",
                         j, ZERNIKE_MAX_ORDER, conv_names[conv]);
    return 0;
}

static int finite_value(cfg_ctx *c, const config_setting_t *s, const char *key, const char *what)
{
    if (!cfg_is_number(s))
        return cfg_error(c, s, key, "expected the %s to be a number (got %s)", what,
                         cfg_type_name(config_setting_type(s)));
    if (!isfinite(cfg_number(s)))
        return cfg_error(c, s, key, "the %s must be a finite number", what);
    return 0;
}

static int read_terms(cfg_ctx *c, psf_config *cfg)
{
    const char *path = "aberrations.zernike";
    const config_setting_t *zl = cfg_get(c, path);
    if (!zl) return 0;
    int single = is_single_pair(zl);
    int np = single ? 1 : config_setting_length(zl);
    cfg->zernike = calloc((size_t)(np > 0 ? np : 1), sizeof *cfg->zernike);
    if (!cfg->zernike) return cfg_error(c, zl, path, "out of memory");
    for (int i = 0; i < np; ++i) {
        char key[64];
        const config_setting_t *p;
        long long j;
        int n, m;
        if (get_pair(c, zl, path, i, single, "(j, coefficient)", key, sizeof key, &p, &j))
            return -1;
        const config_setting_t *vs = config_setting_get_elem(p, 1);
        if (finite_value(c, vs, key, "coefficient")) return -1;
        if (cfg_zernike_j(c, p, key, cfg->zconv, j, &n, &m)) return -1;
        for (int k = 0; k < cfg->nzernike; ++k) {
            if (cfg->zernike[k].j == j) {
                const config_setting_t *first =
                    single ? zl : config_setting_get_elem(zl, (unsigned)k);
                return cfg_error(c, p, key, "duplicate term j = %lld (first on line %u)", j,
                                 config_setting_source_line(first));
            }
        }
        cfg_zernike_term *t = &cfg->zernike[cfg->nzernike++];
        t->j = (int)j;
        t->n = n;
        t->m = m;
        t->coeff = cfg_number(vs);
    }
    return 0;
}

int cfg_read_aberrations(cfg_ctx *c, psf_config *cfg)
{
    static const char *const units[] = {"waves", "nm"};
    static const char *const opd_units[] = {"nm", "waves"};
    int v = 0;
    if (cfg_read_enum(c, "aberrations.convention", conv_names, 3, 0, &v) < 0) return -1;
    cfg->zconv = (zernike_convention)v; /* same order as zernike_convention */
    if (cfg_read_enum(c, "aberrations.units", units, 2, 0, &v) < 0) return -1;
    cfg->zunits = v == 1 ? ZUNITS_NM : ZUNITS_WAVES;
    if (read_terms(c, cfg)) return -1;

    const char *fkey = "aberrations.opd_map.file";
    /* A map given in memory stands for the file key, and for the group when
     * the config has none (config_load_maps). */
    if (!cfg_get(c, "aberrations.opd_map") && !cfg_map_for(c, fkey)) return 0;
    if (cfg_take_map(c, cfg_get(c, fkey), fkey, &cfg->opd_array)) return -1;
    char given[CFG_PATH_MAX];
    int r = cfg->opd_array.values ? 0 : cfg_read_string(c, fkey, given, sizeof given);
    if (r < 0) return -1;
    if (r == 0 && !cfg->opd_array.values)
        return cfg_missing(c, fkey, "(aberrations.opd_map is given)");
    if (r == 1 &&
        cfg_resolve_file(c, cfg_get(c, fkey), fkey, given, cfg->opd_file, sizeof cfg->opd_file))
        return -1;
    if (cfg_read_enum(c, "aberrations.opd_map.units", opd_units, 2, 0, &v) < 0) return -1;
    cfg->opd_units = v == 1 ? ZUNITS_WAVES : ZUNITS_NM;
    if (cfg_read_float(c, "aberrations.opd_map.scale", -HUGE_VAL, 0, &cfg->opd_scale) < 0)
        return -1;
    if (cfg_read_float(c, "aberrations.opd_map.pixel_scale_m", 0.0, 1, &cfg->opd_pixel_scale_m) < 0)
        return -1;
    return 0;
}

static int read_swept_terms(cfg_ctx *c, psf_config *cfg)
{
    const char *path = "sweep.zernike";
    const config_setting_t *zl = cfg_get(c, path);
    if (!zl) return 0;
    int single = is_single_pair(zl);
    int np = single ? 1 : config_setting_length(zl);
    if (np == 0) return cfg_error(c, zl, path, "must hold at least one (j, [values]) pair");
    cfg->sweep_zernike = calloc((size_t)np, sizeof *cfg->sweep_zernike);
    if (!cfg->sweep_zernike) return cfg_error(c, zl, path, "out of memory");
    cfg->n_sweep_zernike = np; /* values NULL until read: config_free copes */
    for (int i = 0; i < np; ++i) {
        char key[64];
        const config_setting_t *p;
        long long j;
        cfg_zernike_sweep *z = &cfg->sweep_zernike[i];
        if (get_pair(c, zl, path, i, single, "(j, [values])", key, sizeof key, &p, &j)) return -1;
        const config_setting_t *vs = config_setting_get_elem(p, 1);
        int t = config_setting_type(vs);
        if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
            return cfg_error(c, vs, key, "expected a list of values [a, b, ...] (got %s)",
                             cfg_type_name(t));
        int nv = config_setting_length(vs);
        if (nv == 0) return cfg_error(c, vs, key, "must hold at least one value");
        if (cfg_zernike_j(c, p, key, cfg->zconv, j, &z->n, &z->m)) return -1;
        for (int k = 0; k < i; ++k) {
            if (cfg->sweep_zernike[k].j == j)
                return cfg_error(
                    c, p, key, "duplicate term j = %lld (first on line %u)", j,
                    config_setting_source_line(config_setting_get_elem(zl, (unsigned)k)));
        }
        z->j = (int)j;
        z->values = malloc((size_t)nv * sizeof *z->values);
        if (!z->values) return cfg_error(c, vs, key, "out of memory");
        for (int e = 0; e < nv; ++e) {
            const config_setting_t *es = config_setting_get_elem(vs, (unsigned)e);
            char what[32];
            snprintf(what, sizeof what, "value %d", e);
            if (finite_value(c, es, key, what)) return -1;
            z->values[e] = cfg_number(es);
        }
        z->nvalues = nv;
    }
    return 0;
}

/* |v| of the coefficient-like values within CFG_MAX_WAVES waves RMS at the
 * set's shortest wavelength (config_coeff_limit): every term, swept defocus
 * and swept value in aberrations.units, and the defocus of every focus
 * shift, swept or drawn (config_focus_shift_limit; docs/design.md,
 * "Aberrations"). Read after the random block: its wavelengths count. */
static int bound_aberrations(cfg_ctx *c, const psf_config *cfg)
{
    char why[256];
    double lim = cfg_coeff_bound(cfg, why, sizeof why);
    const config_setting_t *zl = cfg_get(c, "aberrations.zernike");
    int single = zl && is_single_pair(zl);
    for (int i = 0; i < cfg->nzernike; ++i) {
        char key[64];
        snprintf(key, sizeof key, single ? "aberrations.zernike" : "aberrations.zernike[%d]", i);
        const config_setting_t *p = single ? zl : config_setting_get_elem(zl, (unsigned)i);
        if (cfg_check_bounds(c, p, key, "the coefficient", cfg->zernike[i].coeff, -lim, lim, why))
            return -1;
    }
    if (cfg_bound_list(c, "sweep.defocus", cfg->sweep_defocus, cfg->n_sweep_defocus, -lim, lim,
                       why))
        return -1;
    zl = cfg_get(c, "sweep.zernike");
    single = zl && is_single_pair(zl);
    for (int i = 0; i < cfg->n_sweep_zernike; ++i) {
        char key[64], what[32];
        snprintf(key, sizeof key, single ? "sweep.zernike" : "sweep.zernike[%d]", i);
        const config_setting_t *p = single ? zl : config_setting_get_elem(zl, (unsigned)i);
        const config_setting_t *vs = config_setting_get_elem(p, 1);
        for (int e = 0; e < cfg->sweep_zernike[i].nvalues; ++e) {
            snprintf(what, sizeof what, "the value %d", e);
            if (cfg_check_bounds(c, config_setting_get_elem(vs, (unsigned)e), key, what,
                                 cfg->sweep_zernike[i].values[e], -lim, lim, why))
                return -1;
        }
    }
    if (cfg->n_sweep_focus_shift == 0 && cfg->random.n_focus_shift == 0) return 0;
    double wl_lo, wl_hi;
    config_wavelength_span(cfg, &wl_lo, &wl_hi);
    double dz = config_focus_shift_limit(cfg, wl_lo, why, sizeof why);
    return cfg_bound_list(c, "sweep.focus_shift_um", cfg->sweep_focus_shift_um,
                          cfg->n_sweep_focus_shift, -dz, dz, why) ||
                   cfg_bound_list(c, "sweep.random.focus_shift_um", cfg->random.focus_shift_um,
                                  cfg->random.n_focus_shift, -dz, dz, why)
               ? -1
               : 0;
}

int cfg_read_sweep(cfg_ctx *c, psf_config *cfg)
{
    if (cfg_read_numbers(c, "sweep.wavelength_nm", 1, &cfg->sweep_wavelength_nm,
                         &cfg->n_sweep_wavelength) < 0 ||
        cfg_bound_list(c, "sweep.wavelength_nm", cfg->sweep_wavelength_nm, cfg->n_sweep_wavelength,
                       CFG_MIN_WAVELENGTH_NM, CFG_MAX_WAVELENGTH_NM, NULL) ||
        cfg_read_numbers(c, "sweep.defocus", 0, &cfg->sweep_defocus, &cfg->n_sweep_defocus) < 0 ||
        cfg_read_numbers(c, "sweep.focus_shift_um", 0, &cfg->sweep_focus_shift_um,
                         &cfg->n_sweep_focus_shift) < 0)
        return -1;
    if (cfg->n_sweep_focus_shift > 0 && !(cfg->f_number > 0))
        return cfg_error(c, cfg_get(c, "sweep.focus_shift_um"), "sweep.focus_shift_um",
                         "needs optics.f_number (a focus shift becomes defocus through the "
                         "F-number)");
    if (read_swept_terms(c, cfg) || cfg_read_segment_terms(c, cfg)) return -1;

    /* Only swept wavelengths: the first stands in for optics.wavelength_nm. */
    if (cfg->nwavelengths == 0 && cfg->n_sweep_wavelength > 0) {
        cfg->wavelengths_nm = malloc(sizeof(double));
        cfg->weights = malloc(sizeof(double));
        if (!cfg->wavelengths_nm || !cfg->weights)
            return cfg_error(c, cfg_get(c, "sweep.wavelength_nm"), "sweep.wavelength_nm",
                             "out of memory");
        cfg->nwavelengths = 1;
        cfg->wavelengths_nm[0] = cfg->sweep_wavelength_nm[0];
        cfg->weights[0] = 1.0;
    }

    /* The product in double is exact far past the limit. */
    double count = 1.0;
    count *= cfg->n_sweep_wavelength > 0 ? cfg->n_sweep_wavelength : 1;
    count *= cfg->n_sweep_defocus > 0 ? cfg->n_sweep_defocus : 1;
    count *= cfg->n_sweep_focus_shift > 0 ? cfg->n_sweep_focus_shift : 1;
    for (int i = 0; i < cfg->n_sweep_zernike; ++i)
        count *= cfg->sweep_zernike[i].nvalues;
    for (int i = 0; i < cfg->n_sweep_seg_zernike; ++i)
        count *= cfg->sweep_seg_zernike[i].nvalues;
    if (count > (double)CFG_MAX_IMAGES)
        return cfg_error(c, cfg_get(c, "sweep"), "sweep",
                         "makes %.0f images (the product of the swept list lengths), more than "
                         "the limit of %lld",
                         count, CFG_MAX_IMAGES);
    if (cfg_read_dataset(c, cfg)) return -1;
    return bound_aberrations(c, cfg);
}
