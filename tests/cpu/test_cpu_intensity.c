/* SPDX-License-Identifier: BSD-3-Clause */
/* cpu/intensity.h: pixel ((u + N/2) mod N, (v + N/2) mod N) gets scale
 * |out[u][v]|^2, stored or added, streamed or not, with the scan the
 * written values' largest (NaN skipped) and whether all are in [0,
 * FLT_MAX]: on the SSE path (N % 8 == 0, aligned image) and the scalar one
 * (N = 12, and an image one float off alignment), the same values. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cpu/intensity.h"

static float value(const fftwf_complex *out, int npix, int u, int v, float scale)
{
    const float *z = out[(size_t)u * npix + v];
    return scale * (z[0] * z[0] + z[1] * z[1]);
}

/* image (+)= op's intensity of out, checked pixel by pixel against
 * value(); returns the largest expected pixel (NaN skipped). */
static float check(const fftwf_complex *out, int npix, const cpu_intensity_op *op,
                   const float *before, float *image)
{
    cpu_intensity_rows(out, npix, 0, npix, op, image);
    cpu_intensity_fence();
    int h = npix / 2;
    float peak = -INFINITY;
    for (int u = 0; u < npix; ++u)
        for (int v = 0; v < npix; ++v) {
            float want = value(out, npix, u, v, op->scale);
            size_t at = (size_t)((u + h) % npix) * npix + (size_t)((v + h) % npix);
            if (!op->first) want += before[at];
            float got = image[at];
            assert_true(isnan(want) ? isnan(got) : got == want);
            peak = want > peak ? want : peak;
        }
    return peak;
}

static void intensity_case(int npix, size_t offset, int stream)
{
    size_t n = (size_t)npix * npix;
    fftwf_complex *out = fftwf_malloc(n * sizeof *out);
    float *buf = fftwf_malloc((n + 4) * sizeof *buf), *image = buf + offset;
    float *before = malloc(n * sizeof *before);
    unsigned seed = 3u;
    for (size_t i = 0; i < n; ++i)
        for (int k = 0; k < 2; ++k) {
            seed = seed * 1664525u + 1013904223u;
            out[i][k] = (float)(seed >> 8) / 16777216.0f - 0.5f;
        }
    psf_image_scan scan = {-INFINITY, 1};
    cpu_intensity_op op = {.scale = 0.3f, .first = 1, .stream = stream, .scan = &scan};
    float peak = check(out, npix, &op, NULL, image);
    assert_true(scan.peak == peak && scan.in_range == 1);
    memcpy(before, image, n * sizeof *before);
    out[5][0] = NAN; /* added: a NaN pixel, skipped by the peak, out of range */
    scan = (psf_image_scan){-INFINITY, 1};
    op = (cpu_intensity_op){.scale = 0.7f, .scan = &scan};
    peak = check(out, npix, &op, before, image);
    assert_true(scan.peak == peak && !isnan(scan.peak) && scan.in_range == 0);
    out[5][0] = 0.25f; /* a negative scale: negative pixels, out of range */
    scan = (psf_image_scan){-INFINITY, 1};
    op = (cpu_intensity_op){.scale = -1.0f, .first = 1, .scan = &scan};
    peak = check(out, npix, &op, NULL, image);
    assert_true(scan.peak == peak && scan.in_range == 0);
    fftwf_free(out);
    fftwf_free(buf);
    free(before);
}

static void test_intensity_values_and_scan(void **state)
{
    (void)state;
    intensity_case(16, 0, 0); /* SSE */
    intensity_case(16, 0, 1); /* SSE, streamed */
    intensity_case(16, 1, 1); /* unaligned image: the scalar loops */
    intensity_case(12, 0, 0); /* N % 8 != 0: the scalar loops */
    intensity_case(9, 0, 0);  /* odd N: the wrap uneven */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intensity_values_and_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
