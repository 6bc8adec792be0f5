/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/set/image_set.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/set/field_grid.h"
#include "app/set/field_model.h"
#include "app/set/map_place.h"
#include "app/set/maps.h"
#include "app/set/set_checks.h"
#include "app/set/set_detector.h"
#include "optics/aperture.h"

#define ARCSEC_PER_RAD 206264.80624709636
/* Pupil samples beyond n across D on the MFT's pupil grid: every open sample
 * (grey edges reach half a pitch past D/2) stays inside, off the border. */
#define MFT_PUPIL_MARGIN 4

/* A focal-plane pixel of um micrometres at F-number f as lambda/D at
 * wavelength wl_nm: pixel / (F lambda). */
static double um_to_lambda_d(double um, double f_number, double wl_nm)
{
    return um * 1e3 / (f_number * wl_nm);
}

/* output.pixel_scale_arcsec as an angle: arcsec pi / (180 * 3600) rad. */
static double arcsec_to_rad(double arcsec)
{
    return arcsec * (M_PI / (180.0 * 3600.0));
}

/* A pixel of pix_rad radians as lambda/D at wavelength wl_nm: pix D / lambda. */
static double rad_to_lambda_d(double pix_rad, double diameter_m, double wl_nm)
{
    return pix_rad * diameter_m / (wl_nm * 1e-9);
}

/* The fixed-angle pixel (output.pixel_scale_um or _arcsec) as lambda/D at wl_nm. */
static double fixed_to_lambda_d(const psf_config *cfg, double wl_nm)
{
    if (cfg->out_pixel_scale_arcsec > 0)
        return rad_to_lambda_d(arcsec_to_rad(cfg->out_pixel_scale_arcsec), cfg->aperture.diameter_m,
                               wl_nm);
    return um_to_lambda_d(cfg->out_pixel_scale_um, cfg->f_number, wl_nm);
}

static int same_pixel(double a, double b)
{
    return fabs(a - b) <= 1e-12 * fabs(b);
}

/* FFT or MFT (image_set.h): the FFT whenever the output grid is the FFT's. */
static void choose_propagation(image_set *s, const psf_config *cfg)
{
    int n = s->samp.pupil_samples, big = s->samp.npix;
    double fft_ld = sampling_pixscale_lambda_d(&s->samp);
    int npix = cfg->out_npix > 0 ? cfg->out_npix : big;
    int same = npix == big;
    long long nlisted;
    const double *listed = axes_image_wavelengths(&s->axes, &nlisted);
    if (cfg->out_pixel_scale_um > 0 || cfg->out_pixel_scale_arcsec > 0) {
        /* The pixel in lambda_ref/D of every image: one per listed wavelength. */
        if (listed) {
            for (long long i = 0; i < nlisted; ++i)
                same &= same_pixel(fixed_to_lambda_d(cfg, listed[i]), fft_ld);
        } else {
            double wl = cfg->wavelengths_nm[0];
            for (int i = 1; i < cfg->nwavelengths; ++i)
                wl = fmin(wl, cfg->wavelengths_nm[i]);
            same &= same_pixel(fixed_to_lambda_d(cfg, wl), fft_ld);
        }
    } else if (cfg->out_pixel_scale > 0) {
        same &= same_pixel(cfg->out_pixel_scale, fft_ld);
    }
    s->fft_npix = big;
    s->pupil_npix = big;
    /* POPPY's even frames are centred between pixels: an offset grid, which
     * only the MFT samples (docs/conventions.md). The computed grid's
     * parity decides (s M with the detector group): for odd M and even s
     * WebbPSF's oversampled frame is even, its axis between pixels, and the
     * detector's, on a pixel, is the centre of an s x s block there. */
    int ov = cfg->detector.enabled && cfg->detector.oversample > 1 ? cfg->detector.oversample : 1;
    s->half_pixel = cfg->orientation == ORIENT_POPPY && (long long)npix * ov % 2 == 0;
    if (same && !cfg->mft_force && !s->half_pixel) return;
    s->mft = 1;
    s->samp.npix = npix;
    s->pupil_npix = n + MFT_PUPIL_MARGIN;
    s->pixel_um = cfg->out_pixel_scale_um;
    s->pixel_rad = arcsec_to_rad(cfg->out_pixel_scale_arcsec);
    s->pixel_ld = s->pixel_um > 0 || s->pixel_rad > 0 ? 0.0
                  : cfg->out_pixel_scale > 0          ? cfg->out_pixel_scale
                                                      : fft_ld;
}

