/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU backend's memory need (psf_backend_ops.memory_need,
 * gpu/backend.cu): known with the module loaded but no CUDA device (no
 * CUDA call), growing as it should with the batch, the pitches and the MFT
 * matrices. Skipped (exit 77) when psfsim has no GPU module. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "app/select/gpu_module.h"
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

int main(void)
{
    gpu = psf_backend_gpu();
    if (!gpu) {
        printf("skipped: %s\n", gpu_module_error());
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_and_pitches),
        cmocka_unit_test(test_mft_matrices),
        cmocka_unit_test(test_empty_grid_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
