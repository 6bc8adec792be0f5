/* SPDX-License-Identifier: BSD-3-Clause */
/* The table and random axes of an image set (app/set/axes.h), the terms and
 * totals they add (jobs.h) and the label terms (labels.h). */
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
#include "app/set/draws.h"
#include "app/set/jobs.h"
#include "app/set/labels.h"
#include "tests/support/testutil.h"

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("axes");
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

/* Write the table t.csv (NULL: none) and load a config of the given optics
 * keys and tail into cfg, then its axes into ax. */
static void load(const char *csv, const char *optics, const char *tail, psf_config *cfg,
                 set_axes *ax)
{
    char path[4096], text[8192], err[2048] = "";
    if (csv) {
        snprintf(path, sizeof path, "%s/t.csv", g_dir);
        assert_int_equal(tu_write_file(path, csv), 0);
    }
    snprintf(path, sizeof path, "%s/a.cfg", g_dir);
    snprintf(text, sizeof text,
             "name = \"a\";\noptics: { %s aperture: { diameter_m = 1.0; }; };\n"
             "sampling: { pupil_samples = 32; };\n%s",
             optics, tail);
    assert_int_equal(tu_write_file(path, text), 0);
    if (config_load(path, cfg, err, sizeof err)) fail_msg("%s", err);
    if (axes_init(ax, cfg, err, sizeof err)) fail_msg("%s", err);
}

static void test_axis_order(void **state)
{
    (void)state;
    static const double df[2] = {0.0, 0.5}, wl[3] = {500.0, 600.0, 700.0};
    psf_config c;
    set_axes ax;
    load("wavelength_nm,z5\n500,0.01\n600,0.02\n700,0.03\n", "",
         "sweep: { defocus = [0.0, 0.5]; table = \"t.csv\";\n"
         "  random: { count = 4; seed = 99; zernike = ((4, \"normal\", 0.1), (7, \"uniform\", "
         "0.05)); }; };\n",
         &c, &ax);
    assert_int_equal(ax.nimages, 2 * 3 * 4);
    assert_int_equal(ax.ncart, 2);
    assert_int_equal(ax.nrows, 3);
    assert_int_equal(ax.ndraws, 4);
    assert_true(axes_is_dataset(&ax));
    assert_int_equal(jobs_scratch_size(&ax), 2);
    double scratch[2];
    /* k = (c * rows + r) * draws + d: the draws innermost, then the rows. */
    for (long long k = 0; k < 24; ++k) {
        psf_image_params p;
        jobs_image_params(&ax, k, scratch, &p);
        long long cc = k / 12, r = (k / 4) % 3, d = k % 4;
        assert_int_equal(p.index, k);
        assert_true(p.sweep_defocus == df[cc]);
        assert_int_equal(p.table_row, r);
        assert_int_equal(p.nwl, 1);
        assert_true(p.wl_nm[0] == wl[r] && p.sweep_wavelength_nm == wl[r]);
        assert_int_equal(p.draw, d);
        assert_non_null(p.drawn);
        assert_true(p.drawn[0] == draw_zernike(99, (uint64_t)d, 4, DRAW_NORMAL, 0.1));
        assert_true(p.drawn[1] == draw_zernike(99, (uint64_t)d, 7, DRAW_UNIFORM, 0.05));
        assert_true(isnan(p.sweep_focus_shift_um));
    }
    axes_free(&ax);
    axes_free(&ax); /* twice is harmless */
    config_free(&c);

    /* Neither axis: draw and row -1, no scratch for draws. */
    load(NULL, "wavelength_nm = 550.0;", "sweep: { defocus = [0.0, 0.5]; };\n", &c, &ax);
    assert_false(axes_is_dataset(&ax));
    assert_int_equal(ax.nimages, 2);
    psf_image_params p;
    jobs_image_params(&ax, 1, NULL, &p);
    assert_int_equal(p.table_row, -1);
    assert_int_equal(p.draw, -1);
    assert_null(p.drawn);
    long long n;
    assert_null(axes_image_wavelengths(&ax, &n));
    assert_int_equal(n, 0);
    axes_free(&ax);
    config_free(&c);
}

