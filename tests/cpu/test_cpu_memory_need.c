/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU backend's memory need (psf_backend_ops.memory_need,
 * cpu/backend.c) against the terms it lists, computed by hand: the FFT's
 * buffers or the MFT's matrices, box and scratch; the pupils per pitch;
 * the grids a pupil is built on. app/run/set_limits.c adds its own terms to
 * these (tests/app/run/test_limits.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "backend/backend.h"

static const int g_n[1] = {4}, g_m[1] = {0};

/* N = 128 by FFT, n = 64 samples across D, one mode (Noll 4). */
static psf_problem fft_problem(void)
{
    psf_problem p;
    memset(&p, 0, sizeof p);
    p.npix = 128;
    p.aperture = (psf_aperture){.shape = APERTURE_CIRCULAR, .diameter_m = 1.0};
    p.modes = (psf_modes){.nterms = 1, .n = g_n, .m = g_m};
    p.max_batch = 8;
    p.nimages = 8;
    p.pupil_samples = 64;
    return p;
}

static void test_fft_terms(void **state)
{
    (void)state;
    psf_problem p = fft_problem();
    psf_memory_need m;
    char err[256] = "";
    assert_int_equal(psf_backend_cpu.memory_need(&p, NULL, &m, err, sizeof err), 0);
    assert_int_equal(m.transform, 16ULL * 128 * 128); /* in and out, complex float */
    /* (64 + 2)^2 open samples < 128^2: index, transmission, OPD, 1 mode. */
    assert_int_equal(m.pupils, 66ULL * 66 * 4 * (3 + 1));
    assert_int_equal(m.scratch, 4ULL * 128 * 128); /* the aperture grid */
    assert_int_equal(m.host, m.transform + m.pupils + m.scratch);
    assert_int_equal(m.device, 0);
    /* Three pitches keep three pupils; an OPD map is resampled on a grid too. */
    static const float opd[4] = {0};
    p.pupil_pitches = 3;
    p.opd_map = opd;
    p.opd_rows = p.opd_cols = 2;
    assert_int_equal(psf_backend_cpu.memory_need(&p, NULL, &m, err, sizeof err), 0);
    assert_int_equal(m.pupils, 3 * 66ULL * 66 * 16);
    assert_int_equal(m.scratch, 2 * 4ULL * 128 * 128);
    /* Unknown pupil samples: the whole grid may be open. */
    p.pupil_samples = 0;
    p.pupil_pitches = 0;
    assert_int_equal(psf_backend_cpu.memory_need(&p, NULL, &m, err, sizeof err), 0);
    assert_int_equal(m.pupils, 128ULL * 128 * 16);
}

static void test_mft_terms(void **state)
{
    (void)state;
    psf_problem p = fft_problem();
    p.npix = 100; /* M */
    p.mft = 1;
    p.pupil_npix = 68; /* G = n + 4 */
    p.mft_matrices = 3;
    psf_memory_need m;
    char err[256] = "";
    assert_int_equal(psf_backend_cpu.memory_need(&p, NULL, &m, err, sizeof err), 0);
    /* Three matrices 8 G M, the box 8 G^2, the products' scratch 8 G M + 8 M^2. */
    assert_int_equal(m.transform,
                     3 * 8ULL * 68 * 100 + 8ULL * 68 * 68 + 8ULL * 68 * 100 + 8ULL * 100 * 100);
    assert_int_equal(m.pupils, 66ULL * 66 * 16); /* (n + 2)^2 < G^2 */
    assert_int_equal(m.scratch, 4ULL * 68 * 68);
    /* Many large matrices: at most PSF_MFT_TABLE_BYTES of them and one more. */
    p.npix = 4096;
    p.pupil_npix = 4100;
    p.mft_matrices = 1000;
    assert_int_equal(psf_backend_cpu.memory_need(&p, NULL, &m, err, sizeof err), 0);
    unsigned long long one = 8ULL * 4100 * 4096;
    assert_int_equal(m.transform,
                     PSF_MFT_TABLE_BYTES + one + 8ULL * 4100 * 4100 + one + 8ULL * 4096 * 4096);
}

static void test_empty_grid_refused(void **state)
{
    (void)state;
    psf_problem p = fft_problem();
    psf_memory_need m;
    char err[256] = "";
    p.npix = 0;
    assert_int_equal(psf_backend_cpu.memory_need(&p, NULL, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "cpu: "));
    p.npix = 64;
    p.mft = 1; /* an MFT without its pupil grid */
    assert_int_equal(psf_backend_cpu.memory_need(&p, NULL, &m, err, sizeof err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fft_terms),
        cmocka_unit_test(test_mft_terms),
        cmocka_unit_test(test_empty_grid_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
