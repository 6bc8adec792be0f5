/* SPDX-License-Identifier: BSD-3-Clause */
/* The cost model and backend choice on synthetic probe figures: the decision
 * at and around the crossover, batch effects, GPU start cost included or
 * not, and no GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "app/select/cost_model.h"
#include "app/select/probe_report.h"

/* A machine where the CPU takes 2 ns * N^2 log2 N per image and the GPU a
 * fixed 30 us per run() call plus 0.05 ns * N^2 log2 N per image, with a
 * 250 ms start. Per image at batch 1 the GPU wins once 1.95 ns N^2 log2 N
 * > 30 us, i.e. from N ~ 45.6 (... 64 already). */
static void synthetic(probe_figures *f)
{
    memset(f, 0, sizeof *f);
    f->nsizes = PROBE_NSIZES;
    f->cpu_threads = 1;
    f->have_gpu = 1;
    f->gpu_start_us = 250e3;
    for (int i = 0; i < PROBE_NSIZES; ++i) {
        int n = 64 << i;
        double work = (double)n * n * log2(n);
        f->npix[i] = n;
        f->big_batch[i] = 64;
        f->cpu_create_us[i] = 10;
        f->cpu_us[i] = 2e-3 * work;
        f->gpu_create_us[i] = 2000;
        f->gpu_b1_us[i] = 30 + 5e-5 * work;
        f->gpu_bb_us[i] = 30 + 64 * 5e-5 * work;
    }
}

/* The job without output cost (write_us 0, one writer): compute alone. */
static void predict(const probe_figures *f, int npix, long long nimages, int ncomp, int batch,
                    int started, cost_prediction *p)
{
    cost_job job = {.npix = npix,
                    .nimages = nimages,
                    .ncomp = ncomp,
                    .batch = batch,
                    .writers = 1,
                    .write_us = 0.0,
                    .gpu_started = started};
    cost_predict(f, &job, p);
}

static void test_interpolation_exact_at_probe_sizes(void **state)
{
    (void)state;
    probe_figures f;
    synthetic(&f);
    for (int i = 0; i < PROBE_NSIZES; ++i)
        assert_float_equal(cost_cpu_image_us(&f, f.npix[i]), f.cpu_us[i], 1e-9 * f.cpu_us[i]);
    /* Beyond the probed range the cost scales as N^2 log N. */
    double w2048 = 2048.0 * 2048 * 11, w1024 = 1024.0 * 1024 * 10;
    assert_float_equal(cost_cpu_image_us(&f, 2048), f.cpu_us[4] * w2048 / w1024, 1e-6);
    double a, c;
    cost_gpu_batch(&f, 256, &a, &c);
    assert_float_equal(c, 5e-5 * 256 * 256 * 8, 1e-6);
    assert_float_equal(a, 30.0, 1e-6);
}

/* One small image: the GPU's start cost decides for the CPU; once CUDA runs
 * (started), the same job goes to the GPU if its per-image cost is lower. */
static void test_start_cost(void **state)
{
    (void)state;
    probe_figures f;
    synthetic(&f);
    cost_prediction p;
    predict(&f, 256, 1, 1, 1024, 0, &p);
    assert_false(p.use_gpu);
    assert_float_equal(p.gpu_start_us, 250e3, 1e-9);
    predict(&f, 256, 1, 1, 1024, 1, &p);
    assert_float_equal(p.gpu_start_us, 0.0, 1e-9);
    /* cpu 2e-3*524288+10 = 1058.6 us; gpu 2000 (plan) + 30 + 26.2 = 2056 us */
    assert_false(p.use_gpu);
    predict(&f, 1024, 1, 1, 1024, 1, &p);
    assert_true(p.use_gpu); /* 20981 us vs 2554 us */
}

