/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector group through the whole set (config -> image set -> CPU
 * backend, app/set/set_detector.h): oversample 1 with nothing enabled is
 * the set without the group, bit for bit; the detector image is the
 * oversampled image at the detector pixel centres, times s^2 ("sum": the
 * flux is kept, by the FFT and the MFT paths) or times 1 ("peak": the
 * pixel's mean intensity), to float rounding; "sum" normalises the
 * detector image; jitter in mas and in lambda/D becomes the same detector pixels
 * through the pixel's angle; the pixel fields are the detector pixel's. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "app/config/config.h"
#include "app/set/image_set.h"
#include "tests/support/psf_harness.h"

#define BASE                                                                                       \
    "name = \"d\"; optics: { wavelength_nm = 600; aperture: { diameter_m = 2.0;"                   \
    " obscuration = 0.3; }; };"                                                                    \
    " sampling: { pupil_samples = 32; padding = 2.0; }; %s"                                        \
    " sweep: { defocus = [0.0, 0.3]; }; %s"

static float *compute(const char *output, const char *detector, long long *n, int *npix)
{
    char text[2048];
    snprintf(text, sizeof text, BASE, output, detector);
    float *img = harness_compute_all(text, NULL, n, npix);
    assert_non_null(img);
    return img;
}

static double sum(const float *img, size_t n)
{
    double t = 0.0;
    for (size_t i = 0; i < n; ++i)
        t += img[i];
    return t;
}

static void test_identity(void **state)
{
    (void)state;
    long long n0, n1;
    int m0, m1;
    float *a = compute("", "", &n0, &m0);
    float *b = compute("", "detector: { oversample = 1; };", &n1, &m1);
    assert_int_equal(m0, 64);
    assert_int_equal(m0, m1);
    assert_memory_equal(a, b, sizeof(float) * (size_t)n0 * m0 * m0);
    free(a);
    free(b);
}

/* Detector images against f times the oversampled ones at the pixel
 * centres (grid sample i s + o, j s + o, o = sM/2 - s (M/2): 0 for even M),
 * f = s^2 for "sum" and 1 for "peak", and the flux (f / s^2 of the
 * oversampled image's): psfsim's frame, docs/conventions.md. */
static void check_sampling(const char *output, const char *effects, int s)
{
    int peak = strstr(output, "\"sum\"") == NULL;
    double f = peak ? 1.0 : (double)s * s;
    char det[512], over[512];
    snprintf(det, sizeof det, "detector: { oversample = %d; %s };", s, effects);
    snprintf(over, sizeof over, "detector: { oversample = %d; write = \"oversampled\"; %s };", s,
             effects);
    long long nd, no;
    int md, mo;
    float *d = compute(output, det, &nd, &md), *o = compute(output, over, &no, &mo);
    assert_int_equal(nd, no);
    assert_int_equal(mo, s * md);
    int off = mo / 2 - s * (md / 2);
    for (long long k = 0; k < nd; ++k) {
        const float *dk = d + (size_t)k * md * md, *ok = o + (size_t)k * mo * mo;
        double worst = 0.0, top = 0.0;
        for (int i = 0; i < md; ++i)
            for (int j = 0; j < md; ++j) {
                double want = f * ok[(size_t)(i * s + off) * mo + j * s + off];
                worst = fmax(worst, fabs(dk[i * md + j] - want));
                top = fmax(top, want);
            }
        double fd = sum(dk, (size_t)md * md), fo = sum(ok, (size_t)mo * mo) * f / (s * s);
        printf("%-52s s = %d image %lld: worst %.2e of %.4g; flux %.7g, expected %.7g\n", output, s,
               k, worst, top, fd, fo);
        assert_true(worst <= 1e-5 * top);
        assert_true(fabs(fd - fo) <= 1e-5 * fo);
    }
    free(d);
    free(o);
}

static void test_detector_is_sampled_oversampled(void **state)
{
    (void)state;
    const char *all = "jitter_lambda_d = [0.05, 0.1]; charge_diffusion_px = 0.2;"
                      " ipc = [0.0, 0.02, 0.0, 0.02, 0.92, 0.02, 0.0, 0.02, 0.0];";
    check_sampling("", "", 4);
    check_sampling("", all, 4);
    check_sampling("", all, 2);
    check_sampling("output: { npix = 40; pixel_scale = 0.6; };", all, 3);
    check_sampling("normalization = \"sum\";", all, 4);
    check_sampling("normalization = \"sum\"; output: { npix = 40; pixel_scale = 0.6; };", all, 3);
    check_sampling("output: { npix = 21; pixel_scale = 0.6; };", all, 4); /* odd M: o = 2 */
    check_sampling("output: { npix = 21; pixel_scale = 0.6; };", all, 3); /* o = 1 */
}

/* Where the centroid of image img (m x m) lies from the frame's centre
 * ((m-1)/2) along x and y, and how far img is from its own 180-degree
 * turn (max over the peak). */
static void centre_and_symmetry(const float *img, int m, double *cx, double *cy, double *asym)
{
    double t = 0.0, sx = 0.0, sy = 0.0, top = 0.0, worst = 0.0;
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < m; ++j) {
            double v = img[(size_t)i * m + j];
            t += v;
            sx += v * j;
            sy += v * i;
            top = fmax(top, v);
            worst = fmax(worst, fabs(v - img[(size_t)(m - 1 - i) * m + (m - 1 - j)]));
        }
    *cx = sx / t - 0.5 * (m - 1);
    *cy = sy / t - 0.5 * (m - 1);
    *asym = worst / top;
}

