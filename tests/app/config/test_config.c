/* SPDX-License-Identifier: BSD-3-Clause */
/* config_load: every key of docs/config.md, the defaults, and one test per
 * kind of mistake, each with its exact message; then input it must not
 * trust: integer literals past their range, names too long for the set's
 * files, standard input and streams, a file past the size cap, @include
 * fan-out past the caps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/config/config.h"
#include "app/config/config_priv.h"
#include "tests/support/testutil.h"

static char *g_dir; /* a fresh temp dir per test */

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("config");
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

#define ASSERT_NEAR(a, b, tol)                                                                     \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (tol))) fail_msg("%s = %.17g, expected %.17g", #a, a_, b_);         \
    } while (0)

/* DIR/name, in a static buffer per slot. */
static const char *in_dir(const char *name)
{
    static char buf[4][4096];
    static int slot;
    slot = (slot + 1) % 4;
    snprintf(buf[slot], sizeof buf[slot], "%s/%s", g_dir, name);
    return buf[slot];
}

/* Write text to DIR/name and load it; returns config_load's status. */
static int load(const char *name, const char *text, psf_config *cfg, char *err, size_t errlen)
{
    assert_int_equal(tu_write_file(in_dir(name), text), 0);
    return config_load(in_dir(name), cfg, err, errlen);
}

/* Load text that must fail, and check the message is exactly
 * "DIR/name" followed by tail. */
static void expect_error(const char *text, const char *tail)
{
    psf_config cfg;
    char err[2048], want[4096];
    int rc = load("x.cfg", text, &cfg, err, sizeof err);
    config_free(&cfg);
    snprintf(want, sizeof want, "%s%s", in_dir("x.cfg"), tail);
    if (rc != -1) fail_msg("loaded, expected the error \"%s\"", want);
    assert_string_equal(err, want);
}

/* A minimal valid config with extra text appended at top level. */
#define MINIMAL                                                                                    \
    "name = \"t\";\n"                                                                              \
    "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"                       \
    "sampling: { pupil_samples = 32; };\n"

static void test_full_config(void **state)
{
    (void)state;
    assert_int_equal(tu_write_file(in_dir("pupil.png"), "not really a png"), 0);
    assert_int_equal(tu_write_file(in_dir("opd.fits"), "not really a fits"), 0);
    const char *text = "# every key\n"
                       "name = \"hst-f.24_x\";\n"    /* 2 */
                       "optics: {\n"                 /* 3 */
                       "  wavelength_nm = 600.5;\n"  /* 4 */
                       "  f_number = 24.0;\n"        /* 5 */
                       "  aperture: {\n"             /* 6 */
                       "    shape = \"file\";\n"     /* 7 */
                       "    file = \"pupil.png\";\n" /* 8 */
                       "    diameter_m = 2.4;\n"     /* 9 */
                       "    obscuration = 0.33;\n"   /* 10 */
                       "    spiders: { count = 4; width_m = 0.0264; angle_deg = 45.0; };\n"
                       "    edge = \"binary\";\n"
                       "  };\n"
                       "};\n"
                       "sampling: { pupil_samples = 256; padding = 2.5; };\n"
                       "aberrations: {\n"
                       "  convention = \"fringe\";\n"
                       "  units = \"nm\";\n"
                       "  zernike = ( (4, 25.0), (9, -5.5), [7, 3] );\n"
                       "  opd_map: { file = \"opd.fits\"; units = \"waves\"; scale = 0.5; };\n"
                       "};\n"
                       "normalization = \"sum\";\n"
                       "sweep: {\n"
                       "  wavelength_nm = [450.0, 550.0, 650.0];\n"
                       "  defocus = [-10.0, 0.0, 10.0, 20.0];\n"
                       "  focus_shift_um = (-50, 0.0, 50);\n"
                       "  zernike = ( (5, [0.0, 1.0]), (6, (2.0, 3, 4.0)) );\n"
                       "};\n"
                       "output: {\n"
                       "  dir = \"results/hst\";\n"
                       "  png: { enabled = false; bits = 8; stretch = \"sqrt\"; "
                       "dynamic_range = 1.0e4; };\n"
                       "  fits: { enabled = true; };\n"
                       "};\n"
                       "backend = \"gpu\";\n";
    psf_config c;
    char err[1024] = "";
    int rc = load("full.cfg", text, &c, err, sizeof err);
    if (rc) fail_msg("%s", err);
    assert_string_equal(c.path, in_dir("full.cfg"));
    assert_string_equal(c.name, "hst-f.24_x");
    assert_int_equal(c.nwavelengths, 1);
    ASSERT_NEAR(c.wavelengths_nm[0], 600.5, 0);
    ASSERT_NEAR(c.weights[0], 1.0, 0);
    ASSERT_NEAR(c.f_number, 24.0, 0);
    assert_int_equal(c.aperture.shape, APERTURE_FILE);
    assert_string_equal(c.aperture_file, in_dir("pupil.png"));
    ASSERT_NEAR(c.aperture.diameter_m, 2.4, 0);
    ASSERT_NEAR(c.aperture.obscuration, 0.33, 0);
    assert_int_equal(c.aperture.spider_count, 4);
    ASSERT_NEAR(c.aperture.spider_width_m, 0.0264, 0);
    ASSERT_NEAR(c.aperture.spider_angle_deg, 45.0, 0);
    assert_int_equal(c.aperture.edge, EDGE_BINARY);
    assert_null(c.aperture.map);
    assert_int_equal(c.pupil_samples, 256);
    ASSERT_NEAR(c.padding, 2.5, 0);
    assert_int_equal(c.zconv, ZCONV_FRINGE);
    assert_int_equal(c.zunits, ZUNITS_NM);
    assert_int_equal(c.nzernike, 3);
    /* Fringe 4 = (2, 0), 9 = (4, 0), 7 = (3, 1). */
    assert_int_equal(c.zernike[0].j, 4);
    assert_int_equal(c.zernike[0].n, 2);
    assert_int_equal(c.zernike[0].m, 0);
    ASSERT_NEAR(c.zernike[0].coeff, 25.0, 0);
    assert_int_equal(c.zernike[1].j, 9);
    assert_int_equal(c.zernike[1].n, 4);
    assert_int_equal(c.zernike[1].m, 0);
    ASSERT_NEAR(c.zernike[1].coeff, -5.5, 0);
    assert_int_equal(c.zernike[2].j, 7);
    assert_int_equal(c.zernike[2].n, 3);
    assert_int_equal(c.zernike[2].m, 1);
    ASSERT_NEAR(c.zernike[2].coeff, 3.0, 0);
    assert_string_equal(c.opd_file, in_dir("opd.fits"));
    assert_int_equal(c.opd_units, ZUNITS_WAVES);
    ASSERT_NEAR(c.opd_scale, 0.5, 0);
    assert_int_equal(c.normalization, NORM_SUM);
    assert_int_equal(c.n_sweep_wavelength, 3);
    ASSERT_NEAR(c.sweep_wavelength_nm[0], 450.0, 0);
    ASSERT_NEAR(c.sweep_wavelength_nm[2], 650.0, 0);
    assert_int_equal(c.n_sweep_defocus, 4);
    ASSERT_NEAR(c.sweep_defocus[0], -10.0, 0);
    ASSERT_NEAR(c.sweep_defocus[3], 20.0, 0);
    assert_int_equal(c.n_sweep_focus_shift, 3);
    ASSERT_NEAR(c.sweep_focus_shift_um[0], -50.0, 0);
    ASSERT_NEAR(c.sweep_focus_shift_um[2], 50.0, 0);
    assert_int_equal(c.n_sweep_zernike, 2);
    assert_int_equal(c.sweep_zernike[0].j, 5); /* Fringe 5 = (2, 2) */
    assert_int_equal(c.sweep_zernike[0].n, 2);
    assert_int_equal(c.sweep_zernike[0].m, 2);
    assert_int_equal(c.sweep_zernike[0].nvalues, 2);
    ASSERT_NEAR(c.sweep_zernike[0].values[1], 1.0, 0);
    assert_int_equal(c.sweep_zernike[1].j, 6); /* Fringe 6 = (2, -2) */
    assert_int_equal(c.sweep_zernike[1].n, 2);
    assert_int_equal(c.sweep_zernike[1].m, -2);
    assert_int_equal(c.sweep_zernike[1].nvalues, 3);
    ASSERT_NEAR(c.sweep_zernike[1].values[0], 2.0, 0);
    ASSERT_NEAR(c.sweep_zernike[1].values[1], 3.0, 0);
    ASSERT_NEAR(c.sweep_zernike[1].values[2], 4.0, 0);
    assert_string_equal(c.output_dir, "results/hst");
    assert_int_equal(c.png_enabled, 0);
    assert_int_equal(c.png_bits, 8);
    assert_int_equal(c.png_stretch, STRETCH_SQRT);
    ASSERT_NEAR(c.png_dynamic_range, 1.0e4, 0);
    assert_int_equal(c.fits_enabled, 1);
    assert_int_equal(c.backend, BACKEND_GPU);
    assert_int_equal(config_image_count(&c), 3LL * 4 * 3 * 2 * 3);
    config_free(&c);
    assert_null(c.wavelengths_nm);
    config_free(&c); /* twice is harmless */
}

