/* SPDX-License-Identifier: BSD-3-Clause */
/* config_load: every number key bounded to where the computation means
 * something (docs/config.md, the key tables): one value past each bound is
 * refused with "FILE:LINE: KEY: ...", the bound itself is accepted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/config/config.h"
#include "tests/support/testutil.h"

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("config_bounds");
    return g_dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmtree(g_dir);
    free(g_dir);
    g_dir = NULL;
    return 0;
}

/* A config: line 1 the name, line 2 the optics group with OPTICS inside,
 * line 3 the sampling, line 4 TAIL. */
static const char *text(const char *optics, const char *tail)
{
    return tu_format("name = \"b\";\n"
                     "optics: { %s };\n"
                     "sampling: { pupil_samples = 32; };\n"
                     "%s\n",
                     optics, tail);
}

#define OPTICS "wavelength_nm = 550.0; f_number = 10.0; aperture: { diameter_m = 1.0; };"

/* Load text: with want NULL it must load; else fail with exactly
 * "DIR/b.cfg" + want (want ending in "*": the message starts so). */
static void expect(const char *cfg_text, const char *want)
{
    char path[4200], err[2048] = "";
    snprintf(path, sizeof path, "%s/b.cfg", g_dir);
    assert_int_equal(tu_write_file(path, cfg_text), 0);
    psf_config cfg;
    int rc = config_load(path, &cfg, err, sizeof err);
    config_free(&cfg);
    if (!want) {
        if (rc != 0) fail_msg("refused: %s\n%s", err, cfg_text);
        return;
    }
    char full[4400];
    snprintf(full, sizeof full, "%s/b.cfg%s", g_dir, want);
    if (rc == 0) fail_msg("loaded, expected \"%s\"\n%s", full, cfg_text);
    size_t n = strlen(full);
    if (full[n - 1] == '*') {
        if (strncmp(err, full, n - 1) != 0) fail_msg("\"%s\" does not start \"%s\"", err, full);
        return;
    }
    assert_string_equal(err, full);
}

static void test_wavelengths(void **state)
{
    (void)state;
    expect(text("wavelength_nm = 0.5; aperture: { diameter_m = 1.0; };", ""),
           ":2: optics.wavelength_nm: must be >= 1 (got 0.5)");
    expect(text("wavelength_nm = 2e6; aperture: { diameter_m = 1.0; };", ""),
           ":2: optics.wavelength_nm: must be <= 1000000 (got 2000000)");
    expect(text("wavelength_nm = 1.0; aperture: { diameter_m = 1.0; };", ""), NULL);
    expect(text("wavelength_nm = 1e6; aperture: { diameter_m = 1.0; };", ""), NULL);
    expect(text("wavelengths_nm = [500.0, 1e300]; aperture: { diameter_m = 1.0; };", ""),
           ":2: optics.wavelengths_nm[1]: must be <= 1000000 (got 1e+300)");
    expect(text(OPTICS, "sweep: { wavelength_nm = [500.0, 0.001]; };"),
           ":4: sweep.wavelength_nm[1]: must be >= 1 (got 0.001)");
}

static void test_aperture(void **state)
{
    (void)state;
    expect(text("wavelength_nm = 550.0; aperture: { diameter_m = 1e200; };", ""),
           ":2: optics.aperture.diameter_m: must be <= 10000 (got 1e+200)");
    expect(text("wavelength_nm = 550.0; aperture: { diameter_m = 1e-7; };", ""),
           ":2: optics.aperture.diameter_m: must be >= 1e-06 (got 1e-07)");
    /* A denormal diameter (D/n underflows further). */
    expect(text("wavelength_nm = 550.0; aperture: { diameter_m = 4e-320; };", ""),
           ":2: optics.aperture.diameter_m: must be >= 1e-06 (got *");
    expect(text("wavelength_nm = 550.0; aperture: { diameter_m = 1e4; };", ""), NULL);
    expect(text("wavelength_nm = 550.0; aperture: { diameter_m = 1e-6; };", ""), NULL);
    expect(text("wavelength_nm = 550.0; aperture: { diameter_m = 1.0; spiders: { count = 4; "
                "width_m = 1e-12; }; };",
                ""),
           ":2: optics.aperture.spiders.width_m: must be >= 1e-09 (got 1e-12)");
    expect(text("wavelength_nm = 550.0; aperture: { diameter_m = 1.0; spiders: { count = 4; "
                "width_m = 0.01; angle_deg = 1e300; }; };",
                ""),
           ":2: optics.aperture.spiders.angle_deg: must be in [-360, 360] (got 1e+300)");
    expect(text("wavelength_nm = 550.0; aperture: { diameter_m = 1.0; spiders: { count = 4; "
                "width_m = 1e-9; angle_deg = -360.0; }; };",
                ""),
           NULL);
    expect(text("wavelength_nm = 550.0; f_number = 0.1; aperture: { diameter_m = 1.0; };", ""),
           ":2: optics.f_number: must be >= 0.5 (a numerical aperture of 1) (got 0.1)");
    expect(text("wavelength_nm = 550.0; f_number = 1e6; aperture: { diameter_m = 1.0; };", ""),
           ":2: optics.f_number: must be <= 100000 (got 1000000)");
}

