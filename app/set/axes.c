/* SPDX-License-Identifier: BSD-3-Clause */
/* The table and random axes of an image set (see axes.h). */
#include "app/set/axes.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The config's own limit (config.h: at most 10,000,000 images). */
#define AXES_MAX_IMAGES 10000000LL

int axes_fail(const psf_config *cfg, const char *key, char *err, size_t errlen, const char *fmt,
              ...)
{
    char where[CFG_PATH_MAX + 32], msg[2048];
    config_key_where(cfg, key, where, sizeof where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "%.4200s: %s: %s", where, key, msg);
    return -1;
}

/* sweep.random.zernike as written, then the spectrum's j_min..j_max. */
static int expand_random(set_axes *ax, char *err, size_t errlen)
{
    const cfg_random *r = &ax->cfg->random;
    int nspec = r->spectrum ? r->spectrum_j_max - r->spectrum_j_min + 1 : 0;
    int n = r->nzernike + nspec;
    if (n == 0) return 0;
    ax->random = calloc((size_t)n, sizeof *ax->random);
    double *sigma = nspec ? malloc((size_t)nspec * sizeof *sigma) : NULL;
    if (!ax->random || (nspec && !sigma)) {
        free(sigma);
        return axes_fail(ax->cfg, "sweep.random", err, errlen, "out of memory for %d terms", n);
    }
    for (int i = 0; i < r->nzernike; ++i) {
        const cfg_random_term *t = &r->zernike[i];
        ax->random[i] = (axes_random_term){
            t->j, t->n, t->m, t->dist == CFG_DRAW_UNIFORM ? DRAW_UNIFORM : DRAW_NORMAL, t->width};
    }
    char why[512];
    if (nspec && draw_spectrum_sigma(ax->cfg->zconv, r->spectrum_j_min, r->spectrum_j_max,
                                     r->spectrum_total_rms, r->spectrum_power, sigma, why,
                                     sizeof why) != 0) {
        free(sigma);
        return axes_fail(ax->cfg, "sweep.random.spectrum", err, errlen, "%s", why);
    }
    for (int i = 0; i < nspec; ++i) {
        axes_random_term *t = &ax->random[r->nzernike + i];
        t->j = r->spectrum_j_min + i;
        zernike_index_to_nm(ax->cfg->zconv, t->j, &t->n, &t->m);
        t->dist = DRAW_NORMAL;
        t->width = sigma[i];
    }
    free(sigma);
    ax->nrandom = n;
    return 0;
}

/* A column of the table named like a key that also gives its values. */
static int refuse_column(set_axes *ax, int col, const char *other, const char *what, char *err,
                         size_t errlen)
{
    char where[CFG_PATH_MAX + 32];
    config_key_where(ax->cfg, other, where, sizeof where);
    return axes_fail(
        ax->cfg, "sweep.table", err, errlen,
        "%s:%zu:%d (%s): the column is also given by %s (%s); give the %s in one place",
        ax->table->path, ax->table->header_line, col + 1, ax->table->names[col], other, where,
        what);
}

int axes_cell_bound(const set_axes *ax, int col, size_t r, double lo, double hi, const char *why,
                    char *err, size_t errlen)
{
    const psf_table *t = ax->table;
    double v = t->cols[col][r];
    if (v >= lo && v <= hi) return 0;
    char bound[96];
    if (lo == -hi)
        snprintf(bound, sizeof bound, "in [%.6g, %.6g]", lo, hi);
    else
        snprintf(bound, sizeof bound, "%s %.6g", v < lo ? ">=" : "<=", v < lo ? lo : hi);
    char got[32];
    snprintf(got, sizeof got, "%.15g", v);
    if (strtod(got, NULL) != v) snprintf(got, sizeof got, "%.17g", v); /* reads back as v */
    return axes_fail(ax->cfg, "sweep.table", err, errlen,
                     "%s:%zu:%d (%.200s): must be %s (%s) (got %s)", t->path, t->line[r], col + 1,
                     t->names[col], bound, why, got);
}

/* The wavelength column: one place for the wavelengths, monochromatic,
 * every cell within the config's wavelengths (CFG_MIN_WAVELENGTH_NM ..). */