/* A map that cannot be used: the message names the config and the key. */
static int map_error(const psf_config *cfg, const char *key, const char *why, char *err,
                     size_t errlen)
{
    snprintf(err, errlen, "%.900s: %s: %.900s", cfg->path, key, why);
    return -1;
}

/* The transmission map of shape = "file", placed (app/set/map_place.h). */
static int load_aperture_map(image_set *s, const psf_config *cfg, char *err, size_t errlen)
{
    if (cfg->aperture.shape != APERTURE_FILE) return 0;
    const char *fkey = "optics.aperture.file", *skey = "optics.aperture.pixel_scale_m";
    const cfg_map_array *array = &cfg->aperture_array; /* given in memory instead */
    const char *path = maps_name(cfg->aperture_file, array);
    char why[1024];
    map_placement pl;
    /* An array has no header: its scale is the config's or none. */
    if (map_pixel_scale(array->values ? "" : path, cfg->aperture_pixel_scale_m, skey, &pl, why,
                        sizeof why) ||
        (array->values
             ? maps_transmission_array(array, path, pl.scale_m == 0.0, &s->aperture_map,
                                       &s->map_rows, &s->map_cols, why, sizeof why)
             : (pl.scale_m > 0.0 ? maps_load_transmission_placed : maps_load_transmission)(
                   path, &s->aperture_map, &s->map_rows, &s->map_cols, why, sizeof why)))
        return map_error(cfg, fkey, why, err, errlen);
    if (map_place(cfg, fkey, skey, path, cfg->aperture_pixel_scale_m, s->map_rows, s->map_cols, &pl,
                  err, errlen))
        return -1;
    s->aperture.map = s->aperture_map;
    s->aperture.map_rows = s->map_rows;
    s->aperture.map_cols = s->map_cols;
    s->aperture.map_width_m = pl.width_m;
    s->aperture.map_height_m = pl.height_m;
    return 0;
}

/* aberrations.opd_map.file, placed (app/set/map_place.h). */
static int load_opd_map(image_set *s, const psf_config *cfg, char *err, size_t errlen)
{
    const cfg_map_array *array = &cfg->opd_array; /* given in memory instead */
    if (!cfg->opd_file[0] && !array->values) return 0;
    const char *fkey = "aberrations.opd_map.file", *skey = "aberrations.opd_map.pixel_scale_m";
    const char *path = maps_name(cfg->opd_file, array);
    char why[1024];
    map_placement pl;
    /* An array has no header: its scale is the config's or none. */
    if (map_pixel_scale(array->values ? "" : path, cfg->opd_pixel_scale_m, skey, &pl, why,
                        sizeof why) ||
        (array->values ? maps_opd_array(array, path, pl.scale_m == 0.0, cfg->opd_scale,
                                        cfg->opd_units, &s->opd_map, &s->opd_rows, &s->opd_cols,
                                        &s->opd_units, why, sizeof why)
                       : (pl.scale_m > 0.0 ? maps_load_opd_placed : maps_load_opd)(
                             path, cfg->opd_scale, cfg->opd_units, &s->opd_map, &s->opd_rows,
                             &s->opd_cols, &s->opd_units, why, sizeof why)))
        return map_error(cfg, fkey, why, err, errlen);
    if (map_place(cfg, fkey, skey, path, cfg->opd_pixel_scale_m, s->opd_rows, s->opd_cols, &pl, err,
                  errlen))
        return -1;
    s->opd_width_m = pl.width_m;
    s->opd_height_m = pl.height_m;
    return 0;
}

/* s->date_utc (image_set.h). */
static void set_date(image_set *s)
{
    const char *env = secure_getenv("SOURCE_DATE_EPOCH");
    char *end = NULL;
    long long e = env ? strtoll(env, &end, 10) : -1;
    time_t t = env && *env && end && !*end && e >= 0 ? (time_t)e : time(NULL);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(s->date_utc, sizeof s->date_utc, "%Y-%m-%dT%H:%M:%S", &tm))
        s->date_utc[0] = '\0';
}

/* A FITS header holds at most 256 Z<j> (fits_header.h): a table or random
 * set, whose labels are the point, refuses more rather than cut them. */
#define SET_FITS_MAX_TERMS 256

