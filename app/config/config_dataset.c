/* SPDX-License-Identifier: BSD-3-Clause */
/* The random and listed sets of a config (see config_priv.h):
 * sweep.random { count, seed, zernike ( (j, "normal" | "uniform", width) ),
 * spectrum { j_min, j_max, total_rms, power }, focus_shift_um [..],
 * wavelength_nm [..] } and sweep.table (a CSV path; app/set/axes.c reads
 * it). Keys, ranges and messages: docs/config.md, "sweep.random". */
#include "app/config/config_priv.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest width, total_rms and |power| accepted: far past any optics,
 * so that sums of draws stay finite and the spectrum's sum of n^(2 power)
 * over radial orders 1..100 stays a normal double (100^100 = 1e200). */
#define CFG_MAX_WIDTH 1.0e6
#define CFG_MAX_POWER 50.0

static const char *const conv_label[] = {"noll", "ansi", "fringe"};

/* "(line N)" of another setting, for messages naming two keys. */
static unsigned line_of(const cfg_ctx *c, const char *path)
{
    const config_setting_t *s = cfg_get(c, path);
    return s ? config_setting_source_line(s) : 0;
}

/* A finite number in [0, CFG_MAX_WIDTH] at s. */
static int read_width(cfg_ctx *c, const config_setting_t *s, const char *key, const char *what,
                      double *v)
{
    if (!cfg_is_number(s))
        return cfg_error(c, s, key, "expected the %s to be a number (got %s)", what,
                         cfg_type_name(config_setting_type(s)));
    double x = cfg_number(s);
    char got[64];
    cfg_fmt_double(x, got, sizeof got);
    if (!isfinite(x)) return cfg_error(c, s, key, "the %s must be a finite number", what);
    if (x < 0) return cfg_error(c, s, key, "the %s must be >= 0 (got %s)", what, got);
    if (x > CFG_MAX_WIDTH)
        return cfg_error(c, s, key, "the %s must be at most 1e6 (got %s)", what, got);
    *v = x;
    return 0;
}

/* Triple i of sweep.random.zernike (or with segment, of
 * sweep.random.segment_zernike: j of radial order <= CFG_SEG_MAX_ORDER):
 * (j, "normal" | "uniform", width). */
static int read_triple(cfg_ctx *c, const config_setting_t *p, const char *key, psf_config *cfg,
                       int segment, cfg_random_term *t)
{
    const char *shape = "(j, \"normal\" | \"uniform\", width)";
    int type = config_setting_type(p);
    if (type != CONFIG_TYPE_LIST)
        return cfg_error(c, p, key, "expected a triple %s (got %s)", shape, cfg_type_name(type));
    if (config_setting_length(p) != 3)
        return cfg_error(c, p, key, "expected a triple %s (got %d elements)", shape,
                         config_setting_length(p));
    const config_setting_t *js = config_setting_get_elem(p, 0);
    const config_setting_t *ds = config_setting_get_elem(p, 1);
    if (!cfg_is_integer(js))
        return cfg_error(c, js, key, "expected the index j to be an integer (got %s)",
                         cfg_type_name(config_setting_type(js)));
    long long j = cfg_integer(js);
    if (segment ? cfg_segment_j(c, js, key, cfg->zconv, &t->j, &t->n, &t->m)
                : cfg_zernike_j(c, p, key, cfg->zconv, j, &t->n, &t->m))
        return -1;
    t->j = (int)j;
    if (config_setting_type(ds) != CONFIG_TYPE_STRING)
        return cfg_error(c, ds, key, "expected the distribution to be a string (got %s)",
                         cfg_type_name(config_setting_type(ds)));
    const char *name = config_setting_get_string(ds);
    if (strcmp(name, "normal") == 0)
        t->dist = CFG_DRAW_NORMAL;
    else if (strcmp(name, "uniform") == 0)
        t->dist = CFG_DRAW_UNIFORM;
    else
        return cfg_error(c, ds, key,
                         "the distribution must be \"normal\" or \"uniform\" (got \"%s\")", name);
    return read_width(c, config_setting_get_elem(p, 2), key,
                      t->dist == CFG_DRAW_NORMAL ? "sigma" : "half-width", &t->width);
}

/* The triples at path (sweep.random.zernike, or with segment
 * sweep.random.segment_zernike) into *out, *nout. */
