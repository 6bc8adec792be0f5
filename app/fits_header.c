#include "app/fits_header.h"

#include <stdio.h>

#include "app/config/config.h"

static const char *conv_name(zernike_convention c)
{
    return c == ZCONV_ANSI ? "ansi" : c == ZCONV_FRINGE ? "fringe" : "noll";
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
    double wl_m = info->wavelength_nm * 1e-9;
    int n = 0;
    kvs[n++] = kv_d("WAVELEN", wl_m, "wavelength [m] (broadband: the shortest)");
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
    kvs[n++] = kv_s("NORMALIZ", cfg->normalization == NORM_SUM ? "sum" : "peak", "normalisation");
    kvs[n++] = kv_d("STREHL", res->strehl, "peak / unaberrated peak");
    kvs[n++] = kv_d("AXIALINT", res->axial_intensity, "axis pixel / unaberrated peak");
    kvs[n++] = kv_s("BACKEND", res->backend, "backend that computed the image");
    kvs[n++] = kv_s("ZCONV", conv_name(cfg->zconv), "Zernike index convention");
    kvs[n++] = kv_s("ZUNITS", cfg->zunits == ZUNITS_NM ? "nm" : "waves", "Zernike RMS units");
    kvs[n++] = kv_i("CRPIX1", sp->npix / 2 + 1, "optical axis, 1-based column");
    kvs[n++] = kv_i("CRPIX2", sp->npix / 2 + 1, "optical axis, 1-based row");
    for (int t = 0; t < s->modes.nterms && n < FITS_HEADER_MAX; ++t) {
        snprintf(zkeys[t], 12, "Z%d",
                 zernike_nm_to_index(cfg->zconv, s->modes.n[t], s->modes.m[t]));
        kvs[n++] = kv_d(zkeys[t], info->coeff_units[t], "total RMS coefficient [ZUNITS]");
    }
    return n;
}