/* output.orientation = "poppy" (issue 26): WebbPSF's detector. The detector
 * image is the oversampled one binned s x s from (0, 0)
 * (poppy.utils.rebin_array's blocks) times f = 1 ("sum") or 1/s^2 ("peak":
 * a pixel's mean intensity), to float rounding; both images' centroids
 * are on their frames' centres, (M-1)/2 and (sM-1)/2, where CRPIX puts
 * the axis, within 0.01 of a pixel, and both are symmetric under the
 * 180-degree turn (the pupil, defocus and the effects are). Before, the
 * detector pixel i was centred on grid pixel i s: for even M and s = 4
 * the image's centroid was 0.37 pixel off and its core lopsided. */
static void check_binning(const char *output, const char *effects, int s)
{
    int peak = strstr(output, "\"sum\"") == NULL;
    double f = peak ? 1.0 / ((double)s * s) : 1.0;
    char det[512], over[512];
    snprintf(det, sizeof det, "detector: { oversample = %d; %s };", s, effects);
    snprintf(over, sizeof over, "detector: { oversample = %d; write = \"oversampled\"; %s };", s,
             effects);
    long long nd, no;
    int md, mo;
    float *d = compute(output, det, &nd, &md), *o = compute(output, over, &no, &mo);
    assert_int_equal(nd, no);
    assert_int_equal(mo, s * md);
    for (long long k = 0; k < nd; ++k) {
        const float *dk = d + (size_t)k * md * md, *ok = o + (size_t)k * mo * mo;
        double worst = 0.0, top = 0.0;
        for (int i = 0; i < md; ++i)
            for (int j = 0; j < md; ++j) {
                double b = 0.0;
                for (int a = 0; a < s; ++a)
                    for (int c = 0; c < s; ++c)
                        b += ok[(size_t)(i * s + a) * mo + j * s + c];
                worst = fmax(worst, fabs(dk[i * md + j] - f * b));
                top = fmax(top, f * b);
            }
        double dx, dy, da, ox, oy, oa;
        centre_and_symmetry(dk, md, &dx, &dy, &da);
        centre_and_symmetry(ok, mo, &ox, &oy, &oa);
        printf("%-60s s = %d image %lld: binned worst %.2e of %.4g; centroid (%.2g, %.2g), "
               "oversampled (%.2g, %.2g); asymmetry %.2g, %.2g\n",
               output, s, k, worst, top, dx, dy, ox, oy, da, oa);
        assert_true(worst <= 2e-6 * top);
        assert_true(fabs(dx) < 0.01 && fabs(dy) < 0.01 && fabs(ox) < 0.01 && fabs(oy) < 0.01);
        assert_true(da < 1e-4 && oa < 1e-4);
    }
    free(d);
    free(o);
}

static void test_poppy_detector_is_binned(void **state)
{
    (void)state;
    const char *all = "jitter_lambda_d = [0.05, 0.1]; charge_diffusion_px = 0.2;"
                      " ipc = [0.0, 0.02, 0.0, 0.02, 0.92, 0.02, 0.0, 0.02, 0.0];";
    /* The case: even M, s = 4 (the pixel response alone: no convolution). */
    check_binning("output: { npix = 32; pixel_scale = 0.5; orientation = \"poppy\"; };", "", 4);
    check_binning("normalization = \"sum\"; output: { npix = 32; pixel_scale = 0.5; "
                  "orientation = \"poppy\"; };",
                  all, 4);
    check_binning("output: { npix = 21; pixel_scale = 0.5; orientation = \"poppy\"; };", all,
                  4); /* odd M, even s: the grid's axis between pixels */
    check_binning("output: { npix = 32; pixel_scale = 0.5; orientation = \"poppy\"; };", all, 3);
    check_binning("output: { npix = 21; pixel_scale = 0.5; orientation = \"poppy\"; };", all, 2);
}

