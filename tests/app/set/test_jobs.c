/* SPDX-License-Identifier: BSD-3-Clause */
/* Image-set expansion: sweep order (docs/config.md), the mode set, and the
 * total coefficients (units, swept defocus, focus shift per docs/design.md). */
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
#include "app/set/jobs.h"
#include "tests/support/testutil.h"

static char *g_dir;
static set_axes g_ax;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("jobs");
    return g_dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    axes_free(&g_ax);
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

/* The set axes of a config (no table, no draws here: nothing to load). */
static const set_axes *ax_of(const psf_config *cfg)
{
    char err[256] = "";
    axes_free(&g_ax);
    if (axes_init(&g_ax, cfg, err, sizeof err)) fail_msg("%s", err);
    return &g_ax;
}

/* Load config text (a minimal valid head plus the given tail) into cfg. */
static void load(const char *optics_extra, const char *tail, psf_config *cfg)
{
    char path[4096], text[8192], err[1024] = "";
    snprintf(path, sizeof path, "%s/j.cfg", g_dir);
    snprintf(text, sizeof text,
             "name = \"j\";\n"
             "optics: { %s aperture: { diameter_m = 1.0; }; };\n"
             "sampling: { pupil_samples = 32; };\n%s",
             optics_extra, tail);
    assert_int_equal(tu_write_file(path, text), 0);
    if (config_load(path, cfg, err, sizeof err)) fail_msg("%s", err);
}

static void test_sweep_order(void **state)
{
    (void)state;
    static const double wl[3] = {450.0, 550.0, 650.0};
    static const double df[5] = {-1.0, -0.5, 0.0, 0.5, 1.0};
    static const double z7[2] = {0.0, 0.05};
    static const double z8[3] = {0.1, 0.2, 0.3};
    psf_config c;
    load("", /* no optics.wavelength_nm: the sweep gives it */
         "sweep: {\n"
         "  zernike = ( (7, [0.0, 0.05]), (8, [0.1, 0.2, 0.3]) );\n"
         "  defocus = [-1.0, -0.5, 0.0, 0.5, 1.0];\n"
         "  wavelength_nm = [450.0, 550.0, 650.0];\n"
         "};\n",
         &c);
    assert_int_equal(config_image_count(&c), 3 * 5 * 2 * 3);
    double scratch[2];
    long long k = 0;
    /* Wavelength outermost, then defocus, then the zernike entries in the
     * order written, the last fastest: whatever order the keys are in. */
    for (int iw = 0; iw < 3; ++iw)
        for (int id = 0; id < 5; ++id)
            for (int i7 = 0; i7 < 2; ++i7)
                for (int i8 = 0; i8 < 3; ++i8, ++k) {
                    psf_image_params p;
                    memset(&p, 0, sizeof p);
                    jobs_image_params(ax_of(&c), k, scratch, &p);
                    assert_int_equal(p.index, k);
                    ASSERT_NEAR(p.sweep_wavelength_nm, wl[iw], 0);
                    assert_int_equal(p.nwl, 1);
                    ASSERT_NEAR(p.wl_nm[0], wl[iw], 0);
                    ASSERT_NEAR(p.weights[0], 1.0, 0);
                    ASSERT_NEAR(p.sweep_defocus, df[id], 0);
                    assert_true(isnan(p.sweep_focus_shift_um));
                    assert_ptr_equal(p.sweep_zernike, scratch);
                    ASSERT_NEAR(p.sweep_zernike[0], z7[i7], 0);
                    ASSERT_NEAR(p.sweep_zernike[1], z8[i8], 0);
                }
    /* Spot checks written out: k = ((iw * 5 + id) * 2 + i7) * 3 + i8. */
    psf_image_params p;
    jobs_image_params(ax_of(&c), 47, scratch, &p); /* 47 = ((1*5 + 2)*2 + 1)*3 + 2 */
    ASSERT_NEAR(p.sweep_wavelength_nm, 550.0, 0);
    ASSERT_NEAR(p.sweep_defocus, 0.0, 0);
    ASSERT_NEAR(p.sweep_zernike[0], 0.05, 0);
    ASSERT_NEAR(p.sweep_zernike[1], 0.3, 0);
    jobs_image_params(ax_of(&c), 89, scratch, &p);
    ASSERT_NEAR(p.sweep_wavelength_nm, 650.0, 0);
    ASSERT_NEAR(p.sweep_defocus, 1.0, 0);
    ASSERT_NEAR(p.sweep_zernike[0], 0.05, 0);
    ASSERT_NEAR(p.sweep_zernike[1], 0.3, 0);
    config_free(&c);
}

