/* SPDX-License-Identifier: BSD-3-Clause */
/* The FITS header of a PSF image: the keywords docs/config.md lists, with
 * Z<j> in the config's convention and the swept defocus included in Z4,
 * OVERSAMP and DET_SAMP without the detector group (POPPY's parity). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "app/formats/fits.h"
#include "tests/support/testutil.h"

static void test_header_keywords(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("fitshdr");
    char cfg[4200], cmd[9000], path[4300], s[80];
    snprintf(cfg, sizeof cfg, "%s/h.cfg", dir);
    assert_int_equal(
        tu_write_file(cfg,
                      "name = \"h\";\n"
                      "optics: { wavelength_nm = 600.0; f_number = 8.0; "
                      "aperture: { diameter_m = 0.5; }; };\n"
                      "sampling: { pupil_samples = 32; padding = 3.0; };\n"
                      "aberrations: { convention = \"ansi\"; zernike = ((4, 0.1), (12, 0.02)); };\n"
                      "sweep: { defocus = [0.05]; };\n"
                      "output: { png: { enabled = false; }; fits: { enabled = true; }; };\n"),
        0);
    snprintf(cmd, sizeof cmd, "'%s' -q --backend cpu -c '%s' -o '%s/out'", getenv("PSFSIM_BIN"),
             cfg, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/out/h_0.fits", dir);
    double v;
    assert_int_equal(psf_fits_read_key_double(path, "Z4", &v), 0); /* ANSI 4 = defocus */
    assert_float_equal(v, 0.15, 1e-12);
    assert_int_equal(psf_fits_read_key_double(path, "Z12", &v), 0); /* ANSI 12 = spherical */
    assert_float_equal(v, 0.02, 1e-12);
    assert_int_equal(psf_fits_read_key_double(path, "WAVELEN", &v), 0);
    assert_float_equal(v, 600e-9, 1e-18);
    assert_int_equal(psf_fits_read_key_double(path, "NPIX", &v), 0);
    assert_float_equal(v, 96, 0);
    assert_int_equal(psf_fits_read_key_double(path, "PIXSCLLD", &v), 0);
    assert_float_equal(v, 32.0 / 96.0, 1e-12);
    assert_int_equal(psf_fits_read_key_double(path, "PIXSCLUM", &v), 0); /* (n/N) lambda F# */
    assert_float_equal(v, 32.0 / 96.0 * 0.6 * 8.0, 1e-9);
    assert_int_equal(psf_fits_read_key_double(path, "CRPIX1", &v), 0);
    assert_float_equal(v, 49, 0);
    assert_int_equal(psf_fits_read_key_double(path, "STREHL", &v), 0);
    assert_true(v > 0.3 && v < 1.0);
    /* POPPY writes OVERSAMP and DET_SAMP on every PSF: 1 and 1 for detector
     * pixels without the detector group (issue 26). */
    assert_int_equal(psf_fits_read_key_double(path, "OVERSAMP", &v), 0);
    assert_float_equal(v, 1, 0);
    assert_int_equal(psf_fits_read_key_double(path, "DET_SAMP", &v), 0);
    assert_float_equal(v, 1, 0);
    assert_int_equal(psf_fits_read_key_string(path, "ZCONV", s, sizeof s), 0);
    assert_string_equal(s, "ansi");
    assert_int_equal(psf_fits_read_key_string(path, "BACKEND", s, sizeof s), 0);
    assert_string_equal(s, "cpu");
    assert_int_equal(psf_fits_read_key_string(path, "NORMALIZ", s, sizeof s), 0);
    assert_string_equal(s, "peak");
    tu_rmtree(dir);
    free(dir);
}

/* Wavelength cards in metres are nm / 1e9, correctly rounded: 500 nm reads
 * 5E-07 in WAVELEN, REFWAVE and WAVE0, as 5e-7 parses (nm * 1e-9 gave
 * 5.000000000000001E-07, 1e-9 being inexact); the cube's WAVELEN column
 * too. */
static void test_wavelength_metres(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("fitswl");
    char cfg[4200], cmd[9000], path[4300];
    const char *outs[] = {"fits: { enabled = true; }; };",
                          "fits: { enabled = true; cube = true; }; };"};
    for (int cube = 0; cube < 2; ++cube) {
        snprintf(cfg, sizeof cfg, "%s/w%d.cfg", dir, cube);
        char text[600];
        snprintf(text, sizeof text,
                 "name = \"w\";\n"
                 "optics: { wavelengths_nm = [500.0]; aperture: { diameter_m = 1.0; }; };\n"
                 "sampling: { pupil_samples = 16; };\n"
                 "output: { png: { enabled = false; }; %s\n",
                 outs[cube]);
        assert_int_equal(tu_write_file(cfg, text), 0);
        snprintf(cmd, sizeof cmd, "'%s' -q --backend cpu -c '%s' -o '%s/o%d'", getenv("PSFSIM_BIN"),
                 cfg, dir, cube);
        assert_int_equal(system(cmd), 0);
        double v = 0.0;
        if (!cube) {
            snprintf(path, sizeof path, "%s/o0/w_0.fits", dir);
            const char *keys[] = {"WAVELEN", "REFWAVE", "WAVE0"};
            for (int i = 0; i < 3; ++i) {
                assert_int_equal(psf_fits_read_key_double(path, keys[i], &v), 0);
                if (v != 5e-7) fail_msg("%s = %.17g, not 5e-7", keys[i], v);
            }
            continue;
        }
        /* The PLANES table's WAVELEN (column 2, a double a row) in the
         * cube's bytes: the second HDU's data, after its header. */
        snprintf(path, sizeof path, "%s/o1/w_cube.fits", dir);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        static char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        const char *ttype = NULL;
        for (size_t i = 0; i + 80 <= n && !ttype; i += 80)
            if (!memcmp(buf + i, "XTENSION", 8)) ttype = buf + i;
        assert_non_null(ttype);
        const char *end = ttype;
        while (memcmp(end, "END     ", 8) != 0)
            end += 80;
        size_t data = ((size_t)(end - buf) / 2880 + 1) * 2880 + 8; /* row 0, column 2 */
        assert_true(data + 8 <= n);
        unsigned char b[8];
        for (int i = 0; i < 8; ++i)
            b[i] = (unsigned char)buf[data + 7 - i]; /* big-endian */
        memcpy(&v, b, 8);
        if (v != 5e-7) fail_msg("the cube's WAVELEN = %.17g, not 5e-7", v);
    }
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_header_keywords),
                                       cmocka_unit_test(test_wavelength_metres)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