static void test_modes_and_totals(void **state)
{
    (void)state;
    psf_config c;
    set_axes ax;
    psf_modeset ms;
    char err[256];
    /* nm units: every part in nm, waves = nm / wavelength. */
    load("z5,z11\n10,1\n0,2\n", "wavelength_nm = 500.0;",
         "aberrations: { units = \"nm\"; zernike = ((11, 20.0)); };\n"
         "sweep: { zernike = ((8, [0.0, 5.0])); table = \"t.csv\";\n"
         "  random: { count = 3; seed = 5; zernike = ((7, \"normal\", 8.0), (4, \"uniform\", "
         "6.0));\n"
         "    spectrum: { j_min = 9; j_max = 10; total_rms = 4.0; power = -1.0; }; }; };\n",
         &c, &ax);
    assert_int_equal(jobs_modeset(&ax, &ms, err, sizeof err), 0);
    /* Fixed, swept, drawn as written, the spectrum, the table's columns. */
    static const int noll[] = {11, 8, 7, 4, 9, 10, 5};
    assert_int_equal(ms.nterms, 7);
    for (int t = 0; t < 7; ++t)
        assert_int_equal(ms.noll[t], noll[t]);
    assert_int_equal(ax.nrandom, 4);
    assert_true(ax.random[2].width > 0 && ax.random[2].dist == DRAW_NORMAL);
    /* The spectrum's sigmas: n = 3 for j = 9, 10, equal, total 4 nm RMS. */
    assert_true(fabs(ax.random[2].width - 4.0 / sqrt(2.0)) < 1e-12);
    double scratch[8], w[7], u[7];
    psf_image_params p;
    long long k = 1 * 6 + 1 * 3 + 2; /* Z8 5.0, row 1, draw 2 */
    jobs_image_params(&ax, k, scratch, &p);
    jobs_coefficients(&ax, &ms, &p, 500.0, w, u);
    double d7 = draw_zernike(5, 2, 7, DRAW_NORMAL, 8.0);
    double d4 = draw_zernike(5, 2, 4, DRAW_UNIFORM, 6.0);
    double d9 = draw_zernike(5, 2, 9, DRAW_NORMAL, ax.random[2].width);
    assert_true(u[0] == 20.0 + 2.0); /* fixed + the table's z11 */
    assert_true(u[1] == 5.0);
    assert_true(u[2] == 0.0 + d7);
    assert_true(u[3] == 0.0 + d4);
    assert_true(u[4] == 0.0 + d9);
    assert_true(u[6] == 0.0); /* row 1's z5 */
    for (int t = 0; t < 7; ++t)
        assert_true(w[t] == u[t] / 500.0);

    /* The labels: ascending j, every term here non-zero somewhere. */
    set_labels l;
    assert_int_equal(set_labels_init(&l, &ax, &ms, err, sizeof err), 0);
    static const int lj[] = {4, 5, 7, 8, 9, 10, 11};
    assert_int_equal(l.nterms, 7);
    for (int i = 0; i < 7; ++i) {
        assert_int_equal(l.j[i], lj[i]);
        assert_int_equal(ms.noll[l.mode[i]], lj[i]);
        assert_true(set_labels_total(&l, u, i) == u[l.mode[i]]);
    }
    set_labels_free(&l);
    set_labels_free(&l);
    jobs_modeset_free(&ms);
    axes_free(&ax);
    config_free(&c);
}

static void test_labels_nonzero(void **state)
{
    (void)state;
    psf_config c;
    set_axes ax;
    psf_modeset ms;
    set_labels l;
    char err[256];
    /* Zero everywhere: fixed 0, a zero swept list, an all-zero column, a
     * zero width. Counted: a non-zero cell, a width > 0, and Z4 through the
     * focus shifts drawn. ANSI indices. */
    load("z3,z6\n0,0\n0,0.5\n", "wavelength_nm = 500.0; f_number = 10.0;",
         "aberrations: { convention = \"ansi\"; zernike = ((12, 0.0), (8, 0.1)); };\n"
         "sweep: { zernike = ((7, [0.0, 0.0])); table = \"t.csv\";\n"
         "  random: { count = 2; seed = 0; zernike = ((5, \"normal\", 0.0), (9, \"uniform\", "
         "0.01));\n"
         "    focus_shift_um = [0.0, 30.0]; }; };\n",
         &c, &ax);
    assert_int_equal(jobs_modeset(&ax, &ms, err, sizeof err), 0);
    /* 12, 8, 7, 5, 9, 3, 6, then Z(2, 0) (ANSI 4) for the focus shifts. */
    assert_int_equal(ms.nterms, 8);
    assert_int_equal(ms.n[7], 2);
    assert_int_equal(ms.m[7], 0);
    assert_int_equal(set_labels_init(&l, &ax, &ms, err, sizeof err), 0);
    static const int lj[] = {4, 6, 8, 9};
    assert_int_equal(l.nterms, 4);
    for (int i = 0; i < 4; ++i)
        assert_int_equal(l.j[i], lj[i]);
    /* The focus shift chosen per draw (purpose 1). */
    for (long long k = 0; k < ax.nimages; ++k) {
        double scratch[4];
        psf_image_params p;
        jobs_image_params(&ax, k, scratch, &p);
        draw_id id = {0, (uint64_t)p.draw, 0, DRAW_FOCUS_SHIFT};
        assert_true(p.sweep_focus_shift_um == (draw_choice(id, 2) ? 30.0 : 0.0));
    }
    set_labels_free(&l);
    jobs_modeset_free(&ms);
    axes_free(&ax);
    config_free(&c);
}

