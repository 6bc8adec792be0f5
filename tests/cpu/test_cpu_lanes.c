/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU backend's image-parallel lanes (cpu/backend.c: the kept threads,
 * cpu_pool, issue 27) compute each image the same bytes whoever computes
 * it and whatever that lane computed before:
 *  - each image of a set whose images switch pupils (four pitches, one of
 *    them past the pruned band: the 2D plan; one to three components an
 *    image), computed at 2, 3 and 8 threads in several runs of the one
 *    backend (the lanes keep their pupils from run to run), equals the
 *    image computed alone by a fresh one-thread backend, byte for byte,
 *    under every hand-out of cpu/backend.c's test hook
 *    PSFSIM_TEST_CPU_HANDOUT: the default next free image, the fixed share,
 *    the share over the images reversed or shuffled, and one pool thread
 *    taking every image;
 *  - a run's threads compute in the caller's floating-point environment
 *    (its rounding mode here), as threads started by the caller for each
 *    run did: a kept thread started under round-to-nearest, asked to
 *    compute under round-toward-zero, gives the one-thread backend's
 *    toward-zero bytes (it gave the nearest ones before, where the
 *    caller's lane gave the toward-zero ones). */
#include <fenv.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

#define NPIX 64
#define NSAMP 24 /* pupil samples across D at pitch 1 / NSAMP: the band's hint */
#define NJOBS 24

static const int zn[3] = {2, 3, 4}, zm[3] = {0, 1, -2};

/* Pitches in units of D / NSAMP: 0.8 reaches past the band (30 samples
 * across, 15 from the axis; the band is 24 / 2 + 2 = 14 rows). */
static const double pitch[4] = {1.0, 1.25, 1.5, 0.8};

typedef struct {
    psf_job jobs[NJOBS];
    double coeff[NJOBS][PSF_MAX_COMPONENTS][3];
} job_list;

/* Job k: 1 + k % 3 components, pitches (k + c) % 4, its own coefficients. */
static void make_jobs(job_list *l)
{
    memset(l, 0, sizeof *l);
    for (int k = 0; k < NJOBS; ++k) {
        psf_job *j = &l->jobs[k];
        j->ncomp = 1 + k % 3;
        for (int c = 0; c < j->ncomp; ++c) {
            double *w = l->coeff[k][c];
            w[0] = 0.05 * (k % 5) - 0.1;
            w[1] = 0.03 * ((k + c) % 4);
            w[2] = k % 7 == 0 ? 0.0 : -0.02 * (c + 1);
            j->comp[c] = (psf_component){.wavelength_m = 500e-9,
                                         .dx_m = pitch[(k + c) % 4] / NSAMP,
                                         .scale = 1.0 / (c + 1),
                                         .coeff_waves = w};
        }
    }
}

static psf_backend *open_cpu(int threads)
{
    psf_problem d = {.npix = NPIX, .max_batch = NJOBS, .nimages = NJOBS, .pupil_samples = NSAMP};
    d.aperture = (psf_aperture){.shape = APERTURE_CIRCULAR, .diameter_m = 1.0, .obscuration = 0.3};
    d.modes = (psf_modes){.nterms = 3, .n = zn, .m = zm};
    psf_backend_options opt = {.threads = threads};
    char err[512];
    psf_backend *b = NULL;
    assert_int_equal(psf_backend_cpu.create(&d, &opt, &b, err, sizeof err), 0);
    return b;
}

static void run(psf_backend *b, const job_list *l, int k0, int n, float *images)
{
    char err[512];
    assert_int_equal(
        psf_backend_cpu.run(b, l->jobs + k0, n, images + (size_t)k0 * NPIX * NPIX, err, sizeof err),
        0);
}

/* Images [k0, k0 + n) of got against ref: how many differ in any byte. */
static int differ(const float *got, const float *ref, int k0, int n)
{
    size_t plane = (size_t)NPIX * NPIX;
    int bad = 0;
    for (int k = k0; k < k0 + n; ++k)
        bad += memcmp(got + k * plane, ref + k * plane, plane * sizeof *got) != 0;
    return bad;
}

static void test_same_bytes_whatever_the_hand_out(void **state)
{
    (void)state;
    static job_list l;
    make_jobs(&l);
    size_t plane = (size_t)NPIX * NPIX;
    float *ref = malloc(NJOBS * plane * sizeof *ref), *got = malloc(NJOBS * plane * sizeof *got);
    assert_non_null(ref);
    assert_non_null(got);
    unsetenv("PSFSIM_TEST_CPU_HANDOUT");
    for (int k = 0; k < NJOBS; ++k) { /* each image alone: no lane before it */
        psf_backend *b = open_cpu(1);
        run(b, &l, k, 1, ref);
        psf_backend_cpu.destroy(b);
    }
    /* the images are not all alike (the pupils and coefficients matter) */
    assert_true(memcmp(ref, ref + plane, plane * sizeof *ref) != 0);
    assert_true(memcmp(ref + 3 * plane, ref + 7 * plane, plane * sizeof *ref) != 0);
    static const char *hand_outs[] = {NULL, "share", "reverse", "shuffle", "last"};
    static const int threads[] = {2, 3, 8};
    /* runs of one backend: the whole list, then parts (the lanes keep what
     * they held), then the whole list again */
    static const int parts[][2] = {{0, NJOBS}, {5, 12}, {0, 3}, {17, 7}, {3, 2}, {0, NJOBS}};
    for (size_t h = 0; h < sizeof hand_outs / sizeof *hand_outs; ++h) {
        if (hand_outs[h])
            setenv("PSFSIM_TEST_CPU_HANDOUT", hand_outs[h], 1);
        else
            unsetenv("PSFSIM_TEST_CPU_HANDOUT");
        for (size_t t = 0; t < sizeof threads / sizeof *threads; ++t) {
            psf_backend *b = open_cpu(threads[t]);
            for (size_t r = 0; r < sizeof parts / sizeof *parts; ++r) {
                memset(got, 0xff, NJOBS * plane * sizeof *got);
                run(b, &l, parts[r][0], parts[r][1], got);
                int bad = differ(got, ref, parts[r][0], parts[r][1]);
                if (bad)
                    fail_msg("hand-out %s, %d threads, run %zu (images %d..%d): %d images differ "
                             "from their one-image runs",
                             hand_outs[h] ? hand_outs[h] : "share", threads[t], r, parts[r][0],
                             parts[r][0] + parts[r][1] - 1, bad);
            }
            psf_backend_cpu.destroy(b);
        }
    }
    unsetenv("PSFSIM_TEST_CPU_HANDOUT");
    free(ref);
    free(got);
}

/* The images of a backend of `threads` threads: a first run under
 * round-to-nearest (its pupils built, its threads started), then the list
 * under `mode`. */
static void images_in_mode(int threads, int mode, const job_list *l, float *images)
{
    psf_backend *b = open_cpu(threads);
    assert_int_equal(fesetround(FE_TONEAREST), 0);
    run(b, l, 0, NJOBS, images);
    assert_int_equal(fesetround(mode), 0);
    run(b, l, 0, NJOBS, images);
    assert_int_equal(fesetround(FE_TONEAREST), 0);
    psf_backend_cpu.destroy(b);
}

static void test_threads_take_the_callers_rounding(void **state)
{
    (void)state;
    static job_list l;
    make_jobs(&l);
    size_t plane = (size_t)NPIX * NPIX;
    float *nearest = malloc(NJOBS * plane * sizeof(float));
    float *one = malloc(NJOBS * plane * sizeof(float)),
          *four = malloc(NJOBS * plane * sizeof(float));
    assert_non_null(nearest);
    assert_non_null(one);
    assert_non_null(four);
    unsetenv("PSFSIM_TEST_CPU_HANDOUT");
    images_in_mode(1, FE_TONEAREST, &l, nearest);
    images_in_mode(1, FE_TOWARDZERO, &l, one);
    images_in_mode(4, FE_TOWARDZERO, &l, four);
    /* the mode shows in every image, and the threads compute in it */
    assert_int_equal(differ(one, nearest, 0, NJOBS), NJOBS);
    int bad = differ(four, one, 0, NJOBS);
    if (bad) fail_msg("4 threads under round-toward-zero: %d of %d images differ", bad, NJOBS);
    free(nearest);
    free(one);
    free(four);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bytes_whatever_the_hand_out),
        cmocka_unit_test(test_threads_take_the_callers_rounding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
