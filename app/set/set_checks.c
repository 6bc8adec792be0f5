/* Warnings about an image set (app/set/set_checks.h). */
#include "app/set/set_checks.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Add "WHERE: key: message" to notes, WHERE the key's "FILE:LINE" (the
 * config's path when the key is not written: a default). */
static void add_note(set_notes *notes, const psf_config *cfg, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_note(set_notes *notes, const psf_config *cfg, const char *key, const char *fmt, ...)
{
    if (notes->n >= SET_NOTES_MAX) return;
    char where[CFG_PATH_MAX + 32], msg[400];
    config_key_where(cfg, key, where, sizeof where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(notes->text[notes->n++], SET_NOTE_LEN, "%.200s: %.40s: %.380s", where, key, msg);
}

static int any_nonzero(const double *v, int n)
{
    for (int i = 0; i < n; ++i)
        if (v[i] != 0.0) return 1;
    return 0;
}

/* The key of the first non-zero Zernike value given in waves (terms,
 * swept defocus, swept terms), or NULL when every one is 0. The focus
 * shift is a length (design.md, "Aberrations"): not counted. */
static const char *waves_key(const psf_config *cfg)
{
    for (int i = 0; i < cfg->nzernike; ++i)
        if (cfg->zernike[i].coeff != 0.0) return "aberrations.zernike";
    if (any_nonzero(cfg->sweep_defocus, cfg->n_sweep_defocus)) return "sweep.defocus";
    for (int i = 0; i < cfg->n_sweep_zernike; ++i)
        if (any_nonzero(cfg->sweep_zernike[i].values, cfg->sweep_zernike[i].nvalues))
            return "sweep.zernike";
    return NULL;
}

/* Aberrations in waves over a set of several wavelengths (set_checks.h). */
static void check_units(const psf_config *cfg, set_notes *notes)
{
    const char *span = "optics.wavelengths_nm";
    const double *wl = cfg->wavelengths_nm;
    int nwl = cfg->nwavelengths;
    if (cfg->n_sweep_wavelength > 0) {
        span = "sweep.wavelength_nm";
        wl = cfg->sweep_wavelength_nm;
        nwl = cfg->n_sweep_wavelength;
    }
    double lo = wl[0], hi = wl[0];
    for (int i = 1; i < nwl; ++i) {
        lo = fmin(lo, wl[i]);
        hi = fmax(hi, wl[i]);
    }
    if (!(hi > lo)) return; /* one wavelength: waves and nm are one scale apart */
    const char *key = cfg->zunits == ZUNITS_WAVES ? waves_key(cfg) : NULL;
    if (key)
        add_note(notes, cfg, key,
                 "coefficients in waves (aberrations.units = \"waves\") keep the same phase at "
                 "every wavelength of %s (%d, %.6g-%.6g nm), so the optical path they describe "
                 "changes with the wavelength; for one wavefront seen at every wavelength give "
                 "them in nm (aberrations.units = \"nm\")",
                 span, nwl, lo, hi);
    if (cfg->opd_file[0] && cfg->opd_units == ZUNITS_WAVES && cfg->opd_scale != 0.0)
        add_note(notes, cfg, "aberrations.opd_map.units",
                 "an OPD map in waves keeps the same phase at every wavelength of %s (%d, "
                 "%.6g-%.6g nm), so the optical path it describes changes with the wavelength; "
                 "for one wavefront give it in nm (units = \"nm\")",
                 span, nwl, lo, hi);
}

void set_checks_warn(const image_set *s, set_notes *notes)
{
    memset(notes, 0, sizeof *notes);
    check_units(s->cfg, notes);
}
