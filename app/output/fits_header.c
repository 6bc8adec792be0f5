/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/output/fits_header.h"

#include <math.h>
#include <stdio.h>

#include "app/config/config.h"
#include "app/set/field_grid.h"

static const char *conv_name(zernike_convention c)
{
    return c == ZCONV_ANSI ? "ansi" : c == ZCONV_FRINGE ? "fringe" : "noll";
}

static const char *norm_name(psf_normalization v)
{
    return v == NORM_PUPIL ? "pupil" : v == NORM_SUM ? "sum" : "peak";
}

static fits_kv kv_d(const char *key, double d, const char *comment)
{
    return (fits_kv){.key = key, .type = FITS_KV_DOUBLE, .d = d, .comment = comment};
}

static fits_kv kv_i(const char *key, long long i, const char *comment)
{
    return (fits_kv){.key = key, .type = FITS_KV_INT, .i = i, .comment = comment};
}

static fits_kv kv_s(const char *key, const char *s, const char *comment)
{
    return (fits_kv){.key = key, .type = FITS_KV_STRING, .s = s, .comment = comment};
}

/* A linear WCS in arcsec offsets from the optical axis (FITS WCS paper I,
 * Greisen & Calabretta 2002: an unrecognised CTYPE without a projection code
 * is linear), the diffraction limit, the field and the writer. */
/* NWAVES, WAVE<i> (m) and WGHT<i> (0-based, as POPPY writes them) of the
 * image's components, their key strings in keys[2 * nwl]. */
static int wave_keys(const image_info *info, fits_kv *kvs, int n, char (*keys)[12])
{
    const psf_image_params *p = &info->params;
    if (p->nwl < 1) return n;
    kvs[n++] = kv_i("NWAVES", p->nwl, "wavelengths in the image");
    for (int c = 0; c < p->nwl && c < PSF_MAX_COMPONENTS && n + 2 <= FITS_HEADER_MAX; ++c) {
        snprintf(keys[2 * c], 12, "WAVE%d", c);
        snprintf(keys[2 * c + 1], 12, "WGHT%d", c);
        kvs[n++] = kv_d(keys[2 * c], p->wl_nm[c] / 1e9, "wavelength [m]");
        kvs[n++] = kv_d(keys[2 * c + 1], p->weights[c], "its weight (sum 1)");
    }
    return n;
}

static int wcs_keys(const image_info *info, const psf_sampling *sp, const char *date,
                    const char *hash, fits_kv *kvs, int n)
{
    double ld_arcsec = info->wavelength_nm * 1e-9 / sp->diameter_m * (180.0 * 3600.0 / M_PI);
    kvs[n++] = kv_s("CTYPE1", "OFFSET_X", "linear: offset from the optical axis");
    kvs[n++] = kv_s("CTYPE2", "OFFSET_Y", "linear: offset from the optical axis");
    kvs[n++] = kv_s("CUNIT1", "arcsec", "unit of CDELT1 and CRVAL1");
    kvs[n++] = kv_s("CUNIT2", "arcsec", "unit of CDELT2 and CRVAL2");
    kvs[n++] = kv_d("CDELT1", info->pixel_arcsec, "pixel along a row [arcsec]");
    kvs[n++] = kv_d("CDELT2", info->pixel_arcsec, "pixel along a column [arcsec]");
    kvs[n++] = kv_d("CRVAL1", 0.0, "offset at CRPIX1: the axis [arcsec]");
    kvs[n++] = kv_d("CRVAL2", 0.0, "offset at CRPIX2: the axis [arcsec]");
    kvs[n++] = kv_d("DIFFLMT", ld_arcsec, "lambda/D at REFWAVE [arcsec]");
    kvs[n++] = kv_d("FOV", sp->npix * info->pixel_arcsec, "field of view NPIX * PIXELSCL [arcsec]");
    kvs[n++] = kv_s("ORIGIN", "psfsim", "software that wrote the file");
    kvs[n++] = kv_s("CREATOR", "psfsim " PSFSIM_VERSION, "software and version");
    if (date[0]) kvs[n++] = kv_s("DATE", date, "set opened (UTC; SOURCE_DATE_EPOCH when set)");
    if (hash[0]) kvs[n++] = kv_s("CFGHASH", hash, "config fingerprint (manifest config_hash)");
    return n;
}

/* BUNIT (FITS 4.0, sec. 4.4.2.5, the array's physical unit): the images
 * are dimensionless relative intensities, so the unit string is empty;
 * the comment says relative to what, per normalisation. */
static fits_kv bunit(psf_normalization v)
{
    return kv_s("BUNIT", "",
                v == NORM_PUPIL ? "relative: fraction of the pupil's power per pixel"
                : v == NORM_SUM ? "relative: the image sums to 1"
                                : "relative: 1 = the unaberrated peak intensity");
}

