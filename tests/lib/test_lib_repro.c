/* SPDX-License-Identifier: BSD-3-Clause */
/* An image's bits are a function of its own job alone (issue 26): draw k
 * of a random set is the same bytes in a set of 40 and one of 5,000 images
 * (whose size once decided whether FFTW's plans were measured), computed
 * all at once or in batches of 7 or one at a time, on one thread or two,
 * with the cache directory empty or holding an FFTW wisdom file of
 * measured plans, and with measured wisdom for the set's transforms in the
 * process's own planner (FFTW_ESTIMATE takes a plan from it: a library
 * caller's FFTW use). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fftw3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/psfsim.h"
#include "tests/support/testutil.h"

#define IMAGES 40

/* The grid N and the pupil's samples n (padding N / n): 128 and 64, the
 * pruned transform's row plans (cpu/plan_cache.h); 128 and 128, FFTW's 2D
 * plan; 256 and 256, the row-column transform over the whole grid. */
static int NPIX, SAMPLES;

/* A random set of count draws of one seed: the same draws k < count. */
static psfsim_set *open_random(long long count, int threads)
{
    char text[1024];
    snprintf(text, sizeof text,
             "name = \"repro\";\n"
             "optics: { wavelength_nm = 600.0; f_number = 12.0; aperture: { diameter_m = 1.0; "
             "obscuration = 0.2; }; };\n"
             "sampling: { pupil_samples = %d; padding = %g; };\n"
             "sweep: { random: { count = %lld; seed = 7; zernike = ((4, \"normal\", 0.05), "
             "(7, \"uniform\", 0.02)); wavelength_nm = [550.0, 650.0]; }; };\n",
             SAMPLES, (double)NPIX / SAMPLES, count);
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = "cpu";
    o.threads = threads;
    psfsim_set *s = NULL;
    char err[1024] = "";
    if (psfsim_open_text(text, &o, &s, err, sizeof err) != PSFSIM_OK) fail_msg("open: %s", err);
    psfsim_info info;
    assert_int_equal(psfsim_describe(s, &info, NULL, 0), PSFSIM_OK);
    assert_int_equal(info.npix, NPIX);
    return s;
}

/* Images [0, IMAGES) of s in calls of batch images, malloc'd. */
static float *compute(psfsim_set *s, int batch)
{
    size_t plane = (size_t)NPIX * NPIX;
    float *img = malloc(IMAGES * plane * sizeof *img);
    assert_non_null(img);
    char err[512];
    for (int k = 0; k < IMAGES; k += batch) {
        int n = k + batch <= IMAGES ? batch : IMAGES - k;
        if (psfsim_compute(s, k, n, img + (size_t)k * plane, (size_t)n * plane, NULL, err,
                           sizeof err) != PSFSIM_OK)
            fail_msg("compute: %s", err);
    }
    return img;
}

/* Images of the (count, threads) set in batches of batch, byte for byte
 * those of want. */
static void same_images(const float *want, long long count, int threads, int batch,
                        const char *what)
{
    psfsim_set *s = open_random(count, threads);
    float *got = compute(s, batch);
    size_t plane = (size_t)NPIX * NPIX;
    for (int k = 0; k < IMAGES; ++k)
        if (memcmp(want + k * plane, got + k * plane, plane * sizeof *got) != 0)
            fail_msg("%s: image %d differs from the 40-image set's (%.3g relative L2)", what, k,
                     tu_rel_l2(want + k * plane, got + k * plane, plane));
    free(got);
    psfsim_close(s);
}

/* Measured plans for the set's row transforms (N rows of N, and 8 rows
 * with the input preserved, cpu/plan_cache.c) and its 2D transform, left
 * in the process's wisdom as a caller's own FFTW use would leave them. */
static void measure_in_process(void)
{
    int n = NPIX;
    fftwf_complex *a = fftwf_malloc((size_t)n * n * sizeof *a);
    fftwf_complex *b = fftwf_malloc((size_t)n * n * sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    fftwf_plan p[3] = {
        fftwf_plan_many_dft(1, &n, n, a, NULL, 1, n, b, NULL, 1, n, FFTW_FORWARD, FFTW_MEASURE),
        fftwf_plan_many_dft(1, &n, 8, a, NULL, 1, n, b, NULL, 1, n, FFTW_FORWARD,
                            FFTW_MEASURE | FFTW_PRESERVE_INPUT),
        fftwf_plan_dft_2d(n, n, a, b, FFTW_FORWARD, FFTW_MEASURE)};
    for (int i = 0; i < 3; ++i) {
        assert_non_null(p[i]);
        fftwf_destroy_plan(p[i]);
    }
    fftwf_free(a);
    fftwf_free(b);
}

static void image_is_its_jobs_alone(int npix, int samples)
{
    NPIX = npix;
    SAMPLES = samples;
    char *cache = tu_mkdtemp("repro_cache");
    assert_non_null(cache);
    setenv("PSFSIM_CACHE_DIR", cache, 1);
    psfsim_set *s = open_random(IMAGES, 1);
    float *want = compute(s, IMAGES);
    psfsim_close(s);
    /* 5,000 images once got measured plans (written to the cache as wisdom). */
    same_images(want, 5000, 2, 7, "5,000 images, 2 threads, batches of 7");
    same_images(want, 5000, 1, 1, "5,000 images, 1 thread, one at a time");
    /* Measured wisdom in the process and in the cache directory's file
     * (fftw-wisdom-float, which psfsim read before issue 26). */
    measure_in_process();
    const char *wisdom = tu_format("%s/fftw-wisdom-float", cache); /* static */
    assert_int_not_equal(fftwf_export_wisdom_to_filename(wisdom), 0);
    same_images(want, IMAGES, 2, 13, "measured wisdom, 2 threads, batches of 13");
    same_images(want, IMAGES, 1, IMAGES, "measured wisdom, 1 thread");
    same_images(want, 5000, 2, 64, "measured wisdom, 5,000 images");
    free(want);
    unsetenv("PSFSIM_CACHE_DIR");
    tu_rmtree(cache);
    free(cache);
}

static void test_pruned_plans(void **state)
{
    (void)state;
    image_is_its_jobs_alone(128, 64);
}

static void test_whole_2d_plan(void **state)
{
    (void)state;
    image_is_its_jobs_alone(128, 128);
}

static void test_row_column(void **state)
{
    (void)state;
    image_is_its_jobs_alone(256, 256);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pruned_plans),
                                       cmocka_unit_test(test_whole_2d_plan),
                                       cmocka_unit_test(test_row_column)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
