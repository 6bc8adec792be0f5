/* SPDX-License-Identifier: BSD-3-Clause */
/* image_set_wavelengths (app/set/image_set.h): the set's wavelength list
 * that NAME.h5, the sidecar and the cost model state. optics' list and
 * weights when every image sums them; none, and per_image, when the images
 * take their own from sweep.wavelength_nm, sweep.random.wavelength_nm or a
 * table's wavelength_nm column (c06c188: two writers once disagreed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "app/config/config.h"
#include "app/set/image_set.h"
#include "tests/support/testutil.h"

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("set_wavelengths");
    if (!g_dir) return -1;
    char path[4200];
    snprintf(path, sizeof path, "%s/rows.csv", g_dir);
    int rc = tu_write_file(path, "wavelength_nm, defocus\n550, 0.1\n650, -0.15\n");
    snprintf(path, sizeof path, "%s/plain.csv", g_dir);
    return rc | tu_write_file(path, "defocus, z5\n0.1, 0.02\n-0.15, 0\n");
}

static int teardown(void **state)
{
    (void)state;
    tu_rmtree(g_dir);
    free(g_dir);
    g_dir = NULL;
    return 0;
}

/* The accessor's answer for the config: optics group OPTICS (inside
 * optics: { ... }), sweep group SWEEP. */
static void wavelengths_of(const char *optics, const char *sweep, set_wavelength_list *w)
{
    char path[4200], err[1024] = "";
    snprintf(path, sizeof path, "%s/c.cfg", g_dir);
    const char *text = tu_format("name = \"c\";\noptics: { %s aperture: { diameter_m = 1.0; }; };\n"
                                 "sampling: { pupil_samples = 16; };\nsweep: { %s };\n",
                                 optics, sweep);
    assert_int_equal(tu_write_file(path, text), 0);
    psf_config cfg;
    image_set s;
    if (config_load(path, &cfg, err, sizeof err)) fail_msg("%s", err);
    if (image_set_init(&s, &cfg, err, sizeof err)) fail_msg("%s", err);
    image_set_wavelengths(&s, w);
    assert_int_equal(w->per_image, image_set_wavelength_per_image(&s));
    /* The list points into cfg: copy what the tests look at first. */
    static double nm[8], weights[8];
    for (int i = 0; i < w->n && i < 8; ++i) {
        nm[i] = w->nm[i];
        weights[i] = w->weights[i];
    }
    if (w->n > 0) {
        w->nm = nm;
        w->weights = weights;
    }
    image_set_free(&s);
    config_free(&cfg);
}

static void test_broadband(void **state)
{
    (void)state;
    set_wavelength_list w;
    wavelengths_of("wavelengths_nm = [500.0, 550.0, 600.0]; weights = [1.0, 2.0, 1.0];",
                   "defocus = [0.0, 0.5];", &w);
    assert_int_equal(w.per_image, 0);
    assert_int_equal(w.n, 3);
    assert_true(w.nm[0] == 500.0 && w.nm[1] == 550.0 && w.nm[2] == 600.0);
    assert_true(w.weights[0] == 0.25 && w.weights[1] == 0.5 && w.weights[2] == 0.25);
}

static void test_monochromatic(void **state)
{
    (void)state;
    set_wavelength_list w;
    wavelengths_of("wavelength_nm = 800.0;", "table = \"plain.csv\";", &w);
    assert_int_equal(w.per_image, 0);
    assert_int_equal(w.n, 1);
    assert_true(w.nm[0] == 800.0 && w.weights[0] == 1.0);
}

/* The three ways images take their own wavelengths: no list (psf_config
 * holds optics' 1000 nm, or the first swept value, which they replace). */
static void test_per_image(void **state)
{
    (void)state;
    set_wavelength_list w;
    wavelengths_of("", "wavelength_nm = [500.0, 650.0];", &w);
    assert_int_equal(w.per_image, 1);
    assert_int_equal(w.n, 0);
    assert_null(w.nm);
    assert_null(w.weights);
    wavelengths_of("wavelength_nm = 1000.0;",
                   "random: { count = 4; seed = 1; zernike = ((4, \"normal\", 0.1)); "
                   "wavelength_nm = [900.0, 1100.0]; };",
                   &w);
    assert_int_equal(w.per_image, 1);
    assert_int_equal(w.n, 0);
    assert_null(w.nm);
    wavelengths_of("", "table = \"rows.csv\";", &w);
    assert_int_equal(w.per_image, 1);
    assert_int_equal(w.n, 0);
    assert_null(w.nm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broadband),
        cmocka_unit_test(test_monochromatic),
        cmocka_unit_test(test_per_image),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
