/* SPDX-License-Identifier: BSD-3-Clause */
/* The field group (app/config/config_field.c) and its models
 * (app/set/field_model.h, field_table.h): the positions as the outermost
 * axis, the polynomial's values, the measured table's triangulation
 * (exact at the points, linear fields exact inside, refused outside) and
 * the totals jobs_coefficients adds them to. */
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
#include "app/set/axes.h"
#include "app/set/field_grid.h"
#include "app/set/field_model.h"
#include "app/set/jobs.h"
#include "tests/support/testutil.h"

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("field");
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

/* Write f.csv (NULL: none) and a config whose field group is field and
 * whose tail is tail; load it and its axes and field model. Returns the
 * model's status (0, or -1 with err). */
static int load(const char *csv, const char *field, const char *tail, psf_config *cfg, set_axes *ax,
                char *err, size_t errlen)
{
    char path[4096], text[8192];
    if (csv) {
        snprintf(path, sizeof path, "%s/f.csv", g_dir);
        assert_int_equal(tu_write_file(path, csv), 0);
    }
    snprintf(path, sizeof path, "%s/f.cfg", g_dir);
    snprintf(text, sizeof text,
             "name = \"f\";\noptics: { wavelength_nm = 500.0; aperture: { diameter_m = 1.0; }; "
             "};\nsampling: { pupil_samples = 32; };\n%s"
             "field: {\n  centre_px = [100.0, 50.0];\n  radius_px = 200.0;\n  %s\n};\n",
             tail, field);
    assert_int_equal(tu_write_file(path, text), 0);
    if (config_load(path, cfg, err, errlen)) fail_msg("%s", err);
    if (axes_init(ax, cfg, err, errlen)) fail_msg("%s", err);
    return field_model_init(ax, err, errlen);
}

/* The grid x fastest, the field outermost (a sweep of 2 inside it), the
 * polynomial bit for bit (sum of c pow(hx, p) pow(hy, q) from 0.0) and the
 * totals: the swept defocus, then the field's value. */
static void test_polynomial_axis(void **state)
{
    (void)state;
    psf_config c;
    set_axes ax;
    char err[2048] = "";
    assert_int_equal(load(NULL,
                          "grid = { nx = 3; ny = 2; x_px = [0.0, 300.0]; y_px = [-10.0, 90.0]; };\n"
                          "  zernike = ( (4, ( (0, 0, 0.02), (2, 0, 0.05), (0, 2, 0.05) )),\n"
                          "              (7, ( (1, 1, 0.3), (3, 0, -0.01) )) );",
                          "sweep: { defocus = [0.0, 0.25]; };\n", &c, &ax, err, sizeof err),
                     0);
    assert_int_equal(ax.nfield, 6);
    assert_int_equal(ax.nimages, 12);
    assert_int_equal(ax.nfterms, 2);
    psf_modeset ms;
    assert_int_equal(jobs_modeset(&ax, &ms, err, sizeof err), 0);
    double *scratch = calloc(jobs_scratch_size(&ax) + 1, sizeof *scratch);
    double w[8], u[8];
    for (long long k = 0; k < 12; ++k) {
        long long f = k / 2;
        double x = (double[]){0.0, 150.0, 300.0}[f % 3], y = (double[]){-10.0, 90.0}[f / 3];
        double px, py, hx, hy;
        assert_int_equal(axes_field(&ax, k), f);
        assert_int_equal(field_grid_position(&ax, k, &px, &py), 1);
        assert_true(px == x && py == y);
        assert_int_equal(field_grid_h(&ax, k, &hx, &hy), 1);
        assert_true(hx == (x - 100.0) / 200.0 && hy == (y - 50.0) / 200.0);
        double z4 = 0.0;
        z4 += 0.02 * pow(hx, 0) * pow(hy, 0);
        z4 += 0.05 * pow(hx, 2) * pow(hy, 0);
        z4 += 0.05 * pow(hx, 0) * pow(hy, 2);
        double z7 = 0.0;
        z7 += 0.3 * pow(hx, 1) * pow(hy, 1);
        z7 += -0.01 * pow(hx, 3) * pow(hy, 0);
        psf_image_params p;
        jobs_image_params(&ax, k, scratch, &p);
        assert_int_equal(p.field, f);
        jobs_coefficients(&ax, &ms, &p, 500.0, w, u);
        for (int t = 0; t < ms.nterms; ++t) {
            if (ms.noll[t] == 4) assert_true(u[t] == 0.0 + (k % 2 ? 0.25 : 0.0) + z4);
            if (ms.noll[t] == 7) assert_true(u[t] == 0.0 + z7);
        }
    }
    free(scratch);
    jobs_modeset_free(&ms);
    axes_free(&ax);
    config_free(&c);
}

/* The table: exact at its points, a linear field inside to 1e-12, also on
 * a regular grid of points (cocircular quadruples, Qhull's Qz case). */