/* A table that the other axes refuse: the message names both places. */
static void test_refusals(void **state)
{
    (void)state;
    char path[4096], err[2048];
    psf_config c;
    set_axes ax;
    snprintf(path, sizeof path, "%s/t.csv", g_dir);
    assert_int_equal(tu_write_file(path, "z4,defocus\n0.1,0.2\n"), 0);
    snprintf(path, sizeof path, "%s/b.cfg", g_dir);
    assert_int_equal(tu_write_file(path,
                                   "name = \"b\";\n"
                                   "optics: { wavelength_nm = 500.0; aperture: { "
                                   "diameter_m = 1.0; }; };\n"
                                   "sampling: { pupil_samples = 32; };\n"
                                   "sweep: {\n  defocus = [0.0];\n  table = \"t.csv\";\n};\n"),
                     0);
    assert_int_equal(config_load(path, &c, err, sizeof err), 0);
    assert_int_equal(axes_init(&ax, &c, err, sizeof err), -1);
    assert_non_null(strstr(err, "b.cfg:6: sweep.table: "));
    assert_non_null(strstr(err, "t.csv:1:2 (defocus): the column is also given by sweep.defocus"));
    assert_non_null(strstr(err, "b.cfg:5)"));
    assert_null(ax.table);
    axes_free(&ax);
    config_free(&c);
}

/* axes_init's message for table csv under a config of the given optics
 * keys and units ("waves" or "nm"); the table is refused. */
static void refused(const char *csv, const char *optics, const char *units, const char *want)
{
    char path[4096], err[2048] = "";
    psf_config c;
    set_axes ax;
    snprintf(path, sizeof path, "%s/t.csv", g_dir);
    assert_int_equal(tu_write_file(path, csv), 0);
    snprintf(path, sizeof path, "%s/b.cfg", g_dir);
    char *text = tu_format("name = \"b\";\noptics: { %s aperture: { diameter_m = 1.0; }; };\n"
                           "sampling: { pupil_samples = 32; };\naberrations: { units = \"%s\"; };\n"
                           "sweep: { table = \"t.csv\"; };\n",
                           optics, units);
    assert_int_equal(tu_write_file(path, text), 0);
    if (config_load(path, &c, err, sizeof err)) fail_msg("%s", err);
    if (axes_init(&ax, &c, err, sizeof err) == 0) fail_msg("accepted %s", csv);
    char *full = tu_format("%s/b.cfg:5: sweep.table: %s/t.csv%s", g_dir, g_dir, want);
    assert_string_equal(err, full);
    axes_free(&ax);
    config_free(&c);
}

/* Every cell within the bounds of the config's keys, named PATH:L:C
 * (column): 1e300 waves of defocus gave a flat image (Strehl 1, exit 0),
 * 1e-300 nm of wavelength was accepted. */
static void test_cell_bounds(void **state)
{
    (void)state;
    const char *mono = "wavelength_nm = 500.0; f_number = 10.0;";
    refused("defocus,z11\n0.1,0\n1e300,0\n", mono, "waves",
            ":3:1 (defocus): must be in [-1e+06, 1e+06] (waves RMS) (got 1e+300)");
    refused("defocus,z11\n0.1,0\n\n0,-1e300\n", mono, "waves",
            ":4:2 (z11): must be in [-1e+06, 1e+06] (waves RMS) (got -1e+300)");
    refused("z4\n500000001\n", mono, "nm",
            ":2:1 (z4): must be in [-5e+08, 5e+08] (1e+06 waves RMS at 500 nm, the shortest "
            "wavelength) (got 500000001)");
    refused("focus_shift_um\n1e300\n", mono, "waves",
            ":2:1 (focus_shift_um): must be in [-1.38564e+09, 1.38564e+09] (a defocus of 1e+06 "
            "waves RMS at 500 nm, the shortest wavelength, through f_number 10) (got 1e+300)");
    refused("wavelength_nm\n500\n1e-300\n", "f_number = 10.0;", "waves",
            ":3:1 (wavelength_nm): must be >= 1 (nm) (got 1e-300)");
    refused("wavelength_nm\n1e300\n", "f_number = 10.0;", "waves",
            ":2:1 (wavelength_nm): must be <= 1e+06 (nm) (got 1e+300)");
    /* nm: the table's own wavelengths count (its shortest, 100 nm). */
    refused("wavelength_nm,z5\n700,0\n100,100000001\n", "f_number = 10.0;", "nm",
            ":3:2 (z5): must be in [-1e+08, 1e+08] (1e+06 waves RMS at 100 nm, the shortest "
            "wavelength) (got 100000001)");
    /* At the bounds: accepted. */
    psf_config c;
    set_axes ax;
    load("wavelength_nm,defocus,z11,focus_shift_um\n1,1e6,-1e6,0\n1e6,0,0,2771\n",
         "f_number = 10.0;", "sweep: { table = \"t.csv\"; };\n", &c, &ax);
    assert_int_equal(ax.nrows, 2);
    axes_free(&ax);
    config_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_axis_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_modes_and_totals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_labels_nonzero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cell_bounds, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
