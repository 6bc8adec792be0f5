#include "image_set.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps.h"
#include "optics/aperture.h"

int image_set_init(image_set *s, const psf_config *cfg, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->aperture = cfg->aperture;
    s->nimages = config_image_count(cfg);
    if (cfg->nwavelengths > PSF_MAX_COMPONENTS) {
        snprintf(err, errlen, "%s: optics.wavelengths_nm: at most %d wavelengths (got %d)",
                 cfg->path, PSF_MAX_COMPONENTS, cfg->nwavelengths);
        return -1;
    }
    if (sampling_init(cfg->pupil_samples, cfg->padding, cfg->aperture.diameter_m, &s->samp, err,
                      errlen) != 0)
        return -1;
    if (cfg->aperture.shape == APERTURE_FILE) {
        if (maps_load_transmission(cfg->aperture_file, &s->aperture_map, &s->map_rows,
                                   &s->map_cols, err, errlen) != 0)
            return -1;
        s->aperture.map = s->aperture_map;
        s->aperture.map_rows = s->map_rows;
        s->aperture.map_cols = s->map_cols;
    }
    if (cfg->opd_file[0] && maps_load_opd(cfg->opd_file, cfg->opd_scale, &s->opd_map,
                                          &s->opd_rows, &s->opd_cols, err, errlen) != 0)
        return -1;
    return jobs_modeset(cfg, &s->modes, err, errlen);
}

void image_set_free(image_set *s)
{
    free(s->aperture_map);
    free(s->opd_map);
    jobs_modeset_free(&s->modes);
    memset(s, 0, sizeof *s);
}

void image_set_desc(const image_set *s, int max_batch, psf_set_desc *desc)
{
    memset(desc, 0, sizeof *desc);
    desc->npix = s->samp.npix;
    desc->aperture = s->aperture;
    desc->modes.nterms = s->modes.nterms;
    desc->modes.n = s->modes.n;
    desc->modes.m = s->modes.m;
    desc->opd_map = s->opd_map;
    desc->opd_rows = s->opd_rows;
    desc->opd_cols = s->opd_cols;
    desc->max_batch = max_batch;
    desc->nimages = s->nimages;
}

size_t image_set_storage(const image_set *s)
{
    size_t nt = (size_t)s->modes.nterms;
    return nt * (PSF_MAX_COMPONENTS + 1) + (size_t)s->cfg->n_sweep_zernike + 1;
}

/* S1 and S2 of the aperture at pitch dx_m, computed once per pitch. */
static const aperture_sums *sums_for(image_set *s, double dx_m, char *err, size_t errlen)
{
    for (int i = 0; i < s->nsums; ++i)
        if (fabs(s->sums[i].dx_m - dx_m) <= 1e-12 * dx_m) return &s->sums[i];
    if (s->nsums == PSF_MAX_COMPONENTS) {
        snprintf(err, errlen, "more than %d pupil pitches in one set", PSF_MAX_COMPONENTS);
        return NULL;
    }
    int npix = s->samp.npix;
    size_t n = (size_t)npix * npix;
    float *amp = malloc(n * sizeof *amp);
    if (!amp) {
        snprintf(err, errlen, "cannot allocate the %dx%d aperture grid", npix, npix);
        return NULL;
    }
    if (aperture_fill(&s->aperture, npix, dx_m, amp, err, errlen) != 0) {
        free(amp);
        return NULL;
    }
    aperture_sums *a = &s->sums[s->nsums];
    a->dx_m = dx_m;
    a->sum_a = a->sum_a2 = 0.0;
    for (size_t i = 0; i < n; ++i) {
        a->sum_a += amp[i];
        a->sum_a2 += (double)amp[i] * amp[i];
    }
    free(amp);
    if (a->sum_a2 <= 0.0) {
        snprintf(err, errlen, "%s: the aperture is fully closed at this sampling", s->cfg->path);
        return NULL;
    }
    s->nsums++;
    return a;
}

static double min_wavelength(const psf_image_params *p)
{
    double m = p->wl_nm[0];
    for (int c = 1; c < p->nwl; ++c) m = fmin(m, p->wl_nm[c]);
    return m;
}

int image_set_job(image_set *s, long long k, double *storage, psf_job *job, image_info *info,
                  char *err, size_t errlen)
{
    const psf_config *cfg = s->cfg;
    int nt = s->modes.nterms;
    double *coeff = storage, *units = storage + (size_t)nt * PSF_MAX_COMPONENTS;
    double *scratch = units + nt;
    memset(job, 0, sizeof *job);
    memset(info, 0, sizeof *info);
    jobs_image_params(cfg, k, scratch, &info->params);
    const psf_image_params *p = &info->params;
    double wl_ref = min_wavelength(p), npix2 = (double)s->samp.npix * s->samp.npix;
    double peak = 0.0;
    job->ncomp = p->nwl;
    for (int c = 0; c < p->nwl; ++c) {
        psf_component *comp = &job->comp[c];
        double wl = p->wl_nm[c];
        comp->wavelength_m = wl * 1e-9;
        comp->dx_m = s->samp.dx_m * wl / wl_ref;
        comp->coeff_waves = coeff + (size_t)c * nt;
        jobs_coefficients(cfg, &s->modes, p, wl, coeff + (size_t)c * nt, c == 0 ? units : NULL);
        if (s->opd_map) comp->opd_to_waves = cfg->opd_units == ZUNITS_NM ? 1.0 / wl : 1.0;
        const aperture_sums *a = sums_for(s, comp->dx_m, err, errlen);
        if (!a) return -1;
        comp->scale = p->weights[c] / (npix2 * a->sum_a2);
        peak += comp->scale * a->sum_a * a->sum_a;
    }
    if (cfg->normalization == NORM_PEAK) {
        for (int c = 0; c < job->ncomp; ++c) job->comp[c].scale /= peak;
        peak = 1.0;
    }
    info->wavelength_nm = wl_ref;
    info->ref_peak = peak;
    info->coeff_units = units;
    return 0;
}