static void test_table_linear(void **state)
{
    (void)state;
    psf_config c;
    set_axes ax;
    char err[2048] = "", csv[4096] = "x_px,y_px,z5,z4\n";
    /* z5 = 0.1 + 0.002 x - 0.003 y, z4 = -0.05 + 0.001 y on a 4 x 3 grid */
    for (int iy = 0; iy < 3; ++iy)
        for (int ix = 0; ix < 4; ++ix) {
            double x = 100.0 * ix, y = 50.0 * iy;
            size_t at = strlen(csv);
            snprintf(csv + at, sizeof csv - at, "%.17g,%.17g,%.17g,%.17g\n", x, y,
                     0.1 + 0.002 * x - 0.003 * y, -0.05 + 0.001 * y);
        }
    assert_int_equal(load(csv,
                          "positions_px = ( (100.0, 50.0), (37.5, 12.25), (299.0, 99.5), "
                          "(0.0, 100.0), (250.0, 0.0) );\n  table = \"f.csv\";",
                          "", &c, &ax, err, sizeof err),
                     0);
    assert_int_equal(ax.nfterms, 2);
    assert_int_equal(ax.fterms[0].j, 5);
    assert_int_equal(ax.fterms[1].j, 4);
    static const double pos[5][2] = {
        {100.0, 50.0}, {37.5, 12.25}, {299.0, 99.5}, {0.0, 100.0}, {250.0, 0.0}};
    for (int f = 0; f < 5; ++f) {
        double x = pos[f][0], y = pos[f][1];
        double z5 = 0.1 + 0.002 * x - 0.003 * y, z4 = -0.05 + 0.001 * y;
        assert_true(fabs(ax.fvalues[f * 2] - z5) < 1e-12);
        assert_true(fabs(ax.fvalues[f * 2 + 1] - z4) < 1e-12);
    }
    /* (100, 50) and (0, 100) are table points: their cells, bit for bit */
    assert_true(ax.fvalues[0] == 0.1 + 0.002 * 100.0 - 0.003 * 50.0);
    assert_true(ax.fvalues[3 * 2 + 1] == -0.05 + 0.001 * 100.0);
    axes_free(&ax);
    config_free(&c);
}

/* A position outside the hull, collinear points (psfsim's sentence, then
 * Qhull's code), too few points, a header and no rows (a field table's
 * rows are points, not images), a repeated point, a column of another name:
 * refused, naming the key, file and position. */
static void test_table_errors(void **state)
{
    (void)state;
    static const struct {
        const char *csv, *positions, *want;
    } cases[] = {
        {"x_px,y_px,z4\n0,0,1\n10,0,1\n0,10,1\n", "(6.0, 6.0)",
         ": the position (6, 6) px is outside the convex hull of the "
         "table's 3 points"},
        {"x_px,y_px,z4\n0,0,1\n1,1,1\n2,2,1\n", "(1.0, 1.0)",
         ": the table's 3 points are collinear (or coincide): a triangulation needs three "
         "points not on one line (Qhull QH6154)"},
        {"x_px,y_px,z4\n0,0,1\n1,0,1\n", "(0.5, 0.0)",
         ": the table's 2 points are collinear (or coincide): a triangulation needs three "
         "points not on one line (Qhull QH"},
        {"x_px,y_px,z4\n", "(0.5, 0.0)",
         ": no data rows after the header (one measured field point per row)"},
        {"x_px,y_px,z4\n0,0,1\n1,0,1\n0,1,1\n1,0,2\n", "(0.5, 0.0)",
         ":5: the point (1, 0) repeats line 3's"},
        {"x_px,y_px,defocus\n0,0,1\n1,0,1\n0,1,1\n", "(0.5, 0.0)",
         ":1:3 (defocus): unknown column (allowed: x_px, y_px, z<j>"},
        {"x_px,z4\n0,1\n1,1\n0,1\n", "(0.5, 0.0)",
         ": needs the columns x_px, y_px and at least one z<j>"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        psf_config c;
        set_axes ax;
        char err[2048] = "", field[256], want[1024];
        snprintf(field, sizeof field, "positions_px = ( %s );\n  table = \"f.csv\";",
                 cases[i].positions);
        assert_int_equal(load(cases[i].csv, field, "", &c, &ax, err, sizeof err), -1);
        snprintf(want, sizeof want, "field.table: %s/f.csv%s", g_dir, cases[i].want);
        if (!strstr(err, want)) fail_msg("case %zu: %s\nwanted: %s", i, err, want);
        assert_non_null(strstr(err, "f.cfg:8: field.table: ")); /* where the key is written */
        axes_free(&ax);
        config_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_polynomial_axis),
        cmocka_unit_test(test_table_linear),
        cmocka_unit_test(test_table_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
