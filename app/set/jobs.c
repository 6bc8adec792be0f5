/* Image-set expansion: the sweep block's Cartesian product (see jobs.h). */
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

int jobs_modeset(const psf_config *cfg, psf_modeset *ms, char *err, size_t errlen)
{
    size_t cap = (size_t)cfg->nzernike + (size_t)cfg->n_sweep_zernike + 1;
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

void jobs_image_params(const psf_config *cfg, long long k, double *scratch, psf_image_params *p)
{
    static const double one = 1.0;
    p->index = k;
    long long rest = k < 0 ? 0 : k;
    /* The innermost (fastest) list first: the last sweep.zernike entry. */
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

void jobs_coefficients(const psf_config *cfg, const psf_modeset *ms, const psf_image_params *p,
                       double wl_nm, double *out_waves, double *out_units)
{
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
        out_waves[t] = nm_units ? total / wl_nm : total;
        if (out_units) out_units[t] = total;
    }
}