static void test_focus_shift_order_and_broadband(void **state)
{
    (void)state;
    psf_config c;
    load("wavelengths_nm = [500.0, 600.0]; weights = [3.0, 1.0]; f_number = 10.0;",
         "sweep: { focus_shift_um = [-50.0, 50.0]; defocus = [0.1, 0.2, 0.3]; };\n", &c);
    assert_int_equal(config_image_count(&c), 6);
    for (long long k = 0; k < 6; ++k) {
        psf_image_params p;
        jobs_image_params(ax_of(&c), k, NULL, &p);
        /* Defocus before (slower than) focus shift. */
        ASSERT_NEAR(p.sweep_defocus, 0.1 * (double)(k / 2 + 1), 1e-15);
        ASSERT_NEAR(p.sweep_focus_shift_um, k % 2 ? 50.0 : -50.0, 0);
        assert_true(isnan(p.sweep_wavelength_nm));
        assert_null(p.sweep_zernike);
        assert_int_equal(p.nwl, 2);
        assert_ptr_equal(p.wl_nm, c.wavelengths_nm);
        assert_ptr_equal(p.weights, c.weights);
        ASSERT_NEAR(p.weights[0], 0.75, 0);
        ASSERT_NEAR(p.weights[1], 0.25, 0);
    }
    config_free(&c);

    /* No sweep: one image, nothing swept. */
    load("wavelength_nm = 550.0;", "", &c);
    assert_int_equal(config_image_count(&c), 1);
    psf_image_params p;
    jobs_image_params(ax_of(&c), 0, NULL, &p);
    assert_int_equal(p.nwl, 1);
    ASSERT_NEAR(p.wl_nm[0], 550.0, 0);
    ASSERT_NEAR(p.weights[0], 1.0, 0);
    assert_true(isnan(p.sweep_wavelength_nm));
    assert_true(isnan(p.sweep_defocus));
    assert_true(isnan(p.sweep_focus_shift_um));
    config_free(&c);
}

