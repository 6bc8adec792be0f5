/* SPDX-License-Identifier: BSD-3-Clause */
/* Warnings about an image set (app/set/set_checks.h). */
#include "app/set/set_checks.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/set/maps.h"
#include "optics/wavefront.h"

/* "WHERE: key: message" into out, WHERE the key's "FILE:LINE" (the
 * config's path when the key is not written: a default). */
static void vformat_at(const psf_config *cfg, const char *key, char *out, size_t outlen,
                       const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));
static void vformat_at(const psf_config *cfg, const char *key, char *out, size_t outlen,
                       const char *fmt, va_list ap)
{
    char where[CFG_PATH_MAX + 32], msg[1024];
    config_key_where(cfg, key, where, sizeof where);
    vsnprintf(msg, sizeof msg, fmt, ap);
    snprintf(out, outlen, "%.1000s: %.60s: %.1000s", where, key, msg);
}

static void add_note(set_notes *notes, const psf_config *cfg, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_note(set_notes *notes, const psf_config *cfg, const char *key, const char *fmt, ...)
{
    if (notes->n >= SET_NOTES_MAX) return;
    va_list ap;
    va_start(ap, fmt);
    vformat_at(cfg, key, notes->text[notes->n++], SET_NOTE_LEN, fmt, ap);
    va_end(ap);
}

/* 1 when the config writes key (else it has its default). */
static int written(const psf_config *cfg, const char *key)
{
    char where[8];
    return config_key_where(cfg, key, where, sizeof where);
}

static int any_nonzero(const double *v, int n)
{
    for (int i = 0; i < n; ++i)
        if (v[i] != 0.0) return 1;
    return 0;
}

/* The key of the first non-zero Zernike value given in waves (terms,
 * swept defocus, swept terms), or NULL when every one is 0. The focus
 * shift is a length (docs/design.md, "Aberrations"): not counted. */
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

/* 1 when the loaded OPD map's values are nm of OPD, 0 when waves at each
 * wavelength: the one place that says where the map's unit comes from. */
static int opd_in_nm(const image_set *s)
{
    return s->opd_units.units == ZUNITS_NM;
}

/* The wavelengths the set computes: *n of them at *wl (one per image when
 * *listed: sweep.wavelength_nm, sweep.random.wavelength_nm or the table's
 * column; else the optics' for every image), the key that gives them, and
 * their span [*lo, *hi]. */
static const double *set_wavelengths(const image_set *s, long long *n, int *listed,
                                     const char **key, double *lo, double *hi)
{
    const psf_config *cfg = s->cfg;
    const double *wl = axes_image_wavelengths(&s->axes, n);
    *listed = wl != NULL;
    *key = cfg->n_sweep_wavelength > 0    ? "sweep.wavelength_nm"
           : cfg->random.n_wavelength > 0 ? "sweep.random.wavelength_nm"
           : wl                           ? "sweep.table"
                                          : "optics.wavelengths_nm";
    if (!wl) {
        wl = cfg->wavelengths_nm;
        *n = cfg->nwavelengths;
    }
    *lo = HUGE_VAL;
    *hi = -HUGE_VAL;
    for (long long i = 0; i < *n; ++i) {
        *lo = fmin(*lo, wl[i]);
        *hi = fmax(*hi, wl[i]);
    }
    return wl;
}

/* Aberrations in waves over a set of several wavelengths (set_checks.h). */
static void check_units(const image_set *s, set_notes *notes)
{
    const psf_config *cfg = s->cfg;
    const char *span;
    long long nwl;
    int listed;
    double lo, hi;
    set_wavelengths(s, &nwl, &listed, &span, &lo, &hi);
    if (!(hi > lo)) return; /* one wavelength: waves and nm are one scale apart */
    const char *key = cfg->zunits == ZUNITS_WAVES ? waves_key(cfg) : NULL;
    if (key)
        add_note(notes, cfg, key,
                 "coefficients in waves (aberrations.units = \"waves\") keep the same phase at "
                 "every wavelength of %s (%lld, %.6g-%.6g nm), so the optical path they describe "
                 "changes with the wavelength; for one wavefront seen at every wavelength give "
                 "them in nm (aberrations.units = \"nm\")",
                 span, nwl, lo, hi);
    if (s->opd_map && !opd_in_nm(s) && cfg->opd_scale != 0.0)
        add_note(notes, cfg, "aberrations.opd_map.units",
                 "an OPD map in waves keeps the same phase at every wavelength of %s (%lld, "
                 "%.6g-%.6g nm), so the optical path it describes changes with the wavelength; "
                 "for one wavefront give it in nm (units = \"nm\")",
                 span, nwl, lo, hi);
}

double set_checks_zernike_max_gradient(int n, int m)
{
    int am = m < 0 ? -m : m;
    double norm = m == 0 ? sqrt(n + 1.0) : sqrt(2.0 * (n + 1.0));
    return norm * 0.5 * ((double)n * (n + 2) - (double)am * am);
}

static double largest_abs(const double *v, int n)
{
    double big = 0.0;
    for (int i = 0; i < n; ++i)
        big = fmax(big, fabs(v[i]));
    return big;
}

/* The largest |value| of the table's part of mode (n, m): a column's
 * largest cell (the draws are bounded per draw: largest_drawn). */
static double largest_listed(const set_axes *ax, int n, int m)
{
    double a = 0.0;
    for (int i = 0; i < ax->nzcols; ++i)
        if (ax->zcols[i].n == n && ax->zcols[i].m == m)
            a += largest_abs(ax->table->cols[ax->zcols[i].col], (int)ax->nrows);
    if (n == 2 && m == 0 && ax->col_defocus >= 0)
        a += largest_abs(ax->table->cols[ax->col_defocus], (int)ax->nrows);
    return a;
}

/* Draws a set's worth of draws may take to bound the step from the draws
 * made (about 50 ns each, a second at most); past it the bound per term of largest_drawn's
 * fallback. */
#define SET_CHECKS_MAX_DRAWS 20000000LL

/* max over the draws d of sum_t G_t |x_t(d)|, x_t(d) the value drawn for
 * random term t in draw d (app/set/draws.h: counter-based, so each is
 * recomputed, not stored), in the config's units: the draws' part of the
 * step bound, from the values the set will use. The triangle inequality
 * over the modes within one draw is the only slack left; the earlier bound
 * took 5 sigma of every term at once (4x pessimistic for a spectrum). A
 * set of more than SET_CHECKS_MAX_DRAWS values falls back to that, which
 * *fallback says. */
static double largest_drawn(const set_axes *ax, int *fallback)
{
    const cfg_random *r = &ax->cfg->random;
    *fallback = 0;
    if (ax->nrandom == 0 || r->count <= 0) return 0.0;
    double *g = malloc((size_t)ax->nrandom * sizeof *g);
    if (!g || r->count > SET_CHECKS_MAX_DRAWS / ax->nrandom) {
        *fallback = 1;
        double a = 0.0;
        for (int i = 0; i < ax->nrandom; ++i)
            a += set_checks_zernike_max_gradient(ax->random[i].n, ax->random[i].m) *
                 (ax->random[i].dist == DRAW_NORMAL ? 5.0 : 1.0) * ax->random[i].width;
        free(g);
        return a;
    }
    for (int i = 0; i < ax->nrandom; ++i)
        g[i] = set_checks_zernike_max_gradient(ax->random[i].n, ax->random[i].m);
    double worst = 0.0;
    for (long long d = 0; d < r->count; ++d) {
        double sum = 0.0;
        for (int i = 0; i < ax->nrandom; ++i) {
            const axes_random_term *t = &ax->random[i];
            if (t->width == 0.0) continue;
            sum += g[i] * fabs(draw_zernike(r->seed, (uint64_t)d, t->j, t->dist, t->width));
        }
        worst = fmax(worst, sum);
    }
    free(g);
    return worst;
}

/* The largest |focus shift| of the set, um. */
static double largest_focus_shift(const image_set *s)
{
    const psf_config *cfg = s->cfg;
    const set_axes *ax = &s->axes;
    double a = largest_abs(cfg->sweep_focus_shift_um, cfg->n_sweep_focus_shift);
    a = fmax(a, largest_abs(cfg->random.focus_shift_um, cfg->random.n_focus_shift));
    if (ax->col_focus_shift >= 0)
        a = fmax(a, largest_abs(ax->table->cols[ax->col_focus_shift], (int)ax->nrows));
    return a;
}

/* The largest |total| of mode (n, m) over the set's images, in the
 * config's units: its term plus the largest |value| of each swept list
 * that adds to it (the triangle inequality over the sweep's product). */
static double largest_coefficient(const image_set *s, int n, int m)
{
    const psf_config *cfg = s->cfg;
    double a = largest_listed(&s->axes, n, m);
    for (int i = 0; i < cfg->nzernike; ++i)
        if (cfg->zernike[i].n == n && cfg->zernike[i].m == m) a += fabs(cfg->zernike[i].coeff);
    for (int i = 0; i < cfg->n_sweep_zernike; ++i) {
        const cfg_zernike_sweep *z = &cfg->sweep_zernike[i];
        if (z->n == n && z->m == m) a += largest_abs(z->values, z->nvalues);
    }
    if (n == 2 && m == 0) a += largest_abs(cfg->sweep_defocus, cfg->n_sweep_defocus);
    return a;
}

/* The OPD map's largest step between neighbouring map pixels per metre,
 * in the map's units: the bilinear resampling is Lipschitz with it, so a
 * pupil step of dx changes the OPD by at most this times dx. */
static double opd_slope(const image_set *s)
{
    double gx = 0.0, gy = 0.0, d = s->samp.diameter_m;
    int rows = s->opd_rows, cols = s->opd_cols;
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) {
            const float *p = s->opd_map + (size_t)i * cols + j;
            if (j + 1 < cols) gx = fmax(gx, fabs((double)p[1] - p[0]));
            if (i + 1 < rows) gy = fmax(gy, fabs((double)p[cols] - p[0]));
        }
    return fmax(gx * cols / d, gy * rows / d);
}

