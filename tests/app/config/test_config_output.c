/* SPDX-License-Identifier: BSD-3-Clause */
/* The output grid's keys (output.npix, output.pixel_scale,
 * output.pixel_scale_um) and output.hdf5's (enabled, dtype, compression,
 * level): values and defaults, each mistake with its exact message,
 * nothing written by psfsim for any of them, and an MFT set end to end
 * (image size, FITS header and manifest report the output grid). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fitsio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "app/config/config.h"
#include "tests/support/testutil.h"

static char *g_dir; /* a fresh temp dir per test */

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("config_output");
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

/* DIR/name, in a static buffer per slot. */
static const char *in_dir(const char *name)
{
    static char buf[4][4096];
    static int slot;
    slot = (slot + 1) % 4;
    snprintf(buf[slot], sizeof buf[slot], "%s/%s", g_dir, name);
    return buf[slot];
}

#define MINIMAL                                                                                    \
    "name = \"t\";\n"                                                                              \
    "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"                       \
    "sampling: { pupil_samples = 32; };\n"
#define WITH_F                                                                                     \
    "name = \"t\";\n"                                                                              \
    "optics: { wavelength_nm = 550.0; f_number = 10; aperture: { diameter_m = 1.0; }; };\n"        \
    "sampling: { pupil_samples = 32; };\n"

/* Load text that must fail with "DIR/x.cfg" + tail; then run psfsim on it
 * and check it exits 2 with the same message and writes nothing. */
static void expect_error(const char *text, const char *tail)
{
    psf_config cfg;
    char err[2048], want[4096];
    assert_int_equal(tu_write_file(in_dir("x.cfg"), text), 0);
    int rc = config_load(in_dir("x.cfg"), &cfg, err, sizeof err);
    config_free(&cfg);
    snprintf(want, sizeof want, "%s%s", in_dir("x.cfg"), tail);
    if (rc != -1) fail_msg("loaded, expected the error \"%s\"", want);
    assert_string_equal(err, want);

    const char *bin = getenv("PSFSIM_BIN");
    if (!bin) return;
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "'%s' -q --backend cpu -c '%s' -o '%s' 2>'%s'", bin, in_dir("x.cfg"),
             in_dir("out"), in_dir("stderr"));
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 2);
    assert_int_equal(tu_count_entries(in_dir("out")), -1); /* nothing written */
    FILE *f = fopen(in_dir("stderr"), "r");
    assert_non_null(f);
    char line[4096] = "";
    if (!fgets(line, sizeof line, f)) line[0] = '\0';
    fclose(f);
    char msg[4200];
    snprintf(msg, sizeof msg, "psfsim: %s\n", want);
    assert_string_equal(line, msg);
}

static psf_config load_ok(const char *text)
{
    psf_config c;
    char err[2048] = "";
    assert_int_equal(tu_write_file(in_dir("ok.cfg"), text), 0);
    if (config_load(in_dir("ok.cfg"), &c, err, sizeof err) != 0) fail_msg("%s", err);
    return c;
}

