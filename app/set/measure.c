/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/set/measure.h"

#include <float.h>
#include <math.h>
#include <string.h>
#ifdef __SSE__
#include <xmmintrin.h>
#endif

#include "app/set/set_detector.h"
#include "backend/detector.h"
#include "backend/levels.h"

/* The largest value of img[n], as metrics_peak(...).value (NaNs skipped,
 * 0 for no pixels) without its position: eight running maxima, lane l
 * taking the pixels k with k % 8 == l, the per-image cost that mattered at
 * GPU rates (the same value: a maximum does not depend on the order). On
 * x86-64 the lanes are two SSE registers: MAXPS(a, b) is a > b ? a : b,
 * the scalar loop's comparison (Intel SDM, MAXPS), which GCC does not
 * vectorise by itself; a 256^2 image's scan was ~5% of a CPU set's time. */
static float peak_value(const float *img, size_t n, int *good)
{
    enum { LANES = 8 };
    float m[LANES];
    for (int l = 0; l < LANES; ++l)
        m[l] = -INFINITY;
    size_t k = 0;
    int bad = 0;
#ifdef __SSE__
    /* and, in the same pass, whether a pixel is outside [0, FLT_MAX]:
     * CMPNGEPS is true for NaN and negatives, CMPGTPS(x, FLT_MAX) for +inf */
    const __m128 zero = _mm_setzero_ps(), top = _mm_set1_ps(FLT_MAX);
    __m128 lo = _mm_loadu_ps(m), hi = lo, out = zero;
    for (; k + LANES <= n; k += LANES) {
        __m128 a = _mm_loadu_ps(img + k), b = _mm_loadu_ps(img + k + 4);
        lo = _mm_max_ps(a, lo);
        hi = _mm_max_ps(b, hi);
        out = _mm_or_ps(out, _mm_or_ps(_mm_cmpnge_ps(a, zero), _mm_cmpnge_ps(b, zero)));
        out = _mm_or_ps(out, _mm_or_ps(_mm_cmpgt_ps(a, top), _mm_cmpgt_ps(b, top)));
    }
    _mm_storeu_ps(m, lo);
    _mm_storeu_ps(m + 4, hi);
    bad = _mm_movemask_ps(out) != 0;
#endif
    for (; k + LANES <= n; k += LANES)
        for (int l = 0; l < LANES; ++l) {
            m[l] = img[k + l] > m[l] ? img[k + l] : m[l];
            bad |= !(img[k + l] >= 0.0f && img[k + l] <= FLT_MAX);
        }
    for (; k < n; ++k) {
        m[0] = img[k] > m[0] ? img[k] : m[0];
        bad |= !(img[k] >= 0.0f && img[k] <= FLT_MAX);
    }
    *good = !bad;
    float best = m[0];
    for (int l = 1; l < LANES; ++l)
        best = m[l] > best ? m[l] : best;
    return n == 0 ? 0.0f : best;
}

/* Turn img[n] (an M x M image, n = M^2, row-major) by 180 degrees in
 * place: pixel (r, c) goes to (M-1-r, M-1-c), i.e. the array reversed. */
static void rotate_180(float *img, size_t n)
{
    for (size_t i = 0, j = n ? n - 1 : 0; i < j; ++i, --j) {
        float t = img[i];
        img[i] = img[j];
        img[j] = t;
    }
}

int image_set_measure(const image_set *s, image_info *info, float *img, double *strehl,
                      double *axial)
{
    return image_set_measure_scanned(s, info, img, NULL, strehl, axial);
}

int image_set_measure_scanned(const image_set *s, image_info *info, float *img,
                              const psf_image_scan *scan, double *strehl, double *axial)
{
    int npix = s->samp.npix, good;
    image_set_finish_image(s, info, img);
    if (s->mft && s->cfg->normalization == NORM_SUM) scan = NULL; /* finishing rescaled img */
    float peak = scan ? scan->peak : peak_value(img, (size_t)npix * npix, &good);
    if (scan) good = scan->in_range;
    *strehl = peak / info->ref_peak;
    *axial = img[(size_t)(npix / 2) * npix + npix / 2] / info->ref_peak;
    if (s->cfg->orientation == ORIENT_POPPY) rotate_180(img, (size_t)npix * npix);
    return good;
}

int image_set_levels_stretch(const image_set *s, psf_levels_out *out)
{
    const psf_config *cfg = s->cfg;
    memset(out, 0, sizeof *out);
    if (psf_detector_active(&s->detector) || set_detector_backend_npix(s) != s->samp.npix ||
        (s->calc_npix > 0 && s->calc_npix != s->samp.npix))
        return 0;
    if (s->mft && cfg->normalization == NORM_SUM) return 0;
    out->bits = cfg->png_bits;
    out->stretch = (int)cfg->png_stretch;
    out->dynamic_range = cfg->png_dynamic_range;
    out->rotate_180 = cfg->orientation == ORIENT_POPPY;
    return 1;
}

int image_set_levels_out(const image_set *s, psf_levels_out *out)
{
    const psf_config *cfg = s->cfg;
    memset(out, 0, sizeof *out);
    int h5_levels = cfg->hdf5_enabled && cfg->hdf5_dtype == HDF5_UINT16;
    int h5_float = cfg->hdf5_enabled && cfg->hdf5_dtype != HDF5_UINT16;
    /* noise draws from the float image (HDF5 "noisy" needs no FITS) */
    if (!(cfg->png_enabled || h5_levels) || cfg->fits_enabled || h5_float || cfg->noise.enabled)
        return 0;
    return image_set_levels_stretch(s, out);
}

void image_set_measure_levels(const image_set *s, image_info *info, const double *m, double *strehl,
                              double *axial)
{
    if (s->cfg->normalization == NORM_PUPIL) info->captured_fraction = m[PSF_MEASURE_TOTAL];
    /* image_set_measure's float peak and pixel over the same double */
    *strehl = (float)m[PSF_MEASURE_PEAK] / info->ref_peak;
    *axial = (float)m[PSF_MEASURE_AXIS] / info->ref_peak;
}

/* psf_levels_out.stretch carries output.png.stretch's value. */
_Static_assert((int)STRETCH_LINEAR == (int)PSF_STRETCH_LINEAR &&
                   (int)STRETCH_LOG == (int)PSF_STRETCH_LOG &&
                   (int)STRETCH_SQRT == (int)PSF_STRETCH_SQRT,
               "png_stretch and backend/levels.h's stretches differ");