static int check_fits_terms(const image_set *s, char *err, size_t errlen)
{
    const psf_config *cfg = s->cfg;
    if (!cfg->fits_enabled || !axes_is_dataset(&s->axes) || s->modes.nterms <= SET_FITS_MAX_TERMS)
        return 0;
    const char *key = cfg->random.spectrum ? "sweep.random.spectrum" : "sweep";
    char where[CFG_PATH_MAX + 32];
    config_key_where(cfg, key, where, sizeof where);
    snprintf(err, errlen,
             "%.4200s: %s: the set has %d Zernike terms, more than the %d a FITS header holds "
             "(Z<j>); use fewer terms or turn output.fits off",
             where, key, s->modes.nterms, SET_FITS_MAX_TERMS);
    return -1;
}

int image_set_init(image_set *s, const psf_config *cfg, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    set_date(s);
    s->cfg = cfg;
    s->aperture = cfg->aperture;
    /* The axes, then output.psf_grid over them: field_grid reads the axes,
     * so its check is the set's step and the rooms go one way (image_set ->
     * field_grid -> field_model -> axes -> table); the field model's terms
     * at each position first (field_model.h); the axes are freed on their
     * errors as on their own. */
    if (axes_init(&s->axes, cfg, err, errlen) != 0) return -1;
    if (field_model_init(&s->axes, err, errlen) != 0 ||
        field_grid_check(&s->axes, err, errlen) != 0) {
        axes_free(&s->axes);
        return -1;
    }
    s->nimages = s->axes.nimages;
    _Static_assert(CFG_MAX_WAVELENGTHS <= PSF_MAX_COMPONENTS,
                   "a config's wavelengths must fit in one psf_job");
    if (cfg->nwavelengths > PSF_MAX_COMPONENTS) {
        snprintf(err, errlen, "%s: optics.wavelengths_nm: at most %d wavelengths (got %d)",
                 cfg->path, PSF_MAX_COMPONENTS, cfg->nwavelengths);
        return -1;
    }
    if (sampling_init(cfg->pupil_samples, cfg->padding, cfg->aperture.diameter_m, &s->samp, err,
                      errlen) != 0)
        return -1;
    choose_propagation(s, cfg);
    /* The detector group, then its jitter through the common image's pixel
     * as the group left it: two steps, so that set_detector needs only the
     * set's types (image_set_types.h) and the rooms go one way. */
    if (set_detector_init(s, err, errlen) != 0) return -1;
    image_info common;
    image_set_common_info(s, &common);
    if (set_detector_jitter(s, &common, err, errlen) != 0) return -1;
    if (load_aperture_map(s, cfg, err, errlen) || load_opd_map(s, cfg, err, errlen)) return -1;
    if (set_checks_maps(s, err, errlen) != 0) return -1;
    s->grids = aperture_cache_create(&s->aperture, IMAGE_SET_GRIDS_BYTES); /* NULL: fill twice */
    if (jobs_modeset(&s->axes, &s->modes, err, errlen) != 0 ||
        set_labels_init(&s->labels, &s->axes, &s->modes, err, errlen) != 0 ||
        segterms_init(&s->segterms, &s->axes, err, errlen) != 0)
        return -1;
    return check_fits_terms(s, err, errlen);
}

void image_set_free(image_set *s)
{
    aperture_cache_free(s->grids);
    free(s->aperture_map);
    free(s->opd_map);
    jobs_modeset_free(&s->modes);
    set_labels_free(&s->labels);
    segterms_free(&s->segterms);
    axes_free(&s->axes);
    memset(s, 0, sizeof *s);
}

void image_set_problem(const image_set *s, int max_batch, psf_problem *problem)
{
    memset(problem, 0, sizeof *problem);
    problem->npix = s->calc_npix > 0 ? s->calc_npix : s->samp.npix; /* set_detector.h */
    problem->detector = s->detector;
    problem->mft = s->mft;
    problem->pupil_npix = s->mft ? s->pupil_npix : 0;
    problem->half_pixel = s->half_pixel;
    problem->aperture = s->aperture;
    problem->modes.nterms = s->modes.nterms;
    problem->modes.n = s->modes.n;
    problem->modes.m = s->modes.m;
    problem->seg_modes.nterms = s->segterms.nterms;
    problem->seg_modes.n = s->segterms.n;
    problem->seg_modes.m = s->segterms.m;
    problem->opd_map = s->opd_map;
    problem->opd_rows = s->opd_rows;
    problem->opd_cols = s->opd_cols;
    problem->opd_width_m = s->opd_width_m;
    problem->opd_height_m = s->opd_height_m;
    problem->aperture_grids = s->grids;
    problem->max_batch = max_batch;
    problem->nimages = s->nimages;
    /* What the jobs span (image_set_job): every pitch is D/n, or for
     * broadband images one per wavelength; the MFT's a = dx p / lambda,
     * one per wavelength the set has or sweeps (the larger count). */
    const psf_config *cfg = s->cfg;
    problem->pupil_samples = s->samp.pupil_samples;
    problem->pupil_pitches = cfg->nwavelengths > 1 ? cfg->nwavelengths : 1;
    long long nlisted;
    axes_image_wavelengths(&s->axes, &nlisted); /* a table's column: at most its rows */
    long long nwl = cfg->nwavelengths > nlisted ? cfg->nwavelengths : nlisted;
    problem->mft_matrices = nwl > 0 ? (nwl < INT_MAX ? (int)nwl : INT_MAX) : 1;
}

