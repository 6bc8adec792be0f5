/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU backend's memory need (psf_backend_ops.memory_need,
 * gpu/memory_plan.cu): known with the module loaded but no CUDA device (no
 * CUDA call), growing as it should with the batch, the pitches and the MFT
 * matrices; the single-image plan (from N = 4096 at a batch of one, any
 * batch from N = 32768) counted as its two grid-sized buffers, 12 N^2
 * bytes, and the pupils' open samples, so that one 46341 x 46341 image
 * (2^31 samples and more) needs 30 GB besides cuFFT's work area, not the
 * batch plan's 103 GB. Skipped (exit 77) when psfsim has no GPU module. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "app/select/gpu.h"
#include "backend/backend.h"

static const psf_backend_ops *gpu;
static const int g_n[3] = {2, 3, 4}, g_m[3] = {0, 1, 0};

/* N = 256 by FFT, n = 128 samples across D, three modes. */
static psf_problem fft_problem(int max_batch)
{
    psf_problem p;
    memset(&p, 0, sizeof p);
    p.npix = 256;
    p.aperture = (psf_aperture){.shape = APERTURE_CIRCULAR, .diameter_m = 1.0};
    p.modes = (psf_modes){.nterms = 3, .n = g_n, .m = g_m};
    p.max_batch = max_batch;
    p.nimages = 1000;
    p.pupil_samples = 128;
    return p;
}

static unsigned long long device_need(const psf_problem *p)
{
    psf_memory_need m;
    char err[256] = "";
    assert_int_equal(gpu->memory_need(p, NULL, &m, err, sizeof err), 0);
    assert_true(m.host > 0);
    assert_int_equal(m.transform + m.pupils + m.scratch, 0); /* nothing of it on the host */
    return m.device;
}

static void test_batch_and_pitches(void **state)
{
    (void)state;
    const unsigned long long plane = 256ULL * 256;
    /* 64 images of 256 KiB are the 16 MiB a sub-batch aims at: per image
     * its field, transform (complex) and two image buffers (float). */
    psf_problem p = fft_problem(64);
    unsigned long long d64 = device_need(&p);
    assert_true(d64 >= 64 * 24 * plane);
    p.max_batch = 32;
    unsigned long long d32 = device_need(&p);
    assert_true(d64 - d32 >= 32 * 24 * plane);
    p.max_batch = 4096; /* no more than the sub-batch's 64 */
    assert_int_equal(device_need(&p), d64);
    /* A second pitch: its index over the grid and (128 + 2)^2 open samples'
     * position, transmission and three basis values. */
    p.max_batch = 64;
    p.pupil_pitches = 2;
    assert_int_equal(device_need(&p) - d64, 4 * (plane + 1) + 130ULL * 130 * 4 * (2 + 3));
}

static void test_mft_matrices(void **state)
{
    (void)state;
    psf_problem p = fft_problem(16);
    p.npix = 100;
    p.mft = 1;
    p.pupil_npix = 132;
    p.mft_matrices = 1;
    unsigned long long one = device_need(&p);
    p.mft_matrices = 3; /* two more M x G complex matrices */
    assert_int_equal(device_need(&p) - one, 2 * 8ULL * 100 * 132);
}

static void test_empty_grid_refused(void **state)
{
    (void)state;
    psf_problem p = fft_problem(1);
    p.npix = 0;
    psf_memory_need m;
    char err[256] = "";
    assert_int_equal(gpu->memory_need(&p, NULL, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "gpu: "));
}

/* Bytes beside the two buffers and the pupils on the single-image plan:
 * the staging tables of one field, the device pupil table (64 entries),
 * no maps, no detector. */
#define LEAN_SMALL_BYTES (64ULL << 10)