static void test_modeset(void **state)
{
    (void)state;
    psf_config c;
    psf_modeset ms;
    char err[256];

    /* Config terms in order, then swept terms not yet there; Noll 4 is
     * already there for the swept defocus. */
    load("wavelength_nm = 550.0;",
         "aberrations: { zernike = ( (4, 0.25), (11, -0.05) ); };\n"
         "sweep: { defocus = [0.0, 0.1]; zernike = ( (11, [0.01]), (7, [0.0, 0.1]) ); };\n",
         &c);
    assert_int_equal(jobs_modeset(ax_of(&c), &ms, err, sizeof err), 0);
    assert_int_equal(ms.nterms, 3);
    assert_int_equal(ms.n[0], 2);
    assert_int_equal(ms.m[0], 0);
    assert_int_equal(ms.noll[0], 4);
    assert_int_equal(ms.n[1], 4);
    assert_int_equal(ms.m[1], 0);
    assert_int_equal(ms.noll[1], 11);
    assert_int_equal(ms.n[2], 3);
    assert_int_equal(ms.m[2], -1);
    assert_int_equal(ms.noll[2], 7);
    jobs_modeset_free(&ms);
    assert_int_equal(ms.nterms, 0);
    assert_null(ms.n);
    config_free(&c);

    /* Noll 4 appended last for a swept focus shift; ANSI indices become
     * Noll numbers for headers. */
    load("wavelength_nm = 550.0; f_number = 8.0;",
         "aberrations: { convention = \"ansi\"; zernike = ( (12, 0.1), (3, 0.2) ); };\n"
         "sweep: { focus_shift_um = [10.0]; };\n",
         &c);
    assert_int_equal(jobs_modeset(ax_of(&c), &ms, err, sizeof err), 0);
    assert_int_equal(ms.nterms, 3);
    assert_int_equal(ms.n[0], 4);
    assert_int_equal(ms.m[0], 0);
    assert_int_equal(ms.noll[0], 11);
    assert_int_equal(ms.n[1], 2);
    assert_int_equal(ms.m[1], -2);
    assert_int_equal(ms.noll[1], 5);
    assert_int_equal(ms.n[2], 2);
    assert_int_equal(ms.m[2], 0);
    assert_int_equal(ms.noll[2], 4);
    jobs_modeset_free(&ms);
    config_free(&c);

    /* Nothing at all. */
    load("wavelength_nm = 550.0;", "", &c);
    assert_int_equal(jobs_modeset(ax_of(&c), &ms, err, sizeof err), 0);
    assert_int_equal(ms.nterms, 0);
    jobs_modeset_free(&ms);
    jobs_modeset_free(&ms); /* twice is harmless */
    config_free(&c);
}

/* The total coefficients of image k at wavelength wl_nm. */
static void totals(const psf_config *c, long long k, double wl_nm, psf_modeset *ms, double *w,
                   double *u)
{
    char err[256];
    double scratch[8];
    psf_image_params p;
    assert_int_equal(jobs_modeset(ax_of(c), ms, err, sizeof err), 0);
    jobs_image_params(ax_of(c), k, scratch, &p);
    jobs_coefficients(ax_of(c), ms, &p, wl_nm, w, u);
}

static void test_coefficients(void **state)
{
    (void)state;
    psf_config c;
    psf_modeset ms;
    double w[8], u[8];

    /* Waves: base + swept defocus + swept term, unchanged by wavelength. */
    load("wavelength_nm = 550.0;",
         "aberrations: { zernike = ( (4, 0.25), (11, -0.05) ); };\n"
         "sweep: { defocus = [0.5, 1.0]; zernike = ( (11, [0.01, 0.02]), (7, [0.3]) ); };\n",
         &c);
    totals(&c, 1, 550.0, &ms, w, u); /* defocus 0.5, Z11 +0.02, Z7 0.3 */
    assert_int_equal(ms.nterms, 3);
    ASSERT_NEAR(w[0], 0.75, 1e-15);
    ASSERT_NEAR(w[1], -0.03, 1e-15);
    ASSERT_NEAR(w[2], 0.3, 1e-15);
    ASSERT_NEAR(u[0], 0.75, 1e-15);
    ASSERT_NEAR(u[1], -0.03, 1e-15);
    jobs_modeset_free(&ms);
    totals(&c, 2, 1000.0, &ms, w, NULL); /* defocus 1.0, Z11 +0.01 */
    ASSERT_NEAR(w[0], 1.25, 1e-15);
    ASSERT_NEAR(w[1], -0.04, 1e-15);
    jobs_modeset_free(&ms);
    config_free(&c);

    /* nm: divided by the wavelength for waves; units keep nm. */
    load("wavelength_nm = 500.0;",
         "aberrations: { units = \"nm\"; zernike = ( (4, 100.0), (11, 50) ); };\n"
         "sweep: { defocus = [25.0]; };\n",
         &c);
    totals(&c, 0, 500.0, &ms, w, u);
    ASSERT_NEAR(w[0], 0.25, 1e-15);
    ASSERT_NEAR(w[1], 0.1, 1e-15);
    ASSERT_NEAR(u[0], 125.0, 1e-12);
    ASSERT_NEAR(u[1], 50.0, 0);
    jobs_modeset_free(&ms);
    totals(&c, 0, 250.0, &ms, w, u); /* the same nm are twice the waves at 250 nm */
    ASSERT_NEAR(w[0], 0.5, 1e-15);
    ASSERT_NEAR(w[1], 0.2, 1e-15);
    jobs_modeset_free(&ms);
    config_free(&c);
}