/* Components an image may have: with segment terms (many coefficients)
 * the config's wavelengths (a listed wavelength is an image's only one),
 * else PSF_MAX_COMPONENTS. */
static size_t components_max(const image_set *s)
{
    if (segterms_count(&s->segterms) == 0) return PSF_MAX_COMPONENTS;
    return s->cfg->nwavelengths > 1 ? (size_t)s->cfg->nwavelengths : 1;
}

/* Storage of image_set_job: each component's coefficients (global, then
 * the segments'), their totals in the config's units, the sweep scratch,
 * the segment draws. */
size_t image_set_storage(const image_set *s)
{
    size_t nc = (size_t)s->modes.nterms + segterms_count(&s->segterms);
    size_t ndraw = s->cfg->random.nseg_zernike > 0 ? segterms_count(&s->segterms) : 0;
    return nc * (components_max(s) + 1) + jobs_scratch_size(&s->axes) + ndraw + 1;
}

/* The aperture's shape and what may close it, for the message of a
 * closed aperture: "circle, obscuration 0.3, 4 spider(s) 0.01 m wide". */
static void describe_aperture(const psf_aperture *a, char *out, size_t outlen)
{
    static const char *const shape[] = {"circle", "hexagon", "transmission map", "segmented"};
    int k = a->shape >= APERTURE_CIRCULAR && a->shape <= APERTURE_SEGMENTED ? (int)a->shape : 0;
    int w = snprintf(out, outlen, "%s, diameter %g m, obscuration %g", shape[k], a->diameter_m,
                     a->obscuration);
    if (w > 0 && (size_t)w < outlen && a->shape == APERTURE_SEGMENTED)
        w += snprintf(out + w, outlen - (size_t)w, ", outer stop %g m (0: none)",
                      a->seg.stop_diameter_m);
    if (w > 0 && (size_t)w < outlen && (a->spider_count > 0 || a->nvanes > 0))
        snprintf(out + w, outlen - (size_t)w, ", %d spider(s) %g m wide, %d vane(s)",
                 a->spider_count, a->spider_count > 0 ? a->spider_width_m : 0.0, a->nvanes);
}

/* S1 and S2 of the aperture at pitch dx_m on the pupil grid (the backend's),
 * computed once per pitch; the grid stays in s->grids for the CPU backend. */