/* Without the pixel response POPPY's frame point-samples the block's
 * centre, a grid pixel for odd s ((s-1)/2 into the block); for even s it
 * is between grid pixels, so the set is refused with the key. */
static void test_poppy_point_samples(void **state)
{
    (void)state;
    const char *out = "output: { npix = 21; pixel_scale = 0.5; orientation = \"poppy\"; };";
    long long nd, no;
    int md, mo, s = 3;
    float *d = compute(out, "detector: { oversample = 3; pixel_response = false; };", &nd, &md);
    float *o = compute(out, "detector: { oversample = 3; write = \"oversampled\"; };", &no, &mo);
    for (int i = 0; i < md; ++i)
        for (int j = 0; j < md; ++j) /* "peak": f = 1 */
            assert_float_equal(d[i * md + j], o[(size_t)(i * s + 1) * mo + j * s + 1],
                               1e-6 * o[(size_t)(mo / 2) * mo + mo / 2]);
    free(d);
    free(o);
    char text[2048], err[4096];
    snprintf(text, sizeof text, BASE, out,
             "detector: { oversample = 4; pixel_response = false; };");
    psf_config cfg;
    image_set set;
    memset(&set, 0, sizeof set);
    assert_int_equal(config_load_text(text, "d.cfg", NULL, &cfg, err, sizeof err), 0);
    assert_int_not_equal(image_set_init(&set, &cfg, err, sizeof err), 0);
    printf("%s\n", err);
    assert_non_null(strstr(err, "detector.pixel_response: false is not for"));
    image_set_free(&set);
    config_free(&cfg);
}

static void test_sum_normalisation(void **state)
{
    (void)state;
    long long n;
    int m;
    float *img = compute("normalization = \"sum\"; output: { npix = 40; pixel_scale = 0.6; };",
                         "detector: { oversample = 2; jitter_mas = 3.0; };", &n, &m);
    for (long long k = 0; k < n; ++k)
        assert_true(fabs(sum(img + (size_t)k * m * m, (size_t)m * m) - 1.0) < 1e-5);
    free(img);
}

/* The set's psf_detector and pixel fields. */
static void open_set(const char *detector, psf_config *cfg, image_set *s)
{
    char text[2048], err[4096];
    snprintf(text, sizeof text, BASE, "", detector);
    assert_int_equal(config_load_text(text, "d.cfg", NULL, cfg, err, sizeof err), 0);
    int rc = image_set_init(s, cfg, err, sizeof err);
    if (rc) printf("%s\n", err);
    assert_int_equal(rc, 0);
}

static void test_jitter_units(void **state)
{
    (void)state;
    psf_config cfg;
    image_set s;
    open_set("detector: { oversample = 4; jitter_lambda_d = [0.25, 0.5]; };", &cfg, &s);
    image_info info;
    image_set_common_info(&s, &info);
    /* The detector pixel is the FFT's of the config, n/N = 0.5 lambda/D. */
    assert_true(fabs(info.pixel_lambda_d - 0.5) < 1e-12);
    assert_int_equal(s.samp.npix, 64);
    assert_int_equal(s.calc_npix, 256);
    assert_int_equal(s.fft_npix, 256);
    assert_true(fabs(s.detector.jitter_px[0] - 0.5) < 1e-12);
    assert_true(fabs(s.detector.jitter_px[1] - 1.0) < 1e-12);
    double mas = 0.25 * info.pixel_arcsec * 1e3; /* a quarter pixel in mas */
    image_set_free(&s);
    config_free(&cfg);
    char det[256];
    snprintf(det, sizeof det,
             "detector: { oversample = 4; write = \"oversampled\"; jitter_mas = %.17g; };", mas);
    open_set(det, &cfg, &s);
    image_set_common_info(&s, &info);
    assert_true(fabs(info.pixel_lambda_d - 0.125) < 1e-12); /* the written pixel: the grid's */
    assert_int_equal(s.samp.npix, 256);
    assert_true(fabs(s.detector.jitter_px[0] - 0.25) < 1e-9);
    assert_true(fabs(s.detector.jitter_px[1] - 0.25) < 1e-9);
    image_set_free(&s);
    config_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_detector_is_sampled_oversampled),
        cmocka_unit_test(test_poppy_detector_is_binned),
        cmocka_unit_test(test_poppy_point_samples),
        cmocka_unit_test(test_sum_normalisation),
        cmocka_unit_test(test_jitter_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
