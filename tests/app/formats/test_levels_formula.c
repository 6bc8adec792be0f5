/* SPDX-License-Identifier: BSD-3-Clause */
/* backend/levels.h's per-pixel stretch (what the GPU kernel and the CPU's
 * run_levels compute) against app/formats/png_io.c's vectorised
 * psf_png_stretch_levels: every level equal, for linear, log and sqrt at
 * 1, 8, 12 and 16 bits (and bits outside 1..16), over images made to hit
 * the special cases: NaN pixels, negative values and -inf, zeros,
 * subnormals, values just around the log's cut 0.5 / dr and levels' half
 * steps, a constant image, an all-zero and an all-negative image (peak <=
 * 0), a +inf or all-NaN image (peak not finite), and log with a dynamic
 * range of 1, 0.5, 0, -3, +inf and NaN (no range). */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "app/formats/png_io.h"
#include "backend/levels.h"

#define NPIX 37 /* odd: the loops' tails too */
#define N (NPIX * NPIX)

/* A 64-bit LCG's top bits: a repeatable pseudo-random unit value. */
static double unit(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* Image kind k into img. */
static void make(int k, float *img)
{
    uint64_t s = 12345u + (uint64_t)k;
    for (int i = 0; i < N; ++i) {
        double u = unit(&s);
        img[i] = (float)(u * u * u * 3.0); /* a wide range, peak near 3 */
    }
    switch (k) {
    case 1: /* specials sprinkled */
        for (int i = 0; i < N; i += 7)
            img[i] = (i / 7) % 5 == 0   ? NAN
                     : (i / 7) % 5 == 1 ? -1.0f
                     : (i / 7) % 5 == 2 ? -INFINITY
                     : (i / 7) % 5 == 3 ? 0.0f
                                        : FLT_MIN / 4.0f;
        break;
    case 2: /* values around half steps of 255 and 65535 levels of peak 1 */
        img[0] = 1.0f;
        for (int i = 1; i < N; ++i) {
            int lev = i % 256;
            double step = (i & 256) ? 1.0 / 65535.0 : 1.0 / 255.0;
            img[i] = (float)((lev + 0.5) * step) * (1.0f + (float)((i % 3) - 1) * FLT_EPSILON);
        }
        break;
    case 3: /* around the log's cut 0.5 / dr for dr = 1e3 and 1e5, peak 1 */
        img[0] = 1.0f;
        for (int i = 1; i < N; ++i) {
            double cut = (i & 1) ? 0.5e-3 : 0.5e-5;
            img[i] = (float)cut * (1.0f + (float)((i % 5) - 2) * FLT_EPSILON);
        }
        break;
    case 4: /* constant */
        for (int i = 0; i < N; ++i)
            img[i] = 0.25f;
        break;
    case 5: /* all zero */
        memset(img, 0, N * sizeof *img);
        break;
    case 6: /* all negative */
        for (int i = 0; i < N; ++i)
            img[i] = -img[i] - 1.0f;
        break;
    case 7: /* an infinite pixel: peak not finite */
        img[N / 2] = INFINITY;
        break;
    case 8: /* all NaN */
        for (int i = 0; i < N; ++i)
            img[i] = NAN;
        break;
    default:
        break;
    }
}

#define NKINDS 9

static void test_every_case(void **state)
{
    (void)state;
    static float img[N];
    static unsigned short a[N], b[N];
    const int bits[] = {1, 8, 12, 16, 0, 17};
    const double dr[] = {1.0e3, 1.0e5, 1.0e6, 1.0, 0.5, 0.0, -3.0, INFINITY, NAN};
    const png_stretch st[] = {STRETCH_LINEAR, STRETCH_LOG, STRETCH_SQRT};
    size_t compared = 0, nonzero = 0;
    for (int k = 0; k < NKINDS; ++k) {
        make(k, img);
        double m[PSF_MEASURES];
        psf_levels_measure(img, N, (size_t)(NPIX / 2) * NPIX + NPIX / 2, m);
        for (size_t s = 0; s < 3; ++s)
            for (size_t bi = 0; bi < sizeof bits / sizeof bits[0]; ++bi)
                for (size_t di = 0; di < sizeof dr / sizeof dr[0]; ++di) {
                    psf_png_stretch_levels(img, NPIX, bits[bi], st[s], dr[di], a);
                    psf_levels_map map = psf_levels_map_make(bits[bi], (int)st[s], dr[di]);
                    psf_levels_image(&map, img, N, m[PSF_MEASURE_PEAK], 0, b);
                    for (int i = 0; i < N; ++i) {
                        if (a[i] != b[i])
                            fail_msg("kind %d stretch %d bits %d dr %g pixel %d (%.9g): png %u, "
                                     "levels.h %u",
                                     k, (int)st[s], bits[bi], dr[di], i, (double)img[i], a[i],
                                     b[i]);
                        nonzero += a[i] != 0;
                    }
                    compared += N;
                    psf_levels_image(&map, img, N, m[PSF_MEASURE_PEAK], 1, b); /* turned */
                    for (int i = 0; i < N; ++i)
                        assert_int_equal(a[i], b[N - 1 - i]);
                }
    }
    printf("%zu levels equal (%zu not 0)\n", compared, nonzero);
    assert_true(nonzero > compared / 4); /* the images do reach the levels */
}

/* The measures: the peak skips NaN, the counts name each kind. */
static void test_measures(void **state)
{
    (void)state;
    static float img[N];
    make(1, img);
    double m[PSF_MEASURES], total = 0.0, nan = 0, inf = 0, neg = 0;
    float peak = -INFINITY;
    for (int i = 0; i < N; ++i) {
        if (img[i] > peak) peak = img[i];
        total += img[i];
        nan += isnan(img[i]) != 0;
        inf += isinf(img[i]) != 0;
        neg += img[i] < 0.0f;
    }
    psf_levels_measure(img, N, 5, m);
    assert_true(m[PSF_MEASURE_PEAK] == peak && peak > 2.0f);
    assert_true(m[PSF_MEASURE_AXIS] == img[5]);
    assert_true(isnan(total) && isnan(m[PSF_MEASURE_TOTAL])); /* NaN pixels */
    assert_true(m[PSF_MEASURE_NAN] == nan && nan > 0);
    assert_true(m[PSF_MEASURE_INF] == inf && inf > 0);
    assert_true(m[PSF_MEASURE_NEG] == neg && neg > inf);
    make(0, img);
    psf_levels_measure(img, N, 0, m);
    total = 0.0;
    for (int i = 0; i < N; ++i)
        total += img[i];
    assert_true(m[PSF_MEASURE_TOTAL] == total); /* pixel order: the same sum */
    assert_true(m[PSF_MEASURE_NAN] + m[PSF_MEASURE_INF] + m[PSF_MEASURE_NEG] == 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_case),
        cmocka_unit_test(test_measures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
