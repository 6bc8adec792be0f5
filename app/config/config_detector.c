/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector group (docs/config.md, "Detector"): oversampling, the
 * pixel response, Gaussian jitter (milliarcseconds or lambda_ref/D, one
 * sigma or one per axis), charge diffusion, the inter-pixel capacitance
 * kernel, and which images are written. Read after the optics and the
 * output grid; app/set/set_detector.c turns it into the backends'
 * psf_detector. A subgroup (detector.noise, say) adds its reader to
 * cfg_read_detector, one line. */
#include "app/config/config_priv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DET "detector"
/* Sanity bounds (docs/config.md, "Detector"): a diffusion sigma of at most
 * the widest image (1e300 made the transfer function's variance infinite:
 * exit 3 at run time), IPC kernel entries of at most 2 in magnitude (a real
 * kernel's are within about [-0.05, 1]; 1e308 and -1e308 summed to 1). */
#define CFG_MAX_DIFFUSION_PX ((double)CFG_MAX_FFT_SIZE)
#define CFG_MAX_IPC 2.0
/* Jitter sigmas: a turn of the sky (1.296e9 mas) and 1e9 lambda/D, so that
 * the sigma in pixels of the finest pixel psfsim takes (1e-6 lambda/D) has
 * a finite square (1e300 gave NaN images, exit 3). */
#define CFG_MAX_JITTER_MAS 1.296e9
#define CFG_MAX_JITTER_LD 1e9

/* key = sigma (both axes) or [sx, sy]: each finite and in [0, hi] (why:
 * the bound's reason). Returns 1 when given, 0 when absent, -1 with a
 * message. */
static int read_sigma_pair(cfg_ctx *c, const char *key, double hi, const char *why, double out[2])
{
    const config_setting_t *s = cfg_get(c, key);
    if (!s) return 0;
    if (cfg_is_number(s)) {
        if (cfg_read_float(c, key, 0.0, 0, &out[0]) < 0 ||
            cfg_check_bounds(c, s, key, NULL, out[0], 0.0, hi, why))
            return -1;
        out[1] = out[0];
        return 1;
    }
    if (config_setting_length(s) != 2)
        return cfg_error(c, s, key, "must be one sigma or two, [x, y] (got %d values)",
                         config_setting_length(s));
    for (int i = 0; i < 2; ++i) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        double v = cfg_number(e);
        char k[64], got[64];
        snprintf(k, sizeof k, "%s[%d]", key, i);
        cfg_fmt_double(v, got, sizeof got);
        if (!isfinite(v) || v < 0.0)
            return cfg_error(c, e, k, "must be finite and >= 0 (got %s)", got);
        if (cfg_check_bounds(c, e, k, NULL, v, 0.0, hi, why)) return -1;
        out[i] = v;
    }
    return 1;
}

/* jitter_mas or jitter_lambda_d, not both. */
static int read_jitter(cfg_ctx *c, cfg_detector *d)
{
    int a = read_sigma_pair(c, DET ".jitter_mas", CFG_MAX_JITTER_MAS, "a turn of the sky",
                            d->jitter_mas);
    if (a < 0) return -1;
    int b = read_sigma_pair(c, DET ".jitter_lambda_d", CFG_MAX_JITTER_LD,
                            "a sanity bound: the variance in pixels stays finite", d->jitter_ld);
    if (b < 0) return -1;
    if (a == 1 && b == 1)
        return cfg_error(c, cfg_get(c, DET ".jitter_lambda_d"), DET ".jitter_lambda_d",
                         "give only one of " DET ".jitter_mas and " DET ".jitter_lambda_d");
    return 0;
}

/* ipc = [9 values]: the 3x3 kernel row-major, each within +-CFG_MAX_IPC,
 * summing to 1 (the charge is moved, not made: within 1e-6). */
static int read_ipc(cfg_ctx *c, cfg_detector *d)
{
    const char *key = DET ".ipc";
    const config_setting_t *s = cfg_get(c, key);
    if (!s) return 0;
    int n = config_setting_length(s);
    if (n != 9)
        return cfg_error(c, s, key, "must be the 3x3 kernel, 9 values row-major (got %d)", n);
    double sum = 0.0;
    for (int i = 0; i < 9; ++i) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        char k[64];
        snprintf(k, sizeof k, "%s[%d]", key, i);
        d->ipc_kernel[i] = cfg_number(e);
        if (cfg_check_bounds(c, e, k, NULL, d->ipc_kernel[i], -CFG_MAX_IPC, CFG_MAX_IPC,
                             "a kernel that moves charge; beyond it the sum's rounding hides "
                             "the charge made and the transfer function overflows"))
            return -1;
        sum += d->ipc_kernel[i];
    }
    if (!isfinite(sum) || fabs(sum - 1.0) > 1e-6) {
        char got[64];
        cfg_fmt_double(sum, got, sizeof got);
        return cfg_error(c, s, key,
                         "must sum to 1 within 1e-6: it moves charge, it makes none "
                         "(got %s)",
                         got);
    }
    d->ipc = 1;
    return 0;
}

/* write = "both" is two images per image: each image's FITS file holds the
 * two as HDUs, NAME.h5 the two as datasets (images, oversampled); a cube
 * plane and the NOISY extension hold one image, so those are refused
 * rather than given one of the two silently. */
static int check_both(cfg_ctx *c, const psf_config *cfg)
{
    const char *why = NULL;
    if (cfg->fits_enabled && cfg->fits_cube)
        why = "is not for output.fits.cube (a plane holds one image): give \"detector\" or "
              "\"oversampled\"";
    else if (!cfg->fits_enabled && !cfg->hdf5_enabled)
        why = "needs output.fits.enabled = true (its two images are FITS HDUs) or "
              "output.hdf5.enabled = true (two datasets)";
    else if (cfg->noise.enabled)
        why = "is not for detector.noise (its NOISY extension is one image's): give "
              "\"detector\" or \"oversampled\"";
    if (!why) return 0;
    return cfg_error(c, cfg_get(c, DET ".write"), DET ".write", "\"both\" %s", why);
}

int cfg_read_detector(cfg_ctx *c, psf_config *cfg)
{
    static const char *const writes[] = {"detector", "oversampled", "both"};
    cfg_detector *d = &cfg->detector;
    memset(d, 0, sizeof *d);
    d->oversample = 1;
    if (!cfg_get(c, DET)) return 0;
    d->enabled = 1;
    long long s = 1;
    if (cfg_read_int(c, DET ".oversample", 1, CFG_MAX_OVERSAMPLE, &s) < 0) return -1;
    d->oversample = (int)s;
    d->pixel_response = s > 1;
    if (cfg_read_bool(c, DET ".pixel_response", &d->pixel_response) < 0) return -1;
    if (read_jitter(c, d)) return -1;
    if (cfg_read_float(c, DET ".charge_diffusion_px", 0.0, 0, &d->diffusion_px) < 0 ||
        cfg_bound_key(c, DET ".charge_diffusion_px", d->diffusion_px, 0.0, CFG_MAX_DIFFUSION_PX,
                      "the widest image, 65536 pixels: a wider Gaussian only flattens it, and "
                      "its variance stays finite"))
        return -1;
    if (read_ipc(c, d)) return -1;
    int w = 0;
    if (cfg_read_enum(c, DET ".write", writes, 3, 0, &w) < 0) return -1;
    d->write = (det_write)w; /* same order as det_write */
    return d->write == DET_WRITE_BOTH ? check_both(c, cfg) : 0;
}
