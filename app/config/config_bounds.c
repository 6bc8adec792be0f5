/* SPDX-License-Identifier: BSD-3-Clause */
/* Upper and lower bounds of the config's numbers, where the computation
 * means something (config_priv.h; docs/config.md lists each key's range). */
#include "app/config/config_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "optics/wavefront.h"

int cfg_check_bounds(cfg_ctx *c, const config_setting_t *s, const char *key, const char *what,
                     double v, double lo, double hi, const char *why)
{
    if (v >= lo && v <= hi) return 0;
    char got[64], bound[160], a[64], b[64];
    cfg_fmt_double(v, got, sizeof got);
    cfg_fmt_double(lo, a, sizeof a);
    cfg_fmt_double(hi, b, sizeof b);
    if (lo == -hi)
        snprintf(bound, sizeof bound, "in [%s, %s]", a, b);
    else
        snprintf(bound, sizeof bound, "%s %s", v < lo ? ">=" : "<=", v < lo ? a : b);
    return cfg_error(c, s, key, "%s%smust be %s%s%s%s (got %s)", what ? what : "", what ? " " : "",
                     bound, why ? " (" : "", why ? why : "", why ? ")" : "", got);
}

int cfg_bound_key(cfg_ctx *c, const char *path, double v, double lo, double hi, const char *why)
{
    const config_setting_t *s = cfg_get(c, path);
    return s ? cfg_check_bounds(c, s, path, NULL, v, lo, hi, why) : 0;
}

int cfg_bound_list(cfg_ctx *c, const char *path, const double *v, int n, double lo, double hi,
                   const char *why)
{
    const config_setting_t *s = cfg_get(c, path);
    for (int i = 0; s && i < n; ++i) {
        char key[256];
        snprintf(key, sizeof key, "%s[%d]", path, i);
        if (cfg_check_bounds(c, config_setting_get_elem(s, (unsigned)i), key, NULL, v[i], lo, hi,
                             why))
            return -1;
    }
    return 0;
}

double cfg_round_bound(double x)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.6g", x);
    return strtod(buf, NULL);
}

void config_wavelength_span(const psf_config *cfg, double *lo, double *hi)
{
    const double *wl = cfg->n_sweep_wavelength > 0 ? cfg->sweep_wavelength_nm : cfg->wavelengths_nm;
    int n = cfg->n_sweep_wavelength > 0 ? cfg->n_sweep_wavelength : cfg->nwavelengths;
    if (cfg->random.n_wavelength > 0) { /* sweep.random.wavelength_nm: one per draw */
        wl = cfg->random.wavelength_nm;
        n = cfg->random.n_wavelength;
    }
    *lo = HUGE_VAL;
    *hi = -HUGE_VAL;
    for (int i = 0; i < n; ++i) {
        *lo = fmin(*lo, wl[i]);
        *hi = fmax(*hi, wl[i]);
    }
}

void cfg_pixel_bound_why(char *why, size_t whylen, int above, double half, double wl_nm,
                         const char *via)
{
    char wl[64];
    cfg_fmt_double(wl_nm, wl, sizeof wl);
    if (above)
        snprintf(why, whylen,
                 "pupil_samples / 2 = %g lambda/D at %s nm, the shortest wavelength, %s: half a "
                 "period of the sampled pupil's transform",
                 half, wl, via);
    else
        snprintf(why, whylen, "%g lambda/D at %s nm, the longest wavelength, %s", CFG_MIN_PIXEL_LD,
                 wl, via);
}

int cfg_bound_pixel_arcsec(cfg_ctx *c, const psf_config *cfg)
{
    double wl_lo, wl_hi, d = cfg->aperture.diameter_m, half = 0.5 * cfg->pupil_samples;
    double p = cfg->out_pixel_scale_arcsec, arcsec_per_rad = 180.0 * 3600.0 / M_PI;
    config_wavelength_span(cfg, &wl_lo, &wl_hi);
    double lo = cfg_round_bound(CFG_MIN_PIXEL_LD * wl_hi * 1e-9 / d * arcsec_per_rad);
    double hi = cfg_round_bound(half * wl_lo * 1e-9 / d * arcsec_per_rad);
    char why[320], ds[64], via[96];
    cfg_fmt_double(d, ds, sizeof ds);
    snprintf(via, sizeof via, "with D = %s m", ds);
    cfg_pixel_bound_why(why, sizeof why, p > hi, half, p > hi ? wl_lo : wl_hi, via);
    return cfg_bound_key(c, "output.pixel_scale_arcsec", p, lo, hi, why);
}

/* wl_lo_nm, or CFG_MIN_WAVELENGTH_NM when the set's are not known yet. */
static double shortest(double wl_lo_nm)
{
    return isfinite(wl_lo_nm) && wl_lo_nm > 0 ? wl_lo_nm : CFG_MIN_WAVELENGTH_NM;
}

double config_coeff_limit(const psf_config *cfg, double wl_lo_nm, char *why, size_t whylen)
{
    if (cfg->zunits != ZUNITS_NM) {
        snprintf(why, whylen, "waves RMS");
        return CFG_MAX_WAVES;
    }
    char wl[64];
    double lo = shortest(wl_lo_nm);
    cfg_fmt_double(lo, wl, sizeof wl);
    snprintf(why, whylen, "%g waves RMS at %s nm, the shortest wavelength", CFG_MAX_WAVES, wl);
    return cfg_round_bound(CFG_MAX_WAVES * lo);
}

double config_focus_shift_limit(const psf_config *cfg, double wl_lo_nm, char *why, size_t whylen)
{
    /* The defocus is linear in dz: the dz of CFG_MAX_WAVES at wl_lo. */
    double lo = shortest(wl_lo_nm);
    char wl[64], fs[64];
    cfg_fmt_double(lo, wl, sizeof wl);
    cfg_fmt_double(cfg->f_number, fs, sizeof fs);
    snprintf(why, whylen,
             "a defocus of %g waves RMS at %s nm, the shortest wavelength, through f_number %s",
             CFG_MAX_WAVES, wl, fs);
    return cfg_round_bound(CFG_MAX_WAVES * lo * 1e-3 /
                           wavefront_focus_shift_to_z4_um(1.0, cfg->f_number));
}