static void test_values_and_defaults(void **state)
{
    (void)state;
    psf_config c = load_ok(MINIMAL);
    assert_int_equal(c.out_npix, 0);
    assert_true(c.out_pixel_scale == 0.0 && c.out_pixel_scale_um == 0.0);
    assert_int_equal(c.mft_force, 0);
    config_free(&c);
    c = load_ok(MINIMAL "output: { npix = 100; pixel_scale = 0.25; };\n");
    assert_int_equal(c.out_npix, 100);
    assert_true(c.out_pixel_scale == 0.25 && c.out_pixel_scale_um == 0.0);
    config_free(&c);
    c = load_ok(WITH_F "output: { npix = 8; pixel_scale_um = 3; };\n"); /* an integer for a float */
    assert_int_equal(c.out_npix, 8);
    assert_true(c.out_pixel_scale == 0.0 && c.out_pixel_scale_um == 3.0);
    config_free(&c);
    c = load_ok(MINIMAL "output: { npix = 65536; };\n");
    assert_int_equal(c.out_npix, 65536);
    config_free(&c);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error(MINIMAL "output: { npix = 4; };\n", ":4: output.npix: must be >= 8 (got 4)");
    expect_error(MINIMAL "output: { npix = 65537; };\n",
                 ":4: output.npix: must be <= 65536 (got 65537)");
    expect_error(MINIMAL "output: {\n  npix = 64.0; };\n",
                 ":5: output.npix: expected an integer (got a float)");
    expect_error(MINIMAL "output: { pixel_scale = 0; };\n",
                 ":4: output.pixel_scale: must be > 0 (got 0)");
    expect_error(MINIMAL "output: { pixel_scale = -0.5; };\n",
                 ":4: output.pixel_scale: must be > 0 (got -0.5)");
    expect_error(MINIMAL "output: { pixel_scale = \"fine\"; };\n",
                 ":4: output.pixel_scale: expected a number (got a string)");
    expect_error(MINIMAL "output: { pixel_scale = 1e400; };\n",
                 ":4: output.pixel_scale: must be a finite number (got inf)");
    expect_error(WITH_F "output: { pixel_scale_um = 0.0; };\n",
                 ":4: output.pixel_scale_um: must be > 0 (got 0)");
    expect_error(MINIMAL "output: { pixel_scale_um = 2.5; };\n",
                 ":4: output.pixel_scale_um: needs optics.f_number (a focal-plane pixel becomes "
                 "an angle through the focal length f_number * D)");
    expect_error(WITH_F "output: { pixel_scale = 0.5;\n  pixel_scale_um = 2.5; };\n",
                 ":5: output.pixel_scale_um: give only one of output.pixel_scale, "
                 "output.pixel_scale_um and output.pixel_scale_arcsec");
    expect_error(MINIMAL "output: { pixel_scale_arcsec = 0; };\n",
                 ":4: output.pixel_scale_arcsec: must be > 0 (got 0)");
    expect_error(MINIMAL "output: { pixel_scale_arcsec = \"fine\"; };\n",
                 ":4: output.pixel_scale_arcsec: expected a number (got a string)");
    expect_error(MINIMAL "output: { pixel_scale = 0.5;\n  pixel_scale_arcsec = 0.01; };\n",
                 ":5: output.pixel_scale_arcsec: give only one of output.pixel_scale, "
                 "output.pixel_scale_um and output.pixel_scale_arcsec");
    expect_error(WITH_F "output: { pixel_scale_um = 2.5;\n  pixel_scale_arcsec = 0.01; };\n",
                 ":5: output.pixel_scale_arcsec: give only one of output.pixel_scale, "
                 "output.pixel_scale_um and output.pixel_scale_arcsec");
    expect_error(MINIMAL "output: { pixel_scale_arcsec = 1e6; };\n",
                 ":4: output.pixel_scale_arcsec: must be <= 1.81513 (pupil_samples / 2 = 16 "
                 "lambda/D at 550 nm, the shortest wavelength, with D = 1 m: half a period of the "
                 "sampled pupil's transform) (got 1000000)");
    expect_error(MINIMAL "output: { pixel_scale_arcsec = 1e-12; };\n",
                 ":4: output.pixel_scale_arcsec: must be >= 1.13446e-07 (1e-06 lambda/D at 550 "
                 "nm, the longest wavelength, with D = 1 m) (got 1e-12)");
    expect_error(MINIMAL "output: { pixel_scal = 0.5; };\n",
                 ":4: output.pixel_scal: unknown key (did you mean output.pixel_scale?)");
    expect_error(MINIMAL "output: { npx = 64; };\n",
                 ":4: output.npx: unknown key (did you mean output.npix?)");
}

/* A numeric FITS header value, NAN when missing. */
static double fits_key(fitsfile *f, const char *key)
{
    int status = 0;
    double v = NAN;
    fits_read_key(f, TDOUBLE, key, &v, NULL, &status);
    return status ? NAN : v;
}