/* The case: 1e300 waves gave Strehl 1 (or an all-NaN image). The
 * bound is a sanity bound, 1e6 waves (config.h, CFG_MAX_WAVES): the
 * sampling decides what is resolved (app/set/set_checks.h). */
static void test_coefficients(void **state)
{
    (void)state;
    expect(text(OPTICS, "aberrations: { zernike = (4, 1e300); };"),
           ":4: aberrations.zernike: the coefficient must be in [-1000000, 1000000] (waves RMS) "
           "(got 1e+300)");
    expect(text(OPTICS, "aberrations: { zernike = ((2, 0.1), (4, -1000000.5)); };"),
           ":4: aberrations.zernike[1]: the coefficient must be in [-1000000, 1000000] (waves "
           "RMS) (got -1000000.5)");
    expect(text(OPTICS, "aberrations: { zernike = ((4, -1000000.0)); };"), NULL);
    /* The 1000-wave bound refused a 1,448-wave tilt that 11,585 pupil
     * samples resolve (4 x 1448 / 11585 < 0.5 waves a sample). */
    expect("name = \"b\";\noptics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
           "sampling: { pupil_samples = 11585; padding = 4.0; };\n"
           "aberrations: { zernike = (2, 1448.0); };\n",
           NULL);
    /* nm: 1e6 waves at the shortest wavelength of the set, here swept. */
    expect(text(OPTICS, "aberrations: { units = \"nm\"; zernike = (4, 400000001.0); };\n"
                        "sweep: { wavelength_nm = [700.0, 400.0]; };"),
           ":4: aberrations.zernike: the coefficient must be in [-400000000, 400000000] (1e+06 "
           "waves RMS at 400 nm, the shortest wavelength) (got 400000001)");
    expect(text(OPTICS, "aberrations: { units = \"nm\"; zernike = ((4, 400000000.0)); };\n"
                        "sweep: { wavelength_nm = [700.0, 400.0]; };"),
           NULL);
    /* ... or drawn (it was not counted: the bound was read before them). */
    expect("name = \"b\";\noptics: { f_number = 10.0; aperture: { diameter_m = 1.0; }; };\n"
           "sampling: { pupil_samples = 32; };\n"
           "aberrations: { units = \"nm\"; zernike = (4, 400000001.0); };\n"
           "sweep: { random: { count = 2; seed = 1; wavelength_nm = [700.0, 400.0]; }; };\n",
           ":4: aberrations.zernike: the coefficient must be in [-400000000, 400000000] (1e+06 "
           "waves RMS at 400 nm, the shortest wavelength) (got 400000001)");
    expect(text(OPTICS, "sweep: { defocus = [0.0, 2e6]; };"),
           ":4: sweep.defocus[1]: must be in [-1000000, 1000000] (waves RMS) (got 2000000)");
    expect(text(OPTICS, "sweep: { zernike = ((5, [0.0, 1e9])); };"),
           ":4: sweep.zernike[0]: the value 1 must be in [-1000000, 1000000] (waves RMS) (got "
           "1000000000)");
    /* A focus shift: dz / (16 sqrt 3 F^2) um RMS of defocus, at most 1e6
     * waves of 550 nm: 550 * 16 sqrt(3) * 100 um * 1000 = 1524205000 (6
     * digits). */
    expect(text(OPTICS, "sweep: { focus_shift_um = [0.0, -1.6e9]; };"),
           ":4: sweep.focus_shift_um[1]: must be in [-1524200000, 1524200000] (a defocus of "
           "1e+06 waves RMS at 550 nm, the shortest wavelength, through f_number 10) (got "
           "-1600000000)");
    expect(text(OPTICS, "sweep: { focus_shift_um = [0.0, -1.5e9]; };"), NULL);
}