/* One 46341 x 46341 image (46341^2 = 2147488281 > 2^31 samples) at Q = 2
 * (n = 23170): the grid, 8 N^2 bytes, the image, 4 N^2, and the pupil's
 * (n + 2)^2 open samples' position and transmission, 4 bytes each (three
 * modes' basis would pass 2 GiB: evaluated per image instead, not kept);
 * 30.1 GB in all, which leaves an H200's 143 GB room for cuFFT's work area. */
static void test_single_image_46341(void **state)
{
    (void)state;
    psf_problem p = fft_problem(1);
    p.npix = 46341;
    p.pupil_samples = 23170;
    const unsigned long long plane = 46341ULL * 46341, open = 23172ULL * 23172;
    const unsigned long long bufs = 12 * plane, pupils = open * 4 * 2;
    unsigned long long d = device_need(&p);
    printf("N = 46341, one image: 2 grid-sized buffers (the grid %llu bytes, the image %llu) + "
           "the pupil's open samples %llu + %llu bytes more = %.2f GB beside cuFFT's work area\n",
           8 * plane, 4 * plane, pupils, d - bufs - pupils, d / 1e9);
    assert_true(d >= bufs + pupils);
    assert_true(d - bufs - pupils <= LEAN_SMALL_BYTES);
    assert_true(d < 143000000000ULL);
    /* Exactly 12 bytes per grid sample: two sizes' difference. */
    p.npix = 46339;
    assert_int_equal(d - device_need(&p), 12 * (plane - 46339ULL * 46339));
    /* A second pitch: its open samples' arrays alone, no index over the grid. */
    p.npix = 46341;
    p.pupil_pitches = 2;
    assert_int_equal(device_need(&p) - d, pupils);
    /* Any batch at this size is computed one image at a time. */
    p.pupil_pitches = 1;
    p.max_batch = 64;
    assert_int_equal(device_need(&p), d);
}

/* The single-image plan against the batch plan at one image per pass:
 * the transform and a second image buffer (12 N^2 bytes), the pupil
 * build's five grids (20 N^2) and the index kept (4 N^2 + 4) fewer,
 * 36 N^2 + 4 in all, less the small tables counted only on the
 * single-image plan. */
static void test_single_image_plan_saves(void **state)
{
    (void)state;
    static const int sizes[] = {4096, 4099, 32767};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
        psf_problem p = fft_problem(2);
        p.npix = sizes[i];
        p.pupil_samples = sizes[i] / 2;
        const unsigned long long plane = (unsigned long long)sizes[i] * sizes[i];
        unsigned long long batch = device_need(&p);
        p.max_batch = 1;
        unsigned long long lean = device_need(&p);
        printf("N = %d: batch plan %llu bytes, single-image plan %llu (%.2f N^2 fewer)\n", sizes[i],
               batch, lean, (double)(batch - lean) / plane);
        assert_true(batch > lean);
        assert_true(batch - lean <= 36 * plane + 4);
        assert_true(batch - lean + LEAN_SMALL_BYTES >= 36 * plane + 4);
    }
    /* Below N = 4096 a batch of one keeps the batch plan (and its CUDA graph). */
    psf_problem p = fft_problem(1);
    p.npix = 4095;
    unsigned long long one = device_need(&p);
    p.max_batch = 2;
    assert_int_equal(device_need(&p), one);
}

static void test_too_large_refused(void **state)
{
    (void)state;
    psf_problem p = fft_problem(1);
    p.npix = 65536; /* open samples are numbered in 32 bits */
    psf_memory_need m;
    char err[256] = "";
    assert_int_equal(gpu->memory_need(&p, NULL, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "65536x65536"));
    assert_non_null(strstr(err, "1..65535"));
}

int main(void)
{
    gpu = psf_backend_gpu();
    if (!gpu) {
        printf("skipped: %s\n", gpu_module_error());
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_and_pitches),       cmocka_unit_test(test_mft_matrices),
        cmocka_unit_test(test_empty_grid_refused),      cmocka_unit_test(test_single_image_46341),
        cmocka_unit_test(test_single_image_plan_saves), cmocka_unit_test(test_too_large_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