/* An upper bound of the wavefront step (waves) between neighbouring pupil
 * samples over every image and wavelength of the set (set_checks.h):
 * step <= (2 dx_c / D) sum_t G_t A_t + slope_opd dx_c, each term in waves
 * at the component's wavelength lambda (nm / lambda), dx_c its pitch. */
static double largest_step(const image_set *s, int *fallback)
{
    const psf_config *cfg = s->cfg;
    const psf_modeset *ms = &s->modes;
    double zw = 0.0, znm = 0.0; /* sum_t G_t A_t: in waves, in nm */
    double drawn = largest_drawn(&s->axes, fallback);
    if (cfg->zunits == ZUNITS_NM)
        znm += drawn;
    else
        zw += drawn;
    for (int t = 0; t < ms->nterms; ++t) {
        double g = set_checks_zernike_max_gradient(ms->n[t], ms->m[t]);
        double a = largest_coefficient(s, ms->n[t], ms->m[t]);
        if (cfg->zunits == ZUNITS_NM)
            znm += g * a;
        else
            zw += g * a;
        double fs = largest_focus_shift(s);
        if (ms->n[t] == 2 && ms->m[t] == 0 && fs > 0) /* a length */
            znm += g * 1e3 * fabs(wavefront_focus_shift_to_z4_um(fs, cfg->f_number));
    }
    double slope = s->opd_map ? opd_slope(s) : 0.0;
    long long nwl;
    int swept;
    const char *key;
    double wl_ref, wl_hi, worst = 0.0;
    const double *wl = set_wavelengths(s, &nwl, &swept, &key, &wl_ref, &wl_hi);
    for (long long c = 0; c < nwl; ++c) { /* each pitch as image_set_job gives it */
        double dx = s->samp.dx_m * (swept || s->mft ? 1.0 : wl[c] / wl_ref);
        double opd = opd_in_nm(s) ? slope / wl[c] : slope;
        double step = 2.0 * dx / s->samp.diameter_m * (zw + znm / wl[c]) + opd * dx;
        worst = fmax(worst, step);
    }
    return worst;
}