static const aperture_sums *sums_for(image_set *s, double dx_m, char *err, size_t errlen)
{
    for (int i = 0; i < s->nsums; ++i)
        if (fabs(s->sums[i].dx_m - dx_m) <= 1e-12 * dx_m) return &s->sums[i];
    if (s->nsums == PSF_MAX_COMPONENTS) {
        snprintf(err, errlen, "more than %d pupil pitches in one set", PSF_MAX_COMPONENTS);
        return NULL;
    }
    int npix = s->pupil_npix;
    size_t n = (size_t)npix * npix;
    float *amp = malloc(n * sizeof *amp);
    if (!amp) {
        snprintf(err, errlen, "cannot allocate the %dx%d aperture grid", npix, npix);
        return NULL;
    }
    if (aperture_cache_fill(s->grids, &s->aperture, npix, dx_m, amp, err, errlen) != 0) {
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
    /* Less than a sample's worth of open area (the samples' transmissions
     * summed) is no aperture at this sampling, whatever closed it: an
     * obscuration, spiders, a segmented aperture's outer stop, a map. */
    if (!(a->sum_a >= 1.0)) {
        char where[CFG_PATH_MAX + 32], what[256];
        config_key_where(s->cfg, "optics.aperture", where, sizeof where);
        describe_aperture(&s->aperture, what, sizeof what);
        snprintf(err, errlen,
                 "%.1000s: optics.aperture: the %dx%d pupil grid (pitch %.6g m) has %.3g "
                 "sample(s) of open area, less than one: the aperture (%s) is closed at this "
                 "sampling",
                 where, npix, npix, dx_m, a->sum_a, what);
        return NULL;
    }
    s->nsums++;
    return a;
}

int image_set_check_open(image_set *s, char *err, size_t errlen)
{
    size_t per = image_set_storage(s);
    double *storage = malloc(per * sizeof *storage);
    if (!storage) {
        snprintf(err, errlen, "cannot allocate %zu doubles for image 0's job", per);
        return -1;
    }
    psf_job job;
    image_info info;
    int rc = image_set_job(s, 0, storage, &job, &info, err, errlen);
    free(storage);
    return rc;
}

static double min_wavelength(const psf_image_params *p)
{
    double m = p->wl_nm[0];
    for (int c = 1; c < p->nwl; ++c)
        m = fmin(m, p->wl_nm[c]);
    return m;
}

/* The pixel of the image's grid at info->wavelength_nm (image_info): from
 * the set's own pixel (s->pixel_*, the written grid's), not the keys'. */
static double pixel_lambda_d(const image_set *s, const image_info *info)
{
    if (!s->mft) return sampling_pixscale_lambda_d(&s->samp);
    if (s->pixel_rad > 0)
        return rad_to_lambda_d(s->pixel_rad, s->samp.diameter_m, info->wavelength_nm);
    return s->pixel_um > 0 ? um_to_lambda_d(s->pixel_um, s->cfg->f_number, info->wavelength_nm)
                           : s->pixel_ld;
}

static double pixel_arcsec(const image_set *s, const image_info *info)
{
    double wl_m = info->wavelength_nm * 1e-9;
    if (!s->mft) return sampling_pixscale_arcsec(&s->samp, wl_m);
    /* The key's own value (exact in the headers), over s when oversampled. */
    if (s->pixel_rad > 0) return s->cfg->out_pixel_scale_arcsec / set_detector_written_div(s->cfg);
    return pixel_lambda_d(s, info) * wl_m / s->samp.diameter_m * ARCSEC_PER_RAD;
}

static double pixel_um(const image_set *s, const image_info *info)
{
    double f = s->cfg->f_number, wl_m = info->wavelength_nm * 1e-9;
    if (!(f > 0)) return NAN;
    if (!s->mft) return sampling_pixscale_um(&s->samp, wl_m, f);
    if (s->pixel_um > 0) return s->pixel_um;
    if (s->pixel_rad > 0) return s->pixel_rad * f * s->samp.diameter_m * 1e6;
    return s->pixel_ld * wl_m * 1e6 * f;
}

/* info's pixel fields from its wavelength_nm. */
static void fill_pixel(const image_set *s, image_info *info)
{
    info->pixel_lambda_d = pixel_lambda_d(s, info);
    info->pixel_arcsec = pixel_arcsec(s, info);
    info->pixel_um = pixel_um(s, info);
    info->sampling_q = s->mft ? 1.0 / info->pixel_lambda_d : s->samp.padding;
}

int image_set_job(image_set *s, long long k, double *storage, psf_job *job, image_info *info,
                  char *err, size_t errlen)
{
    const psf_config *cfg = s->cfg;
    int nt = s->modes.nterms;
    size_t nsc = segterms_count(&s->segterms), nc = (size_t)nt + nsc;
    double *coeff = storage, *units = storage + nc * components_max(s);
    double *scratch = units + nc, *drawn = scratch + jobs_scratch_size(&s->axes);
    memset(job, 0, sizeof *job);
    memset(info, 0, sizeof *info);
    jobs_image_params(&s->axes, k, scratch, &info->params);
    const psf_image_params *p = &info->params;
    int seg_draws = nsc > 0 && p->draw >= 0 && cfg->random.nseg_zernike > 0;
    if (seg_draws) segterms_draw(&s->axes, &s->segterms, (uint64_t)p->draw, drawn);
    double wl_ref = min_wavelength(p), npix2 = (double)s->fft_npix * s->fft_npix;
    double peak = 0.0;
    /* MFT: one pixel (rad) for every component of the image. */
    double pix_rad = s->pixel_rad > 0  ? s->pixel_rad
                     : s->pixel_um > 0 ? s->pixel_um * 1e-6 / (cfg->f_number * s->samp.diameter_m)
                                       : s->pixel_ld * wl_ref * 1e-9 / s->samp.diameter_m;
    int div = s->calc_div > 1 ? s->calc_div : 1;
    pix_rad /= div; /* the computed grid's pixel (set_detector.h) */
    job->ncomp = p->nwl;
    for (int c = 0; c < p->nwl; ++c) {
        psf_component *comp = &job->comp[c];
        double wl = p->wl_nm[c];
        comp->wavelength_m = wl * 1e-9;
        comp->dx_m = s->mft ? s->samp.dx_m : s->samp.dx_m * wl / wl_ref;
        double *cw = coeff + (size_t)c * nc;
        comp->coeff_waves = cw;
        jobs_coefficients(&s->axes, &s->modes, p, wl, cw, c == 0 ? units : NULL);
        if (nsc > 0)
            segterms_coefficients(&s->axes, &s->segterms, p, seg_draws ? drawn : NULL, wl, cw + nt,
                                  c == 0 ? units + nt : NULL);
        if (s->opd_map) comp->opd_to_waves = s->opd_units.units == ZUNITS_NM ? 1.0 / wl : 1.0;
        const aperture_sums *a = sums_for(s, comp->dx_m, err, errlen);
        if (!a) return -1;
        if (s->mft) { /* N_c: pixels in one period of the sampled pupil's transform */
            comp->out_pixel_rad = pix_rad;
            double period = comp->wavelength_m / (comp->dx_m * pix_rad);
            npix2 = period * period;
        }
        comp->scale = p->weights[c] / (npix2 * a->sum_a2);
        peak += comp->scale * a->sum_a * a->sum_a;
    }
    /* A detector pixel holds d2 grid pixels' flux (psf_detector: s^2 times
     * the convolved grid at its centre); "peak" makes it the mean intensity
     * over the pixel, 1 = the unaberrated peak, whatever s (set_detector.h). */
    double d2 = (double)div * div;
    if (cfg->normalization == NORM_PEAK) {
        for (int c = 0; c < job->ncomp; ++c)
            job->comp[c].scale /= peak * d2;
        peak = 1.0 / d2;
    }
    info->wavelength_nm = wl_ref;
    info->ref_peak = peak * d2;
    info->captured_fraction = NAN;
    info->coeff_units = units;
    info->seg_units = nsc > 0 ? units + nt : NULL;
    fill_pixel(s, info);
    return 0;
}

void image_set_finish_image(const image_set *s, image_info *info, float *img)
{
    int pupil = s->cfg->normalization == NORM_PUPIL;
    if (!pupil && (!s->mft || s->cfg->normalization != NORM_SUM)) return;
    size_t n = (size_t)s->samp.npix * s->samp.npix;
    double total = 0.0;
    for (size_t i = 0; i < n; ++i)
        total += img[i];
    if (pupil) {
        info->captured_fraction = total;
        return;
    }
    if (!(total > 0.0) || !isfinite(total)) return;
    double inv = 1.0 / total;
    for (size_t i = 0; i < n; ++i)
        img[i] = (float)(img[i] * inv);
    info->ref_peak *= inv;
}

double image_info_wavelength_nm(const image_info *info)
{
    const psf_image_params *p = &info->params;
    if (p->nwl < 1) return info->wavelength_nm;
    double m = 0.0;
    for (int c = 0; c < p->nwl; ++c)
        m += p->weights[c] * p->wl_nm[c];
    return m;
}

int image_set_wavelength_per_image(const image_set *s)
{
    long long n;
    return axes_image_wavelengths(&s->axes, &n) != NULL;
}

void image_set_wavelengths(const image_set *s, set_wavelength_list *w)
{
    const psf_config *cfg = s->cfg;
    w->per_image = image_set_wavelength_per_image(s);
    w->n = w->per_image ? 0 : cfg->nwavelengths;
    w->nm = w->n > 0 ? cfg->wavelengths_nm : NULL;
    w->weights = w->n > 0 ? cfg->weights : NULL;
}

void image_set_common_info(const image_set *s, image_info *info)
{
    const psf_config *cfg = s->cfg;
    memset(info, 0, sizeof *info);
    info->captured_fraction = NAN;
    long long nlisted;
    const double *listed = axes_image_wavelengths(&s->axes, &nlisted);
    info->wavelength_nm = cfg->nwavelengths > 0 ? cfg->wavelengths_nm[0]
                          : nlisted > 0         ? listed[0]
                                                : 500.0;
    for (int c = 1; c < cfg->nwavelengths; ++c)
        if (cfg->wavelengths_nm[c] < info->wavelength_nm)
            info->wavelength_nm = cfg->wavelengths_nm[c];
    fill_pixel(s, info);
}