static void test_broadband(void **state)
{
    (void)state;
    psf_config c;
    char err[1024] = "";
    int rc = load("bb.cfg",
                  "name = \"bb\";\n"
                  "optics: { wavelengths_nm = [500.0, 550.0, 600.0]; weights = [1, 2, 1];\n"
                  "  aperture: { diameter_m = 0.2; }; };\n"
                  "sampling: { pupil_samples = 64; };\n",
                  &c, err, sizeof err);
    if (rc) fail_msg("%s", err);
    assert_int_equal(c.nwavelengths, 3);
    ASSERT_NEAR(c.wavelengths_nm[1], 550.0, 0);
    ASSERT_NEAR(c.weights[0], 0.25, 1e-15);
    ASSERT_NEAR(c.weights[1], 0.5, 1e-15);
    ASSERT_NEAR(c.weights[2], 0.25, 1e-15);
    config_free(&c);

    /* Weights default to equal. */
    rc = load("bb2.cfg",
              "name = \"bb\";\n"
              "optics: { wavelengths_nm = (500, 600.0); aperture: { diameter_m = 0.2; }; };\n"
              "sampling: { pupil_samples = 64; };\n",
              &c, err, sizeof err);
    if (rc) fail_msg("%s", err);
    assert_int_equal(c.nwavelengths, 2);
    ASSERT_NEAR(c.wavelengths_nm[0], 500.0, 0);
    ASSERT_NEAR(c.weights[0], 0.5, 0);
    ASSERT_NEAR(c.weights[1], 0.5, 0);
    config_free(&c);
}

static void test_defaults(void **state)
{
    (void)state;
    psf_config c;
    char err[1024] = "";
    int rc = load("min.cfg", MINIMAL, &c, err, sizeof err);
    if (rc) fail_msg("%s", err);
    assert_string_equal(c.name, "t");
    assert_int_equal(c.nwavelengths, 1);
    ASSERT_NEAR(c.wavelengths_nm[0], 550.0, 0);
    ASSERT_NEAR(c.weights[0], 1.0, 0);
    ASSERT_NEAR(c.f_number, 0.0, 0);
    assert_int_equal(c.aperture.shape, APERTURE_CIRCULAR);
    ASSERT_NEAR(c.aperture.diameter_m, 1.0, 0);
    ASSERT_NEAR(c.aperture.obscuration, 0.0, 0);
    assert_int_equal(c.aperture.spider_count, 0);
    assert_int_equal(c.aperture.edge, EDGE_GREY);
    assert_string_equal(c.aperture_file, "");
    assert_int_equal(c.pupil_samples, 32);
    ASSERT_NEAR(c.padding, 2.0, 0);
    assert_int_equal(c.zconv, ZCONV_NOLL);
    assert_int_equal(c.zunits, ZUNITS_WAVES);
    assert_int_equal(c.nzernike, 0);
    assert_string_equal(c.opd_file, "");
    assert_int_equal(c.opd_units, ZUNITS_NM);
    ASSERT_NEAR(c.opd_scale, 1.0, 0);
    assert_int_equal(c.normalization, NORM_PEAK);
    assert_int_equal(c.n_sweep_wavelength, 0);
    assert_int_equal(c.n_sweep_defocus, 0);
    assert_int_equal(c.n_sweep_focus_shift, 0);
    assert_int_equal(c.n_sweep_zernike, 0);
    assert_string_equal(c.output_dir, "out/t");
    assert_int_equal(c.png_enabled, 1);
    assert_int_equal(c.png_bits, 16);
    assert_int_equal(c.png_stretch, STRETCH_LOG);
    ASSERT_NEAR(c.png_dynamic_range, 1.0e6, 0);
    assert_int_equal(c.fits_enabled, 0);
    assert_int_equal(c.backend, BACKEND_AUTO);
    assert_int_equal(config_image_count(&c), 1);
    config_free(&c);

    /* Each default holds whatever the keys before it chose. */
    rc = load("hex.cfg",
              "name = \"t\";\n"
              "optics: { wavelength_nm = 550.0; aperture: { shape = \"hexagon\"; diameter_m = 1; "
              "spiders: { count = 0; }; }; };\n"
              "sampling: { pupil_samples = 32; };\n"
              "aberrations: { convention = \"fringe\"; units = \"nm\"; };\n"
              "output: { png: { bits = 8; }; };\n",
              &c, err, sizeof err);
    if (rc) fail_msg("%s", err);
    assert_int_equal(c.aperture.shape, APERTURE_HEXAGON);
    assert_int_equal(c.aperture.spider_count, 0);
    assert_int_equal(c.aperture.edge, EDGE_GREY);
    assert_int_equal(c.zconv, ZCONV_FRINGE);
    assert_int_equal(c.zunits, ZUNITS_NM);
    assert_int_equal(c.normalization, NORM_PEAK);
    assert_int_equal(c.png_stretch, STRETCH_LOG);
    assert_int_equal(c.backend, BACKEND_AUTO);
    config_free(&c);

    /* An OPD map's units and scale default to nm and 1. */
    assert_int_equal(tu_write_file(in_dir("opd.fits"), "x"), 0);
    rc = load("opd.cfg",
              MINIMAL "aberrations: { opd_map: { file = \"opd.fits\"; }; };\n"
                      "optics2 = 1;\n",
              &c, err, sizeof err);
    assert_int_equal(rc, -1); /* the unknown key, to check cleanup after a partial load */
    config_free(&c);
    rc = load("opd.cfg", MINIMAL "aberrations: { opd_map: { file = \"opd.fits\"; }; };\n", &c, err,
              sizeof err);
    if (rc) fail_msg("%s", err);
    assert_string_equal(c.opd_file, in_dir("opd.fits"));
    assert_int_equal(c.opd_units, ZUNITS_NM);
    ASSERT_NEAR(c.opd_scale, 1.0, 0);
    config_free(&c);
}

