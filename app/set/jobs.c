/* SPDX-License-Identifier: BSD-3-Clause */
/* Image-set expansion: the sweep block's Cartesian product, the table's
 * rows and the draws (see jobs.h). */
#include "app/set/jobs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "optics/wavefront.h"

static int find_mode(const psf_modeset *ms, int n, int m)
{
    for (int t = 0; t < ms->nterms; ++t)
        if (ms->n[t] == n && ms->m[t] == m) return t;
    return -1;
}

static void add_mode(psf_modeset *ms, int n, int m)
{
    if (find_mode(ms, n, m) >= 0) return;
    ms->n[ms->nterms] = n;
    ms->m[ms->nterms] = m;
    ms->noll[ms->nterms] = zernike_nm_to_noll(n, m);
    ++ms->nterms;
}

/* Whether the table or the draws give a defocus or a focus shift. */
static int listed_focus(const set_axes *ax)
{
    return ax->col_defocus >= 0 || ax->col_focus_shift >= 0 || ax->cfg->random.n_focus_shift > 0;
}

int jobs_modeset(const set_axes *ax, psf_modeset *ms, char *err, size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    size_t cap = (size_t)cfg->nzernike + (size_t)cfg->n_sweep_zernike + 1 + (size_t)ax->nrandom +
                 (size_t)ax->nzcols + (size_t)ax->nfterms;
    ms->nterms = 0;
    ms->n = malloc(cap * sizeof *ms->n);
    ms->m = malloc(cap * sizeof *ms->m);
    ms->noll = malloc(cap * sizeof *ms->noll);
    if (!ms->n || !ms->m || !ms->noll) {
        jobs_modeset_free(ms);
        if (err && errlen) snprintf(err, errlen, "out of memory for %zu Zernike modes", cap);
        return -1;
    }
    for (int i = 0; i < cfg->nzernike; ++i)
        add_mode(ms, cfg->zernike[i].n, cfg->zernike[i].m);
    for (int i = 0; i < cfg->n_sweep_zernike; ++i)
        add_mode(ms, cfg->sweep_zernike[i].n, cfg->sweep_zernike[i].m);
    if (cfg->n_sweep_defocus > 0 || cfg->n_sweep_focus_shift > 0) add_mode(ms, 2, 0);
    for (int i = 0; i < ax->nrandom; ++i)
        add_mode(ms, ax->random[i].n, ax->random[i].m);
    for (int i = 0; i < ax->nzcols; ++i)
        add_mode(ms, ax->zcols[i].n, ax->zcols[i].m);
    if (listed_focus(ax)) add_mode(ms, 2, 0);
    for (int i = 0; i < ax->nfterms; ++i)
        add_mode(ms, ax->fterms[i].n, ax->fterms[i].m);
    return 0;
}

void jobs_modeset_free(psf_modeset *ms)
{
    if (!ms) return;
    free(ms->n);
    free(ms->m);
    free(ms->noll);
    ms->n = ms->m = ms->noll = NULL;
    ms->nterms = 0;
}

/* Index into a swept list of length len (0 = not swept) and the rest of k. */
static int take(long long *k, int len)
{
    if (len <= 0) return 0;
    int i = (int)(*k % len);
    *k /= len;
    return i;
}

/* The Cartesian lists' values of image c (jobs.h's order). */
static void cartesian_params(const psf_config *cfg, long long c, double *scratch,
                             double *seg_scratch, psf_image_params *p)
{
    static const double one = 1.0;
    long long rest = c;
    /* The innermost (fastest) list first: the last sweep.segment_zernike
     * entry, then the last sweep.zernike entry. */
    for (int i = cfg->n_sweep_seg_zernike - 1; i >= 0; --i) {
        const cfg_segment_term *z = &cfg->sweep_seg_zernike[i];
        seg_scratch[i] = z->values[take(&rest, z->nvalues)];
    }
    p->sweep_seg_zernike = cfg->n_sweep_seg_zernike > 0 ? seg_scratch : NULL;
    for (int i = cfg->n_sweep_zernike - 1; i >= 0; --i) {
        const cfg_zernike_sweep *z = &cfg->sweep_zernike[i];
        scratch[i] = z->values[take(&rest, z->nvalues)];
    }
    p->sweep_zernike = cfg->n_sweep_zernike > 0 ? scratch : NULL;
    int ifs = take(&rest, cfg->n_sweep_focus_shift);
    int idf = take(&rest, cfg->n_sweep_defocus);
    int iwl = take(&rest, cfg->n_sweep_wavelength);
    p->sweep_focus_shift_um = cfg->n_sweep_focus_shift > 0 ? cfg->sweep_focus_shift_um[ifs] : NAN;
    p->sweep_defocus = cfg->n_sweep_defocus > 0 ? cfg->sweep_defocus[idf] : NAN;
    if (cfg->n_sweep_wavelength > 0) {
        p->sweep_wavelength_nm = cfg->sweep_wavelength_nm[iwl];
        p->nwl = 1;
        p->wl_nm = &cfg->sweep_wavelength_nm[iwl];
        p->weights = &one;
    } else {
        p->sweep_wavelength_nm = NAN;
        p->nwl = cfg->nwavelengths;
        p->wl_nm = cfg->wavelengths_nm;
        p->weights = cfg->weights;
    }
}

