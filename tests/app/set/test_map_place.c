/* SPDX-License-Identifier: BSD-3-Clause */
/* map_place: maps placed at their pixel scale (optics.aperture.pixel_scale_m,
 * aberrations.opd_map.pixel_scale_m, or the FITS map's PUPLSCAL / PIXELSCL
 * with PIXUNIT = 'meter'), centred on the axis: the same pupil as the
 * stretched map when the map covers exactly D, as the cropped map when it
 * is larger; a map that does not cover D x D is refused naming
 * file:line:key and both extents. */
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

#include "app/config/config.h"
#include "app/set/image_set.h"
#include "app/set/map_place.h"
#include "optics/aperture.h"
#include "optics/map_sample.h"
#include "optics/wavefront.h"
#include "tests/support/psf_harness.h"
#include "tests/support/testutil.h"

#define D 2.0   /* the aperture's diameter, metres */
#define NS 32   /* pupil samples across D */
#define NG 36   /* the pupil grid the tests sample: a little more than D */
#define S 0.125 /* metres per map pixel: 16 pixels cover D exactly */

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("map_place");
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

/* A rows x cols float FITS map; puplscal > 0 writes PUPLSCAL, pixelscl > 0
 * PIXELSCL with PIXUNIT = pixunit (when not NULL). */
static void write_map(const char *path, int rows, int cols, const float *v, double puplscal,
                      double pixelscl, const char *pixunit)
{
    fitsfile *f = NULL;
    int status = 0;
    long ax[2] = {cols, rows};
    remove(path);
    fits_create_diskfile(&f, path, &status);
    fits_create_img(f, FLOAT_IMG, 2, ax, &status);
    if (puplscal > 0) fits_update_key_dbl(f, "PUPLSCAL", puplscal, -15, NULL, &status);
    if (pixelscl > 0) fits_update_key_dbl(f, "PIXELSCL", pixelscl, -15, NULL, &status);
    if (pixunit) fits_update_key_str(f, "PIXUNIT", pixunit, NULL, &status);
    fits_write_img(f, TFLOAT, 1, (LONGLONG)rows * cols, (void *)(uintptr_t)v, &status);
    fits_close_file(f, &status);
    assert_int_equal(status, 0);
}

/* A transmission map n x n: a disc of radius 0.7 D/2 with a smooth rim,
 * centred on pixel ((n-1)/2, (n-1)/2), at scale S; 0 beyond (so a larger
 * map holds 0 around its crop). */
static void transmission(float *v, int n)
{
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c) {
            double x = (c - 0.5 * (n - 1)) * S, y = (r - 0.5 * (n - 1)) * S;
            double t = 1.0 - (sqrt(x * x + y * y) - 0.55) / 0.3;
            v[r * n + c] = (float)(t < 0 ? 0 : t > 1 ? 1 : t);
        }
}

/* An OPD map n x n in nm: tilt and astigmatism inside |x|, |y| < 0.8 m
 * (0 beyond), at scale S. */
static void opd(float *v, int n)
{
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c) {
            double x = (c - 0.5 * (n - 1)) * S, y = (r - 0.5 * (n - 1)) * S;
            int in = fabs(x) < 0.8 && fabs(y) < 0.8;
            v[r * n + c] = in ? (float)(40.0 * x + 30.0 * (x * x - y * y) + 10.0 * y) : 0.0f;
        }
}

/* The central m x m of an n x n map. */
static void crop(const float *v, int n, int m, float *out)
{
    int o = (n - m) / 2;
    for (int r = 0; r < m; ++r)
        memcpy(out + r * m, v + (r + o) * n + o, (size_t)m * sizeof *out);
}

static const char *config_text(const char *aperture_map, const char *aperture_extra,
                               const char *opd_map, const char *opd_extra)
{
    return tu_format("name = \"p\";\n"
                     "optics: {\n"
                     "  wavelength_nm = 550.0;\n"
                     "  aperture: { diameter_m = %g; shape = \"file\";\n"
                     "    file = \"%s\";\n"
                     "    %s };\n"
                     "};\n"
                     "sampling: { pupil_samples = %d; };\n"
                     "aberrations: { opd_map: { file = \"%s\";\n"
                     "    %s }; };\n",
                     D, aperture_map, aperture_extra, NS, opd_map, opd_extra);
}

/* The pupil of the config text: transmission and OPD (nm) on the NG x NG
 * grid of pitch D / NS, as the backends sample them. 0, or -1 with err. */
static int pupil_of(const char *text, float *amp, float *opd_nm, char *err, size_t errlen)
{
    char path[4200]; /* not in_dir's: its buffers hold the maps' names */
    snprintf(path, sizeof path, "%s/p.cfg", g_dir);
    assert_int_equal(tu_write_file(path, text), 0);
    psf_config cfg;
    if (config_load(path, &cfg, err, errlen)) fail_msg("config: %s", err);
    image_set s;
    int rc = image_set_init(&s, &cfg, err, errlen);
    if (rc == 0) {
        assert_int_equal(aperture_fill(&s.aperture, NG, D / NS, amp, err, errlen), 0);
        wavefront_resample_map_wh(s.opd_map, s.opd_rows, s.opd_cols, map_extent_m(s.opd_width_m, D),
                                  map_extent_m(s.opd_height_m, D), NG, D / NS, opd_nm);
    } else
        print_message("image_set_init: %s\n", err);
    image_set_free(&s);
    config_free(&cfg);
    return rc;
}