static void test_integer_for_float(void **state)
{
    (void)state;
    psf_config c;
    char err[1024] = "";
    int rc = load("int.cfg",
                  "name = \"i\";\n"
                  "optics: { wavelength_nm = 550; f_number = 10; aperture: { diameter_m = 2;\n"
                  "  obscuration = 0; spiders: { count = 3; width_m = 1; angle_deg = 90; }; }; };\n"
                  "sampling: { pupil_samples = 64L; padding = 3; };\n"
                  "aberrations: { zernike = ( (4, 1) ); };\n"
                  "sweep: { defocus = [1, 2]; wavelength_nm = [500, 600]; };\n"
                  "output: { png: { dynamic_range = 1000; }; };\n",
                  &c, err, sizeof err);
    if (rc) fail_msg("%s", err);
    ASSERT_NEAR(c.wavelengths_nm[0], 550.0, 0);
    ASSERT_NEAR(c.f_number, 10.0, 0);
    ASSERT_NEAR(c.aperture.diameter_m, 2.0, 0);
    ASSERT_NEAR(c.aperture.spider_width_m, 1.0, 0);
    ASSERT_NEAR(c.aperture.spider_angle_deg, 90.0, 0);
    assert_int_equal(c.pupil_samples, 64);
    ASSERT_NEAR(c.padding, 3.0, 0);
    ASSERT_NEAR(c.zernike[0].coeff, 1.0, 0);
    ASSERT_NEAR(c.sweep_defocus[1], 2.0, 0);
    ASSERT_NEAR(c.sweep_wavelength_nm[1], 600.0, 0);
    ASSERT_NEAR(c.png_dynamic_range, 1000.0, 0);
    config_free(&c);
}