/* The image's only wavelength, *wl (a listed one). */
static void listed_wavelength(psf_image_params *p, const double *wl)
{
    static const double one = 1.0;
    p->sweep_wavelength_nm = *wl;
    p->nwl = 1;
    p->wl_nm = wl;
    p->weights = &one;
}

static void table_params(const set_axes *ax, long long row, psf_image_params *p)
{
    p->table_row = row;
    if (row < 0) return;
    const psf_table *t = ax->table;
    if (ax->col_wavelength >= 0) listed_wavelength(p, &t->cols[ax->col_wavelength][row]);
    if (ax->col_defocus >= 0) p->sweep_defocus = t->cols[ax->col_defocus][row];
    if (ax->col_focus_shift >= 0) p->sweep_focus_shift_um = t->cols[ax->col_focus_shift][row];
}

/* Draw d's values (draws.h): each term's, then the listed choices. */
static void draw_params(const set_axes *ax, long long d, double *drawn, psf_image_params *p)
{
    const cfg_random *r = &ax->cfg->random;
    p->draw = d;
    p->drawn = NULL;
    if (d < 0) return;
    uint64_t seed = (uint64_t)r->seed, ud = (uint64_t)d;
    for (int i = 0; i < ax->nrandom; ++i) {
        const axes_random_term *t = &ax->random[i];
        drawn[i] = draw_zernike(seed, ud, t->j, t->dist, t->width);
    }
    p->drawn = ax->nrandom > 0 ? drawn : NULL;
    if (r->n_focus_shift > 0) {
        draw_id id = {seed, ud, 0, DRAW_FOCUS_SHIFT};
        p->sweep_focus_shift_um = r->focus_shift_um[draw_choice(id, r->n_focus_shift)];
    }
    if (r->n_wavelength > 0) {
        draw_id id = {seed, ud, 0, DRAW_WAVELENGTH};
        listed_wavelength(p, &r->wavelength_nm[draw_choice(id, r->n_wavelength)]);
    }
}

size_t jobs_scratch_size(const set_axes *ax)
{
    return (size_t)ax->cfg->n_sweep_zernike + (size_t)ax->nrandom +
           (size_t)ax->cfg->n_sweep_seg_zernike;
}

void jobs_image_params(const set_axes *ax, long long k, double *scratch, psf_image_params *p)
{
    const psf_config *cfg = ax->cfg;
    long long c, row, d;
    axes_split(ax, k, &c, &row, &d); /* a k past the set wraps in the outermost list */
    p->index = k;
    double *seg_scratch = scratch ? scratch + cfg->n_sweep_zernike + ax->nrandom : NULL;
    cartesian_params(cfg, c, scratch, seg_scratch, p);
    table_params(ax, row, p);
    draw_params(ax, d, scratch ? scratch + cfg->n_sweep_zernike : NULL, p);
    p->field = axes_field(ax, k);
}

/* total plus the table row's, the draw's and then the field position's
 * part of mode (n, m), in the config's units. */
static double add_listed(const set_axes *ax, const psf_image_params *p, int n, int m, double total)
{
    if (p->table_row >= 0)
        for (int i = 0; i < ax->nzcols; ++i)
            if (ax->zcols[i].n == n && ax->zcols[i].m == m)
                total += ax->table->cols[ax->zcols[i].col][p->table_row];
    if (p->drawn)
        for (int i = 0; i < ax->nrandom; ++i)
            if (ax->random[i].n == n && ax->random[i].m == m) total += p->drawn[i];
    if (p->field >= 0)
        for (int i = 0; i < ax->nfterms; ++i)
            if (ax->fterms[i].n == n && ax->fterms[i].m == m)
                total += ax->fvalues[p->field * ax->nfterms + i];
    return total;
}

void jobs_coefficients(const set_axes *ax, const psf_modeset *ms, const psf_image_params *p,
                       double wl_nm, double *out_waves, double *out_units)
{
    const psf_config *cfg = ax->cfg;
    int nm_units = cfg->zunits == ZUNITS_NM;
    for (int t = 0; t < ms->nterms; ++t) {
        int n = ms->n[t], m = ms->m[t];
        double total = 0.0; /* in cfg->zunits */
        for (int i = 0; i < cfg->nzernike; ++i)
            if (cfg->zernike[i].n == n && cfg->zernike[i].m == m) total += cfg->zernike[i].coeff;
        for (int i = 0; i < cfg->n_sweep_zernike; ++i)
            if (cfg->sweep_zernike[i].n == n && cfg->sweep_zernike[i].m == m && p->sweep_zernike)
                total += p->sweep_zernike[i];
        if (n == 2 && m == 0) {
            if (!isnan(p->sweep_defocus)) total += p->sweep_defocus;
            if (!isnan(p->sweep_focus_shift_um) && cfg->f_number > 0) {
                double z4_nm =
                    1000.0 * wavefront_focus_shift_to_z4_um(p->sweep_focus_shift_um, cfg->f_number);
                total += nm_units ? z4_nm : z4_nm / wl_nm;
            }
        }
        if (p->table_row >= 0 || p->drawn || p->field >= 0) total = add_listed(ax, p, n, m, total);
        out_waves[t] = nm_units ? total / wl_nm : total;
        if (out_units) out_units[t] = total;
    }
}
