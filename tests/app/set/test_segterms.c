/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-segment terms of an image set (app/set/segterms.h): the modes in
 * order of first use, each image's coefficients in backend layout (fixed +
 * swept + drawn, nm to waves), the label terms, and the draws: a pure
 * function of (seed, d, segment, j), each draw_value at term segment * 256
 * + j under purpose DRAW_SEGMENT_ZERNIKE (so never a global term's
 * counter), 0 for the missing segment, different for every segment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app/config/config.h"
#include "app/set/axes.h"
#include "app/set/draws.h"
#include "app/set/jobs.h"
#include "app/set/segterms.h"

#define CFG                                                                                        \
    "name = \"t\"; optics: { wavelength_nm = 500.0; aperture: { shape = \"segmented\";"            \
    " segments: { flat_to_flat_m = 1.0; rings = 1; missing = [3];"                                 \
    " zernike = ( (2, 3, 10.0), (1, 1, 25.0) ); }; }; };"                                          \
    " aberrations: { units = \"nm\"; zernike = ((4, 5.0)); };"                                     \
    " sampling: { pupil_samples = 32; };"                                                          \
    " sweep: { segment_zernike = ( (1, 1, [0.0, 50.0]) );"                                         \
    " random: { count = 4; seed = 77; segment_zernike = ( (2, \"normal\", 20.0) ); }; };"

typedef struct {
    psf_config cfg;
    set_axes ax;
    set_segterms st;
} fixture;

static void load(fixture *f)
{
    char err[1024] = "";
    if (config_load_text(CFG, "t.cfg", NULL, &f->cfg, err, sizeof err)) fail_msg("%s", err);
    if (axes_init(&f->ax, &f->cfg, err, sizeof err)) fail_msg("%s", err);
    if (segterms_init(&f->st, &f->ax, err, sizeof err)) fail_msg("%s", err);
}

static void unload(fixture *f)
{
    segterms_free(&f->st);
    axes_free(&f->ax);
    config_free(&f->cfg);
}

static void test_modes_and_labels(void **state)
{
    (void)state;
    fixture f;
    load(&f);
    assert_int_equal(f.st.nterms, 3); /* fixed 3, 1, then drawn 2 */
    assert_int_equal(f.st.j[0], 3);
    assert_int_equal(f.st.j[1], 1);
    assert_int_equal(f.st.j[2], 2);
    assert_int_equal(f.st.nseg, 7);
    assert_int_equal(segterms_count(&f.st), 21);
    /* s1_z1, s1_z2, s2_z2, s2_z3, s4_z2, s5_z2, s6_z2 (segment 0's z2 first; 3 missing) */
    static const int seg[] = {0, 1, 1, 2, 2, 4, 5, 6}, j[] = {2, 1, 2, 2, 3, 2, 2, 2};
    assert_int_equal(f.st.nlabels, 8);
    for (int i = 0; i < 8; ++i) {
        assert_int_equal(f.st.label_segment[i], seg[i]);
        assert_int_equal(f.st.label_j[i], j[i]);
    }
    unload(&f);
}

static void test_coefficients_and_draws(void **state)
{
    (void)state;
    fixture f;
    load(&f);
    assert_int_equal(f.ax.nimages, 8); /* 2 swept values x 4 draws */
    double scratch[8], drawn[21], again[21], waves[21], units[21];
    for (long long k = 0; k < 8; ++k) {
        psf_image_params p;
        jobs_image_params(&f.ax, k, scratch, &p);
        assert_int_equal(p.draw, k % 4);
        segterms_draw(&f.ax, &f.st, (uint64_t)p.draw, drawn);
        segterms_draw(&f.ax, &f.st, (uint64_t)p.draw, again);
        assert_memory_equal(drawn, again, sizeof drawn); /* a pure function */
        segterms_coefficients(&f.ax, &f.st, &p, drawn, 500.0, waves, units);
        for (int s = 0; s < 7; ++s) {
            draw_id id = {77, (uint64_t)p.draw, (uint32_t)(s * 256 + 2), DRAW_SEGMENT_ZERNIKE};
            double d2 = s == 3 ? 0.0 : draw_value(id, DRAW_NORMAL, 20.0);
            assert_true(drawn[s * 3 + 2] == d2);
            assert_true(units[s * 3 + 2] == d2);
            assert_true(waves[s * 3 + 2] == d2 / 500.0);
            if (s != 3) assert_true(d2 != draw_zernike(77, (uint64_t)p.draw, 2, DRAW_NORMAL, 20.0));
        }
        for (int s = 1; s < 7; ++s)
            if (s != 3) assert_true(drawn[s * 3 + 2] != drawn[(s == 1 ? 2 : 1) * 3 + 2]);
        double s1z1 = 25.0 + (k / 4 == 1 ? 50.0 : 0.0); /* the sweep is outer to the draws */
        assert_true(units[1 * 3 + 1] == s1z1);
        assert_true(units[2 * 3 + 0] == 10.0);
        assert_true(units[0 * 3 + 0] == 0.0 && units[0 * 3 + 1] == 0.0);
    }
    unload(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes_and_labels),
        cmocka_unit_test(test_coefficients_and_draws),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
