/* SPDX-License-Identifier: BSD-3-Clause */
/* draw_aperture (psfsim --draw-aperture): a valid 8-bit grayscale PNG of
 * (pupil_samples + 1) pixels square whose open pixels hold the aperture's
 * analytic area to the grey-edge tolerance; segment numbers, when the plot
 * module (cairo) is there, only at the segments' centres; without it the
 * same picture without numbers and a note; a bad config writes nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/run/draw_aperture.h"
#include "app/formats/png_io.h"
#include "optics/aperture.h"
#include "tests/support/testutil.h"

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("draw_aperture");
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

static const char *in_dir(const char *name)
{
    static char buf[8][4096];
    static int next;
    char *b = buf[next++ % 8];
    snprintf(b, sizeof buf[0], "%s/%s", g_dir, name);
    return b;
}

/* The PNG's signature and IHDR (PNG 1.2 sec. 3.1, 4.1.1): width, height,
 * bit depth 8, colour type 0 (grayscale). */
static void assert_png_header(const char *path, int n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char h[26];
    assert_int_equal(fread(h, 1, sizeof h, f), sizeof h);
    fclose(f);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    assert_memory_equal(h, sig, 8);
    assert_memory_equal(h + 12, "IHDR", 4);
    unsigned w = (unsigned)h[16] << 24 | h[17] << 16 | h[18] << 8 | h[19];
    unsigned ht = (unsigned)h[20] << 24 | h[21] << 16 | h[22] << 8 | h[23];
    assert_int_equal(w, n);
    assert_int_equal(ht, n);
    assert_int_equal(h[24], 8);
    assert_int_equal(h[25], 0);
}