/* Write text to DIR/cfg_name and run psfsim on it (CPU backend) into DIR/out;
 * 0 when psfsim is not known (PSFSIM_BIN unset: the caller skips). */
static int run_psfsim(const char *cfg_name, const char *text)
{
    const char *bin = getenv("PSFSIM_BIN");
    if (!bin) return 0;
    assert_int_equal(tu_write_file(in_dir(cfg_name), text), 0);
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "'%s' -q --backend cpu -c '%s' -o '%s'", bin, in_dir(cfg_name),
             in_dir("out"));
    assert_int_equal(system(cmd), 0);
    return 1;
}

/* psfsim on an MFT set: 48 x 48 images at 0.3 lambda/D, FITS and manifest. */
static void test_mft_end_to_end(void **state)
{
    (void)state;
    if (!run_psfsim("m.cfg", "name = \"m\";\n"
                             "optics: { wavelength_nm = 500.0; f_number = 10; aperture: { "
                             "diameter_m = 1.0; obscuration = 0.2; }; };\n"
                             "sampling: { pupil_samples = 32; };\n"
                             "sweep: { defocus = [0.0, 0.2]; };\n"
                             "output: { npix = 48; pixel_scale = 0.3; fits: { enabled = "
                             "true; }; };\n"))
        skip();
    fitsfile *f;
    int status = 0, naxis = 0;
    long naxes[2] = {0, 0};
    fits_open_diskfile(&f, in_dir("out/m_0.fits"), READONLY, &status);
    fits_get_img_dim(f, &naxis, &status);
    fits_get_img_size(f, 2, naxes, &status);
    assert_int_equal(status, 0);
    assert_int_equal(naxis, 2);
    assert_int_equal(naxes[0], 48);
    assert_int_equal(naxes[1], 48);
    assert_true(fits_key(f, "NPIX") == 48.0);
    assert_true(fabs(fits_key(f, "PIXSCLLD") - 0.3) < 1e-12);
    assert_true(fabs(fits_key(f, "PIXSCLUM") - 0.3 * 0.5 * 10) < 1e-12);
    assert_true(fabs(fits_key(f, "PADDING") - 1.0 / 0.3) < 1e-12);
    assert_true(fits_key(f, "CRPIX1") == 25.0 && fits_key(f, "CRPIX2") == 25.0);
    assert_true(fabs(fits_key(f, "STREHL") - 1.0) < 1e-5);
    char prop[FLEN_VALUE] = "";
    fits_read_key(f, TSTRING, "PROPAG", prop, NULL, &status);
    assert_int_equal(status, 0);
    assert_string_equal(prop, "mft");
    float img[48 * 48];
    fits_read_img(f, TFLOAT, 1, 48 * 48, NULL, img, NULL, &status);
    fits_close_file(f, &status);
    assert_int_equal(status, 0);
    assert_true(fabs(img[24 * 48 + 24] - 1.0f) < 1e-5f); /* axis at (24, 24), "peak" */

    /* The manifest's npix and pixel scales are the output grid's. */
    FILE *m = fopen(in_dir("out/m_manifest.csv"), "r");
    assert_non_null(m);
    char line[4096];
    assert_non_null(fgets(line, sizeof line, m)); /* header */
    assert_non_null(fgets(line, sizeof line, m));
    fclose(m);
    /* index,png,fits,wavelength_nm,defocus,focus_shift_um,zernike_j,zernike_coeff,
     * pupil_samples,npix,pixel_scale_lambda_d,pixel_scale_arcsec,pixel_scale_um,... */
    char *fld[16] = {0};
    char *p = line;
    for (int i = 0; i < 16 && p; ++i) {
        fld[i] = p;
        p = strchr(p, ',');
        if (p) *p++ = '\0';
    }
    assert_non_null(fld[12]);
    assert_string_equal(fld[8], "32");
    assert_string_equal(fld[9], "48");
    assert_true(fabs(strtod(fld[10], NULL) - 0.3) < 1e-9);
    assert_true(fabs(strtod(fld[11], NULL) / (0.3 * 500e-9 * 206264.80624709636) - 1.0) < 1e-9);
    assert_true(fabs(strtod(fld[12], NULL) - 1.5) < 1e-9);
}