static void test_unknown_key(void **state)
{
    (void)state;
    expect_error(MINIMAL "normalisation = \"sum\";\n",
                 ":4: normalisation: unknown key (did you mean normalization?)");
    expect_error("name = \"t\";\n"
                 "optics: {\n"
                 "  wavelenght_nm = 550.0;\n"
                 "  aperture: { diameter_m = 1.0; };\n"
                 "};\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":3: optics.wavelenght_nm: unknown key (did you mean optics.wavelength_nm?)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0;\n"
                 "  spiders: { count = 4;\n"
                 "    widht_m = 0.1; }; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":4: optics.aperture.spiders.widht_m: unknown key (did you mean "
                 "optics.aperture.spiders.width_m?)");
    expect_error(MINIMAL "output: { png: { bitz = 8; }; };\n",
                 ":4: output.png.bitz: unknown key (did you mean output.png.bits?)");
    /* A known key in the wrong place. */
    expect_error(MINIMAL "pupil_samples = 64;\n",
                 ":4: pupil_samples: unknown key (did you mean sampling.pupil_samples?)");
    /* Nothing close: the keys valid there. */
    expect_error(MINIMAL "sweep: { frobnicate = [1.0]; };\n",
                 ":4: sweep.frobnicate: unknown key (known keys here: wavelength_nm, defocus, "
                 "focus_shift_um, zernike, segment_zernike, random, table)");
}

static void test_wrong_type(void **state)
{
    (void)state;
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: {\n"
                 "  pupil_samples = \"128\"; };\n",
                 ":4: sampling.pupil_samples: expected an integer (got a string)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 128.0; };\n",
                 ":3: sampling.pupil_samples: expected an integer (got a float)");
    expect_error(MINIMAL "output: { png: { enabled = 1; }; };\n",
                 ":4: output.png.enabled: expected true or false (got an integer)");
    expect_error(MINIMAL "output = \"dir\";\n",
                 ":4: output: expected a group { ... } (got a string)");
    expect_error(MINIMAL "sweep: { defocus = 0.5; };\n",
                 ":4: sweep.defocus: expected a list of numbers [a, b, ...] (got a float)");
    expect_error(MINIMAL "sweep: { defocus = (0.5,\n \"x\"); };\n",
                 ":5: sweep.defocus[1]: expected a number (got a string)");
    expect_error(MINIMAL "aberrations: { zernike = ( (4.0, 0.25) ); };\n",
                 ":4: aberrations.zernike[0]: expected the index j to be an integer (got a float)");
    expect_error(MINIMAL "aberrations: { zernike = ( (4, \"a\") ); };\n",
                 ":4: aberrations.zernike[0]: expected the coefficient to be a number (got a "
                 "string)");
    expect_error(MINIMAL "aberrations: { zernike = ( (4, 0.25, 1.0) ); };\n",
                 ":4: aberrations.zernike[0]: expected a pair (j, coefficient) (got 3 elements)");
    expect_error(MINIMAL "aberrations: { zernike = [4, 11]; };\n",
                 ":4: aberrations.zernike[0]: expected a pair (j, coefficient) (got an integer)");
    expect_error(MINIMAL "sweep: { zernike = ( (7, 0.5) ); };\n",
                 ":4: sweep.zernike[0]: expected a list of values [a, b, ...] (got a float)");
}

static void test_out_of_range(void **state)
{
    (void)state;
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 32;\n"
                 "  padding = 0.5; };\n",
                 ":4: sampling.padding: must be >= 1 (got 0.5)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = -550.0; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":2: optics.wavelength_nm: must be > 0 (got -550)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 4; };\n",
                 ":3: sampling.pupil_samples: must be >= 8 (got 4)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 100000; };\n",
                 ":3: sampling.pupil_samples: must be <= 65536 (got 100000)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 40000; };\n",
                 ":3: sampling.pupil_samples: FFT size N = floor(padding * pupil_samples + 0.5) = "
                 "floor(2 * 40000 + 0.5) = 80000 must be <= 65536");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 1000; padding = 65.6; };\n",
                 ":3: sampling.padding: FFT size N = floor(padding * pupil_samples + 0.5) = "
                 "floor(65.6 * 1000 + 0.5) = 65600 must be <= 65536");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0;\n"
                 "  obscuration = 1; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":3: optics.aperture.obscuration: must be in [0, 1) (got 1)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0;\n"
                 "  obscuration = -0.1; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":3: optics.aperture.obscuration: must be in [0, 1) (got -0.1)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 0; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":2: optics.aperture.diameter_m: must be > 0 (got 0)");
    expect_error(
        "name = \"t\";\n"
        "optics: { wavelength_nm = 550.0; f_number = 0.0; aperture: { diameter_m = 1; }; };\n"
        "sampling: { pupil_samples = 32; };\n",
        ":2: optics.f_number: must be > 0 (got 0)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0;\n"
                 "  spiders: { count = 4; width_m = 1.5; }; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":3: optics.aperture.spiders.width_m: must be < optics.aperture.diameter_m (1) "
                 "(got 1.5)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0;\n"
                 "  spiders: { count = -1; width_m = 0.1; }; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":3: optics.aperture.spiders.count: must be >= 0 (got -1)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0;\n"
                 "  edge = \"soft\"; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":3: optics.aperture.edge: must be \"grey\" or \"binary\" (got \"soft\")");
    expect_error("name = \"a b\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":1: name: must hold only letters, digits, '_', '.' and '-' (got \"a b\")");
    expect_error("name = \"\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":1: name: must not be empty");
    expect_error(MINIMAL "output: { png: { bits = 12; }; };\n",
                 ":4: output.png.bits: must be 8 or 16 (got 12)");
    expect_error(MINIMAL "output: { png: { stretch = \"gamma\"; }; };\n",
                 ":4: output.png.stretch: must be \"linear\", \"log\" or \"sqrt\" (got \"gamma\")");
    expect_error(MINIMAL "output: { png: { dynamic_range = 1.0; }; };\n",
                 ":4: output.png.dynamic_range: must be > 1 (got 1)");
    expect_error(MINIMAL "output: { png: { enabled = false; }; };\n",
                 ":4: output: nothing to write: output.png.enabled, output.fits.enabled or "
                 "output.hdf5.enabled must be true");
    expect_error(MINIMAL "normalization = \"max\";\n",
                 ":4: normalization: must be \"peak\", \"sum\" or \"pupil\" (got \"max\")");
    expect_error(MINIMAL "backend = \"tpu\";\n",
                 ":4: backend: must be \"auto\", \"cpu\" or \"gpu\" (got \"tpu\")");
    expect_error(MINIMAL "aberrations: { units = \"um\"; };\n",
                 ":4: aberrations.units: must be \"waves\" or \"nm\" (got \"um\")");
    expect_error(MINIMAL "sweep: { wavelength_nm = [500.0, 0.0]; };\n",
                 ":4: sweep.wavelength_nm[1]: must be > 0 (got 0)");
    expect_error(MINIMAL "sweep: { defocus = []; };\n",
                 ":4: sweep.defocus: must hold at least one value");
    expect_error(MINIMAL "sweep: { defocus = [1e400]; };\n",
                 ":4: sweep.defocus[0]: must be a finite number (got inf)");
}

static void test_wavelength_rules(void **state)
{
    (void)state;
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0;\n"
                 "  wavelengths_nm = [500.0, 600.0]; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":3: optics.wavelengths_nm: give only one of optics.wavelength_nm and "
                 "optics.wavelengths_nm");
    expect_error("name = \"t\";\n"
                 "optics: { wavelengths_nm = [500.0, 600.0]; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 32; };\n"
                 "sweep: { wavelength_nm = [500.0]; };\n",
                 ":4: sweep.wavelength_nm: cannot be used with optics.wavelengths_nm (a broadband "
                 "set): sweep single wavelengths or give one broadband set");
    expect_error("name = \"t\";\n"
                 "optics: { wavelengths_nm = [500.0, 600.0];\n"
                 "  weights = [1.0]; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":3: optics.weights: must have as many values as optics.wavelengths_nm (2) "
                 "(got 1)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelengths_nm = [500.0, 600.0];\n"
                 "  weights = [1.0, -1.0]; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":3: optics.weights[1]: must be >= 0 (got -1)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelengths_nm = [500.0, 600.0];\n"
                 "  weights = [0, 0]; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":3: optics.weights: must have a positive, finite sum");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 500.0;\n"
                 "  weights = [1.0]; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":3: optics.weights: only allowed with optics.wavelengths_nm");

    /* At most 64 wavelengths in one broadband image (PSF_MAX_COMPONENTS). */
    char text[4096], list[2048];
    size_t used = 0;
    for (int i = 0; i < 65; ++i)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%d.0", i ? ", " : "", 400 + i);
    snprintf(text, sizeof text,
             "name = \"t\";\n"
             "optics: { wavelengths_nm = [%s]; aperture: { diameter_m = 1.0; }; };\n"
             "sampling: { pupil_samples = 32; };\n",
             list);
    expect_error(text, ":2: optics.wavelengths_nm: must hold at most 64 wavelengths (got 65)");

    /* A swept wavelength makes optics.wavelength_nm optional. */
    psf_config c;
    char err[1024] = "";
    int rc = load("sw.cfg",
                  "name = \"t\";\n"
                  "optics: { aperture: { diameter_m = 1.0; }; };\n"
                  "sampling: { pupil_samples = 32; };\n"
                  "sweep: { wavelength_nm = [700.0, 800.0]; };\n",
                  &c, err, sizeof err);
    if (rc) fail_msg("%s", err);
    assert_int_equal(c.n_sweep_wavelength, 2);
    assert_int_equal(c.nwavelengths, 1); /* the first swept value stands in */
    ASSERT_NEAR(c.wavelengths_nm[0], 700.0, 0);
    ASSERT_NEAR(c.weights[0], 1.0, 0);
    config_free(&c);
}

static void test_missing_required(void **state)
{
    (void)state;
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { shape = \"hexagon\"; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ": optics.aperture.diameter_m: required key missing");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ": optics.aperture.diameter_m: required key missing");
    expect_error("optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ": name: required key missing");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { padding = 2.0; };\n",
                 ": sampling.pupil_samples: required key missing");
    expect_error("name = \"t\";\n"
                 "optics: { aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ": optics.wavelength_nm: required key missing (or optics.wavelengths_nm, or "
                 "sweep.wavelength_nm)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0;\n"
                 "  spiders: { count = 3; }; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ": optics.aperture.spiders.width_m: required key missing (spiders.count is above "
                 "0)");
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0;\n"
                 "  shape = \"file\"; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ": optics.aperture.file: required key missing (shape = \"file\")");
    expect_error(MINIMAL "aberrations: { opd_map: { units = \"nm\"; }; };\n",
                 ": aberrations.opd_map.file: required key missing (aberrations.opd_map is "
                 "given)");
}

static void test_missing_files(void **state)
{
    (void)state;
    char tail[8192];
    snprintf(tail, sizeof tail,
             ":3: optics.aperture.file: cannot read %s: No such file or directory",
             in_dir("nope.png"));
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0;\n"
                 "  shape = \"file\"; file = \"nope.png\"; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 tail);
    snprintf(tail, sizeof tail,
             ":5: aberrations.opd_map.file: cannot read %s: No such file or directory",
             in_dir("sub/opd.fits"));
    expect_error(MINIMAL "aberrations: {\n opd_map: { file = \"sub/opd.fits\"; }; };\n", tail);
    snprintf(tail, sizeof tail, ":4: aberrations.opd_map.file: cannot read %s: Is a directory",
             g_dir);
    char text[8192];
    snprintf(text, sizeof text, MINIMAL "aberrations: { opd_map: { file = \"%s\"; }; };\n", g_dir);
    expect_error(text, tail);
    /* A file with shape "circular" is a mistake, not ignored. */
    assert_int_equal(tu_write_file(in_dir("p.png"), "x"), 0);
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0;\n"
                 "  file = \"p.png\"; }; };\n"
                 "sampling: { pupil_samples = 32; };\n",
                 ":3: optics.aperture.file: only used with shape = \"file\" (shape is "
                 "\"circular\")");

    /* The config itself. */
    psf_config c;
    char err[1024], want[8192];
    assert_int_equal(config_load(in_dir("absent.cfg"), &c, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: cannot read: No such file or directory", in_dir("absent.cfg"));
    assert_string_equal(err, want);
    config_free(&c);
}

static void test_syntax_error(void **state)
{
    (void)state;
    expect_error("name = \"t\";\n"
                 "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 32 ;; };\n",
                 ":3: syntax error");
    expect_error("name = \"t\";\n"
                 "name = \"u\";\n",
                 ":2: syntax error: duplicate setting name");
    expect_error(MINIMAL "sweep: { defocus = [1, 0.5]; };\n",
                 ":4: syntax error: mismatched element type in array (an array [ ] holds one "
                 "type: write every number of it with a decimal point, e.g. 450.0 for 450, or "
                 "use a list ( ))");
}

static void test_include(void **state)
{
    (void)state;
    /* @include resolves against the config's directory; messages name the
     * included file and its line. */
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/sub", g_dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_int_equal(tu_write_file(in_dir("sub/optics.cfg"),
                                   "optics: { wavelength_nm = 550.0;\n"
                                   "  aperture: { diameter_m = -1.0; }; };\n"),
                     0);
    char tail[8192];
    snprintf(tail, sizeof tail,
             "%s/sub/optics.cfg:2: optics.aperture.diameter_m: must be > 0 "
             "(got -1)",
             g_dir);
    psf_config c;
    char err[2048];
    assert_int_equal(load("inc.cfg",
                          "name = \"t\";\n"
                          "@include \"sub/optics.cfg\"\n"
                          "sampling: { pupil_samples = 32; };\n",
                          &c, err, sizeof err),
                     -1);
    assert_string_equal(err, tail);
    config_free(&c);
}

/* Where each key is written, recorded while loading (config_key_where):
 * an @include'd key names the included file, as config messages do. */
static void test_key_where(void **state)
{
    (void)state;
    assert_int_equal(tu_write_file(in_dir("kw_sampling.cfg"),
                                   "# the sampling\n"
                                   "sampling: {\n  pupil_samples = 32; };\n"),
                     0);
    psf_config c;
    char err[2048], got[8192], want[8192];
    assert_int_equal(load("kw.cfg",
                          "name = \"t\";\n"
                          "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                          "@include \"kw_sampling.cfg\"\n"
                          "sweep: {\n  defocus = [0.0, 0.5]; };\n",
                          &c, err, sizeof err),
                     0);
    static const struct {
        const char *key, *file;
        int line;
    } where[] = {{"sampling.pupil_samples", "kw_sampling.cfg", 3},
                 {"sampling", "kw_sampling.cfg", 2},
                 {"optics.aperture.diameter_m", "kw.cfg", 2},
                 {"sweep.defocus", "kw.cfg", 5}};
    for (size_t i = 0; i < sizeof where / sizeof *where; ++i) {
        assert_int_equal(config_key_where(&c, where[i].key, got, sizeof got), 1);
        snprintf(want, sizeof want, "%s:%d", in_dir(where[i].file), where[i].line);
        assert_string_equal(got, want);
    }
    assert_int_equal(config_key_where(&c, "output.npix", got, sizeof got), 0);
    assert_string_equal(got, in_dir("kw.cfg"));
    config_free(&c);
}

static void test_duplicate_zernike(void **state)
{
    (void)state;
    expect_error(MINIMAL "aberrations: { zernike = (\n"
                         "  (4, 0.25),\n"
                         "  (11, 0.1),\n"
                         "  (4, 0.5) ); };\n",
                 ":7: aberrations.zernike[2]: duplicate term j = 4 (first on line 5)");
    expect_error(MINIMAL "sweep: { zernike = ( (7, [0.1]),\n (7, [0.2]) ); };\n",
                 ":5: sweep.zernike[1]: duplicate term j = 7 (first on line 4)");
}

static void test_focus_shift_needs_f_number(void **state)
{
    (void)state;
    expect_error(MINIMAL "sweep: {\n  focus_shift_um = [-50.0, 0.0, 50.0]; };\n",
                 ":5: sweep.focus_shift_um: needs optics.f_number (a focus shift becomes defocus "
                 "through the F-number)");
}

/* Load one term in a convention and return its (n, m). */
static int load_term(const char *conv, int j, int *n, int *m, char *err, size_t errlen)
{
    char text[1024];
    snprintf(text, sizeof text,
             MINIMAL "aberrations: { convention = \"%s\"; zernike = ( (%d, 0.1) ); };\n", conv, j);
    psf_config c;
    int rc = load("conv.cfg", text, &c, err, errlen);
    if (rc == 0) {
        assert_int_equal(c.zconv, strcmp(conv, "noll") == 0   ? ZCONV_NOLL
                                  : strcmp(conv, "ansi") == 0 ? ZCONV_ANSI
                                                              : ZCONV_FRINGE);
        assert_int_equal(c.nzernike, 1);
        assert_int_equal(c.zernike[0].j, j);
        *n = c.zernike[0].n;
        *m = c.zernike[0].m;
    }
    config_free(&c);
    return rc;
}

static void test_conventions(void **state)
{
    (void)state;
    static const struct {
        const char *conv;
        int j, n, m;
    } cases[] = {
        {"ansi", 0, 0, 0},    {"ansi", 3, 2, -2},   {"ansi", 4, 2, 0},   {"ansi", 5, 2, 2},
        {"ansi", 12, 4, 0},   {"noll", 1, 0, 0},    {"noll", 4, 2, 0},   {"noll", 5, 2, -2},
        {"noll", 7, 3, -1},   {"noll", 11, 4, 0},   {"fringe", 4, 2, 0}, {"fringe", 9, 4, 0},
        {"fringe", 6, 2, -2}, {"fringe", 16, 6, 0},
    };
    char err[1024] = "";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        int n = -99, m = -99;
        if (load_term(cases[i].conv, cases[i].j, &n, &m, err, sizeof err))
            fail_msg("%s j=%d: %s", cases[i].conv, cases[i].j, err);
        if (n != cases[i].n || m != cases[i].m)
            fail_msg("%s j=%d: got (%d, %d), expected (%d, %d)", cases[i].conv, cases[i].j, n, m,
                     cases[i].n, cases[i].m);
    }
    expect_error(MINIMAL "aberrations: { zernike = ( (0, 0.1) ); };\n",
                 ":4: aberrations.zernike[0]: j must be >= 1 in the noll convention (got 0)");
    expect_error(MINIMAL "aberrations: { convention = \"ansi\"; zernike = ( (-1, 0.1) ); };\n",
                 ":4: aberrations.zernike[0]: j must be >= 0 in the ansi convention (got -1)");
    expect_error(MINIMAL "aberrations: { zernike = ( (100000, 0.1) ); };\n",
                 ":4: aberrations.zernike[0]: j = 100000 is beyond radial order 100, the largest "
                 "supported (noll convention)");
    expect_error(MINIMAL "aberrations: { convention = \"zemax\"; };\n",
                 ":4: aberrations.convention: must be \"noll\", \"ansi\" or \"fringe\" (got "
                 "\"zemax\")");
    /* The sweep's terms use the same convention. */
    psf_config c;
    int rc = load("sc.cfg",
                  MINIMAL "aberrations: { convention = \"ansi\"; };\n"
                          "sweep: { zernike = ( (4, [0.1]) ); };\n",
                  &c, err, sizeof err);
    if (rc) fail_msg("%s", err);
    assert_int_equal(c.sweep_zernike[0].n, 2);
    assert_int_equal(c.sweep_zernike[0].m, 0);
    config_free(&c);
}

static void test_single_pair_shorthand(void **state)
{
    (void)state;
    psf_config c;
    char err[1024] = "";
    int rc = load("sp.cfg",
                  MINIMAL "aberrations: { zernike = (11, -0.05); };\n"
                          "sweep: { zernike = (7, [0.0, 0.1]); };\n",
                  &c, err, sizeof err);
    if (rc) fail_msg("%s", err);
    assert_int_equal(c.nzernike, 1);
    assert_int_equal(c.zernike[0].j, 11);
    ASSERT_NEAR(c.zernike[0].coeff, -0.05, 0);
    assert_int_equal(c.n_sweep_zernike, 1);
    assert_int_equal(c.sweep_zernike[0].j, 7);
    assert_int_equal(c.sweep_zernike[0].nvalues, 2);
    config_free(&c);
}

static void test_image_limit(void **state)
{
    (void)state;
    /* 216^3 = 10,077,696 images: over the limit of 10,000,000. */
    size_t cap = 64 * 1024;
    char *list = malloc(cap), *text = malloc(4 * cap);
    assert_non_null(list);
    assert_non_null(text);
    size_t used = 0;
    for (int i = 0; i < 216; ++i)
        used += (size_t)snprintf(list + used, cap - used, "%s%d.0", i ? ", " : "", i);
    snprintf(
        text, 4 * cap,
        "name = \"t\";\n"
        "optics: { wavelength_nm = 550.0; f_number = 8.0; aperture: { diameter_m = 1.0; }; };\n"
        "sampling: { pupil_samples = 32; };\n"
        "sweep: {\n"
        "  defocus = [%s];\n"
        "  focus_shift_um = [%s];\n"
        "  zernike = ( (7, [%s]) );\n"
        "};\n",
        list, list, list);
    expect_error(text, ":4: sweep: makes 10077696 images (the product of the swept list "
                       "lengths), more than the limit of 10000000");
    /* 215^3 = 9,938,375 is allowed. */
    used = 0;
    for (int i = 0; i < 215; ++i)
        used += (size_t)snprintf(list + used, cap - used, "%s%d.0", i ? ", " : "", i);
    snprintf(
        text, 4 * cap,
        "name = \"t\";\n"
        "optics: { wavelength_nm = 550.0; f_number = 8.0; aperture: { diameter_m = 1.0; }; };\n"
        "sampling: { pupil_samples = 32; };\n"
        "sweep: { defocus = [%s]; focus_shift_um = [%s]; zernike = ( (7, [%s]) ); };\n",
        list, list, list);
    psf_config c;
    char err[1024] = "";
    int rc = load("ok.cfg", text, &c, err, sizeof err);
    if (rc) fail_msg("%s", err);
    assert_int_equal(config_image_count(&c), 9938375LL);
    config_free(&c);
    free(list);
    free(text);
}

static void test_edit_distance(void **state)
{
    (void)state;
    assert_int_equal(cfg_edit_distance("wavelength_nm", "wavelength_nm"), 0);
    assert_int_equal(cfg_edit_distance("wavelenght_nm", "wavelength_nm"), 1); /* a swap */
    assert_int_equal(cfg_edit_distance("padding", "pading"), 1);
    assert_int_equal(cfg_edit_distance("Backend", "backend"), 0);
    assert_int_equal(cfg_edit_distance("", "abc"), 3);
    assert_int_equal(cfg_edit_distance("kitten", "sitting"), 3);
}

/* ---- input config_load must not trust ---- */

/* Load "-" with text on standard input (a pipe, closed after the text, as
 * a shell's `printf ... | psfsim -c -` gives it). Returns config_load's
 * status; cfg is for the caller to free. */
static int load_stdin(const char *text, psf_config *cfg, char *err, size_t errlen)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    size_t n = strlen(text);
    assert_true(n < 65536); /* fits the pipe's buffer: no writer thread */
    assert_int_equal(write(p[1], text, n), (ssize_t)n);
    close(p[1]);
    int saved = dup(STDIN_FILENO);
    assert_true(saved >= 0);
    assert_int_equal(dup2(p[0], STDIN_FILENO), STDIN_FILENO);
    close(p[0]);
    int rc = config_load("-", cfg, err, errlen);
    assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
    close(saved);
    return rc;
}

static void test_stdin(void **state)
{
    (void)state;
    psf_config c;
    char err[2048] = "";
    if (load_stdin(MINIMAL, &c, err, sizeof err) != 0) fail_msg("%s", err);
    assert_string_equal(c.name, "t");
    assert_string_equal(c.path, "<stdin>");
    assert_int_equal(c.text_len, strlen(MINIMAL)); /* the bytes loaded, kept */
    assert_memory_equal(c.text, MINIMAL, strlen(MINIMAL));
    config_free(&c);
    assert_int_equal(load_stdin(MINIMAL "output: { png: { bits = 12; }; };\n", &c, err, sizeof err),
                     -1);
    assert_string_equal(err, "<stdin>:4: output.png.bits: must be 8 or 16 (got 12)");
    config_free(&c);
    assert_int_equal(load_stdin("name = ;\n", &c, err, sizeof err), -1);
    assert_string_equal(err, "<stdin>:1: syntax error");
    config_free(&c);
}

/* A stream's @include resolves against the current directory. */
static void test_stdin_include(void **state)
{
    (void)state;
    assert_int_equal(tu_write_file(in_dir("part.cfg"), MINIMAL), 0);
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(g_dir), 0);
    psf_config c;
    char err[2048] = "";
    int rc = load_stdin("@include \"part.cfg\"\n", &c, err, sizeof err);
    assert_int_equal(chdir(cwd), 0);
    if (rc != 0) fail_msg("%s", err);
    assert_string_equal(c.name, "t");
    config_free(&c);
}