static int check_wavelength_column(set_axes *ax, char *err, size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    const psf_table *t = ax->table;
    int col = ax->col_wavelength;
    if (col < 0) {
        if (cfg->nwavelengths > 0) return 0;
        snprintf(err, errlen,
                 "%s: optics.wavelength_nm: required key missing (or optics.wavelengths_nm, "
                 "sweep.wavelength_nm, sweep.random.wavelength_nm, or a wavelength_nm column "
                 "in sweep.table %s)",
                 cfg->path, t->path);
        return -1;
    }
    if (cfg->n_sweep_wavelength > 0)
        return refuse_column(ax, col, "sweep.wavelength_nm", "wavelengths", err, errlen);
    if (cfg->random.n_wavelength > 0)
        return refuse_column(ax, col, "sweep.random.wavelength_nm", "wavelengths", err, errlen);
    if (cfg->nwavelengths > 1) {
        char where[CFG_PATH_MAX + 32];
        config_key_where(cfg, "optics.wavelengths_nm", where, sizeof where);
        return axes_fail(
            cfg, "sweep.table", err, errlen,
            "%s:%zu:%d (wavelength_nm): cannot be used with optics.wavelengths_nm (%s, a "
            "broadband set): a listed wavelength makes monochromatic images",
            t->path, t->header_line, col + 1, where);
    }
    for (size_t r = 0; r < t->nrows; ++r)
        if (axes_cell_bound(ax, col, r, CFG_MIN_WAVELENGTH_NM, CFG_MAX_WAVELENGTH_NM, "nm", err,
                            errlen))
            return -1;
    return 0;
}

double axes_shortest_wavelength(const set_axes *ax)
{
    double lo, hi;
    config_wavelength_span(ax->cfg, &lo, &hi);
    if (ax->table && ax->col_wavelength >= 0)
        for (long long r = 0; r < ax->nrows; ++r)
            lo = fmin(lo, ax->table->cols[ax->col_wavelength][r]);
    return lo;
}

/* Every cell of the defocus, focus_shift_um and z<j> columns within the
 * bounds of the config's keys (config_coeff_limit, config_focus_shift_limit
 * at the set's shortest wavelength, the table's own included). */
static int check_value_columns(set_axes *ax, char *err, size_t errlen)
{
    const psf_table *t = ax->table;
    char why[256];
    double wl_lo = axes_shortest_wavelength(ax);
    double lim = config_coeff_limit(ax->cfg, wl_lo, why, sizeof why);
    for (size_t r = 0; r < t->nrows; ++r) {
        if (ax->col_defocus >= 0 &&
            axes_cell_bound(ax, ax->col_defocus, r, -lim, lim, why, err, errlen))
            return -1;
        for (int i = 0; i < ax->nzcols; ++i)
            if (axes_cell_bound(ax, ax->zcols[i].col, r, -lim, lim, why, err, errlen)) return -1;
    }
    if (ax->col_focus_shift < 0) return 0;
    double dz = config_focus_shift_limit(ax->cfg, wl_lo, why, sizeof why);
    for (size_t r = 0; r < t->nrows; ++r)
        if (axes_cell_bound(ax, ax->col_focus_shift, r, -dz, dz, why, err, errlen)) return -1;
    return 0;
}

static int check_focus_columns(set_axes *ax, char *err, size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    if (ax->col_defocus >= 0 && cfg->n_sweep_defocus > 0)
        return refuse_column(ax, ax->col_defocus, "sweep.defocus", "defocus values", err, errlen);
    int col = ax->col_focus_shift;
    if (col < 0) return 0;
    if (cfg->n_sweep_focus_shift > 0)
        return refuse_column(ax, col, "sweep.focus_shift_um", "focus shifts", err, errlen);
    if (cfg->random.n_focus_shift > 0)
        return refuse_column(ax, col, "sweep.random.focus_shift_um", "focus shifts", err, errlen);
    if (!(cfg->f_number > 0))
        return axes_fail(cfg, "sweep.table", err, errlen,
                         "%s:%zu:%d (focus_shift_um): needs optics.f_number (a focus shift becomes "
                         "defocus through the F-number)",
                         ax->table->path, ax->table->header_line, col + 1);
    return 0;
}

/* The z<j> columns, none of them a swept term. */
static int find_zernike_columns(set_axes *ax, char *err, size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    const psf_table *t = ax->table;
    ax->zcols = calloc((size_t)t->ncols, sizeof *ax->zcols);
    if (!ax->zcols) return axes_fail(cfg, "sweep.table", err, errlen, "out of memory");
    for (int c = 0; c < t->ncols; ++c) {
        int j = table_zernike_index(t->names[c], cfg->zconv);
        if (j < 0) continue;
        axes_table_term *z = &ax->zcols[ax->nzcols++];
        z->col = c;
        z->j = j;
        zernike_index_to_nm(cfg->zconv, j, &z->n, &z->m);
        for (int i = 0; i < cfg->n_sweep_zernike; ++i)
            if (cfg->sweep_zernike[i].j == j)
                return refuse_column(ax, c, "sweep.zernike", "values of a term", err, errlen);
    }
    return 0;
}