/* OVERSAMP and DET_SAMP as POPPY and WebbPSF write them (POPPY docs,
 * fitsheaders.rst): on every image, as POPPY's every PSF has them (1 and 1
 * for an image of detector pixels without the group); with the group
 * EXTNAME naming the image and the stage's settings. */
static int detector_keys(const image_set *s, fits_kv *kvs, int n)
{
    const cfg_detector *d = &s->cfg->detector;
    if (!d->enabled) {
        kvs[n++] = kv_i("OVERSAMP", 1, "this image's pixels per detector pixel");
        kvs[n++] = kv_i("DET_SAMP", 1, "oversampling of the computation");
        return n;
    }
    int over = d->write == DET_WRITE_OVERSAMPLED;
    kvs[n++] = kv_s("EXTNAME", over ? "OVERSAMP" : "DET_SAMP",
                    over ? "the oversampled image" : "the detector-sampled image");
    kvs[n++] = kv_i("OVERSAMP", over ? d->oversample : 1, "this image's pixels per detector pixel");
    kvs[n++] = kv_i("DET_SAMP", d->oversample, "oversampling of the computation");
    /* POPPY's frame: the pixel response is the binning, not in the oversampled image. */
    int pixr = d->pixel_response && !(over && s->cfg->orientation == ORIENT_POPPY);
    kvs[n++] = kv_i("DETPIXR", pixr, "1: detector pixel response applied");
    kvs[n++] = kv_d("DETJITX", s->detector.jitter_px[0], "jitter sigma along x [detector px]");
    kvs[n++] = kv_d("DETJITY", s->detector.jitter_px[1], "jitter sigma along y [detector px]");
    kvs[n++] = kv_d("DETDIFF", d->diffusion_px, "charge diffusion sigma [detector px]");
    kvs[n++] = kv_i("DETIPC", d->ipc, "1: inter-pixel capacitance kernel applied");
    return n;
}

/* HISTORY: the config file and the command that ran the set; none when
 * no command did (the library's psfsim_fits_header, whose caller writes
 * the file). */
static int history_keys(const image_set *s, fits_kv *kvs, int n)
{
    if (!s->command[0]) return n;
    kvs[n++] = (fits_kv){
        .key = "HISTORY", .type = FITS_KV_HISTORY, .s = s->cfg->path, .comment = "psfsim config:"};
    kvs[n++] = (fits_kv){
        .key = "HISTORY", .type = FITS_KV_HISTORY, .s = s->command, .comment = "psfsim command:"};
    return n;
}

int fits_header_check(const image_set *s, char *err, size_t errlen)
{
    const psf_config *cfg = s->cfg;
    if (!cfg->fits_enabled || s->modes.nterms <= FITS_HEADER_ZMAX) return 0;
    const char *key =
        cfg->n_sweep_zernike > cfg->nzernike ? "sweep.zernike" : "aberrations.zernike";
    char where[CFG_PATH_MAX + 32];
    config_key_where(cfg, key, where, sizeof where);
    snprintf(err, errlen,
             "%s: %s: the set has %d Zernike terms (aberrations.zernike, sweep.zernike and "
             "Z4 for a defocus sweep together); a FITS header holds at most %d (one Z<j> "
             "keyword each); use fewer terms or PNG output only",
             where, key, s->modes.nterms, FITS_HEADER_ZMAX);
    return -1;
}