/* A regular file past the cap is refused before it is read. */
static void test_size_cap(void **state)
{
    (void)state;
    const char *big = in_dir("big.cfg");
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (16 << 20) + 1), 0); /* sparse: no disk used */
    close(fd);
    psf_config c;
    char err[2048] = "", want[4200];
    assert_int_equal(config_load(big, &c, err, sizeof err), -1);
    config_free(&c);
    snprintf(want, sizeof want,
             "%s: cannot read: larger than the 16 MiB cap on a config (16777217 bytes)", big);
    assert_string_equal(err, want);
    /* An @include'd file past the cap too. */
    assert_int_equal(tu_write_file(in_dir("inc.cfg"), "name = \"t\";\n@include \"big.cfg\"\n"), 0);
    assert_int_equal(config_load(in_dir("inc.cfg"), &c, err, sizeof err), -1);
    config_free(&c);
    snprintf(want, sizeof want,
             "%s:2: @include \"big.cfg\": larger than the 16 MiB cap on a config (16777217 bytes)",
             in_dir("inc.cfg"));
    assert_string_equal(err, want);
}

/* A device is a stream: read up to the cap, then refused. */
static void test_device(void **state)
{
    (void)state;
    psf_config c;
    char err[2048] = "";
    assert_int_equal(config_load("/dev/zero", &c, err, sizeof err), -1);
    config_free(&c);
    assert_string_equal(err, "/dev/zero: cannot read: larger than the 16 MiB cap on a config "
                             "(read as a stream, stopped at the cap)");
}

