/* SPDX-License-Identifier: BSD-3-Clause */
/* set_checks: the warnings of a set that computes but may not mean what its
 * config asks (app/set/set_checks.h), each naming the file, line and key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/config/config.h"
#include "app/formats/fits.h"
#include "app/formats/png_io.h"
#include "app/set/image_set.h"
#include "app/set/set_checks.h"
#include "optics/metrics.h"
#include "optics/zernike.h"
#include "tests/support/psf_harness.h"
#include "tests/support/testutil.h"

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("set_checks");
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

/* The warnings of the config text (c.cfg in g_dir). */
static void warnings_of(const char *text, set_notes *notes)
{
    char path[4200], err[1024] = "";
    snprintf(path, sizeof path, "%s/c.cfg", g_dir);
    assert_int_equal(tu_write_file(path, text), 0);
    psf_config cfg;
    image_set s;
    if (config_load(path, &cfg, err, sizeof err)) fail_msg("%s", err);
    if (image_set_init(&s, &cfg, err, sizeof err)) fail_msg("%s", err);
    set_checks_warn(&s, notes);
    image_set_free(&s);
    config_free(&cfg);
}

/* notes holds exactly one warning, and it contains each of the strings. */
static void expect_one(const set_notes *notes, const char *a, const char *b)
{
    if (notes->n != 1) fail_msg("%d warnings, expected 1 (first: %s)", notes->n, notes->text[0]);
    if (!strstr(notes->text[0], a) || !strstr(notes->text[0], b))
        fail_msg("warning \"%s\" lacks \"%s\" or \"%s\"", notes->text[0], a, b);
}

static void expect_none(const set_notes *notes)
{
    if (notes->n != 0) fail_msg("%d warnings, expected none: %s", notes->n, notes->text[0]);
}

#define HEAD                                                                                       \
    "name = \"c\";\noptics: { aperture: { diameter_m = 1.0; }; };\n"                               \
    "sampling: { pupil_samples = 32; };\n"

#define HEAD550                                                                                    \
    "name = \"c\";\noptics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"        \
    "sampling: { pupil_samples = 32; };\n"

/* The case: 0.05 waves of defocus over 1000-2200 nm, the default
 * units, the same Strehl at every wavelength. */
static void test_waves_over_a_wavelength_sweep(void **state)
{
    (void)state;
    set_notes notes;
    warnings_of(HEAD "aberrations: { zernike = ((4, 0.05)); };\n"
                     "sweep: { wavelength_nm = [1000.0, 1650.0, 2200.0]; };\n",
                &notes);
    expect_one(&notes, "c.cfg:4: aberrations.zernike: coefficients in waves",
               "sweep.wavelength_nm (3, 1000-2200 nm)");
    /* In nm the same set is one wavefront: nothing to say. */
    warnings_of(HEAD "aberrations: { units = \"nm\"; zernike = ((4, 50.0)); };\n"
                     "sweep: { wavelength_nm = [1000.0, 1650.0, 2200.0]; };\n",
                &notes);
    expect_none(&notes);
    /* Zero coefficients, or one wavelength: nothing either. */
    warnings_of(HEAD "aberrations: { zernike = ((4, 0.0)); };\n"
                     "sweep: { wavelength_nm = [1000.0, 2200.0]; };\n",
                &notes);
    expect_none(&notes);
    warnings_of(HEAD "aberrations: { zernike = ((4, 0.05)); };\n"
                     "sweep: { wavelength_nm = [1000.0]; defocus = [0.0, 0.1]; };\n",
                &notes);
    expect_none(&notes);
    /* A focus shift is a length (converted at each wavelength): no warning. */
    warnings_of("name = \"c\";\noptics: { f_number = 10.0; aperture: { diameter_m = 1.0; }; };\n"
                "sampling: { pupil_samples = 32; };\n"
                "sweep: { wavelength_nm = [500.0, 600.0]; focus_shift_um = [-50.0, 50.0]; };\n",
                &notes);
    expect_none(&notes);
}