static int largest_prime_factor(int n)
{
    int p = 1;
    for (int f = 2; (long long)f * f <= n; ++f)
        for (; n % f == 0; n /= f)
            p = f;
    return n > 1 ? n : p;
}

/* Sampling: the phase between pupil samples, the intensity's sampling
 * (Q), the FFT size (set_checks.h). */
static void check_sampling(const image_set *s, set_notes *notes)
{
    const psf_config *cfg = s->cfg;
    int n = s->samp.pupil_samples, big = s->fft_npix;
    int fallback = 0;
    double step = largest_step(s, &fallback);
    if (step > 0.5)
        add_note(notes, cfg, "sampling.pupil_samples",
                 "the wavefront may step by up to %.3g waves between neighbouring pupil samples "
                 "(a bound from the set's largest coefficients%s%s), more than half a wave: the "
                 "pupil phase is undersampled and the PSF wraps around the field; pupil_samples "
                 ">= %.0f keeps the steps within half a wave",
                 step, s->cfg->random.count > 0 && !fallback ? " and the values drawn" : "",
                 s->opd_map ? " and its OPD map" : "", ceil(n * step / 0.5));
    const char *qkey =
        written(cfg, "sampling.padding") ? "sampling.padding" : "sampling.pupil_samples";
    double q = (double)big / n; /* the FFT's Q (samp.padding, or s times it: set_detector.h) */
    if (!s->mft && q < 2.0)
        add_note(notes, cfg, qkey,
                 "Q = N/n = %d/%d = %.4g < 2: the intensity is undersampled (its spectrum, the "
                 "pupil's autocorrelation, is 2n samples wide) and aliases; padding >= 2 samples "
                 "it fully",
                 big, n, q);
    if (s->mft) { /* the pixel in lambda/D at the set's shortest wavelength */
        double wl_lo, wl_hi;
        long long nwl;
        int listed;
        const char *wkey;
        set_wavelengths(s, &nwl, &listed, &wkey, &wl_lo, &wl_hi);
        double ld = s->pixel_rad > 0  ? s->pixel_rad * s->samp.diameter_m / (wl_lo * 1e-9)
                    : s->pixel_um > 0 ? s->pixel_um * 1e3 / (cfg->f_number * wl_lo)
                                      : s->pixel_ld;
        ld /= s->calc_div > 1 ? s->calc_div : 1; /* the computed grid's (set_detector.h) */
        const char *key = s->pixel_rad > 0           ? "output.pixel_scale_arcsec"
                          : s->pixel_um > 0          ? "output.pixel_scale_um"
                          : cfg->out_pixel_scale > 0 ? "output.pixel_scale"
                                                     : qkey;
        if (ld > 0.5)
            add_note(notes, cfg, key,
                     "the MFT's pixel is %.4g lambda/D at %.6g nm, the shortest wavelength, "
                     "coarser than lambda/(2D) (Q = %.4g < 2): the intensity is undersampled",
                     ld, wl_lo, 1.0 / ld);
        /* A pupil of n samples across D has a transform of period n lambda/D:
         * a wider field holds its aliased copies (DFT periodicity). */
        double field = ld * s->calc_npix;
        if (field > n * (1.0 + 1e-9))
            add_note(notes, cfg, "sampling.pupil_samples",
                     "the MFT's field is %.4g lambda/D wide at %.6g nm, wider than the sampled "
                     "pupil's period n lambda/D = %d lambda/D: the image holds the PSF's "
                     "aliased copies, its wings wrap in, and it can hold more light than the "
                     "pupil passes (the captured fraction above 1); pupil_samples >= %.0f makes "
                     "the period cover the field",
                     field, wl_lo, n, ceil(field));
    }
    int p = largest_prime_factor(big);
    if (!s->mft && p > 7) {
        int next = big + 1;
        while (!sampling_is_fast_size(next))
            ++next;
        add_note(notes, cfg, qkey,
                 "the FFT size N = %d has the prime factor %d (above 7): its FFTs are slow; "
                 "N = %d is the next size of factors 2, 3, 5 and 7",
                 big, p, next);
    }
}