/* Text of n lines "@include \"NAME\"": NAME is name, or with numbered
 * nameI.cfg for line I (0-based). Caller frees. */
static char *include_lines(int n, const char *name, int numbered)
{
    char *text = malloc((size_t)n * 64 + 1);
    assert_non_null(text);
    size_t used = 0;
    for (int i = 0; i < n; ++i) {
        if (numbered)
            used += (size_t)snprintf(text + used, 64, "@include \"%s%d.cfg\"\n", name, i);
        else
            used += (size_t)snprintf(text + used, 64, "@include \"%s\"\n", name);
    }
    text[used] = '\0';
    return text;
}

static void expect_load_error(const char *name, const char *want_tail)
{
    psf_config c;
    char err[8192] = "", want[8192];
    assert_int_equal(config_load(in_dir(name), &c, err, sizeof err), -1);
    config_free(&c);
    snprintf(want, sizeof want, "%s%s", in_dir(name), want_tail);
    assert_string_equal(err, want);
}

/* libconfig reads a file again at each @include of it: that is allowed,
 * within the caps. */
static void test_include_twice(void **state)
{
    (void)state;
    assert_int_equal(tu_write_file(in_dir("note.cfg"), "# a comment only\n"), 0);
    assert_int_equal(
        tu_write_file(in_dir("x.cfg"), "@include \"note.cfg\"\n" MINIMAL "@include \"note.cfg\"\n"),
        0);
    psf_config c;
    char err[2048] = "";
    if (config_load(in_dir("x.cfg"), &c, err, sizeof err) != 0) fail_msg("%s", err);
    config_free(&c);
}