/* A broadband set: the swept defocus or swept terms in waves are named. */
static void test_waves_in_a_broadband_set(void **state)
{
    (void)state;
    set_notes notes;
    warnings_of("name = \"c\";\n"
                "optics: { wavelengths_nm = [500.0, 600.0]; aperture: { diameter_m = 1.0; }; };\n"
                "sampling: { pupil_samples = 32; };\n"
                "sweep: { defocus = [0.0, 0.25]; };\n",
                &notes);
    expect_one(&notes, "c.cfg:4: sweep.defocus: coefficients in waves",
               "optics.wavelengths_nm (2, 500-600 nm)");
    warnings_of("name = \"c\";\n"
                "optics: { wavelengths_nm = [500.0, 600.0]; aperture: { diameter_m = 1.0; }; };\n"
                "sampling: { pupil_samples = 32; };\n"
                "sweep: { zernike = ((6, [0.0, 0.1])); };\n",
                &notes);
    expect_one(&notes, "c.cfg:4: sweep.zernike: coefficients in waves", "aberrations.units");
    /* The same wavelength twice spans nothing. */
    warnings_of("name = \"c\";\n"
                "optics: { wavelengths_nm = [500.0, 500.0]; aperture: { diameter_m = 1.0; }; };\n"
                "sampling: { pupil_samples = 32; };\n"
                "sweep: { defocus = [0.0, 0.25]; };\n",
                &notes);
    expect_none(&notes);
}

/* An OPD map in waves over several wavelengths is named too; in nm not. */
static void test_opd_map_in_waves(void **state)
{
    (void)state;
    char map[4200];
    snprintf(map, sizeof map, "%s/opd.png", g_dir);
    unsigned short levels[4] = {0, 10, 20, 30};
    char err[512] = "";
    if (psf_png_write_levels(map, levels, 2, 16, 1, err, sizeof err)) fail_msg("%s", err);
    set_notes notes;
    warnings_of(
        "name = \"c\";\noptics: { aperture: { diameter_m = 1.0; }; };\n"
        "sampling: { pupil_samples = 32; };\n"
        "aberrations: { opd_map: { file = \"opd.png\";\n units = \"waves\"; scale = 0.01; }; };\n"
        "sweep: { wavelength_nm = [500.0, 700.0]; };\n",
        &notes);
    expect_one(&notes, "c.cfg:5: aberrations.opd_map.units: an OPD map in waves",
               "sweep.wavelength_nm (2, 500-700 nm)");
    warnings_of("name = \"c\";\noptics: { aperture: { diameter_m = 1.0; }; };\n"
                "sampling: { pupil_samples = 32; };\n"
                "aberrations: { opd_map: { file = \"opd.png\"; }; };\n"
                "sweep: { wavelength_nm = [500.0, 700.0]; };\n",
                &notes);
    expect_none(&notes);
}

/* image_set_init's result for the text: 0, or -1 with err. */
static int init_of(const char *text, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/c.cfg", g_dir);
    assert_int_equal(tu_write_file(path, text), 0);
    psf_config cfg;
    image_set s;
    if (config_load(path, &cfg, err, errlen)) fail_msg("%s", err);
    int rc = image_set_init(&s, &cfg, err, errlen);
    image_set_free(&s);
    config_free(&cfg);
    return rc;
}

/* err is "DIR/c.cfg" + tail. */
static void expect_error(const char *err, const char *tail)
{
    size_t n = strlen(g_dir);
    if (strncmp(err, g_dir, n) != 0 || strncmp(err + n, "/c.cfg", 6) != 0 ||
        strcmp(err + n + 6, tail) != 0)
        fail_msg("\"%s\" is not DIR/c.cfg followed by \"%s\"", err, tail);
}