static int read_random_terms(cfg_ctx *c, psf_config *cfg, const char *path, int segment,
                             cfg_random_term **out, int *nout)
{
    const config_setting_t *zl = cfg_get(c, path);
    if (!zl) return 0;
    if (segment && cfg->aperture.shape != APERTURE_SEGMENTED)
        return cfg_error(c, zl, path, "only used with optics.aperture.shape = \"segmented\"");
    /* One triple written alone: (4, "normal", 0.05). */
    int single = config_setting_length(zl) == 3 && cfg_is_integer(config_setting_get_elem(zl, 0));
    int np = single ? 1 : config_setting_length(zl);
    if (np == 0) return cfg_error(c, zl, path, "must hold at least one (j, dist, width) triple");
    *out = calloc((size_t)np, sizeof **out);
    if (!*out) return cfg_error(c, zl, path, "out of memory");
    for (int i = 0; i < np; ++i) {
        char key[64];
        const config_setting_t *p = single ? zl : config_setting_get_elem(zl, (unsigned)i);
        if (single)
            snprintf(key, sizeof key, "%s", path);
        else
            snprintf(key, sizeof key, "%s[%d]", path, i);
        cfg_random_term *t = &(*out)[i];
        if (read_triple(c, p, key, cfg, segment, t)) return -1;
        for (int k = 0; k < i; ++k)
            if ((*out)[k].j == t->j)
                return cfg_error(
                    c, p, key, "duplicate term j = %d (first on line %u)", t->j,
                    config_setting_source_line(config_setting_get_elem(zl, (unsigned)k)));
        *nout = i + 1;
    }
    return 0;
}

/* An integer key of the spectrum, required, in 0..INT_MAX. */
static int spectrum_int(cfg_ctx *c, const char *path, int *v)
{
    long long x = 0;
    int rc = cfg_read_int(c, path, 0, INT32_MAX, &x);
    if (rc < 0) return -1;
    if (rc == 0) return cfg_missing(c, path, "(sweep.random.spectrum is given)");
    *v = (int)x;
    return 0;
}

static int spectrum_float(cfg_ctx *c, const char *path, double lo, double hi, double *v)
{
    int rc = cfg_read_float(c, path, lo, 0, v);
    if (rc < 0) return -1;
    if (rc == 0) return cfg_missing(c, path, "(sweep.random.spectrum is given)");
    if (*v > hi) {
        char got[64], bound[64];
        cfg_fmt_double(*v, got, sizeof got);
        cfg_fmt_double(hi, bound, sizeof bound);
        return cfg_error(c, cfg_get(c, path), path, "must be <= %s (got %s)", bound, got);
    }
    return 0;
}

/* sweep.random.spectrum: every term j_min..j_max (app/set/draws.h gives
 * each its sigma). Both ends indices of the convention, past piston. */
static int read_spectrum(cfg_ctx *c, psf_config *cfg)
{
    cfg_random *r = &cfg->random;
    if (!cfg_get(c, "sweep.random.spectrum")) return 0;
    const char *kmin = "sweep.random.spectrum.j_min", *kmax = "sweep.random.spectrum.j_max";
    if (spectrum_int(c, kmin, &r->spectrum_j_min) || spectrum_int(c, kmax, &r->spectrum_j_max))
        return -1;
    int n, m;
    if (cfg_zernike_j(c, cfg_get(c, kmin), kmin, cfg->zconv, r->spectrum_j_min, &n, &m)) return -1;
    if (n == 0)
        return cfg_error(c, cfg_get(c, kmin), kmin,
                         "j = %d is piston (n = 0) in the %s convention; start at %d (piston "
                         "does not change the PSF and has no radial order to scale)",
                         r->spectrum_j_min, conv_label[cfg->zconv], r->spectrum_j_min + 1);
    if (cfg_zernike_j(c, cfg_get(c, kmax), kmax, cfg->zconv, r->spectrum_j_max, &n, &m)) return -1;
    if (r->spectrum_j_max < r->spectrum_j_min)
        return cfg_error(c, cfg_get(c, kmax), kmax, "must be >= j_min (%d) (got %d)",
                         r->spectrum_j_min, r->spectrum_j_max);
    if (spectrum_float(c, "sweep.random.spectrum.total_rms", 0.0, CFG_MAX_WIDTH,
                       &r->spectrum_total_rms) ||
        spectrum_float(c, "sweep.random.spectrum.power", -CFG_MAX_POWER, CFG_MAX_POWER,
                       &r->spectrum_power))
        return -1;
    r->spectrum = 1;
    /* A term in both would get the same draw twice (draws.h: the draw is a
     * function of j), not two independent ones. */
    for (int i = 0; i < r->nzernike; ++i) {
        int j = r->zernike[i].j;
        if (j < r->spectrum_j_min || j > r->spectrum_j_max) continue;
        char key[64];
        snprintf(key, sizeof key, "sweep.random.zernike[%d]", i);
        const config_setting_t *zl = cfg_get(c, "sweep.random.zernike");
        const config_setting_t *p = r->nzernike == 1 && config_setting_length(zl) == 3
                                        ? zl
                                        : config_setting_get_elem(zl, (unsigned)i);
        return cfg_error(c, p, key,
                         "term j = %d is also drawn by sweep.random.spectrum (j_min %d .. j_max "
                         "%d, line %u); give each term in one place",
                         j, r->spectrum_j_min, r->spectrum_j_max,
                         line_of(c, "sweep.random.spectrum"));
    }
    return 0;
}

/* A list of the random block that another key may not give as well. */
static int refuse_both(cfg_ctx *c, const char *key, const char *other, const char *why)
{
    if (!cfg_get(c, other)) return 0;
    return cfg_error(c, cfg_get(c, key), key, "cannot be used with %s (line %u): %s", other,
                     line_of(c, other), why);
}