/* Batch effects: 64x64 images favour the CPU for a few, the GPU for many. */
static void test_batch_effect(void **state)
{
    (void)state;
    probe_figures f;
    synthetic(&f);
    cost_prediction p;
    predict(&f, 64, 10, 1, 1024, 0, &p);
    assert_false(p.use_gpu);
    predict(&f, 64, 100000, 1, 1024, 0, &p);
    /* cpu 100000 * 49.2 us = 4.9 s; gpu 0.25 s + 98 batches * 30 us + 100000 * 1.2 us */
    assert_true(p.use_gpu);
    assert_true(p.gpu_us < 0.5 * p.cpu_us);
}

/* Around the crossover in image count at N = 256, with the start cost:
 * the decision flips exactly where the two predictions cross. */
static void test_decision_at_crossover(void **state)
{
    (void)state;
    probe_figures f;
    synthetic(&f);
    long long lo = 1, hi = 1000000;
    cost_prediction p;
    while (hi - lo > 1) { /* bisect the smallest count the GPU wins */
        long long mid = (lo + hi) / 2;
        predict(&f, 256, mid, 1, 1024, 0, &p);
        if (p.use_gpu)
            hi = mid;
        else
            lo = mid;
    }
    predict(&f, 256, lo, 1, 1024, 0, &p);
    assert_false(p.use_gpu);
    assert_true(p.gpu_us >= p.cpu_us);
    predict(&f, 256, hi, 1, 1024, 0, &p);
    assert_true(p.use_gpu);
    /* cpu 1048.6 k + 10; gpu 252000 + 30 ceil(k/1024) + 26.2 k: k ~ 245 */
    assert_true(hi > 200 && hi < 300);
}

/* Broadband images cost ncomp fields each. */
static void test_components(void **state)
{
    (void)state;
    probe_figures f;
    synthetic(&f);
    cost_prediction p1, p3;
    predict(&f, 128, 100, 1, 1024, 1, &p1);
    predict(&f, 128, 100, 3, 1024, 1, &p3);
    assert_float_equal(p3.cpu_us - 10, 3 * (p1.cpu_us - 10), 1e-6);
}

/* Writing-bound sets: 1000 images of 256x256 whose PNGs take 3.5 ms each
 * on 16 writers (0.22 s) while the CPU computes them in 0.1 s: both wait
 * for the writers, so the GPU's start cost decides for the CPU. With 1
 * writer the writing dominates either way and the start cost still does. */
static void test_writing_bound(void **state)
{
    (void)state;
    probe_figures f;
    synthetic(&f);
    for (int i = 0; i < PROBE_NSIZES; ++i)
        f.cpu_us[i] /= 10; /* a fast CPU: 105 us at 256 */
    f.png_us_per_mpix = 3500.0 / (256 * 256 * 1e-6);
    cost_job job = {.npix = 256,
                    .nimages = 1000,
                    .ncomp = 1,
                    .batch = 1024,
                    .writers = 16,
                    .write_us = cost_write_us(&f, 256, 1, 0),
                    .gpu_started = 0};
    assert_float_equal(job.write_us, 3500.0, 1e-6);
    cost_prediction p;
    cost_predict(&f, &job, &p);
    /* cpu: 10 + (104.9 ms + 3.5 s) / 16 + 3.5 ms; gpu: 250 ms + 2 ms + max(.., 3.5 s / 16) + 3.5 ms
     */
    assert_float_equal(p.cpu_us, 10 + (1000 * 0.2e-3 * 256 * 256 * 8 + 3.5e6) / 16 + 3500, 1.0);
    assert_float_equal(p.gpu_us, 250e3 + 2000 + 3.5e6 / 16 + 3500, 1.0);
    assert_false(p.use_gpu);
    /* Without PNGs the compute decides: 0.1 s of CPU against 0.25 s of start. */
    job.write_us = 0.0;
    cost_predict(&f, &job, &p);
    assert_false(p.use_gpu);
    job.nimages = 100000; /* 10.5 s of CPU on 16 cores (0.66 s) against 0.25 s + 2.9 s of GPU */
    cost_predict(&f, &job, &p);
    assert_false(p.use_gpu);
    job.writers = 1; /* ... but 10.5 s on one core */
    cost_predict(&f, &job, &p);
    assert_true(p.use_gpu);
}

