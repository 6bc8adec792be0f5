/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU backend's run_levels (backend/backend.h, issue 17) against its
 * float path: every level equal to psf_png_stretch_levels of run()'s
 * image (after image_set_measure's turn for "poppy"), and the Strehl
 * ratio and axis value equal to image_set_measure's bit for bit, for
 * linear, log and sqrt at 8 and 16 bits, FFT and MFT ("poppy") sets, with
 * normalization "pupil" the captured fraction equal too (the same
 * pixel-order sum); a set with a FITS file or an MFT "sum" set is not a
 * levels set (image_set_levels_out), and run_levels refuses a problem
 * without a levels output. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "app/set/image_set.h"
#include "app/set/measure.h"
#include "backend/backend.h"
#include "backend/levels.h"
#include "tests/support/levels_harness.h"
#include "tests/support/testutil.h"

#define SET                                                                                        \
    "name = \"l\"; %s optics: { wavelength_nm = 600; aperture: { diameter_m = 1.0;"                \
    " obscuration = 0.2; spiders: { count = 3; width_m = 0.02; }; }; };"                           \
    " sampling: { pupil_samples = 40; padding = 2.0; }; aberrations: { zernike = ((8, 0.08)); };"  \
    " sweep: { defocus = [-1.5, -0.4, 0.0, 0.3, 2.5]; }; output: { %s };"

static void check(const char *top, const char *output, int batch)
{
    char cfg[2048];
    snprintf(cfg, sizeof cfg, SET, top, output);
    levels_diff d;
    assert_int_equal(levels_harness_compare(cfg, &psf_backend_cpu, batch, &d), 0);
    printf("%-22s %-70s: %zu levels, %zu wrong, %d measures wrong, total rel %.3g\n", top, output,
           d.levels, d.levels_wrong, d.measures_wrong, d.total_rel);
    assert_int_equal(d.nimages, 5);
    assert_true(d.levels == (size_t)5 * d.npix * d.npix);
    assert_true(d.levels_wrong == 0);
    assert_int_equal(d.measures_wrong, 0);
    assert_true(d.total_rel == 0.0);
}

/* Every case (levels_case) in runs of two sizes. */
static void test_cases(void **state)
{
    (void)state;
    const int batch[2] = {2, 64};
    for (int i = 0; i < LEVELS_CASES; ++i) {
        char top[128], out[256];
        levels_case(i, top, sizeof top, out, sizeof out);
        for (int j = 0; j < 2; ++j)
            check(top, out, batch[j]);
    }
}

/* Sets whose images the host needs as floats are not levels sets. */
static void test_not_levels_sets(void **state)
{
    (void)state;
    const char *outs[] = {"png: { bits = 16; }; fits: { enabled = true; };",
                          "png: { bits = 16; }; hdf5: { enabled = true; };",
                          "png: { bits = 16; }; fits: { enabled = true; cube = true; };"};
    char cfg[2048];
    levels_diff d;
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; ++i) {
        snprintf(cfg, sizeof cfg, SET, "", outs[i]);
        assert_int_equal(levels_harness_compare(cfg, &psf_backend_cpu, 4, &d), -1);
    }
    snprintf(cfg, sizeof cfg, SET, "normalization = \"sum\";",
             "png: { bits = 16; }; orientation = \"poppy\";"); /* poppy: an MFT set */
    assert_int_equal(levels_harness_compare(cfg, &psf_backend_cpu, 4, &d), -1);
    snprintf(cfg, sizeof cfg, SET, "normalization = \"sum\";", "png: { bits = 16; };");
    assert_int_equal(levels_harness_compare(cfg, &psf_backend_cpu, 4, &d),
                     0); /* FFT "sum": levels */
}

/* A problem without a levels output: run_levels refuses it, saying why. */
static void test_refused(void **state)
{
    (void)state;
    psf_problem p;
    memset(&p, 0, sizeof p);
    p.npix = 16;
    p.aperture.shape = APERTURE_CIRCULAR;
    p.aperture.diameter_m = 1.0;
    p.max_batch = 1;
    p.nimages = 1;
    psf_backend *b = NULL;
    char err[256] = "";
    assert_int_equal(psf_backend_cpu.create(&p, NULL, &b, err, sizeof err), 0);
    psf_job job;
    memset(&job, 0, sizeof job);
    unsigned short lev[256];
    double m[PSF_MEASURES];
    assert_int_equal(psf_backend_cpu.run_levels(b, &job, 1, lev, m, err, sizeof err), -1);
    assert_non_null(strstr(err, "no levels output"));
    psf_backend_cpu.destroy(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_not_levels_sets),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