/* Field i (0-based) of the first data row of a manifest, into out. */
static void manifest_field(const char *path, int row, int i, char *out, size_t outlen)
{
    FILE *m = fopen(path, "r");
    assert_non_null(m);
    char line[8192];
    for (int r = 0; r <= row; ++r)
        assert_non_null(fgets(line, sizeof line, m));
    assert_non_null(fgets(line, sizeof line, m));
    fclose(m);
    char *p = line;
    for (int k = 0; k < i && p; ++k) {
        p = strchr(p, ',');
        if (p) ++p;
    }
    assert_non_null(p);
    size_t len = strcspn(p, ",\n");
    assert_true(len < outlen);
    memcpy(out, p, len);
    out[len] = '\0';
}

/* output.pixel_scale_arcsec on a VLT-like case (D = 8.2 m, 12.25 mas, the
 * near-IR wavelengths swept): every image keeps the pixel, in the manifest and
 * the FITS header, and its lambda/D value follows the wavelength. */
static void test_arcsec_pixel_vlt(void **state)
{
    (void)state;
    if (!run_psfsim("v.cfg", "name = \"v\";\n"
                             "optics: { wavelength_nm = 1650.0; aperture: { "
                             "diameter_m = 8.2; obscuration = 0.14; }; };\n"
                             "sampling: { pupil_samples = 32; };\n"
                             "sweep: { wavelength_nm = [1250.0, 1650.0, 2200.0]; };\n"
                             "output: { npix = 40; pixel_scale_arcsec = 0.01225; fits: { "
                             "enabled = true; }; };\n"))
        skip();
    const double wl[3] = {1250e-9, 1650e-9, 2200e-9}, arcsec_per_rad = 180.0 * 3600.0 / M_PI;
    for (int k = 0; k < 3; ++k) {
        double ld = 0.01225 / (wl[k] / 8.2 * arcsec_per_rad);
        char name[64], v[64];
        snprintf(name, sizeof name, "out/v_%d.fits", k);
        fitsfile *f;
        int status = 0;
        fits_open_diskfile(&f, in_dir(name), READONLY, &status);
        assert_int_equal(status, 0);
        assert_true(fabs(fits_key(f, "PIXELSCL") - 0.01225) < 1e-15);
        assert_true(fabs(fits_key(f, "PIXSCLLD") / ld - 1.0) < 1e-12);
        assert_true(fabs(fits_key(f, "PADDING") * ld - 1.0) < 1e-12);
        /* The linear WCS: pixel (1-based) x is (x - CRPIX1) CDELT1 + CRVAL1
         * arcsec from the axis; the axis is pixel 21 (0-based 20 = M/2). */
        double crpix = fits_key(f, "CRPIX1"), cdelt = fits_key(f, "CDELT1");
        assert_true(crpix == 21.0 && fits_key(f, "CRPIX2") == 21.0);
        assert_true(cdelt == 0.01225 && fits_key(f, "CDELT2") == 0.01225);
        assert_true(fits_key(f, "CRVAL1") == 0.0 && fits_key(f, "CRVAL2") == 0.0);
        assert_true(fabs((31.0 - crpix) * cdelt - 0.1225) < 1e-15);
        assert_true(fabs((1.0 - crpix) * cdelt + 0.245) < 1e-15);
        assert_true(fabs(fits_key(f, "DIFFLMT") / (wl[k] / 8.2 * arcsec_per_rad) - 1.0) < 1e-12);
        assert_true(fabs(fits_key(f, "FOV") - 40 * 0.01225) < 1e-12);
        char unit[FLEN_VALUE] = "", ctype[FLEN_VALUE] = "";
        fits_read_key(f, TSTRING, "CUNIT1", unit, NULL, &status);
        fits_read_key(f, TSTRING, "CTYPE2", ctype, NULL, &status);
        assert_int_equal(status, 0);
        assert_string_equal(unit, "arcsec");
        assert_string_equal(ctype, "OFFSET_Y");
        fits_close_file(f, &status);
        manifest_field(in_dir("out/v_manifest.csv"), k, 11, v, sizeof v);
        assert_true(fabs(strtod(v, NULL) - 0.01225) < 1e-15);
        manifest_field(in_dir("out/v_manifest.csv"), k, 10, v, sizeof v);
        assert_true(fabs(strtod(v, NULL) / ld - 1.0) < 1e-9);
    }
}