/* Set-up beyond the probed sizes grows with the grid's area (N^2), not
 * the FFT's N^2 log N; below them it stays at the smallest size's. */
static void test_setup_scaling(void **state)
{
    (void)state;
    probe_figures f;
    synthetic(&f);
    cost_prediction p;
    predict(&f, 2048, 1, 1, 1, 1, &p);
    /* cpu: set-up 10 us x (2048/1024)^2 + one image (no writers' share: K w = 0) */
    assert_float_equal(p.cpu_us, 10 * 4 + cost_cpu_image_us(&f, 2048), 1e-6 * p.cpu_us);
    /* gpu: set-up 2000 us x 4 + one batch of one image */
    double a, c;
    cost_gpu_batch(&f, 2048, &a, &c);
    assert_float_equal(p.gpu_us, 2000 * 4 + a + c, 1e-6 * p.gpu_us);
    predict(&f, 32, 1, 1, 1, 1, &p);
    assert_float_equal(p.cpu_us, 10 + cost_cpu_image_us(&f, 32), 1e-9);
}

/* Several GPUs share the batches: the compute part divides by their summed
 * speed (two equal GPUs: half), the start and set-up do not; the writers
 * bound it as before. */
static void test_several_gpus(void **state)
{
    (void)state;
    probe_figures f;
    synthetic(&f);
    cost_job job = {.npix = 256,
                    .nimages = 100000,
                    .ncomp = 1,
                    .batch = 1024,
                    .writers = 1,
                    .write_us = 0.0,
                    .gpu_started = 1};
    cost_prediction one, two, slow;
    cost_predict(&f, &job, &one);
    job.gpu_speed = 2.0;
    cost_predict(&f, &job, &two);
    double fixed = 2000; /* set-up at 256 */
    assert_float_equal(two.gpu_us - fixed, (one.gpu_us - fixed) / 2, 1e-6 * one.gpu_us);
    job.gpu_speed = 1.5; /* a second GPU at half device 0's speed */
    cost_predict(&f, &job, &slow);
    assert_float_equal(slow.gpu_us - fixed, (one.gpu_us - fixed) / 1.5, 1e-6 * one.gpu_us);
    /* Bound by writing (1 ms per image on one writer): more GPUs change nothing. */
    job.write_us = 1000.0;
    job.gpu_speed = 1.0;
    cost_predict(&f, &job, &one);
    job.gpu_speed = 2.0;
    cost_predict(&f, &job, &two);
    assert_float_equal(two.gpu_us, one.gpu_us, 1e-9 * one.gpu_us);
}

static void test_no_gpu(void **state)
{
    (void)state;
    probe_figures f;
    synthetic(&f);
    f.have_gpu = 0;
    cost_prediction p;
    predict(&f, 4096, 1000000, 1, 1024, 1, &p);
    assert_false(p.use_gpu);
    assert_true(isinf(p.gpu_us));
    assert_true(probe_crossover(&f, 0) == 0.0);
}

static void test_crossover_report(void **state)
{
    (void)state;
    probe_figures f;
    synthetic(&f);
    /* GPU per image < CPU at every probed size: it always wins. */
    assert_true(probe_crossover(&f, 1) < 0);
    /* Make the GPU slow at batch 1: 500 us fixed; CPU = GPU between 256 (1048
     * vs 526) and 128 (229 vs 500.8): interpolated in log N. */
    for (int i = 0; i < PROBE_NSIZES; ++i)
        f.gpu_b1_us[i] += 470;
    double x = probe_crossover(&f, 0);
    assert_true(x > 128 && x < 256);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interpolation_exact_at_probe_sizes),
        cmocka_unit_test(test_start_cost),
        cmocka_unit_test(test_batch_effect),
        cmocka_unit_test(test_decision_at_crossover),
        cmocka_unit_test(test_components),
        cmocka_unit_test(test_writing_bound),
        cmocka_unit_test(test_setup_scaling),
        cmocka_unit_test(test_several_gpus),
        cmocka_unit_test(test_no_gpu),
        cmocka_unit_test(test_crossover_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