/* An OPD map beyond CFG_MAX_WAVES (1e6) waves at the shortest wavelength
 * is refused, as the Zernike terms are, naming the scale. */
static void test_opd_map_bound(void **state)
{
    (void)state;
    char map[4200], err[2048] = "";
    snprintf(map, sizeof map, "%s/opd.png", g_dir);
    unsigned short levels[4] = {0, 10, 255, 30};
    if (psf_png_write_levels(map, levels, 2, 16, 1, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(
        init_of("name = \"c\";\n"
                "optics: { wavelength_nm = 500.0; aperture: { diameter_m = 1.0; }; };\n"
                "sampling: { pupil_samples = 32; };\n"
                "aberrations: { opd_map: { file = \"opd.png\";\n scale = 2e6; }; };\n",
                err, sizeof err),
        -1);
    char tail[4400];
    snprintf(tail, sizeof tail,
             ":5: aberrations.opd_map.scale: %s: the OPD reaches 5.1e+08 nm at row 1, column 0 "
             "(the map's value times scale 2e+06), more than 1e+06 waves at 500 nm, the shortest "
             "wavelength",
             map);
    expect_error(err, tail);
    /* In waves: 1000 waves, once past the bound, is accepted now. */
    assert_int_equal(
        init_of("name = \"c\";\n"
                "optics: { wavelength_nm = 500.0; aperture: { diameter_m = 1.0; }; };\n"
                "sampling: { pupil_samples = 32; };\n"
                "aberrations: { opd_map: { file = \"opd.png\"; units = \"waves\"; }; "
                "};\n",
                err, sizeof err),
        0);
    levels[2] = 1001;
    if (psf_png_write_levels(map, levels, 2, 16, 1, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(
        init_of("name = \"c\";\n"
                "optics: { wavelength_nm = 500.0; aperture: { diameter_m = 1.0; }; };\n"
                "sampling: { pupil_samples = 32; };\n"
                "aberrations: { opd_map: { file = \"opd.png\"; units = \"waves\";\n"
                "scale = 1000.0; }; };\n",
                err, sizeof err),
        -1);
    snprintf(tail, sizeof tail,
             ":5: aberrations.opd_map.scale: %s: the OPD reaches 1.001e+06 waves at row 1, column "
             "0 (the map's value times scale 1000), more than 1e+06 waves at 500 nm, the shortest "
             "wavelength",
             map);
    expect_error(err, tail);
}

/* The analytic bound of |grad Z| is the maximum over the disk (central
 * differences on a polar grid, for every term up to n = 12). */
static void test_zernike_max_gradient(void **state)
{
    (void)state;
    const double h = 1e-6;
    for (int n = 0; n <= 12; ++n)
        for (int m = -n; m <= n; m += 2) {
            double best = 0.0;
            for (int ir = 0; ir <= 100; ++ir)
                for (int it = 0; it < 360; ++it) {
                    double r = ir / 100.0, t = it * M_PI / 180.0;
                    double x = r * cos(t), y = r * sin(t);
                    double gx = (zernike_eval(n, m, hypot(x + h, y), atan2(y, x + h)) -
                                 zernike_eval(n, m, hypot(x - h, y), atan2(y, x - h))) /
                                (2 * h);
                    double gy = (zernike_eval(n, m, hypot(x, y + h), atan2(y + h, x)) -
                                 zernike_eval(n, m, hypot(x, y - h), atan2(y - h, x))) /
                                (2 * h);
                    best = fmax(best, hypot(gx, gy));
                }
            double g = set_checks_zernike_max_gradient(n, m);
            if (!(fabs(best - g) <= 1e-3 * g + 1e-9))
                fail_msg("(%d, %d): max |grad Z| %.9g on the grid, %.9g by the formula", n, m, best,
                         g);
        }
}

/* The case: a tilt past the field wraps the PSF around and still
 * gives Strehl 1; a tilt of a waves RMS (2 a rho cos theta) steps by 4a/n
 * waves between samples, so at n = 32 the warning starts above 4 waves. */
static void test_phase_step(void **state)
{
    (void)state;
    set_notes notes;
    warnings_of(HEAD550 "aberrations: { zernike = ((2, 4.1)); };\n", &notes);
    expect_one(&notes,
               "c.cfg:3: sampling.pupil_samples: the wavefront may step by up to 0.512 "
               "waves between neighbouring pupil samples",
               "pupil_samples >= 33 keeps");
    warnings_of(HEAD550 "aberrations: { zernike = ((2, 4.0)); };\n", &notes);
    expect_none(&notes);
    /* Swept values count by their largest, the config's term added. */
    warnings_of(HEAD550 "aberrations: { zernike = ((2, 1.0)); };\n"
                        "sweep: { zernike = ((2, [0.0, -3.5])); };\n",
                &notes);
    expect_one(&notes, "the wavefront may step by up to 0.562 waves", "pupil_samples >= 36");
    /* In nm at the shortest wavelength of a sweep: 4.1 waves at 500 nm. */
    warnings_of(HEAD "aberrations: { units = \"nm\"; zernike = ((3, 2050.0)); };\n"
                     "sweep: { wavelength_nm = [700.0, 500.0]; };\n",
                &notes);
    expect_one(&notes, "step by up to 0.512 waves", "sampling.pupil_samples");
    /* A focus shift as its defocus: 1e4 um at f/2 is 1e4 / (16 sqrt 3 4) um
     * RMS = 156 waves of 575 nm... far past half a wave a sample. */
    warnings_of("name = \"c\";\noptics: { wavelength_nm = 575.0; f_number = 2.0; aperture: { "
                "diameter_m = 1.0; }; };\n"
                "sampling: { pupil_samples = 32; };\n"
                "sweep: { focus_shift_um = [0.0, 1e4]; };\n",
                &notes);
    expect_one(&notes, "sampling.pupil_samples: the wavefront may step", "half a wave");
    /* What the warning is about: 10 waves of tilt at n = 32, N = 64 move
     * the peak by 4 a Q = 80 pixels, past the field: it lands at column
     * 32 + 80 - 64 = 48, with Strehl 1 all the same. */
    psf_result r;
    assert_int_equal(
        harness_compute(HEAD550 "aberrations: { zernike = ((2, 10.0)); };\n", 0, NULL, &r), 0);
    psf_peak pk = metrics_peak(r.img, r.npix);
    assert_int_equal(pk.col, 48);
    assert_true(r.strehl > 0.99);
    harness_free(&r);
}

/* A random set's step is bounded from the draws made (counter-based, each
 * recomputed): the bound took 5 sigma of every term (4x pessimistic). A
 * tilt of sigma 1 wave at n = 32, seed 1, 4 draws (z = 0.011, -0.086,
 * -0.719, -0.525: tests/app/set/draws_reference.py): the old bound, 2/32
 * x 2 x 5 = 0.625 waves, warned; the draws step by at most 2/32 x 2 x
 * 0.719 = 0.09. At sigma 8 both warn: 8 x 0.719 x 0.125 = 0.719 waves. */
static void test_phase_step_drawn(void **state)
{
    (void)state;
    set_notes notes;
    warnings_of(HEAD550 "sweep: { random: { count = 4; seed = 1; zernike = ((2, \"normal\", "
                        "1.0)); }; };\n",
                &notes);
    expect_none(&notes);
    warnings_of(HEAD550 "sweep: { random: { count = 4; seed = 1; zernike = ((2, \"normal\", "
                        "8.0)); }; };\n",
                &notes);
    expect_one(&notes,
               "the wavefront may step by up to 0.719 waves between neighbouring pupil samples "
               "(a bound from the set's largest coefficients and the values drawn)",
               "pupil_samples >= 47 keeps");
    /* A fixed term adds to the draws: 2 waves of tilt, 0.25 more. */
    warnings_of(HEAD550 "aberrations: { zernike = ((2, 2.0)); };\n"
                        "sweep: { random: { count = 4; seed = 1; zernike = ((2, \"normal\", "
                        "1.0)); }; };\n",
                &notes);
    expect_none(&notes);
    warnings_of(HEAD550 "aberrations: { zernike = ((2, 3.5)); };\n"
                        "sweep: { random: { count = 4; seed = 1; zernike = ((2, \"normal\", "
                        "1.0)); }; };\n",
                &notes);
    expect_one(&notes, "step by up to 0.527 waves", "and the values drawn");
}

/* Q = N/n < 2 undersamples the intensity; with the MFT a pixel coarser
 * than lambda/(2D) at the shortest wavelength. */
static void test_undersampled_intensity(void **state)
{
    (void)state;
    set_notes notes;
    warnings_of("name = \"c\";\noptics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; "
                "};\nsampling: { pupil_samples = 32;\n padding = 1.5; };\n",
                &notes);
    expect_one(&notes, "c.cfg:4: sampling.padding: Q = N/n = 48/32 = 1.5 < 2",
               "the intensity is undersampled");
    warnings_of(HEAD550 "output: { npix = 40; pixel_scale = 0.6; };\n", &notes);
    expect_one(&notes, "c.cfg:4: output.pixel_scale: the MFT's pixel is 0.6 lambda/D at 550 nm",
               "(Q = 1.667 < 2)");
    warnings_of(HEAD550 "output: { pixel_scale = 0.5; };\n", &notes);
    expect_none(&notes);
    /* The detector's oversampling: the computed grid is s times finer. */
    warnings_of("name = \"c\";\noptics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; "
                "};\nsampling: { pupil_samples = 32;\n padding = 1.5; };\n"
                "detector: { oversample = 2; };\n",
                &notes);
    expect_none(&notes);
    warnings_of(HEAD550
                "output: { npix = 40; pixel_scale = 0.6; };\ndetector: { oversample = 2; };\n",
                &notes);
    expect_none(&notes);
    /* In um, coarsest at the shortest swept wavelength: 3 um at f/10 is 0.6
     * lambda/D at 500 nm, 0.3 at 1000 nm. */
    warnings_of("name = \"c\";\noptics: { f_number = 10.0; aperture: { diameter_m = 1.0; }; };\n"
                "sampling: { pupil_samples = 32; };\n"
                "output: { npix = 40; pixel_scale_um = 3.0; };\n"
                "sweep: { wavelength_nm = [1000.0, 500.0]; };\n",
                &notes);
    expect_one(&notes, "c.cfg:4: output.pixel_scale_um: the MFT's pixel is 0.6 lambda/D at 500 nm",
               "coarser than lambda/(2D)");
}

/* An MFT field wider than the sampled pupil's period, n lambda/D: said on
 * sampling.pupil_samples with the n that covers it (a new user's 256
 * pixels of 0.295 lambda/D from 64 samples held 1.0009 of the pupil's
 * light); at the period itself, and below it, nothing. In lambda/D at
 * the shortest wavelength, and of the computed grid with a detector. */
static void test_mft_field_period(void **state)
{
    (void)state;
    set_notes notes;
    warnings_of(HEAD550 "output: { npix = 80; pixel_scale = 0.45; };\n", &notes);
    expect_one(&notes,
               "c.cfg:3: sampling.pupil_samples: the MFT's field is 36 lambda/D wide at "
               "550 nm, wider than the sampled pupil's period n lambda/D = 32",
               "pupil_samples >= 36 makes the period cover the field");
    warnings_of(HEAD550 "output: { npix = 64; pixel_scale = 0.5; };\n", &notes);
    expect_none(&notes);
    warnings_of(HEAD550 "output: { npix = 70; pixel_scale = 0.45; };\n", &notes);
    expect_none(&notes);
    /* 20 detector pixels of 2 lambda/D at s = 4: 80 of 0.5, 40 lambda/D. */
    warnings_of(HEAD550
                "output: { npix = 20; pixel_scale = 2.0; };\ndetector: { oversample = 4; };\n",
                &notes);
    expect_one(&notes, "c.cfg:3: sampling.pupil_samples: the MFT's field is 40 lambda/D wide",
               "pupil_samples >= 40");
}

/* N with a prime factor above 7 is slow: said, with the next fast size. */
static void test_slow_fft_size(void **state)
{
    (void)state;
    set_notes notes;
    /* N = floor(515 * 2.002 + 0.5) = 1031, a prime. */
    warnings_of("name = \"c\";\noptics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; "
                "};\nsampling: { pupil_samples = 515; padding = 2.002; };\n",
                &notes);
    expect_one(&notes, "c.cfg:3: sampling.padding: the FFT size N = 1031 has the prime factor 1031",
               "N = 1050 is the next size of factors 2, 3, 5 and 7");
    /* Without padding: N = 2 * 11 * 11, named on pupil_samples. */
    warnings_of("name = \"c\";\noptics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; "
                "};\nsampling: { pupil_samples = 121; };\n",
                &notes);
    expect_one(&notes,
               "c.cfg:3: sampling.pupil_samples: the FFT size N = 242 has the prime factor 11",
               "N = 243");
    warnings_of("name = \"c\";\noptics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; "
                "};\nsampling: { pupil_samples = 105; };\n",
                &notes);
    expect_none(&notes); /* 210 = 2 3 5 7 */
}

/* Decidable before any work, exit 2 (they failed at run time, exit 3,
 * after the directory was made, naming no key): an aperture closed by its
 * spiders or obscuration, a transmission or OPD map that is 0 (or NaN)
 * everywhere. */
static void test_closed_aperture(void **state)
{
    (void)state;
    char path[4200], err[2048] = "";
    snprintf(path, sizeof path, "%s/c.cfg", g_dir);
    assert_int_equal(tu_write_file(path, "name = \"c\";\noptics: { wavelength_nm = 550.0;\n"
                                         "aperture: { diameter_m = 1.0; spiders: { count = 1000; "
                                         "width_m = 0.9; }; }; };\n"
                                         "sampling: { pupil_samples = 32; };\n"),
                     0);
    psf_config cfg;
    image_set s;
    if (config_load(path, &cfg, err, sizeof err)) fail_msg("%s", err);
    if (image_set_init(&s, &cfg, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(image_set_check_open(&s, err, sizeof err), -1);
    expect_error(err, ":3: optics.aperture: the 64x64 pupil grid (pitch 0.03125 m) has 0 "
                      "sample(s) of open area, less than one: the aperture (circle, diameter 1 m, "
                      "obscuration 0, 1000 spider(s) 0.9 m wide, 0 vane(s)) is closed at this "
                      "sampling");
    image_set_free(&s);
    config_free(&cfg);
    /* Less than a sample's worth open: a segmented aperture's outer stop
     * (it left 5e-17 of a sample, a flat image of Strehl 1, exit 0). */
    assert_int_equal(tu_write_file(path, "name = \"c\";\noptics: { wavelength_nm = 550.0;\n"
                                         "aperture: { shape = \"segmented\"; diameter_m = 4.7; "
                                         "segments: { flat_to_flat_m = 1.5588; gap_m = 0.003; "
                                         "rings = 1; outer_diameter_m = 1e-9; }; }; };\n"
                                         "sampling: { pupil_samples = 32; };\n"),
                     0);
    if (config_load(path, &cfg, err, sizeof err)) fail_msg("%s", err);
    if (image_set_init(&s, &cfg, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(image_set_check_open(&s, err, sizeof err), -1);
    if (!strstr(err, "of open area, less than one: the aperture (segmented, diameter 4.7 m, "
                     "obscuration 0, outer stop 1e-09 m (0: none)) is closed at this sampling"))
        fail_msg("%s", err);
    image_set_free(&s);
    config_free(&cfg);
    /* A broadband set: every pitch is checked (image 0 has them all). */
    assert_int_equal(tu_write_file(path, "name = \"c\";\noptics: { wavelengths_nm = [500.0, "
                                         "600.0];\naperture: { diameter_m = 1.0; }; };\n"
                                         "sampling: { pupil_samples = 32; };\n"),
                     0);
    if (config_load(path, &cfg, err, sizeof err)) fail_msg("%s", err);
    if (image_set_init(&s, &cfg, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(image_set_check_open(&s, err, sizeof err), 0);
    assert_int_equal(s.nsums, 2);
    image_set_free(&s);
    config_free(&cfg);
}

static void test_empty_maps(void **state)
{
    (void)state;
    char map[4200], fits[4200], err[2048] = "", tail[9000];
    snprintf(map, sizeof map, "%s/zero.png", g_dir);
    snprintf(fits, sizeof fits, "%s/nan.fits", g_dir);
    unsigned short levels[4] = {0, 0, 0, 0};
    if (psf_png_write_levels(map, levels, 2, 16, 1, err, sizeof err)) fail_msg("%s", err);
    float nan4[4] = {NAN, NAN, NAN, NAN};
    if (psf_fits_write_image(fits, nan4, 2, NULL, 0, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(init_of("name = \"c\";\noptics: { wavelength_nm = 550.0;\n"
                             "aperture: { diameter_m = 1.0; shape = \"file\"; file = \"zero.png\"; "
                             "}; };\nsampling: { pupil_samples = 32; };\n",
                             err, sizeof err),
                     -1);
    snprintf(tail, sizeof tail,
             ":3: optics.aperture.file: %s: every transmission of the map is 0 (NaN and BLANK "
             "pixels read as 0): the aperture is closed",
             map);
    expect_error(err, tail);
    assert_int_equal(init_of("name = \"c\";\noptics: { wavelength_nm = 550.0;\n"
                             "aperture: { diameter_m = 1.0; shape = \"file\"; file = \"nan.fits\"; "
                             "}; };\nsampling: { pupil_samples = 32; };\n",
                             err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "every transmission of the map is 0"));
    assert_int_equal(
        init_of(HEAD550 "aberrations: { opd_map: { file = \"nan.fits\"; }; };\n", err, sizeof err),
        -1);
    snprintf(tail, sizeof tail,
             ":4: aberrations.opd_map.file: %s: every OPD value of the map is 0 (NaN and BLANK "
             "pixels read as 0; times scale 1): a map that adds nothing is a wrong file or scale",
             fits);
    expect_error(err, tail);
    /* A scale of 0 makes any map 0: the scale is named. */
    levels[1] = 7;
    if (psf_png_write_levels(map, levels, 2, 16, 1, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(init_of(HEAD550 "aberrations: { opd_map: { file = \"zero.png\";\n"
                                     "scale = 0.0; }; };\n",
                             err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "c.cfg:5: aberrations.opd_map.scale: "));
    assert_non_null(strstr(err, "times scale 0)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waves_over_a_wavelength_sweep),
        cmocka_unit_test(test_waves_in_a_broadband_set),
        cmocka_unit_test(test_opd_map_in_waves),
        cmocka_unit_test(test_opd_map_bound),
        cmocka_unit_test(test_zernike_max_gradient),
        cmocka_unit_test(test_phase_step),
        cmocka_unit_test(test_phase_step_drawn),
        cmocka_unit_test(test_undersampled_intensity),
        cmocka_unit_test(test_slow_fft_size),
        cmocka_unit_test(test_mft_field_period),
        cmocka_unit_test(test_closed_aperture),
        cmocka_unit_test(test_empty_maps),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
