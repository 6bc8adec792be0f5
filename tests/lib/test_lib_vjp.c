/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradients' C API (lib/psfsim.h, API version 4: psfsim_vjp,
 * psfsim_compute_inputs): psfsim_compute_inputs' double images equal
 * psfsim_compute's floats to 1e-5 of the peak, and psfsim_vjp's
 * gradients equal central differences of psfsim_compute_inputs to 1e-4
 * relative: global Zernike terms (given, and the label terms by default)
 * on a broadband FFT set with the detector stage, an MFT set with "sum"
 * normalisation, an OPD map given in memory, a segmented aperture's
 * per-segment terms, the aperture's transmission map (in memory, "peak");
 * the shape queries; the refusals, each with its code
 * and the name of what is wrong. (python/tests/test_vjp.py covers every
 * normalisation and stage.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/psfsim.h"

#define STEP 1e-5

static const char *const FFT_DETECTOR =
    "name = \"g\";\n"
    "optics: { wavelengths_nm = [550.0, 650.0]; weights = [0.4, 0.6];\n"
    "  aperture: { diameter_m = 2.0; obscuration = 0.2; }; };\n"
    "sampling: { pupil_samples = 32; };\n"
    "aberrations: { units = \"waves\"; zernike = ((5, 0.04)); };\n"
    "detector: { oversample = 2; jitter_lambda_d = 0.3; charge_diffusion_px = 0.2;\n"
    "  ipc = [0.0, 0.02, 0.0, 0.02, 0.92, 0.02, 0.0, 0.02, 0.0]; };\n"
    "sweep: { defocus = [0.0, 0.1]; };\n";

static const char *const MFT_SUM =
    "name = \"m\";\n"
    "optics: { wavelength_nm = 600.0; aperture: { diameter_m = 2.0; }; };\n"
    "sampling: { pupil_samples = 32; };\n"
    "output: { npix = 40; pixel_scale = 0.4; };\n"
    "normalization = \"sum\";\n"
    "aberrations: { units = \"nm\"; zernike = ((7, 30.0)); opd_map: { units = \"nm\"; }; };\n";

static const char *const SEGMENTED =
    "name = \"s\";\n"
    "optics: { wavelength_nm = 700.0; aperture: { shape = \"segmented\"; diameter_m = 2.0;\n"
    "  segments: { flat_to_flat_m = 0.5; gap_m = 0.02; rings = 1; missing = [0];\n"
    "    zernike = ((1, 2, 0.05)); }; }; };\n"
    "sampling: { pupil_samples = 32; };\n"
    "aberrations: { units = \"waves\"; };\n";

static psfsim_set *open_set(const char *text, const psfsim_map *maps, int nmaps)
{
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = "cpu";
    o.maps = maps;
    o.nmaps = nmaps;
    psfsim_set *s = NULL;
    char err[1024] = "";
    if (psfsim_open_text(text, &o, &s, err, sizeof err) != PSFSIM_OK) fail_msg("open: %s", err);
    return s;
}

/* The OPD map of MFT_SUM: 7 x 9 values, nm. */
static float opd_values[63];
static psfsim_map opd_map(void)
{
    for (int i = 0; i < 63; ++i)
        opd_values[i] = (float)(15.0 * sin(0.7 * i + 0.3));
    return (psfsim_map){"aberrations.opd_map.file", opd_values, 7, 9};
}

static double pseudo(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (double)(*state >> 8) / 16777216.0 - 0.5;
}

/* L = sum cot * images of the set with inputs in. */
static double loss(psfsim_set *s, long long count, const psfsim_inputs *in, const double *cot,
                   size_t mm)
{
    double *img = malloc((size_t)count * mm * sizeof *img);
    char err[1024];
    if (psfsim_compute_inputs(s, 0, count, in, img, err, sizeof err) != PSFSIM_OK)
        fail_msg("compute_inputs: %s", err);
    double l = 0.0;
    for (size_t p = 0; p < (size_t)count * mm; ++p)
        l += cot[p] * img[p];
    free(img);
    return l;
}

/* (L(v + h e_i) - L(v - h e_i)) / 2h for the value *v (an input's cell). */
static double difference(psfsim_set *s, long long count, const psfsim_inputs *in, double *v,
                         double h, const double *cot, size_t mm)
{
    double v0 = *v;
    *v = v0 + h;
    double lp = loss(s, count, in, cot, mm);
    *v = v0 - h;
    double lm = loss(s, count, in, cot, mm);
    *v = v0;
    return (lp - lm) / (2.0 * h);
}

static void expect_close(const double *g, const double *num, size_t n)
{
    double scale = 0.0, worst = 0.0;
    for (size_t i = 0; i < n; ++i)
        scale = fmax(scale, fabs(num[i]));
    for (size_t i = 0; i < n; ++i)
        worst = fmax(worst, fabs(g[i] - num[i]));
    assert_true(scale > 0.0);
    if (worst > 1e-4 * scale) fail_msg("gradient off by %g of %g", worst, scale);
}

/* The set's psfsim_compute images against psfsim_compute_inputs'. */
static void expect_forward(psfsim_set *s, long long count, size_t mm)
{
    float *f = malloc((size_t)count * mm * sizeof *f);
    double *d = malloc((size_t)count * mm * sizeof *d);
    char err[1024];
    assert_int_equal(psfsim_compute(s, 0, count, f, (size_t)count * mm, NULL, err, sizeof err),
                     PSFSIM_OK);
    assert_int_equal(psfsim_compute_inputs(s, 0, count, NULL, d, err, sizeof err), PSFSIM_OK);
    double peak = 0.0, diff = 0.0;
    for (size_t p = 0; p < (size_t)count * mm; ++p) {
        peak = fmax(peak, d[p]);
        diff = fmax(diff, fabs(d[p] - f[p]));
    }
    assert_true(diff <= 1e-5 * peak);
    free(f);
    free(d);
}

static double *random_cot(size_t n)
{
    double *c = malloc(n * sizeof *c);
    unsigned st = 77;
    for (size_t i = 0; i < n; ++i)
        c[i] = pseudo(&st);
    return c;
}

static void test_zernike_detector_broadband(void **state)
{
    (void)state;
    psfsim_set *s = open_set(FFT_DETECTOR, NULL, 0);
    psfsim_info info;
    assert_int_equal(psfsim_describe(s, &info, NULL, 0), PSFSIM_OK);
    size_t mm = (size_t)info.npix * info.npix;
    expect_forward(s, 2, mm);
    double *cot = random_cot(2 * mm);
    int j[3] = {4, 6, 9};
    double z[6] = {0.01, -0.02, 0.03, 0.0, 0.01, -0.01}, g[6], num[6];
    psfsim_inputs in;
    psfsim_inputs_init(&in);
    in.nterms = 3, in.j = j, in.zernike = z;
    psfsim_gradients gr;
    psfsim_gradients_init(&gr);
    gr.zernike = g;
    char err[1024];
    if (psfsim_vjp(s, 0, 2, &in, cot, NULL, &gr, err, sizeof err) != PSFSIM_OK)
        fail_msg("vjp: %s", err);
    for (int i = 0; i < 6; ++i) /* image i / 3's term i % 3: only its image moves */
        num[i] = difference(s, 2, &in, &z[i], STEP, cot, mm);
    expect_close(g, num, 6);
    /* no inputs: the label terms (4 for the defocus sweep, 5) at the set's own values */
    int nl = 0, lj[8];
    assert_int_equal(psfsim_label_terms(s, &nl, lj, NULL, NULL, 0), PSFSIM_OK);
    assert_int_equal(nl, 2);
    double gl[4];
    gr.zernike = gl;
    assert_int_equal(psfsim_vjp(s, 0, 2, NULL, cot, NULL, &gr, err, sizeof err), PSFSIM_OK);
    double zl[4] = {0}, numl[4];
    in.nterms = 2, in.j = lj, in.zernike = zl;
    for (int i = 0; i < 4; ++i)
        numl[i] = difference(s, 2, &in, &zl[i], STEP, cot, mm);
    expect_close(gl, numl, 4);
    free(cot);
    psfsim_close(s);
}

static void test_opd_map_mft_sum(void **state)
{
    (void)state;
    psfsim_map m = opd_map();
    psfsim_set *s = open_set(MFT_SUM, &m, 1);
    int rows = 0, cols = 0;
    assert_int_equal(psfsim_map_shape(s, "aberrations.opd_map.file", &rows, &cols, NULL, 0),
                     PSFSIM_OK);
    assert_int_equal(rows, 7);
    assert_int_equal(cols, 9);
    assert_int_equal(psfsim_map_shape(s, "optics.aperture.file", &rows, &cols, NULL, 0), PSFSIM_OK);
    assert_int_equal(rows + cols, 0);
    size_t mm = 40 * 40;
    expect_forward(s, 1, mm);
    double *cot = random_cot(mm), delta[63] = {0}, g[63], num[63];
    psfsim_inputs in;
    psfsim_inputs_init(&in);
    in.opd_map = delta;
    psfsim_gradients gr;
    psfsim_gradients_init(&gr);
    gr.opd_map = g;
    char err[1024];
    if (psfsim_vjp(s, 0, 1, &in, cot, NULL, &gr, err, sizeof err) != PSFSIM_OK)
        fail_msg("vjp: %s", err);
    for (int i = 0; i < 63; ++i)
        num[i] = difference(s, 1, &in, &delta[i], 1e-3, cot, mm);
    expect_close(g, num, 63);
    free(cot);
    psfsim_close(s);
}

static void test_segments(void **state)
{
    (void)state;
    psfsim_set *s = open_set(SEGMENTED, NULL, 0);
    int nseg = 0, nt = 0, j[16];
    assert_int_equal(psfsim_segment_modes(s, &nseg, &nt, j, NULL, 0), PSFSIM_OK);
    assert_int_equal(nseg, 7);
    assert_int_equal(nt, 1);
    assert_int_equal(j[0], 2);
    psfsim_info info;
    assert_int_equal(psfsim_describe(s, &info, NULL, 0), PSFSIM_OK);
    size_t mm = (size_t)info.npix * info.npix;
    expect_forward(s, 1, mm);
    double *cot = random_cot(mm), z[7 * 2] = {0}, g[14], num[14];
    int sj[2] = {1, 3};
    z[2 * 4 + 1] = 0.02;
    psfsim_inputs in;
    psfsim_inputs_init(&in);
    in.seg_nterms = 2, in.seg_j = sj, in.seg_zernike = z;
    psfsim_gradients gr;
    psfsim_gradients_init(&gr);
    gr.seg_zernike = g;
    char err[1024];
    if (psfsim_vjp(s, 0, 1, &in, cot, NULL, &gr, err, sizeof err) != PSFSIM_OK)
        fail_msg("vjp: %s", err);
    for (int i = 0; i < 14; ++i)
        num[i] = difference(s, 1, &in, &z[i], STEP, cot, mm);
    assert_true(g[0] == 0.0 && g[1] == 0.0); /* segment 0 is missing */
    expect_close(g, num, 14);
    free(cot);
    psfsim_close(s);
}

static const char *const APERTURE =
    "name = \"t\";\n"
    "optics: { wavelength_nm = 600.0; aperture: { shape = \"file\"; diameter_m = 2.0;\n"
    "  obscuration = 0.2; }; };\n"
    "sampling: { pupil_samples = 32; };\n"
    "aberrations: { units = \"waves\"; zernike = ((6, 0.05)); };\n"
    "sweep: { defocus = [0.0, 0.1]; };\n";

/* L of APERTURE's two images with transmission map t (4 x 5). */
static double aperture_loss(const float *t, const double *cot, size_t mm)
{
    psfsim_map m = {"optics.aperture.file", t, 4, 5};
    psfsim_set *s = open_set(APERTURE, &m, 1);
    double l = loss(s, 2, NULL, cot, mm);
    psfsim_close(s);
    return l;
}

/* The aperture map's gradient ("peak": through the unaberrated peak's
 * sums too) against sets opened with the map +- 1/1024 (exact in float). */
static void test_transmission(void **state)
{
    (void)state;
    float t[20];
    for (int i = 0; i < 20; ++i)
        t[i] = (float)(512 + 37 * ((i * 7) % 11)) / 1024.0f;
    psfsim_map m = {"optics.aperture.file", t, 4, 5};
    psfsim_set *s = open_set(APERTURE, &m, 1);
    int rows = 0, cols = 0;
    assert_int_equal(psfsim_map_shape(s, "optics.aperture.file", &rows, &cols, NULL, 0), PSFSIM_OK);
    assert_int_equal(rows * 10 + cols, 45);
    size_t mm = 64 * 64;
    double *cot = random_cot(2 * mm), g[20], num[20];
    psfsim_gradients gr;
    psfsim_gradients_init(&gr);
    gr.transmission = g;
    char err[1024];
    if (psfsim_vjp(s, 0, 2, NULL, cot, NULL, &gr, err, sizeof err) != PSFSIM_OK)
        fail_msg("vjp: %s", err);
    psfsim_close(s);
    const float h = 1.0f / 1024.0f;
    for (int i = 0; i < 20; ++i) {
        float v = t[i];
        t[i] = v + h;
        double lp = aperture_loss(t, cot, mm);
        t[i] = v - h;
        double lm = aperture_loss(t, cot, mm);
        t[i] = v;
        num[i] = (lp - lm) / (2.0 * h);
    }
    expect_close(g, num, 20);
    free(cot);
}

/* A call that must fail with code and a message holding what. */
static void expect_fail(int rc, int code, const char *err, const char *what)
{
    assert_int_equal(rc, code);
    if (!strstr(err, what)) fail_msg("message \"%s\" does not name \"%s\"", err, what);
}

static void test_refusals(void **state)
{
    (void)state;
    psfsim_set *s = open_set(FFT_DETECTOR, NULL, 0);
    size_t mm = 32 * 32;
    double *cot = random_cot(2 * mm), g[8];
    char err[1024] = "";
    psfsim_inputs in;
    psfsim_inputs_init(&in);
    psfsim_gradients gr;
    psfsim_gradients_init(&gr);
    int bad[2] = {4, 0};
    in.nterms = 2, in.j = bad;
    expect_fail(psfsim_vjp(s, 0, 1, &in, cot, NULL, &gr, err, sizeof err), PSFSIM_ERR_ARGUMENT, err,
                "inputs.j[1] = 0");
    int twice[2] = {4, 4};
    in.j = twice;
    expect_fail(psfsim_compute_inputs(s, 0, 1, &in, g, err, sizeof err), PSFSIM_ERR_ARGUMENT, err,
                "given twice");
    psfsim_inputs_init(&in);
    gr.seg_zernike = g;
    expect_fail(psfsim_vjp(s, 0, 1, NULL, cot, NULL, &gr, err, sizeof err), PSFSIM_ERR_ARGUMENT,
                err, "not segmented");
    psfsim_gradients_init(&gr);
    gr.opd_map = g;
    expect_fail(psfsim_vjp(s, 0, 1, NULL, cot, NULL, &gr, err, sizeof err), PSFSIM_ERR_ARGUMENT,
                err, "opd_map");
    psfsim_gradients_init(&gr);
    gr.transmission = g;
    expect_fail(psfsim_vjp(s, 0, 1, NULL, cot, NULL, &gr, err, sizeof err), PSFSIM_ERR_ARGUMENT,
                err, "transmission");
    psfsim_gradients_init(&gr);
    expect_fail(psfsim_vjp(s, 1, 2, NULL, cot, NULL, &gr, err, sizeof err), PSFSIM_ERR_RANGE, err,
                "");
    expect_fail(psfsim_vjp(s, 0, 1, NULL, NULL, NULL, &gr, err, sizeof err), PSFSIM_ERR_ARGUMENT,
                err, "cotangent");
    in.size = 1; /* not from psfsim_inputs_init */
    expect_fail(psfsim_compute_inputs(s, 0, 1, &in, g, err, sizeof err), PSFSIM_ERR_ARGUMENT, err,
                "psfsim_inputs_init");
    assert_int_equal(psfsim_vjp(s, 0, 0, NULL, NULL, NULL, &gr, err, sizeof err), PSFSIM_OK);
    free(cot);
    psfsim_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zernike_detector_broadband),
        cmocka_unit_test(test_opd_map_mft_sum),
        cmocka_unit_test(test_segments),
        cmocka_unit_test(test_transmission),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
