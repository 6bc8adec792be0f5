/* SPDX-License-Identifier: BSD-3-Clause */
/* psf_png_stretch_levels (png_io.h): intensities to grey levels, the
 * levels bit for bit those of the first code (v = I / peak, a log per pixel,
 * t * maxlev + 0.5 truncated), which exact_levels below computes.
 * The linear and log stretches (the log with dynamic_range >= 2) take a
 * faster route by blocks of 256 (png_stretch_fast.c): v ~ I * (1 / peak)
 * (no division: at 256^2 the linear stretch took 172 -> 48 us, the log
 * 286 -> 98 us, bench/RESULTS.md), the log by
 * glibc's vector log (libmvec, at most 4 ulp: glibc manual, "Known Maximum
 * Errors in Math Functions"); a block in which some pixel's x = t * maxlev
 * + 0.5 lies within STRETCH_GUARD of an integer (where its floor could
 * differ) is recomputed by the exact loops. Error bound of the fast x
 * (u = 2^-53): v ~ I * (1/peak) is within 3u of I/peak relative, so the log
 * is within 3u absolute; libmvec's and glibc's logs add 5 ulp of |ln v| <=
 * ln(2 dr) <= 88 (dr <= 1e38): 1e-13; / ln dr >= ln 2 and x maxlev <= 65535:
 * < 1e-8 in x, plus 1e-11 of rounding; the guard is 1e-6. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "app/formats/png_io.h"
#include "app/formats/png_stretch_fast.h"

/* The stretch's loops vectorise once GCC may assume the comparisons raise
 * no FP exception (-fno-trapping-math: the same values, only the flags
 * are not kept); with quiet comparisons (isgreater) the clamps become
 * selects. */
#if defined(__GNUC__) && !defined(__clang__)
#define PNG_NO_TRAP __attribute__((optimize("no-trapping-math")))
#else
#define PNG_NO_TRAP
#endif

/* I / peak clipped at 1; NaN, zero and negative values (and -inf) give 0. */
PNG_NO_TRAP static inline double unit_value(float I, double peak)
{
    double v = (double)I / peak;
    v = isgreater(v, 0.0) ? v : 0.0;
    return isgreater(v, 1.0) ? 1.0 : v;
}

/* t clamped to [0, 1], as a level of maxlev (t * maxlev + 0.5 >= 0:
 * truncation = floor). */
PNG_NO_TRAP static inline unsigned short to_level(double t, double maxlev)
{
    t = isless(t, 0.0) ? 0.0 : t;
    t = isgreater(t, 1.0) ? 1.0 : t;
    return (unsigned short)(int)(t * maxlev + 0.5);
}

/* The exact loops over n pixels (one per stretch: the linear one
 * vectorises). log: t = (log10 v + L) / L with L = log10(dr), computed as
 * 1 + ln v / ln dr (the same value; glibc's log is ~2.5x faster than its
 * log10); below v = 0.5 / dr the log is not taken: there t < -ln 2 / ln dr
 * < 0, clamped to 0. A dynamic range that is not > 1 (or not finite)
 * leaves no range to map: peak -> max, else 0. */
PNG_NO_TRAP static void exact_levels(const float *img, size_t n, png_stretch stretch,
                                     const stretch_args *a, unsigned short *out)
{
    const double peak = a->peak, maxlev = a->maxlev;
    switch (stretch) {
    case STRETCH_SQRT:
        for (size_t i = 0; i < n; ++i) {
            double v = unit_value(img[i], peak);
            out[i] = to_level(v > 0 ? sqrt(v) : 0.0, maxlev);
        }
        break;
    case STRETCH_LOG:
        for (size_t i = 0; i < n; ++i) {
            double v = unit_value(img[i], peak), t = 0.0;
            if (v > 0 && v >= a->v_zero)
                t = a->log_ok ? 1.0 + log(v) * a->inv_ln_dr : (v >= 1 ? 1.0 : 0.0);
            out[i] = to_level(t, maxlev);
        }
        break;
    case STRETCH_LINEAR:
    default:
        for (size_t i = 0; i < n; ++i) {
            double v = unit_value(img[i], peak);
            out[i] = to_level(v > 0 ? v : 0.0, maxlev);
        }
        break;
    }
}

PNG_NO_TRAP void psf_png_stretch_levels(const float *img, int npix, int bits, png_stretch stretch,
                                        double dynamic_range, unsigned short *out)
{
    if (npix <= 0) return;
    const size_t n = (size_t)npix * (size_t)npix;
    if (bits < 1 || bits > 16) bits = 16;

    /* The peak over the non-NaN values (v > p is false for NaN), in four
     * independent chains; a +inf anywhere is the peak, and no image. */
    float p4[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    size_t i4 = 0;
    for (; i4 + 4 <= n; i4 += 4)
        for (int k = 0; k < 4; ++k)
            p4[k] = img[i4 + k] > p4[k] ? img[i4 + k] : p4[k];
    for (; i4 < n; ++i4)
        p4[0] = img[i4] > p4[0] ? img[i4] : p4[0];
    const double peak = fmax(fmax(p4[0], p4[1]), fmax(p4[2], p4[3]));
    if (!isfinite(peak) || peak <= 0) {
        memset(out, 0, n * sizeof *out);
        return;
    }
    stretch_args a = {.peak = peak, .inv_peak = 1.0 / peak};
    a.maxlev = (double)((1u << bits) - 1u);
    a.log_ok = isfinite(dynamic_range) && dynamic_range > 1.0;
    a.inv_ln_dr = a.log_ok ? 1.0 / log(dynamic_range) : 0.0;
    a.v_zero = a.log_ok ? 0.5 / dynamic_range : 0.0;
    const int fast =
        stretch == STRETCH_LINEAR || (stretch == STRETCH_LOG && a.log_ok && dynamic_range >= 2.0);
    if (!fast) {
        exact_levels(img, n, stretch, &a, out);
        return;
    }
    for (size_t i = 0; i < n; i += STRETCH_BLOCK) {
        const size_t m = n - i < STRETCH_BLOCK ? n - i : STRETCH_BLOCK;
        if (png_stretch_fast_block(img + i, m, stretch == STRETCH_LOG, &a, out + i))
            exact_levels(img + i, m, stretch, &a, out + i);
    }
}