/* normalization = "pupil" by MFT: the manifest's last column captured_fraction
 * and the FITS header's EEFIELD hold the image's sum, below 1 in a window of
 * +-2 lambda/D (the Airy encircled energy there is about 0.90). */
static void test_pupil_captured_fraction(void **state)
{
    (void)state;
    if (!run_psfsim("p.cfg", MINIMAL "normalization = \"pupil\";\n"
                                     "output: { npix = 40; pixel_scale = "
                                     "0.1; fits: { enabled = true; }; };\n"))
        skip();
    FILE *m = fopen(in_dir("out/t_manifest.csv"), "r");
    assert_non_null(m);
    char line[4096];
    assert_non_null(fgets(line, sizeof line, m));
    fclose(m);
    assert_non_null(strstr(line, ",config_hash,captured_fraction\n"));
    char v[64];
    manifest_field(in_dir("out/t_manifest.csv"), 0, 17, v, sizeof v);
    double cf = strtod(v, NULL);
    assert_true(cf > 0.85 && cf < 0.95);
    fitsfile *f;
    int status = 0;
    fits_open_diskfile(&f, in_dir("out/t_0.fits"), READONLY, &status);
    assert_int_equal(status, 0);
    assert_true(fabs(fits_key(f, "EEFIELD") / cf - 1.0) < 1e-9);
    char norm[FLEN_VALUE] = "";
    fits_read_key(f, TSTRING, "NORMALIZ", norm, NULL, &status);
    float img[40 * 40];
    fits_read_img(f, TFLOAT, 1, 40 * 40, NULL, img, NULL, &status);
    fits_close_file(f, &status);
    assert_int_equal(status, 0);
    assert_string_equal(norm, "pupil");
    double sum = 0.0;
    for (int i = 0; i < 40 * 40; ++i)
        sum += img[i];
    assert_true(fabs(sum / cf - 1.0) < 1e-6);
}

/* output.hdf5: values, defaults, HDF5 as the only output. */
static void test_hdf5_values(void **state)
{
    (void)state;
    psf_config c = load_ok(MINIMAL);
    assert_int_equal(c.hdf5_enabled, 0);
    assert_int_equal(c.hdf5_dtype, HDF5_FLOAT32);
    assert_int_equal(c.hdf5_compression, HDF5_NONE);
    assert_int_equal(c.hdf5_level, 4);
    assert_int_equal(c.hdf5_chunk_images, 0); /* unset: h5set_auto_chunk_images */
    config_free(&c);
    c = load_ok(MINIMAL "output: { hdf5: { chunk_images = 64; }; };\n");
    assert_int_equal(c.hdf5_chunk_images, 64);
    config_free(&c);
    c = load_ok(MINIMAL "output: { hdf5: { enabled = true; dtype = \"uint16\"; compression = "
                        "\"gzip\"; level = 9; }; };\n");
    assert_int_equal(c.hdf5_enabled, 1);
    assert_int_equal(c.hdf5_dtype, HDF5_UINT16);
    assert_int_equal(c.hdf5_compression, HDF5_GZIP);
    assert_int_equal(c.hdf5_level, 9);
    config_free(&c);
    /* HDF5 alone is something to write. */
    c = load_ok(MINIMAL "output: { png: { enabled = false; }; hdf5: { enabled = true; }; };\n");
    assert_int_equal(c.png_enabled, 0);
    assert_int_equal(c.fits_enabled, 0);
    assert_int_equal(c.hdf5_enabled, 1);
    assert_int_equal(c.hdf5_level, 4);
    config_free(&c);
    /* The keys may be given while HDF5 is off. */
    c = load_ok(MINIMAL "output: { hdf5: { dtype = \"uint16\"; }; };\n");
    assert_int_equal(c.hdf5_enabled, 0);
    assert_int_equal(c.hdf5_dtype, HDF5_UINT16);
    config_free(&c);
}