/* sweep.random.focus_shift_um and sweep.random.wavelength_nm. */
static int read_random_lists(cfg_ctx *c, psf_config *cfg)
{
    cfg_random *r = &cfg->random;
    const char *fkey = "sweep.random.focus_shift_um", *wkey = "sweep.random.wavelength_nm";
    if (cfg_read_numbers(c, fkey, 0, &r->focus_shift_um, &r->n_focus_shift) < 0 ||
        cfg_read_numbers(c, wkey, 1, &r->wavelength_nm, &r->n_wavelength) < 0 ||
        cfg_bound_list(c, wkey, r->wavelength_nm, r->n_wavelength, CFG_MIN_WAVELENGTH_NM,
                       CFG_MAX_WAVELENGTH_NM, NULL))
        return -1;
    /* The focus shifts' bound needs the wavelengths: cfg_read_sweep, after. */
    if (r->n_focus_shift > 0) {
        if (refuse_both(c, fkey, "sweep.focus_shift_um",
                        "give the focus shifts in one place (a list swept, or one drawn)"))
            return -1;
        if (!(cfg->f_number > 0))
            return cfg_error(c, cfg_get(c, fkey), fkey,
                             "needs optics.f_number (a focus shift becomes defocus through the "
                             "F-number)");
    }
    if (r->n_wavelength > 0) {
        if (refuse_both(c, wkey, "sweep.wavelength_nm",
                        "give the wavelengths in one place (a list swept, or one drawn)") ||
            refuse_both(c, wkey, "optics.wavelengths_nm",
                        "a drawn wavelength makes monochromatic images, not broadband ones"))
            return -1;
        if (cfg->nwavelengths == 0) { /* the first stands in for optics.wavelength_nm */
            cfg->wavelengths_nm = malloc(sizeof(double));
            cfg->weights = malloc(sizeof(double));
            if (!cfg->wavelengths_nm || !cfg->weights)
                return cfg_error(c, cfg_get(c, wkey), wkey, "out of memory");
            cfg->nwavelengths = 1;
            cfg->wavelengths_nm[0] = r->wavelength_nm[0];
            cfg->weights[0] = 1.0;
        }
    }
    return 0;
}

static int read_random(cfg_ctx *c, psf_config *cfg)
{
    const config_setting_t *g = cfg_get(c, "sweep.random");
    if (!g) return 0;
    cfg_random *r = &cfg->random;
    long long count = 0, seed = 0;
    int rc = cfg_read_int(c, "sweep.random.count", 1, CFG_MAX_IMAGES, &count);
    if (rc < 0) return -1;
    if (rc == 0) return cfg_missing(c, "sweep.random.count", "(sweep.random is given)");
    rc = cfg_read_int(c, "sweep.random.seed", 0, INT64_MAX, &seed);
    if (rc < 0) return -1;
    if (rc == 0) return cfg_missing(c, "sweep.random.seed", "(sweep.random is given)");
    r->seed = (unsigned long long)seed;
    if (read_random_terms(c, cfg, "sweep.random.zernike", 0, &r->zernike, &r->nzernike) ||
        read_random_terms(c, cfg, "sweep.random.segment_zernike", 1, &r->seg_zernike,
                          &r->nseg_zernike) ||
        read_spectrum(c, cfg) || read_random_lists(c, cfg))
        return -1;
    if (r->nzernike == 0 && !r->spectrum && r->n_focus_shift == 0 && r->n_wavelength == 0 &&
        r->nseg_zernike == 0)
        return cfg_error(c, g, "sweep.random",
                         "draws nothing: give zernike, segment_zernike, spectrum, "
                         "focus_shift_um or wavelength_nm");
    long long cart = config_image_count(cfg); /* count is not set yet: the lists' product */
    if ((double)cart * (double)count > (double)CFG_MAX_IMAGES)
        return cfg_error(c, cfg_get(c, "sweep.random.count"), "sweep.random.count",
                         "makes %.0f images (count %lld x %lld of the swept lists), more than "
                         "the limit of %lld",
                         (double)cart * (double)count, count, cart, CFG_MAX_IMAGES);
    r->count = count;
    return 0;
}

static int read_table(cfg_ctx *c, psf_config *cfg)
{
    const char *key = "sweep.table";
    char given[CFG_PATH_MAX];
    int rc = cfg_read_string(c, key, given, sizeof given);
    if (rc <= 0) return rc;
    return cfg_resolve_file(c, cfg_get(c, key), key, given, cfg->table_file,
                            sizeof cfg->table_file);
}

int cfg_read_dataset(cfg_ctx *c, psf_config *cfg)
{
    return read_random(c, cfg) || read_table(c, cfg) ? -1 : 0;
}

int cfg_wavelength_elsewhere(const cfg_ctx *c)
{
    return cfg_get(c, "sweep.random.wavelength_nm") || cfg_get(c, "sweep.table");
}

void cfg_free_random(cfg_random *r)
{
    free(r->zernike);
    free(r->seg_zernike);
    free(r->focus_shift_um);
    free(r->wavelength_nm);
    memset(r, 0, sizeof *r);
}