static int load_table(set_axes *ax, char *err, size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    char why[2048];
    if (table_load(cfg->table_file, &ax->table, why, sizeof why) != 0 ||
        (cfg->aperture.shape == APERTURE_SEGMENTED
             ? table_check_segmented_columns(ax->table, cfg->zconv, why, sizeof why)
             : table_check_columns(ax->table, cfg->zconv, why, sizeof why)) != 0)
        return axes_fail(cfg, "sweep.table", err, errlen, "%s", why);
    ax->nrows = (long long)ax->table->nrows;
    ax->col_wavelength = table_column(ax->table, "wavelength_nm");
    ax->col_defocus = table_column(ax->table, "defocus");
    ax->col_focus_shift = table_column(ax->table, "focus_shift_um");
    ax->col_field_x = table_column(ax->table, "field_x_px");
    ax->col_field_y = table_column(ax->table, "field_y_px");
    if (check_wavelength_column(ax, err, errlen) || check_focus_columns(ax, err, errlen) ||
        find_zernike_columns(ax, err, errlen) || check_value_columns(ax, err, errlen))
        return -1;
    double total = (double)ax->ncart * (double)ax->nrows * (double)ax->ndraws;
    if (total > (double)AXES_MAX_IMAGES)
        return axes_fail(
            cfg, "sweep.table", err, errlen,
            "%s: %lld rows make %.0f images with the other axes (x %lld), more than the "
            "limit of %lld",
            ax->table->path, ax->nrows, total, ax->ncart * ax->ndraws, AXES_MAX_IMAGES);
    return 0;
}

int axes_init(set_axes *ax, const psf_config *cfg, char *err, size_t errlen)
{
    memset(ax, 0, sizeof *ax);
    ax->cfg = cfg;
    ax->col_wavelength = ax->col_defocus = ax->col_focus_shift = -1;
    ax->col_field_x = ax->col_field_y = -1;
    ax->ndraws = cfg->random.count > 0 ? cfg->random.count : 1;
    ax->ncart = config_image_count(cfg) / ax->ndraws;
    ax->nrows = 1;
    ax->nfield = cfg->field.enabled ? cfg->field.npos : 1;
    ax->ncart /= ax->nfield;
    if (expand_random(ax, err, errlen) != 0 ||
        (cfg->table_file[0] && load_table(ax, err, errlen))) {
        axes_free(ax);
        return -1;
    }
    ax->ninner = ax->ncart * ax->nrows * ax->ndraws;
    ax->nimages = ax->nfield * ax->ninner;
    if ((double)ax->nfield * (double)ax->ninner > (double)AXES_MAX_IMAGES) {
        axes_fail(cfg, cfg->field.grid ? "field.grid" : "field.positions_px", err, errlen,
                  "%lld positions make %.0f images with the other axes (x %lld), more than the "
                  "limit of %lld",
                  ax->nfield, (double)ax->nfield * (double)ax->ninner, ax->ninner, AXES_MAX_IMAGES);
        axes_free(ax);
        return -1;
    }
    return 0;
}

void axes_free(set_axes *ax)
{
    if (!ax) return;
    table_free(ax->table);
    free(ax->zcols);
    free(ax->random);
    free(ax->fterms);
    free(ax->fvalues);
    free(ax->fsegvalues);
    free(ax->fsegs);
    memset(ax, 0, sizeof *ax);
}

int axes_is_dataset(const set_axes *ax)
{
    return ax->table != NULL || ax->cfg->random.count > 0 || ax->cfg->field.enabled;
}

long long axes_field(const set_axes *ax, long long k)
{
    if (!ax->cfg->field.enabled) return -1;
    long long rest = k < 0 ? 0 : k;
    return (rest / ax->ninner) % ax->nfield;
}

void axes_split(const set_axes *ax, long long k, long long *cart, long long *row, long long *draw)
{
    long long rest = k < 0 ? 0 : k;
    if (ax->cfg->field.enabled) rest %= ax->ninner; /* the field position is axes_field's */
    *draw = ax->cfg->random.count > 0 ? rest % ax->ndraws : -1;
    rest /= ax->ndraws;
    *row = ax->table ? rest % ax->nrows : -1;
    *cart = rest / ax->nrows;
}

const double *axes_image_wavelengths(const set_axes *ax, long long *n)
{
    const psf_config *cfg = ax->cfg;
    *n = 0;
    if (cfg->n_sweep_wavelength > 0) {
        *n = cfg->n_sweep_wavelength;
        return cfg->sweep_wavelength_nm;
    }
    if (cfg->random.n_wavelength > 0) {
        *n = cfg->random.n_wavelength;
        return cfg->random.wavelength_nm;
    }
    if (ax->table && ax->col_wavelength >= 0) {
        *n = ax->nrows;
        return ax->table->cols[ax->col_wavelength];
    }
    return NULL;
}