/* output.hdf5: each mistake, exit 2, nothing written. */
static void test_hdf5_errors(void **state)
{
    (void)state;
    expect_error(MINIMAL "output: { hdf5: { enabled = 1; }; };\n",
                 ":4: output.hdf5.enabled: expected true or false (got an integer)");
    expect_error(MINIMAL "output: { hdf5: {\n  dtype = \"float64\"; }; };\n",
                 ":5: output.hdf5.dtype: must be \"float32\" or \"uint16\" (got \"float64\")");
    expect_error(MINIMAL "output: { hdf5: { compression = \"lzf\"; }; };\n",
                 ":4: output.hdf5.compression: must be \"none\" or \"gzip\" (got \"lzf\")");
    expect_error(MINIMAL "output: { hdf5: { compression = \"gzip\"; level = 0; }; };\n",
                 ":4: output.hdf5.level: must be >= 1 (got 0)");
    expect_error(MINIMAL "output: { hdf5: { compression = \"gzip\"; level = 10; }; };\n",
                 ":4: output.hdf5.level: must be <= 9 (got 10)");
    expect_error(MINIMAL "output: { hdf5: { compression = \"gzip\"; level = 4.0; }; };\n",
                 ":4: output.hdf5.level: expected an integer (got a float)");
    expect_error(MINIMAL "output: { hdf5: { level = 6; }; };\n",
                 ":4: output.hdf5.level: only used with output.hdf5.compression = \"gzip\"");
    expect_error(MINIMAL "output: { hdf5: { chunk_images = 0; }; };\n",
                 ":4: output.hdf5.chunk_images: must be >= 1 (got 0)");
    expect_error(MINIMAL "output: { hdf5: { chunk_images = 2147483648L; }; };\n",
                 ":4: output.hdf5.chunk_images: must be <= 2147483647 (got 2147483648)");
    expect_error(MINIMAL "output: { hdf5: { dtpye = \"uint16\"; }; };\n",
                 ":4: output.hdf5.dtpye: unknown key (did you mean output.hdf5.dtype?)");
    expect_error(MINIMAL "output: { hdf5 = true; };\n",
                 ":4: output.hdf5: expected a group { ... } (got a boolean)");
    expect_error(MINIMAL "output: { png: { enabled = false; };\n  hdf5: { enabled = false; }; };\n",
                 ":4: output: nothing to write: output.png.enabled, output.fits.enabled or "
                 "output.hdf5.enabled must be true");
}

/* output.orientation: the default, the choice, its errors. */
static void test_orientation(void **state)
{
    (void)state;
    psf_config c = load_ok(MINIMAL);
    assert_int_equal(c.orientation, ORIENT_PSFSIM);
    config_free(&c);
    c = load_ok(MINIMAL "output: { orientation = \"poppy\"; };\n");
    assert_int_equal(c.orientation, ORIENT_POPPY);
    config_free(&c);
    expect_error(MINIMAL "output: { orientation = \"webbpsf\"; };\n",
                 ":4: output.orientation: must be \"psfsim\" or \"poppy\" (got \"webbpsf\")");
    expect_error(MINIMAL "output: { orientation = 180; };\n",
                 ":4: output.orientation: expected a string (got an integer)");
    expect_error(MINIMAL "output: { orientaton = \"poppy\"; };\n",
                 ":4: output.orientaton: unknown key (did you mean output.orientation?)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_values_and_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mft_end_to_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_arcsec_pixel_vlt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pupil_captured_fraction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hdf5_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hdf5_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_orientation, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
