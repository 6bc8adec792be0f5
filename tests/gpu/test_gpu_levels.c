/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU's levels path (gpu/levels.h, issue 17) against its own float
 * path, for every levels_case (linear, log and sqrt at 8 and 16 bits, as
 * PNG and as HDF5 uint16, FFT and MFT "poppy" sets: the levels turned on
 * the device, normalization "pupil"): every level run_levels copies equal
 * to psf_png_stretch_levels of the image run() computes for the same
 * batch (both take the batched path with the same sub-batches, so the
 * same floats), in runs of 40 and of 3 images (sub-batches of 2 and 1;
 * run() of one image alone takes the graph path, whose floats are not
 * compared); the Strehl ratio and axis value equal to image_set_measure's
 * bit for bit (the same float peak and pixel), no bad pixels counted, and
 * for "pupil" the captured fraction within 1e-12 of the host's pixel-order
 * sum (the device sums in another order, in double). Skipped (exit 77)
 * when psfsim has no GPU backend or no CUDA device. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "tests/support/levels_harness.h"
#include "tests/support/psf_harness.h"
#include "tests/support/testutil.h"

static const psf_backend_ops *gpu;

#define SET                                                                                        \
    "name = \"l\"; %s optics: { wavelength_nm = 600; aperture: { diameter_m = 1.0;"                \
    " obscuration = 0.2; spiders: { count = 3; width_m = 0.02; }; }; };"                           \
    " sampling: { pupil_samples = 64; padding = 2.0; }; aberrations: { zernike = ((8, 0.08)); };"  \
    " sweep: { defocus = [%s]; }; output: { %s };"

/* 40 defocus values from -2 to 2 waves. */
static const char *sweep(void)
{
    static char s[1024];
    size_t n = 0;
    for (int i = 0; i < 40; ++i)
        n += (size_t)snprintf(s + n, sizeof s - n, "%s%.4f", i ? ", " : "", -2.0 + 4.0 * i / 39);
    return s;
}

static void check(const char *top, const char *output, int batch)
{
    char cfg[4096];
    snprintf(cfg, sizeof cfg, SET, top, sweep(), output);
    levels_diff d;
    assert_int_equal(levels_harness_compare(cfg, gpu, batch, &d), 0);
    printf("%-22s %-64s batch %2d: %zu levels, %zu wrong, %d measures wrong, total rel %.3g\n", top,
           output, batch, d.levels, d.levels_wrong, d.measures_wrong, d.total_rel);
    assert_int_equal(d.nimages, 40);
    assert_true(d.levels_wrong == 0);
    assert_int_equal(d.measures_wrong, 0);
    assert_true(d.total_rel <= 1e-12);
}

/* Every case (levels_case) in runs of two sizes. */
static void test_cases(void **state)
{
    (void)state;
    const int batch[2] = {40, 3};
    for (int i = 0; i < LEVELS_CASES; ++i) {
        char top[128], out[256];
        levels_case(i, top, sizeof top, out, sizeof out);
        for (int j = 0; j < 2; ++j)
            check(top, out, batch[j]);
    }
}

int main(void)
{
    char why[1024];
    if (!(gpu = harness_gpu(why, sizeof why))) {
        printf("skipped: %s\n", why);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
