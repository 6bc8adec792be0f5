/* SPDX-License-Identifier: BSD-3-Clause */
/* Grey levels of an image for the 8/16-bit outputs (PNG, output.hdf5 dtype
 * uint16), and the measures the app takes of the image, per pixel and per
 * image, shared by the CPU backend and the CUDA kernel (PSF_HD), so that a
 * backend can hand over levels (2 bytes a pixel) instead of floats (issue
 * 17). The formula is app/formats/png_io.c's psf_png_stretch_levels, which
 * keeps its own vectorised per-stretch loops (its optimize attribute would
 * keep these functions from inlining there); tests/app/formats check that
 * both give the same levels for every case below.
 *
 * With peak the image's maximum over its non-NaN pixels (a float, taken as
 * a double), v = I / peak clipped to [0, 1] (NaN and values <= 0: 0);
 * linear: t = v; sqrt: t = sqrt(v); log: t = 1 + ln v / ln dr (= (log10 v +
 * log10 dr) / log10 dr) for v >= 0.5 / dr, else 0, and with a dynamic range
 * dr not > 1 (or not finite) t = 1 where v >= 1, else 0; the level is
 * floor(clamp(t, 0, 1) (2^bits - 1) + 0.5). A peak that is not finite or
 * <= 0 gives all levels 0. Products and sums are rounded one by one
 * (PSF_LV_MUL, PSF_LV_ADD: no fused multiply-add on the device, which nvcc
 * would otherwise contract); division and sqrt are IEEE on both sides. The
 * device's log (CUDA, at most 1 ulp from the true value) may differ from
 * glibc's in its last bit, which changes a level only where t (2^bits - 1)
 * + 0.5 lies within that of an integer (tests/gpu/test_gpu_levels.c
 * compares every level). */
#ifndef PSFSIM_BACKEND_LEVELS_H
#define PSFSIM_BACKEND_LEVELS_H

#include <math.h>
#include <stddef.h>

#include "optics/psf_hd.h"

/* Stretches: the values of app/formats/png_io.h's png_stretch. */
enum { PSF_STRETCH_LINEAR = 0, PSF_STRETCH_LOG = 1, PSF_STRETCH_SQRT = 2 };

/* Per-image measures a levels run returns, doubles at these indices of
 * measures[image * PSF_MEASURES]. */
enum {
    PSF_MEASURE_PEAK = 0,  /* the largest non-NaN pixel (a float; -inf when none) */
    PSF_MEASURE_AXIS = 1,  /* pixel (N/2, N/2) of the computed image (before any turn) */
    PSF_MEASURE_TOTAL = 2, /* the sum of the pixels, double accumulation */
    PSF_MEASURE_NAN = 3,   /* how many pixels are NaN */
    PSF_MEASURE_INF = 4,   /* ... infinite (either sign) */
    PSF_MEASURE_NEG = 5,   /* ... negative (-inf included) */
    PSF_MEASURES = 6
};

#ifdef __CUDA_ARCH__
#define PSF_LV_MUL(a, b) __dmul_rn((a), (b))
#define PSF_LV_ADD(a, b) __dadd_rn((a), (b))
#else
#define PSF_LV_MUL(a, b) ((a) * (b))
#define PSF_LV_ADD(a, b) ((a) + (b))
#endif

/* One set's mapping from I / peak to a level. */
typedef struct {
    double maxlev;    /* 2^bits - 1 */
    double inv_ln_dr; /* log: 1 / ln dr, 0 without a range */
    double v_zero;    /* log: below v = 0.5 / dr the level is 0 */
    int stretch;      /* PSF_STRETCH_* */
    int log_ok;       /* dr finite and > 1 */
} psf_levels_map;

/* The mapping for bits (8 or 16; outside 1..16 taken as 16), a stretch and
 * dynamic range dr (log only). */
PSF_HD psf_levels_map psf_levels_map_make(int bits, int stretch, double dr)
{
    psf_levels_map m;
    if (bits < 1 || bits > 16) bits = 16;
    m.maxlev = (double)((1u << bits) - 1u);
    m.stretch = stretch;
    m.log_ok = isfinite(dr) && dr > 1.0;
    m.inv_ln_dr = m.log_ok ? 1.0 / log(dr) : 0.0;
    m.v_zero = m.log_ok ? 0.5 / dr : 0.0;
    return m;
}

/* 1 when peak leaves every level 0 (not finite, or <= 0). */
PSF_HD int psf_levels_blank(double peak)
{
    return !isfinite(peak) || !(peak > 0.0);
}

/* The level of pixel value I in an image of peak peak (not blank). */
PSF_HD unsigned short psf_level_of(const psf_levels_map *m, float I, double peak)
{
    double v = (double)I / peak;
    v = v > 0.0 ? v : 0.0; /* NaN too */
    v = v > 1.0 ? 1.0 : v;
    double t = 0.0;
    if (m->stretch == PSF_STRETCH_SQRT)
        t = v > 0.0 ? sqrt(v) : 0.0;
    else if (m->stretch == PSF_STRETCH_LOG) {
        if (v > 0.0 && v >= m->v_zero)
            t = m->log_ok ? PSF_LV_ADD(1.0, PSF_LV_MUL(log(v), m->inv_ln_dr))
                          : (v >= 1.0 ? 1.0 : 0.0);
    } else
        t = v;
    t = t < 0.0 ? 0.0 : t;
    t = t > 1.0 ? 1.0 : t;
    return (unsigned short)(int)PSF_LV_ADD(PSF_LV_MUL(t, m->maxlev), 0.5);
}

/* The measures of img[n] (n >= 1; axis: the index of pixel (N/2, N/2))
 * into m[PSF_MEASURES], in pixel order (the total as
 * app/set/image_set.c sums it). */
PSF_HD void psf_levels_measure(const float *img, size_t n, size_t axis, double *m)
{
    float peak = -INFINITY;
    double total = 0.0, nan = 0, inf = 0, neg = 0;
    for (size_t i = 0; i < n; ++i) {
        float x = img[i];
        peak = x > peak ? x : peak;
        total += x;
        nan += isnan(x) ? 1 : 0;
        inf += isinf(x) ? 1 : 0;
        neg += x < 0.0f ? 1 : 0;
    }
    m[PSF_MEASURE_PEAK] = peak;
    m[PSF_MEASURE_AXIS] = img[axis];
    m[PSF_MEASURE_TOTAL] = total;
    m[PSF_MEASURE_NAN] = nan;
    m[PSF_MEASURE_INF] = inf;
    m[PSF_MEASURE_NEG] = neg;
}

/* The levels of img[n] of peak peak into out[n], out[n - 1 - i] for pixel i
 * when rotate_180 (output.orientation "poppy": the image turned 180 degrees). */
PSF_HD void psf_levels_image(const psf_levels_map *m, const float *img, size_t n, double peak,
                             int rotate_180, unsigned short *out)
{
    int blank = psf_levels_blank(peak);
    for (size_t i = 0; i < n; ++i)
        out[rotate_180 ? n - 1 - i : i] = blank ? 0 : psf_level_of(m, img[i], peak);
}

#endif