int fits_header_build(const image_set *s, const image_info *info, const image_result *res,
                      fits_kv *kvs, char (*zkeys)[12])
{
    const psf_config *cfg = s->cfg;
    const psf_sampling *sp = &s->samp;
    /* Metres as nm / 1e9, correctly rounded (1e-9 is inexact: 500 nm * 1e-9
     * reads 5.000000000000001E-07); the cube's WAVELEN column alike. */
    double wl_m = info->wavelength_nm / 1e9;
    int n = 0;
    kvs[n++] = kv_d("WAVELEN", image_info_wavelength_nm(info) / 1e9,
                    "wavelength [m] (broadband: weighted mean)");
    kvs[n++] = kv_d("REFWAVE", wl_m, "wavelength of PIXSCLLD and DIFFLMT [m]");
    kvs[n++] = kv_d("DIAM", sp->diameter_m, "aperture circumscribed diameter [m]");
    kvs[n++] = kv_i("NPUPIL", sp->pupil_samples, "pupil samples across DIAM");
    if (s->mft) { /* the output grid's size and pixel; PADDING as an FFT would need it */
        kvs[n++] = kv_i("NPIX", sp->npix, "image size (matrix Fourier transform)");
        kvs[n++] = kv_d("PADDING", info->sampling_q, "sampling Q = (lambda/D) / pixel");
    } else {
        kvs[n++] = kv_i("NPIX", sp->npix, "FFT and image size");
        kvs[n++] = kv_d("PADDING", info->sampling_q, "effective padding Q = NPIX / NPUPIL");
    }
    kvs[n++] = kv_d("PIXSCLLD", info->pixel_lambda_d, "pixel scale [lambda/D]");
    kvs[n++] = kv_d("PIXELSCL", info->pixel_arcsec, "pixel scale [arcsec]");
    if (cfg->f_number > 0) {
        kvs[n++] = kv_d("PIXSCLUM", info->pixel_um, "pixel scale in the focal plane [um]");
        kvs[n++] = kv_d("FNUMBER", cfg->f_number, "focal ratio");
    }
    if (s->mft) kvs[n++] = kv_s("PROPAG", "mft", "focal plane by matrix Fourier transform");
    kvs[n++] = kv_s("NORMALIZ", norm_name(cfg->normalization), "normalisation");
    kvs[n++] = bunit(cfg->normalization);
    n = detector_keys(s, kvs, n);
    if (cfg->normalization == NORM_PUPIL && isfinite(info->captured_fraction))
        kvs[n++] =
            kv_d("EEFIELD", info->captured_fraction, "fraction of the pupil's power in the image");
    kvs[n++] = kv_d("STREHL", res->strehl, "peak / unaberrated peak");
    kvs[n++] = kv_d("AXIALINT", res->axial_intensity, "axis pixel / unaberrated peak");
    kvs[n++] = kv_s("BACKEND", res->backend, "backend that computed the image");
    kvs[n++] = kv_s("ZCONV", conv_name(cfg->zconv), "Zernike index convention");
    kvs[n++] = kv_s("ZUNITS", cfg->zunits == ZUNITS_NM ? "nm" : "waves", "Zernike RMS units");
    if (cfg->orientation == ORIENT_POPPY) { /* turned 180 degrees about the frame's centre */
        kvs[n++] = kv_d("CRPIX1", 0.5 * (sp->npix + 1), "optical axis, 1-based column");
        kvs[n++] = kv_d("CRPIX2", 0.5 * (sp->npix + 1), "optical axis, 1-based row");
        kvs[n++] = kv_s("IMORIENT", "poppy", "POPPY's orientation and centring");
    } else {
        kvs[n++] = kv_i("CRPIX1", sp->npix / 2 + 1, "optical axis, 1-based column");
        kvs[n++] = kv_i("CRPIX2", sp->npix / 2 + 1, "optical axis, 1-based row");
    }
    double fx, fy;
    if (field_grid_position(&s->axes, info->params.index, &fx, &fy)) {
        kvs[n++] = kv_d("FIELDX", fx, "detector position of this PSF, x [pixel]");
        kvs[n++] = kv_d("FIELDY", fy, "detector position of this PSF, y [pixel]");
    }
    if (field_grid_h(&s->axes, info->params.index, &fx, &fy)) { /* the field group's */
        kvs[n++] = kv_d("FIELDHX", fx, "normalised field x: (x - centre_px) / radius_px");
        kvs[n++] = kv_d("FIELDHY", fy, "normalised field y: (y - centre_px) / radius_px");
    }
    n = wcs_keys(info, sp, s->date_utc, s->config_hash, kvs, n);
    n = history_keys(s, kvs, n);
    n = wave_keys(info, kvs, n, zkeys + FITS_HEADER_ZMAX);
    for (int t = 0; t < s->modes.nterms && t < FITS_HEADER_ZMAX && n < FITS_HEADER_MAX; ++t) {
        snprintf(zkeys[t], 12, "Z%d",
                 zernike_nm_to_index(cfg->zconv, s->modes.n[t], s->modes.m[t]));
        kvs[n++] = kv_d(zkeys[t], info->coeff_units[t], "total RMS coefficient [ZUNITS]");
    }
    return n;
}

int fits_header_noise(const psf_config *cfg, long long k, fits_kv *kvs)
{
    const cfg_noise *nz = &cfg->noise;
    int n = 0;
    kvs[n++] = kv_s("EXTNAME", "NOISY", "simulated exposure (detector.noise)");
    kvs[n++] = kv_s("BUNIT", "adu", "analogue-to-digital units");
    kvs[n++] = kv_d("NFLUX", nz->flux_photons, "source e- per unit of the primary image");
    kvs[n++] = kv_d("NBACKGR", nz->background_e, "background [e-/pixel]");
    kvs[n++] = kv_d("NREADN", nz->read_noise_e, "read noise [e- RMS]");
    kvs[n++] = kv_d("NGAIN", nz->gain_e_per_adu, "gain [e-/ADU]");
    kvs[n++] = kv_i("NBITS", nz->bits, "ADC bits: ADU in 0 .. 2^NBITS - 1");
    kvs[n++] = kv_i("NSEED", (long long)nz->seed, "seed of the draws (Philox4x32-10)");
    kvs[n++] = kv_i("NIMAGE", k, "image index of the draws");
    return n;
}