/* Draw the config text to png; read it back (n x n, 8-bit). */
static float *drawn(const char *text, const char *png, int n, draw_aperture_info *info)
{
    const char *cfg = in_dir("a.cfg");
    assert_int_equal(tu_write_file(cfg, text), 0);
    char err[4096];
    if (draw_aperture(cfg, png, info, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(info->npix, n);
    assert_png_header(png, n);
    float *v = NULL;
    int rows = 0, cols = 0, maxval = 0;
    assert_int_equal(psf_png_read_gray(png, &v, &rows, &cols, &maxval, err, sizeof err), 0);
    assert_int_equal(rows, n);
    assert_int_equal(cols, n);
    assert_int_equal(maxval, 255);
    return v;
}

/* The open pixels hold the area: fully open ones (255) at most, any open
 * (> 0) at least, and the grey levels' sum to the grey-edge tolerance
 * (1e-3 per sample, aperture_geom.h) plus the levels' rounding (0.5/255). */
static void assert_area(const float *v, int n, double dx, double area)
{
    long full = 0, open = 0, grey = 0;
    double sum = 0;
    for (int i = 0; i < n * n; ++i) {
        full += v[i] == 255.0f;
        open += v[i] > 0.0f;
        grey += v[i] > 0.0f && v[i] < 255.0f;
        sum += v[i] / 255.0;
    }
    const double a = area / (dx * dx), tol = grey * (1e-3 + 0.5 / 255);
    printf("area %.6g m^2 = %.1f pixels: %ld open, %ld full, sum %.2f (tolerance %.2f)\n", area, a,
           open, full, sum, tol);
    assert_true(full <= a + tol && open >= a - tol);
    assert_true(fabs(sum - a) <= tol);
    assert_true(grey > 0 && grey < 0.1 * open); /* grey only at the rims */
}

static void test_circular(void **state)
{
    (void)state;
    const char *text = "name = \"c\";\n"
                       "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 2.4;\n"
                       "  obscuration = 0.33; spiders: { count = 4; width_m = 0.04; }; }; };\n"
                       "sampling: { pupil_samples = 200; };\n";
    draw_aperture_info info;
    float *v = drawn(text, in_dir("c.png"), 201, &info);
    assert_int_equal(info.nsegments, 0); /* no numbers on an unsegmented aperture */
    psf_aperture a = {.shape = APERTURE_CIRCULAR,
                      .diameter_m = 2.4,
                      .obscuration = 0.33,
                      .spider_count = 4,
                      .spider_width_m = 0.04};
    assert_area(v, 201, 2.4 / 200, aperture_area_m2(&a));
    free(v);
}

static const char *seg_text(void)
{
    return "name = \"s\";\n"
           "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 6.6; shape = \"segmented\";\n"
           "  segments: { flat_to_flat_m = 1.2; gap_m = 0.05; rings = 2; missing = [7]; }; }; };\n"
           "sampling: { pupil_samples = 256; };\n";
}

/* Without the plot module: the picture, no numbers, a note. With it: the
 * numbers, only near the segments' centres, and some at every one. */
static void test_segmented(void **state)
{
    (void)state;
    const char *bin = getenv("PSFSIM_BIN");
    setenv("PSFSIM_PLOT_MODULE", in_dir("no-such-module.so"), 1);
    draw_aperture_info plain, numbered;
    float *v0 = drawn(seg_text(), in_dir("s0.png"), 257, &plain);
    assert_int_equal(plain.nsegments, 0);
    assert_non_null(strstr(plain.note, "the segment numbers are not drawn"));
    psf_aperture a = {.shape = APERTURE_SEGMENTED, .diameter_m = 6.6};
    a.seg.flat_to_flat_m = 1.2, a.seg.gap_m = 0.05, a.seg.rings = 2, a.seg.missing[0] = 1ULL << 7;
    const double dx = 6.6 / 256;
    assert_area(v0, 257, dx, aperture_area_m2(&a));

    char module[4200];
    const char *slash = bin ? strrchr(bin, '/') : NULL;
    snprintf(module, sizeof module, "%.*s/libpsfsim-plot.so", slash ? (int)(slash - bin) : 1,
             slash ? bin : ".");
    struct stat st;
    if (stat(module, &st) != 0) {
        printf("no plot module (built without cairo): the numbers are not checked\n");
        free(v0);
        return;
    }
    setenv("PSFSIM_PLOT_MODULE", module, 1);
    float *v1 = drawn(seg_text(), in_dir("s1.png"), 257, &numbered);
    unsetenv("PSFSIM_PLOT_MODULE");
    assert_int_equal(numbered.nsegments, 19);
    assert_string_equal(numbered.note, "");
    int changed[19] = {0};
    for (int r = 0; r < 257; ++r)
        for (int c = 0; c < 257; ++c) {
            if (v0[r * 257 + c] == v1[r * 257 + c]) continue;
            /* The pixel's centre, metres (sample (r, c) at ((c - n/2) dx, (r - n/2) dx)). */
            double x = (c - 128) * dx, y = (r - 128) * dx, best = 1e9;
            int kbest = -1;
            for (int k = 0; k < 19; ++k) {
                double cx, cy;
                assert_int_equal(aperture_segment_center(&a.seg, k, &cx, &cy), 0);
                double d = hypot(x - cx, y - cy);
                if (d < best) best = d, kbest = k;
            }
            assert_true(best < 0.45 * 1.2); /* inside the segment's inscribed circle (0.5 f) */
            changed[kbest]++;
        }
    for (int k = 0; k < 19; ++k)
        assert_true(changed[k] > 10); /* every segment numbered, the left-out 7 too */
    free(v0);
    free(v1);
}

/* A config error: -1, the config's message, no file. */
static void test_bad_config(void **state)
{
    (void)state;
    const char *cfg = in_dir("bad.cfg"), *png = in_dir("bad.png");
    assert_int_equal(tu_write_file(cfg, "name = \"b\";\n"
                                        "optics: { wavelength_nm = 550.0; aperture: {\n"
                                        "  diameter_m = 1.0; obscuration = 1.5; }; };\n"
                                        "sampling: { pupil_samples = 64; };\n"),
                     0);
    draw_aperture_info info;
    char err[4096] = "";
    assert_int_equal(draw_aperture(cfg, png, &info, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad.cfg:3: optics.aperture.obscuration"));
    struct stat st;
    assert_int_not_equal(stat(png, &st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_circular),
        cmocka_unit_test(test_segmented),
        cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
