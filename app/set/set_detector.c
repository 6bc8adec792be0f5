/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector group as the set's computed grid (app/set/set_detector.h). */
#include "app/set/set_detector.h"

#include "backend/detector.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The computed grid's largest side (the config's FFT size limit). */
#define SET_MAX_GRID 65536

static int fail(const image_set *s, const char *key, char *err, size_t errlen, const char *what)
{
    char where[CFG_PATH_MAX + 32];
    config_key_where(s->cfg, key, where, sizeof where);
    snprintf(err, errlen, "%.4200s: %s: %s", where, key, what);
    return -1;
}

/* Whether the set's images have more than one wavelength of their own. */
static int wavelengths_vary(const image_set *s)
{
    long long n = 0;
    const double *wl = axes_image_wavelengths(&s->axes, &n);
    for (long long i = 1; wl && i < n; ++i)
        if (wl[i] != wl[0]) return 1;
    return 0;
}

int set_detector_jitter(image_set *s, const image_info *common, char *err, size_t errlen)
{
    const cfg_detector *d = &s->cfg->detector;
    if (!d->enabled) return 0;
    int mas = d->jitter_mas[0] > 0 || d->jitter_mas[1] > 0;
    int ld = d->jitter_ld[0] > 0 || d->jitter_ld[1] > 0;
    if (!mas && !ld) return 0;
    /* A fixed angle (arcsec, um) is the same in mas for every wavelength
     * and not in lambda/D; the FFT's and output.pixel_scale's the other way. */
    int fixed_angle = s->cfg->out_pixel_scale_arcsec > 0 || s->cfg->out_pixel_scale_um > 0;
    if (wavelengths_vary(s) && mas != fixed_angle)
        return fail(s, mas ? "detector.jitter_mas" : "detector.jitter_lambda_d", err, errlen,
                    mas ? "the detector pixel's angle differs between the set's wavelengths: give "
                          "detector.jitter_lambda_d, or fix the pixel with "
                          "output.pixel_scale_arcsec"
                        : "the detector pixel in lambda/D differs between the set's "
                          "wavelengths: give detector.jitter_mas");
    double up = set_detector_written_div(s->cfg); /* written -> detector */
    for (int a = 0; a < 2; ++a)
        s->detector.jitter_px[a] = mas ? d->jitter_mas[a] * 1e-3 / (common->pixel_arcsec * up)
                                       : d->jitter_ld[a] / (common->pixel_lambda_d * up);
    return 0;
}

int set_detector_written_div(const psf_config *cfg)
{
    const cfg_detector *d = &cfg->detector;
    return d->enabled && d->write == DET_WRITE_OVERSAMPLED && d->oversample > 1 ? d->oversample : 1;
}

int set_detector_init(image_set *s, char *err, size_t errlen)
{
    const cfg_detector *d = &s->cfg->detector;
    memset(&s->detector, 0, sizeof s->detector);
    s->calc_npix = s->samp.npix;
    s->calc_div = 1;
    if (!d->enabled) return 0;
    int ov = d->oversample;
    long long big = (long long)ov * s->samp.npix;
    if (big > SET_MAX_GRID) {
        char what[256];
        snprintf(what, sizeof what,
                 "the computed grid would be %lld x %lld (%d x %d detector pixels times %d), "
                 "more than %d per side",
                 big, big, s->samp.npix, s->samp.npix, ov, SET_MAX_GRID);
        return fail(s, "detector.oversample", err, errlen, what);
    }
    s->calc_npix = (int)big;
    if (!s->mft) s->fft_npix = s->pupil_npix = (int)big;
    if (d->write == DET_WRITE_OVERSAMPLED) { /* the written image is the computed grid */
        s->samp.npix = (int)big;
        if (!s->mft) s->samp.padding *= ov;
        s->pixel_ld /= ov;
        s->pixel_um /= ov;
        s->pixel_rad /= ov;
    } else {
        s->calc_div = ov;
    }
    psf_detector *pd = &s->detector;
    pd->oversample = ov;
    pd->sample = d->write == DET_WRITE_DETECTOR; /* "both": the grid, sampled on the host */
    pd->pixel_response = d->pixel_response;
    pd->diffusion_px = d->diffusion_px;
    pd->ipc = d->ipc;
    memcpy(pd->ipc_kernel, d->ipc_kernel, sizeof pd->ipc_kernel);
    /* POPPY's frame: WebbPSF's detector, the oversampled image binned s x s
     * (docs/conventions.md); its block's centre is a grid pixel for odd s only. */
    pd->blocks = s->cfg->orientation == ORIENT_POPPY;
    if (pd->blocks && !d->pixel_response && ov % 2 == 0)
        return fail(s, "detector.pixel_response", err, errlen,
                    "false is not for output.orientation = \"poppy\" with an even "
                    "detector.oversample: POPPY's frame samples the detector as WebbPSF does, "
                    "the s x s block's sum, and a point sample at a block's centre falls "
                    "between grid pixels for even s (give true, or an odd oversample)");
    return 0;
}

int set_detector_backend_npix(const image_set *s)
{
    return s->cfg->detector.enabled && s->cfg->detector.write == DET_WRITE_BOTH ? s->calc_npix
                                                                                : s->samp.npix;
}

void set_detector_oversampled_view(const image_set *s, psf_config *cfg, image_set *view)
{
    int ov = s->calc_div > 1 ? s->calc_div : 1;
    *cfg = *s->cfg;
    cfg->detector.write = DET_WRITE_OVERSAMPLED;
    *view = *s;
    view->cfg = cfg;
    view->samp.npix = s->calc_npix; /* as set_detector_init's "oversampled" */
    if (!s->mft) view->samp.padding *= ov;
    view->pixel_ld /= ov;
    view->pixel_um /= ov;
    view->pixel_rad /= ov;
    view->calc_div = 1;
}

void set_detector_split(const image_set *s, float *grid, float *det)
{
    int ov = s->calc_div > 1 ? s->calc_div : 1;
    psf_detector pd = s->detector; /* the problem's (sample 0): its sampling */
    pd.sample = 1;
    psf_detector_sample(&pd, grid, s->calc_npix, det);
    if (s->cfg->normalization != NORM_PEAK) return;
    float s2 = (float)ov * (float)ov; /* "peak": 1 = the unaberrated peak of the grid */
    size_t n = (size_t)s->calc_npix * s->calc_npix;
    for (size_t i = 0; i < n; ++i)
        grid[i] *= s2;
}

void set_detector_oversampled_info(const image_set *s, image_info *info)
{
    int ov = s->calc_div > 1 ? s->calc_div : 1;
    info->pixel_lambda_d /= ov;
    info->pixel_arcsec /= ov;
    info->pixel_um /= ov;
    info->sampling_q = s->mft ? 1.0 / info->pixel_lambda_d : s->samp.padding * ov;
    if (s->cfg->normalization != NORM_PEAK) info->ref_peak /= (double)ov * ov; /* per grid pixel */
    info->captured_fraction = NAN;
}