static double max_abs_diff(const float *a, const float *b, int n)
{
    double m = 0;
    for (int i = 0; i < n; ++i)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

/* A map whose 16 pixels of S cover D exactly gives the stretched map's
 * pupil, bit for bit, and the same image; a map of 32 pixels (2 D) the
 * cropped map's pupil (to float rounding). */
static void test_scale_equals_stretch_and_crop(void **state)
{
    (void)state;
    float t16[256], o16[256], t32[1024], o32[1024], tc[256], oc[256];
    transmission(t16, 16), opd(o16, 16), transmission(t32, 32), opd(o32, 32);
    crop(t32, 32, 16, tc), crop(o32, 32, 16, oc);
    assert_true(max_abs_diff(t16, tc, 256) < 1e-6); /* the crop is the 16-pixel map */
    const char *t16p = in_dir("t16.fits"), *o16p = in_dir("o16.fits");
    const char *t32p = in_dir("t32.fits"), *o32p = in_dir("o32.fits");
    write_map(t16p, 16, 16, t16, 0, 0, NULL), write_map(o16p, 16, 16, o16, 0, 0, NULL);
    write_map(t32p, 32, 32, t32, 0, 0, NULL), write_map(o32p, 32, 32, o32, 0, 0, NULL);
    static float a0[NG * NG], w0[NG * NG], a1[NG * NG], w1[NG * NG], a2[NG * NG], w2[NG * NG];
    char err[2048];
    const char *scale = "pixel_scale_m = 0.125;";
    const char *stretched = config_text(t16p, "", o16p, "");
    const char *placed = config_text(t16p, scale, o16p, scale);
    const char *large = config_text(t32p, scale, o32p, scale);
    assert_int_equal(pupil_of(stretched, a0, w0, err, sizeof err), 0);
    assert_int_equal(pupil_of(placed, a1, w1, err, sizeof err), 0);
    assert_int_equal(pupil_of(large, a2, w2, err, sizeof err), 0);
    assert_memory_equal(a0, a1, sizeof a0);
    assert_memory_equal(w0, w1, sizeof w0);
    double amax = 0, wmax = 0;
    for (int i = 0; i < NG * NG; ++i)
        amax = fmax(amax, a0[i]), wmax = fmax(wmax, fabs(w0[i]));
    assert_true(amax > 0.99 && wmax > 20.0); /* the maps reach the pupil */
    assert_true(max_abs_diff(a0, a2, NG * NG) < 1e-6);
    assert_true(max_abs_diff(w0, w2, NG * NG) < 1e-4); /* nm, of ~50 */
    /* Outside D the stretched and the exactly covering map are 0; the
     * larger map is 0 there too (its own values are 0 beyond the crop). */
    /* Both backends get the placed maps through the psf_problem: the CPU
     * image of the placed map is the stretched one's. */
    long long n0 = 0, n1 = 0;
    int np0 = 0, np1 = 0;
    float *i0 = harness_compute_all(stretched, NULL, &n0, &np0);
    float *i1 = harness_compute_all(placed, NULL, &n1, &np1);
    float *i2 = harness_compute_all(large, NULL, &n1, &np1);
    assert_non_null(i0), assert_non_null(i1), assert_non_null(i2);
    assert_int_equal(np0, np1);
    assert_memory_equal(i0, i1, (size_t)np0 * np0 * sizeof *i0);
    assert_true(tu_rel_l2(i0, i2, (size_t)np0 * np0) < 1e-5);
    free(i0), free(i1), free(i2);
}

/* PUPLSCAL (and PIXELSCL with PIXUNIT = 'meter') place the map as the key
 * does; PIXELSCL in arcsec is not a pupil scale (the map is stretched);
 * the config key wins over the header. */
static void test_header_scale(void **state)
{
    (void)state;
    float t32[1024], o32[1024];
    transmission(t32, 32), opd(o32, 32);
    const char *tk = in_dir("tk.fits"), *ok = in_dir("ok.fits");
    write_map(tk, 32, 32, t32, 0, 0, NULL), write_map(ok, 32, 32, o32, 0, 0, NULL);
    const char *scale = "pixel_scale_m = 0.125;";
    static float a0[NG * NG], w0[NG * NG], a1[NG * NG], w1[NG * NG];
    char err[2048];
    assert_int_equal(pupil_of(config_text(tk, scale, ok, scale), a0, w0, err, sizeof err), 0);

    const char *th = in_dir("th.fits"), *oh = in_dir("oh.fits");
    write_map(th, 32, 32, t32, S, 0, NULL), write_map(oh, 32, 32, o32, S, 0, NULL);
    assert_int_equal(pupil_of(config_text(th, "", oh, ""), a1, w1, err, sizeof err), 0);
    assert_memory_equal(a0, a1, sizeof a0);
    assert_memory_equal(w0, w1, sizeof w0);

    write_map(th, 32, 32, t32, 0, S, "meter"), write_map(oh, 32, 32, o32, 0, S, "meter");
    assert_int_equal(pupil_of(config_text(th, "", oh, ""), a1, w1, err, sizeof err), 0);
    assert_memory_equal(a0, a1, sizeof a0);
    assert_memory_equal(w0, w1, sizeof w0);

    /* The key wins: a header saying 4x the scale is overridden. */
    write_map(th, 32, 32, t32, 4 * S, 0, NULL), write_map(oh, 32, 32, o32, 4 * S, 0, NULL);
    assert_int_equal(pupil_of(config_text(th, scale, oh, scale), a1, w1, err, sizeof err), 0);
    assert_memory_equal(a0, a1, sizeof a0);
    assert_memory_equal(w0, w1, sizeof w0);

    /* PIXELSCL in arcsec (an image plane's): ignored, the map is stretched
     * as one without any scale. */
    static float a2[NG * NG], w2[NG * NG];
    write_map(th, 32, 32, t32, 0, 0.01, "arcsecond"), write_map(oh, 32, 32, o32, 0, 0.01, NULL);
    assert_int_equal(pupil_of(config_text(th, "", oh, ""), a1, w1, err, sizeof err), 0);
    assert_int_equal(pupil_of(config_text(tk, "", ok, ""), a2, w2, err, sizeof err), 0);
    assert_memory_equal(a1, a2, sizeof a1);
    assert_memory_equal(w1, w2, sizeof w1);
    assert_true(max_abs_diff(a0, a2, NG * NG) > 0.1); /* stretched differs from placed */
}

/* A map that does not cover D x D: refused naming file:line:key, the map's
 * extent and the aperture's; a PUPLSCAL that is not a scale: refused. */
static void test_not_covering(void **state)
{
    (void)state;
    float t16[256], o16[256];
    transmission(t16, 16), opd(o16, 16);
    const char *t = in_dir("t.fits"), *o = in_dir("o.fits");
    write_map(t, 16, 16, t16, 0, 0, NULL), write_map(o, 16, 16, o16, 0, 0, NULL);
    static float a[NG * NG], w[NG * NG];
    char err[2048] = "";
    /* 16 pixels of 0.1 m: 1.6 m, D is 2 m. The key is on line 6. */
    assert_int_equal(pupil_of(config_text(t, "pixel_scale_m = 0.1;", o, ""), a, w, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "p.cfg:6: optics.aperture.pixel_scale_m: "));
    assert_non_null(strstr(err, t));
    assert_non_null(strstr(err, "the map covers 1.6 m x 1.6 m (16 x 16 pixels of 0.1 m"));
    assert_non_null(strstr(err, "the aperture needs 2 m"));
    /* The OPD map's key, line 10. */
    assert_int_equal(
        pupil_of(config_text(t, "", o, "pixel_scale_m = 0.12;"), a, w, err, sizeof err), -1);
    assert_non_null(strstr(err, "p.cfg:10: aberrations.opd_map.pixel_scale_m: "));
    assert_non_null(strstr(err, "the map covers 1.92 m x 1.92 m"));
    /* From the header: the file key's line. */
    write_map(o, 16, 16, o16, 0.1, 0, NULL);
    assert_int_equal(pupil_of(config_text(t, "", o, ""), a, w, err, sizeof err), -1);
    assert_non_null(strstr(err, "p.cfg:9: aberrations.opd_map.file: "));
    assert_non_null(strstr(err, "from the map's PUPLSCAL"));
    /* A negative PUPLSCAL is no scale. */
    write_map(o, 16, 16, o16, 0, 0, NULL);
    {
        fitsfile *f = NULL;
        int status = 0;
        fits_open_file(&f, o, READWRITE, &status);
        fits_update_key_dbl(f, "PUPLSCAL", -0.125, -6, NULL, &status);
        fits_close_file(f, &status);
        assert_int_equal(status, 0);
    }
    assert_int_equal(pupil_of(config_text(t, "", o, ""), a, w, err, sizeof err), -1);
    assert_non_null(strstr(err, "aberrations.opd_map.file: "));
    assert_non_null(strstr(err, "PUPLSCAL = -0.125 is not a pixel scale"));
    /* Exactly D, from either side of the 1e-9 allowance: accepted. */
    write_map(o, 16, 16, o16, 0, 0, NULL);
    assert_int_equal(
        pupil_of(config_text(t, "pixel_scale_m = 0.12499999999;", o, ""), a, w, err, sizeof err),
        0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scale_equals_stretch_and_crop),
        cmocka_unit_test(test_header_scale),
        cmocka_unit_test(test_not_covering),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
