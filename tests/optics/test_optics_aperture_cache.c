/* SPDX-License-Identifier: BSD-3-Clause */
/* The aperture grid cache: a grid from the cache is the same bits as a
 * fresh aperture_fill, one grid is kept per (size, pitch), the byte budget
 * holds, and threads filling side by side get the same grids. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "optics/aperture_cache.h"

static psf_aperture telescope(void)
{
    return (psf_aperture){.shape = APERTURE_CIRCULAR,
                          .diameter_m = 2.4,
                          .obscuration = 0.33,
                          .spider_count = 4,
                          .spider_width_m = 0.0264,
                          .spider_angle_deg = 45.0};
}

static void test_same_bits_once_per_pitch(void **state)
{
    (void)state;
    psf_aperture a = telescope();
    enum { N = 96 };
    float *ref = malloc(N * N * sizeof *ref), *got = malloc(N * N * sizeof *got);
    char err[256];
    aperture_cache *c = aperture_cache_create(&a, 1 << 20);
    assert_non_null(c);
    for (int pass = 0; pass < 3; ++pass)
        for (int k = 0; k < 2; ++k) {
            double dx = 2.4 / (40 + 8 * k);
            assert_int_equal(aperture_fill(&a, N, dx, ref, err, sizeof err), 0);
            memset(got, 0xff, N * N * sizeof *got);
            assert_int_equal(aperture_cache_fill(c, &a, N, dx, got, err, sizeof err), 0);
            assert_memory_equal(got, ref, N * N * sizeof *got);
        }
    assert_int_equal(aperture_cache_count(c), 2); /* one grid per pitch */
    /* Another grid size at a held pitch is another grid. */
    float *small = malloc(32 * 32 * sizeof *small);
    assert_int_equal(aperture_cache_fill(c, &a, 32, 2.4 / 40, small, err, sizeof err), 0);
    assert_int_equal(aperture_cache_count(c), 3);
    aperture_cache_free(c);
    /* No cache: a plain fill. */
    assert_int_equal(aperture_cache_fill(NULL, &a, N, 2.4 / 40, got, err, sizeof err), 0);
    assert_int_equal(aperture_fill(&a, N, 2.4 / 40, ref, err, sizeof err), 0);
    assert_memory_equal(got, ref, N * N * sizeof *got);
    free(small);
    free(ref);
    free(got);
}

static void test_budget(void **state)
{
    (void)state;
    psf_aperture a = telescope();
    enum { N = 64 };
    float *g = malloc(N * N * sizeof *g);
    char err[256];
    aperture_cache *c = aperture_cache_create(&a, N * N * sizeof *g); /* room for one */
    assert_int_equal(aperture_cache_fill(c, &a, N, 0.05, g, err, sizeof err), 0);
    assert_int_equal(aperture_cache_fill(c, &a, N, 0.06, g, err, sizeof err), 0);
    assert_int_equal(aperture_cache_count(c), 1);
    /* A bad aperture fails as aperture_fill does, and nothing is kept. */
    psf_aperture bad = a;
    bad.diameter_m = -1;
    aperture_cache *cb = aperture_cache_create(&bad, 1 << 20);
    assert_int_equal(aperture_cache_fill(cb, &bad, N, 0.05, g, err, sizeof err), -1);
    assert_int_equal(aperture_cache_count(cb), 0);
    aperture_cache_free(cb);
    aperture_cache_free(c);
    free(g);
}

typedef struct {
    aperture_cache *c;
    psf_aperture a;
    int k;
    float grid[80 * 80];
    int rc;
} worker;

static void *fill_main(void *arg)
{
    worker *w = arg;
    char err[256];
    for (int rep = 0; rep < 20 && w->rc == 0; ++rep)
        w->rc =
            aperture_cache_fill(w->c, &w->a, 80, 2.4 / (30 + 10 * w->k), w->grid, err, sizeof err);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    psf_aperture a = telescope();
    aperture_cache *c = aperture_cache_create(&a, 1 << 20);
    enum { T = 4 };
    worker *w = calloc(T, sizeof *w);
    pthread_t th[T];
    for (int i = 0; i < T; ++i) {
        w[i] = (worker){.c = c, .a = a, .k = i % 2};
        assert_int_equal(pthread_create(&th[i], NULL, fill_main, &w[i]), 0);
    }
    for (int i = 0; i < T; ++i)
        pthread_join(th[i], NULL);
    float ref[80 * 80];
    char err[256];
    for (int i = 0; i < T; ++i) {
        assert_int_equal(w[i].rc, 0);
        assert_int_equal(aperture_fill(&a, 80, 2.4 / (30 + 10 * w[i].k), ref, err, sizeof err), 0);
        assert_memory_equal(w[i].grid, ref, sizeof ref);
    }
    assert_int_equal(aperture_cache_count(c), 2);
    aperture_cache_free(c);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bits_once_per_pitch),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