/* sweep.random's lists take the bounds of the config's own keys, per entry
 * (a focus shift of 1e300 um gave a flat image, Strehl 1, exit 0). */
static void test_random_lists(void **state)
{
    (void)state;
    expect(text(OPTICS, "sweep: { random: { count = 2; seed = 1; focus_shift_um = [0.0, 1e300]; "
                        "}; };"),
           ":4: sweep.random.focus_shift_um[1]: must be in [-1524200000, 1524200000] (a defocus "
           "of 1e+06 waves RMS at 550 nm, the shortest wavelength, through f_number 10) (got "
           "1e+300)");
    expect(text(OPTICS, "sweep: { random: { count = 2; seed = 1; focus_shift_um = [-1.5e9]; }; };"),
           NULL);
#define WL_CFG(list)                                                                               \
    "name = \"b\";\noptics: { f_number = 10.0; aperture: { diameter_m = 1.0; }; };\n"              \
    "sampling: { pupil_samples = 32; };\n"                                                         \
    "sweep: { random: { count = 2; seed = 1; wavelength_nm = " list "; }; };\n"
    expect(WL_CFG("[500.0, 1e-300]"),
           ":4: sweep.random.wavelength_nm[1]: must be >= 1 (got 1e-300)");
    expect(WL_CFG("[1e300]"), ":4: sweep.random.wavelength_nm[0]: must be <= 1000000 (got 1e+300)");
    expect(WL_CFG("[1.0, 1e6]"), NULL);
#undef WL_CFG
    /* The focus shifts' bound takes the drawn wavelengths' shortest. */
    expect("name = \"b\";\noptics: { f_number = 10.0; aperture: { diameter_m = 1.0; }; };\n"
           "sampling: { pupil_samples = 32; };\n"
           "sweep: { random: { count = 2; seed = 1; wavelength_nm = [400.0];\n"
           "focus_shift_um = [1.2e9]; }; };\n",
           ":5: sweep.random.focus_shift_um[0]: must be in [-1108510000, 1108510000] (a defocus "
           "of 1e+06 waves RMS at 400 nm, the shortest wavelength, through f_number 10) (got "
           "1200000000)");
}

static void test_output(void **state)
{
    (void)state;
    expect(text(OPTICS, "output: { pixel_scale = 1e-300; };"),
           ":4: output.pixel_scale: must be >= 1e-06 (got 1e-300)");
    expect(text(OPTICS, "output: { pixel_scale = 16.5; };"),
           ":4: output.pixel_scale: must be <= 16 (pupil_samples / 2: half a period of the "
           "sampled pupil's transform) (got 16.5)");
    expect(text(OPTICS, "output: { pixel_scale = 16.0; };"), NULL);
    /* 16 lambda/D at 550 nm through f/10: 88 um. */
    expect(text(OPTICS, "output: { pixel_scale_um = 89.0; };"),
           ":4: output.pixel_scale_um: must be <= 88 (pupil_samples / 2 = 16 lambda/D at 550 nm, "
           "the shortest wavelength, through f_number 10: half a period of the sampled pupil's "
           "transform) (got 89)");
    expect(text(OPTICS, "output: { pixel_scale_um = 1e-9; };"),
           ":4: output.pixel_scale_um: must be >= 5.5e-06 (1e-06 lambda/D at 550 nm, the longest "
           "wavelength, through f_number 10) (got 1e-09)");
    expect(text(OPTICS, "output: { png: { dynamic_range = 1e50; }; };"),
           ":4: output.png.dynamic_range: must be <= 1e+38 (got 1e+50)");
    expect(text(OPTICS, "output: { png: { dynamic_range = 1e38; }; };"), NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wavelengths),  cmocka_unit_test(test_aperture),
        cmocka_unit_test(test_coefficients), cmocka_unit_test(test_random_lists),
        cmocka_unit_test(test_output),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