void set_checks_warn(const image_set *s, set_notes *notes)
{
    memset(notes, 0, sizeof *notes);
    check_units(s, notes);
    check_sampling(s, notes);
}

/* "FILE:LINE: key: " + message into err; returns -1. */
static int map_fail(const psf_config *cfg, const char *key, char *err, size_t errlen,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int map_fail(const psf_config *cfg, const char *key, char *err, size_t errlen,
                    const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vformat_at(cfg, key, err, errlen, fmt, ap);
    va_end(ap);
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
    long long nwl;
    int listed;
    const char *wkey;
    set_wavelengths(s, &nwl, &listed, &wkey, &wl_lo, &wl_hi);
    int nm = opd_in_nm(s);
    if (big <= (nm ? CFG_MAX_WAVES * wl_lo : CFG_MAX_WAVES)) return 0;
    const char *key = written(cfg, "aberrations.opd_map.scale") ? "aberrations.opd_map.scale"
                                                                : "aberrations.opd_map.file";
    return map_fail(cfg, key, err, errlen,
                    "%s: the OPD reaches %g %s at row %zu, column %zu (the map's value times "
                    "scale %g), more than %g waves at %g nm, the shortest wavelength",
                    maps_name(cfg->opd_file, &cfg->opd_array), big, nm ? "nm" : "waves",
                    at / (size_t)s->opd_cols, at % (size_t)s->opd_cols, cfg->opd_scale,
                    CFG_MAX_WAVES, wl_lo);
}

/* 1 when every value of the rows x cols map is 0 (the readers have made
 * NaN and BLANK pixels 0 already). */
static int all_zero(const float *map, int rows, int cols)
{
    for (size_t i = 0; i < (size_t)rows * cols; ++i)
        if (map[i] != 0.0f) return 0;
    return 1;
}

int set_checks_maps(const image_set *s, char *err, size_t errlen)
{
    const psf_config *cfg = s->cfg;
    if (s->aperture_map && all_zero(s->aperture_map, s->map_rows, s->map_cols))
        return map_fail(cfg, "optics.aperture.file", err, errlen,
                        "%s: every transmission of the map is 0 (NaN and BLANK pixels read as "
                        "0): the aperture is closed",
                        maps_name(cfg->aperture_file, &cfg->aperture_array));
    if (s->opd_map && all_zero(s->opd_map, s->opd_rows, s->opd_cols)) {
        int zero_scale = cfg->opd_scale == 0.0 && written(cfg, "aberrations.opd_map.scale");
        return map_fail(cfg, zero_scale ? "aberrations.opd_map.scale" : "aberrations.opd_map.file",
                        err, errlen,
                        "%s: every OPD value of the map is 0 (NaN and BLANK pixels read as 0; "
                        "times scale %g): a map that adds nothing is a wrong file or scale",
                        maps_name(cfg->opd_file, &cfg->opd_array), cfg->opd_scale);
    }
    if (s->opd_map && check_opd_bound(s, err, errlen)) return -1;
    return 0;
}