static void test_include_caps(void **state)
{
    (void)state;
    assert_int_equal(tu_write_file(in_dir("e.cfg"), ""), 0);
    char *text = include_lines(1025, "e.cfg", 0);
    assert_int_equal(tu_write_file(in_dir("many.cfg"), text), 0);
    free(text);
    expect_load_error("many.cfg",
                      tu_format(":1025: @include \"e.cfg\": more than 1024 inclusions in all (the "
                                "cap for one config, %s; libconfig reads a file again at each "
                                "@include of it)",
                                in_dir("many.cfg")));
    /* 9 MiB read twice: past 16 MiB in all. */
    int fd = open(in_dir("nine.cfg"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 9 << 20), 0);
    close(fd);
    assert_int_equal(tu_write_file(in_dir("big.cfg"), "@include \"nine.cfg\"\n"
                                                      "@include \"nine.cfg\"\n"),
                     0);
    expect_load_error("big.cfg",
                      tu_format(":2: @include \"nine.cfg\": more than 16 MiB read in all (the cap "
                                "for one config, %s, with every inclusion; libconfig reads a file "
                                "again at each @include of it)",
                                in_dir("big.cfg")));
    /* 65 distinct files. */
    for (int i = 0; i < 65; ++i)
        assert_int_equal(tu_write_file(in_dir(tu_format("f%d.cfg", i)), ""), 0);
    text = include_lines(65, "f", 1);
    assert_int_equal(tu_write_file(in_dir("wide.cfg"), text), 0);
    free(text);
    expect_load_error("wide.cfg", ":65: @include \"f64.cfg\": more than 64 distinct files "
                                  "included (the cap for one config)");
}

