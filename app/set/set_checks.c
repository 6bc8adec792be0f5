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
    int swept = cfg->n_sweep_wavelength > 0;
    const char *span = swept ? "sweep.wavelength_nm" : "optics.wavelengths_nm";
    int nwl = swept ? cfg->n_sweep_wavelength : cfg->nwavelengths;
    double lo, hi;
    config_wavelength_span(cfg, &lo, &hi);
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

/* "FILE:LINE: key: " + message into err; returns -1. */
static int map_fail(const psf_config *cfg, const char *key, char *err, size_t errlen,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int map_fail(const psf_config *cfg, const char *key, char *err, size_t errlen,
                    const char *fmt, ...)
{
    char where[CFG_PATH_MAX + 32], msg[1024];
    config_key_where(cfg, key, where, sizeof where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "%.1000s: %s: %.1000s", where, key, msg);
    return -1;
}

/* The OPD map's largest |value| within CFG_MAX_WAVES waves at the set's
 * shortest wavelength, as the Zernike terms are (config.h). */
static int check_opd_bound(const image_set *s, char *err, size_t errlen)
{
    const psf_config *cfg = s->cfg;
    size_t n = (size_t)s->opd_rows * s->opd_cols, at = 0;
    double big = 0.0;
    for (size_t i = 0; i < n; ++i)
        if (fabs(s->opd_map[i]) > big) big = fabs(s->opd_map[at = i]);
    double wl_lo, wl_hi;
    config_wavelength_span(cfg, &wl_lo, &wl_hi);
    int nm = cfg->opd_units == ZUNITS_NM;
    if (big <= (nm ? CFG_MAX_WAVES * wl_lo : CFG_MAX_WAVES)) return 0;
    char tmp[8];
    const char *key = config_key_where(cfg, "aberrations.opd_map.scale", tmp, sizeof tmp)
                          ? "aberrations.opd_map.scale"
                          : "aberrations.opd_map.file";
    return map_fail(cfg, key, err, errlen,
                    "%s: the OPD reaches %g %s at row %zu, column %zu (the map's value times "
                    "scale %g), more than %g waves at %g nm, the shortest wavelength",
                    cfg->opd_file, big, nm ? "nm" : "waves", at / (size_t)s->opd_cols,
                    at % (size_t)s->opd_cols, cfg->opd_scale, CFG_MAX_WAVES, wl_lo);
}

int set_checks_maps(const image_set *s, char *err, size_t errlen)
{
    if (s->opd_map && check_opd_bound(s, err, errlen)) return -1;
    return 0;
}
