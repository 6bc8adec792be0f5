/* SPDX-License-Identifier: BSD-3-Clause */
/* output.fits.cube: one FITS cube whose plane k equals image k of the same
 * set written as separate FITS files, with a PLANES table of per-plane
 * parameters, and a manifest that names the cube. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fitsio.h>

#include "tests/support/testutil.h"

#define CFG_TEXT                                                                                   \
    "name = \"c\";\n"                                                                              \
    "optics: { wavelength_nm = 550.0; f_number = 10; aperture: { diameter_m = 1.0; "               \
    "obscuration = 0.2; }; };\n"                                                                   \
    "sampling: { pupil_samples = 32; padding = 2.0; };\n"                                          \
    "sweep: { defocus = [-0.5, 0.0, 0.5]; zernike = ((7, [0.0, 0.1])); };\n"                       \
    "output: { png: { enabled = false; }; fits: { enabled = true; cube = %s; }; };\n"

static void run(const char *dir, const char *cube, const char *out)
{
    char cfg[4200], text[1024], cmd[9000];
    snprintf(cfg, sizeof cfg, "%s/%s.cfg", dir, cube);
    snprintf(text, sizeof text, CFG_TEXT, cube);
    assert_int_equal(tu_write_file(cfg, text), 0);
    snprintf(cmd, sizeof cmd, "'%s' -q --backend cpu -c '%s' -o '%s/%s'", getenv("PSFSIM_BIN"), cfg,
             dir, out);
    assert_int_equal(system(cmd), 0);
}

static void test_cube_equals_separate_files(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("cube");
    run(dir, "false", "files");
    run(dir, "true", "cube");
    char path[4300];
    snprintf(path, sizeof path, "%s/cube", dir);
    assert_int_equal(tu_count_entries(path), 3); /* cube, manifest, timing */
    snprintf(path, sizeof path, "%s/cube/c_cube.fits", dir);
    fitsfile *f;
    int status = 0, naxis;
    long naxes[3];
    fits_open_diskfile(&f, path, READONLY, &status);
    fits_get_img_dim(f, &naxis, &status);
    fits_get_img_size(f, 3, naxes, &status);
    assert_int_equal(status, 0);
    assert_int_equal(naxis, 3);
    assert_int_equal(naxes[0], 64);
    assert_int_equal(naxes[2], 6);
    float plane[64 * 64], single[64 * 64];
    for (int k = 0; k < 6; ++k) {
        fits_read_img(f, TFLOAT, 1 + (LONGLONG)k * 4096, 4096, NULL, plane, NULL, &status);
        char one[4300];
        snprintf(one, sizeof one, "%s/files/c_%d.fits", dir, k);
        fitsfile *g;
        int st2 = 0;
        fits_open_diskfile(&g, one, READONLY, &st2);
        fits_read_img(g, TFLOAT, 1, 4096, NULL, single, NULL, &st2);
        fits_close_file(g, &st2);
        assert_int_equal(st2, 0);
        assert_memory_equal(plane, single, sizeof plane);
    }
    /* The PLANES table: 6 rows; DEFOCUS and ZSWEEP7 in sweep order; STREHL 1 at focus. */
    fits_movnam_hdu(f, BINARY_TBL, "PLANES", 0, &status);
    long nrows;
    int col;
    fits_get_num_rows(f, &nrows, &status);
    assert_int_equal(nrows, 6);
    double v[6];
    fits_get_colnum(f, CASEINSEN, "DEFOCUS", &col, &status);
    fits_read_col(f, TDOUBLE, col, 1, 1, 6, NULL, v, NULL, &status);
    assert_true(v[0] == -0.5 && v[2] == 0.0 && v[5] == 0.5);
    fits_get_colnum(f, CASEINSEN, "ZSWEEP7", &col, &status);
    fits_read_col(f, TDOUBLE, col, 1, 1, 6, NULL, v, NULL, &status);
    assert_true(v[0] == 0.0 && v[1] == 0.1);
    fits_get_colnum(f, CASEINSEN, "STREHL", &col, &status);
    fits_read_col(f, TDOUBLE, col, 1, 1, 6, NULL, v, NULL, &status);
    assert_float_equal(v[2], 1.0, 1e-5);
    fits_close_file(f, &status);
    assert_int_equal(status, 0);
    /* The manifest names the cube in every row's fits cell. */
    snprintf(path, sizeof path, "%s/cube/c_manifest.csv", dir);
    FILE *m = fopen(path, "r");
    char line[1024];
    int rows = 0;
    while (fgets(line, sizeof line, m))
        if (line[0] >= '0' && line[0] <= '9') {
            assert_non_null(strstr(line, ",,c_cube.fits,"));
            rows++;
        }
    fclose(m);
    assert_int_equal(rows, 6);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cube_equals_separate_files)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