/* Ten files of ten includes each: refused at once, not after 10^9 reads
 * (ctest's timeout catches a walk that is not linear). */
static void test_include_fan_out(void **state)
{
    (void)state;
    for (int i = 0; i < 9; ++i) {
        char *text = include_lines(10, tu_format("g%d.cfg", i + 1), 0);
        assert_int_equal(tu_write_file(in_dir(tu_format("g%d.cfg", i)), text), 0);
        free(text);
    }
    assert_int_equal(tu_write_file(in_dir("g9.cfg"), ""), 0);
    psf_config c;
    char err[8192] = "";
    assert_int_equal(config_load(in_dir("g0.cfg"), &c, err, sizeof err), -1);
    config_free(&c);
    assert_non_null(strstr(err, "more than 1024 inclusions in all"));
    assert_non_null(strstr(err, in_dir("g0.cfg")));
}

#define OUT_OF_32                                                                                  \
    " is out of the 32-bit range -2147483648..2147483647 (a 64-bit integer is written with an L "  \
    "suffix)"

/* libconfig 1.5 keeps an integer without L in 32 bits: these read as 8, 64
 * and 4 before, with no word. */
static void test_wide_integers(void **state)
{
    (void)state;
    expect_error(MINIMAL "output: { png: { bits = 4294967304; }; };\n",
                 ":4: output.png.bits: integer 4294967304" OUT_OF_32);
    expect_error(MINIMAL "output: { npix = 4294967360; };\n",
                 ":4: output.npix: integer 4294967360" OUT_OF_32);
    expect_error(MINIMAL "aberrations: { zernike = ( (4294967300, 0.1) ); };\n",
                 ":4: aberrations.zernike[0][0]: integer 4294967300" OUT_OF_32);
    expect_error(MINIMAL "aberrations: { zernike = ( (4, 0.1),\n  (-2147483649, 0.1) ); };\n",
                 ":5: aberrations.zernike[1][0]: integer -2147483649" OUT_OF_32);
    expect_error(MINIMAL "output: { png: { compression = 0xFFFFFFFF; }; };\n",
                 ":4: output.png.compression: integer 0xFFFFFFFF" OUT_OF_32);
    expect_error(MINIMAL "optics2 = 99999999999999999999L;\n",
                 ":4: optics2: integer 99999999999999999999L is out of the 64-bit range "
                 "-9223372036854775808..9223372036854775807");
    /* With L the value is whole, and its range check says so. */
    expect_error(MINIMAL "output: { npix = 4294967360L; };\n",
                 ":4: output.npix: must be <= 65536 (got 4294967360)");
    /* In an @include'd file: that file and its line. */
    assert_int_equal(tu_write_file(in_dir("part.cfg"), "# the output\noutput: { npix = "
                                                       "4294967360; };\n"),
                     0);
    char want[8192];
    snprintf(want, sizeof want, "%s:2: output.npix: integer 4294967360" OUT_OF_32,
             in_dir("part.cfg"));
    psf_config c;
    char err[8192] = "";
    assert_int_equal(tu_write_file(in_dir("y.cfg"), MINIMAL "@include \"part.cfg\"\n"), 0);
    assert_int_equal(config_load(in_dir("y.cfg"), &c, err, sizeof err), -1);
    config_free(&c);
    assert_string_equal(err, want);
    /* Not integers: in comments, strings and names, and floats. */
    assert_int_equal(tu_write_file(in_dir("ok.cfg"),
                                   MINIMAL "# 4294967300\n/* 4294967300\n */\n"
                                           "// 4294967300\n"
                                           "aberrations: { convention = \"noll\"; "
                                           "zernike = ( (4, 4294967300.0e-7), (5, "
                                           "1e-99) ); };\n"),
                     0);
    if (config_load(in_dir("ok.cfg"), &c, err, sizeof err) != 0) fail_msg("%s", err);
    config_free(&c);
}

/* The set's longest file, .NAME_manifest.csv.tmp.XXXXXX while it is
 * written, must fit NAME_MAX (255): a name of at most 230 characters. */
static void test_name_length(void **state)
{
    (void)state;
    char name[232], text[1024];
    memset(name, 'n', 231);
    name[231] = '\0';
    snprintf(text, sizeof text, "name = \"%s\";\n%s", name, strchr(MINIMAL, '\n') + 1);
    expect_error(text, ":1: name: must be at most 230 characters: the set's files, such as "
                       ".NAME_manifest.csv.tmp.XXXXXX while it is written, must fit a file "
                       "name's 255 bytes (got 231)");
    name[230] = '\0';
    snprintf(text, sizeof text, "name = \"%s\";\n%s", name, strchr(MINIMAL, '\n') + 1);
    assert_int_equal(tu_write_file(in_dir("ok.cfg"), text), 0);
    psf_config c;
    char err[2048] = "";
    if (config_load(in_dir("ok.cfg"), &c, err, sizeof err) != 0) fail_msg("%s", err);
    config_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_full_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broadband, setup, teardown),
        cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_integer_for_float, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wavelength_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_required, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_syntax_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_include, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_where, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_zernike, setup, teardown),
        cmocka_unit_test_setup_teardown(test_focus_shift_needs_f_number, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conventions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_pair_shorthand, setup, teardown),
        cmocka_unit_test_setup_teardown(test_image_limit, setup, teardown),
        cmocka_unit_test(test_edit_distance),
        cmocka_unit_test_setup_teardown(test_wide_integers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_name_length, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stdin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stdin_include, setup, teardown),
        cmocka_unit_test_setup_teardown(test_size_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_include_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_include_caps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_include_fan_out, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
