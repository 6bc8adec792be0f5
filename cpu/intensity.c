/* SPDX-License-Identifier: BSD-3-Clause */
/* |.|^2 + shift + scale of an FFT image (cpu/intensity.h). */
#include "cpu/intensity.h"

#include <float.h>
#include <stddef.h>
#include <stdint.h>
#ifdef __SSE__
#include <xmmintrin.h>
#endif

/* v = scale |src|^2 (+ dst) for len values into dst, folded into scan:
 * the scalar loop (peak as app/set/measure.c's: v > peak, so NaN skipped). */
static void part_scalar(const fftwf_complex *src, int len, const cpu_intensity_op *op, float *dst)
{
    float peak = op->scan ? op->scan->peak : 0.0f;
    int bad = 0;
    for (int v = 0; v < len; ++v) {
        float x = op->scale * (src[v][0] * src[v][0] + src[v][1] * src[v][1]);
        x = op->first ? x : dst[v] + x;
        dst[v] = x;
        peak = x > peak ? x : peak;
        bad |= !(x >= 0.0f && x <= FLT_MAX);
    }
    if (op->scan) {
        op->scan->peak = peak;
        op->scan->in_range &= !bad;
    }
}

#ifdef __SSE__
/* The same, 4 values at a time (len % 4 == 0, dst 16-byte aligned): the
 * same products and sums in the same order, so the same values; MAXPS(x,
 * peak) is x > peak ? x : peak (Intel SDM, MAXPS), CMPNGEPS true for NaN
 * and negatives, CMPGTPS(x, FLT_MAX) for +inf. */
static void part_sse(const fftwf_complex *src, int len, const cpu_intensity_op *op, float *dst)
{
    const __m128 scale = _mm_set1_ps(op->scale), zero = _mm_setzero_ps(),
                 top = _mm_set1_ps(FLT_MAX);
    __m128 peak = _mm_set1_ps(op->scan ? op->scan->peak : 0.0f), bad = zero;
    for (int v = 0; v < len; v += 4) {
        __m128 a = _mm_loadu_ps(src[v]), b = _mm_loadu_ps(src[v + 2]);
        __m128 re = _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
        __m128 im = _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
        __m128 x = _mm_mul_ps(scale, _mm_add_ps(_mm_mul_ps(re, re), _mm_mul_ps(im, im)));
        if (!op->first) x = _mm_add_ps(_mm_load_ps(dst + v), x);
        if (op->stream)
            _mm_stream_ps(dst + v, x);
        else
            _mm_store_ps(dst + v, x);
        peak = _mm_max_ps(x, peak);
        bad = _mm_or_ps(bad, _mm_or_ps(_mm_cmpnge_ps(x, zero), _mm_cmpgt_ps(x, top)));
    }
    if (!op->scan) return;
    float p[4];
    _mm_storeu_ps(p, peak);
    for (int l = 0; l < 4; ++l) /* any lane order: a maximum */
        op->scan->peak = p[l] > op->scan->peak ? p[l] : op->scan->peak;
    op->scan->in_range &= _mm_movemask_ps(bad) == 0;
}
#endif

void cpu_intensity_rows(const fftwf_complex *rows, int npix, int u0, int nrows,
                        const cpu_intensity_op *op, float *image)
{
    void (*part)(const fftwf_complex *, int, const cpu_intensity_op *, float *) = part_scalar;
#ifdef __SSE__
    if (npix % 8 == 0 && (uintptr_t)image % 16 == 0) part = part_sse;
#endif
    int h = npix / 2, split = npix - h; /* columns v < split go to v + h, the rest wrap */
    for (int u = u0; u < u0 + nrows; ++u) {
        const fftwf_complex *src = rows + (size_t)(u - u0) * npix;
        float *dst = image + (size_t)((u + h) % npix) * npix;
        part(src, split, op, dst + h);
        part(src + split, h, op, dst);
    }
}

void cpu_intensity_fence(void)
{
#ifdef __SSE__
    _mm_sfence();
#endif
}

void cpu_intensity_accumulate(const fftwf_complex *out, int npix, float scale, float *image)
{
    cpu_intensity_op op = {.scale = scale};
    cpu_intensity_rows(out, npix, 0, npix, &op, image);
}

void cpu_intensity_write(const fftwf_complex *out, int npix, float scale, int first, float *image)
{
    cpu_intensity_op op = {.scale = scale, .first = first};
    cpu_intensity_rows(out, npix, 0, npix, &op, image);
}