static void test_focus_shift(void **state)
{
    (void)state;
    psf_config c;
    psf_modeset ms;
    double w[4], u[4];
    /* dz = 8 F^2 um at F = 10 is a peak-to-valley W020 of 1 um, i.e. a Noll 4
     * RMS of 1 / (2 sqrt 3) um = 288.675 nm; positive dz, positive Z4. */
    const double z4_nm = 1000.0 / (2.0 * sqrt(3.0));
    ASSERT_NEAR(z4_nm, 288.675134594813, 1e-9);

    load("wavelength_nm = 500.0; f_number = 10.0;",
         "aberrations: { zernike = ( (4, 0.1) ); };\n"
         "sweep: { focus_shift_um = [800.0, -800.0, 0.0]; };\n",
         &c);
    totals(&c, 0, 500.0, &ms, w, u);
    assert_int_equal(ms.nterms, 1);
    assert_int_equal(ms.noll[0], 4);
    ASSERT_NEAR(w[0], 0.1 + z4_nm / 500.0, 1e-12);
    ASSERT_NEAR(u[0], 0.1 + z4_nm / 500.0, 1e-12); /* in waves at this wavelength */
    jobs_modeset_free(&ms);
    totals(&c, 0, 1000.0, &ms, w, u);
    ASSERT_NEAR(w[0], 0.1 + z4_nm / 1000.0, 1e-12);
    ASSERT_NEAR(u[0], 0.1 + z4_nm / 1000.0, 1e-12);
    jobs_modeset_free(&ms);
    totals(&c, 1, 500.0, &ms, w, u);
    ASSERT_NEAR(w[0], 0.1 - z4_nm / 500.0, 1e-12);
    jobs_modeset_free(&ms);
    totals(&c, 2, 500.0, &ms, w, u);
    ASSERT_NEAR(w[0], 0.1, 1e-15);
    jobs_modeset_free(&ms);
    config_free(&c);

    /* nm units: the focus shift adds um * 1000 nm; defocus adds too. */
    load("wavelength_nm = 500.0; f_number = 10.0;",
         "aberrations: { units = \"nm\"; zernike = ( (11, 20.0) ); };\n"
         "sweep: { defocus = [11.0]; focus_shift_um = [800.0]; };\n",
         &c);
    totals(&c, 0, 500.0, &ms, w, u);
    assert_int_equal(ms.nterms, 2);
    assert_int_equal(ms.noll[1], 4);
    ASSERT_NEAR(u[0], 20.0, 0);
    ASSERT_NEAR(w[0], 0.04, 1e-15);
    ASSERT_NEAR(u[1], 11.0 + z4_nm, 1e-9);
    ASSERT_NEAR(w[1], (11.0 + z4_nm) / 500.0, 1e-12);
    jobs_modeset_free(&ms);
    config_free(&c);

    /* F = 24 (defocus.cfg): +2 mm is 2000 / 4608 = 0.434 um P-V, 0.125 um RMS. */
    load("wavelength_nm = 550.0; f_number = 24.0;", "sweep: { focus_shift_um = [2000.0]; };\n", &c);
    totals(&c, 0, 550.0, &ms, w, u);
    ASSERT_NEAR(w[0], 2000.0 / 4608.0 / (2.0 * sqrt(3.0)) * 1000.0 / 550.0, 1e-12);
    jobs_modeset_free(&ms);
    config_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sweep_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_focus_shift_order_and_broadband, setup, teardown),
        cmocka_unit_test_setup_teardown(test_modeset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_coefficients, setup, teardown),
        cmocka_unit_test_setup_teardown(test_focus_shift, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
