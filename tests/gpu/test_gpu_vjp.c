/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradients on the GPU (lib/vjp_gpu.c, gpu/adjoint.cu) through the C
 * API, against the same set on the CPU: a broadband FFT set in nm with an
 * OPD map in memory and "sum" normalisation, its
 * images, Zernike and OPD-map gradients equal to 1e-10 relative with
 * PSFSIM_VJP_BACKEND=gpu (no fall-back), for part of the set (first 1,
 * count 2) and after the OPD map input changes or goes (the kept state's
 * OPD rows rewritten); an MFT set refused with PSFSIM_ERR_BACKEND
 * under PSFSIM_VJP_BACKEND=gpu and computed on the CPU without it (the same
 * bits). Links libpsfsim.so as a user does. Skipped (exit 77) without a
 * CUDA device (psfsim_device_alloc fails), except with
 * PSFSIM_VJP_HOST_MODULE=1 and PSFSIM_GPU_MODULE naming
 * tests/support/host_vjp_module.c's module (ctest's
 * test_gpu_vjp_host_module): the library's side against the CPU's path on
 * any machine. */
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

static const char *const FFT_BROADBAND =
    "name = \"g\";\n"
    "optics: { wavelengths_nm = [550.0, 600.0, 650.0]; weights = [0.3, 0.4, 0.3];\n"
    "  aperture: { diameter_m = 2.0; obscuration = 0.2; }; };\n"
    "sampling: { pupil_samples = 32; };\n"
    "normalization = \"sum\";\n"
    "aberrations: { units = \"nm\"; zernike = ((5, 20.0), (8, -15.0));\n"
    "  opd_map: { units = \"nm\"; }; };\n"
    "sweep: { defocus = [0.0, 30.0, -40.0]; };\n";

static const char *const MFT =
    "name = \"m\";\n"
    "optics: { wavelength_nm = 600.0; aperture: { diameter_m = 2.0; }; };\n"
    "sampling: { pupil_samples = 32; };\n"
    "output: { npix = 40; pixel_scale = 0.4; };\n"
    "aberrations: { units = \"waves\"; zernike = ((7, 0.03)); };\n";

static float opd_values[63];

static psfsim_set *open_set(const char *text, const char *backend, int with_map)
{
    for (int i = 0; i < 63; ++i)
        opd_values[i] = (float)(15.0 * sin(0.7 * i + 0.3));
    psfsim_map m = {"aberrations.opd_map.file", opd_values, 7, 9};
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = backend;
    o.maps = with_map ? &m : NULL;
    o.nmaps = with_map ? 1 : 0;
    psfsim_set *s = NULL;
    char err[1024] = "";
    if (psfsim_open_text(text, &o, &s, err, sizeof err) != PSFSIM_OK) fail_msg("open: %s", err);
    return s;
}

/* max |a - b| / max |b| <= tol */
static void expect_rel(const char *what, const double *a, const double *b, size_t n, double tol)
{
    double d = 0.0, m = 0.0;
    for (size_t i = 0; i < n; ++i) {
        d = fmax(d, fabs(a[i] - b[i]));
        m = fmax(m, fabs(b[i]));
    }
    assert_true(m > 0.0);
    if (d > tol * m) fail_msg("%s: off by %g of %g", what, d, m);
}

typedef struct {
    double img[3 * 64 * 64], z[3 * 3], opd[63];
} result;

static void vjp(psfsim_set *s, long long first, long long count, const double *cot,
                const double *zin, const double *opd_in, result *r)
{
    int j[3] = {4, 6, 11};
    psfsim_inputs in;
    psfsim_inputs_init(&in);
    in.nterms = 3, in.j = j, in.zernike = zin + first * 3, in.opd_map = opd_in;
    psfsim_gradients gr;
    psfsim_gradients_init(&gr);
    gr.zernike = r->z;
    gr.opd_map = r->opd;
    char err[1024] = "";
    if (psfsim_vjp(s, first, count, &in, cot + first * 64 * 64, r->img, &gr, err, sizeof err) !=
        PSFSIM_OK)
        fail_msg("vjp: %s", err);
}

static void test_fft_broadband_opd(void **state)
{
    (void)state;
    psfsim_set *g = open_set(FFT_BROADBAND, "gpu", 1), *c = open_set(FFT_BROADBAND, "cpu", 1);
    psfsim_info info;
    assert_int_equal(psfsim_describe(g, &info, NULL, 0), PSFSIM_OK);
    assert_int_equal(info.npix, 64);
    double *cot = malloc(3 * 64 * 64 * sizeof *cot), zin[9], opd_in[63];
    unsigned st = 5;
    for (size_t i = 0; i < 3 * 64 * 64; ++i) {
        st = st * 1103515245u + 12345u;
        cot[i] = (double)(st >> 8) / 16777216.0 - 0.5;
    }
    for (int i = 0; i < 9; ++i)
        zin[i] = 10.0 * cos(1.3 * i);
    for (int i = 0; i < 63; ++i)
        opd_in[i] = 5.0 * sin(0.4 * i);
    static result rg, rc;
    setenv("PSFSIM_VJP_BACKEND", "gpu", 1);
    vjp(g, 0, 3, cot, zin, opd_in, &rg);
    vjp(c, 0, 3, cot, zin, opd_in, &rc);
    expect_rel("images", rg.img, rc.img, 3 * 64 * 64, 1e-10);
    expect_rel("zernike", rg.z, rc.z, 9, 1e-10);
    expect_rel("opd_map", rg.opd, rc.opd, 63, 1e-10);
    vjp(g, 1, 2, cot, zin, opd_in, &rg); /* images 1, 2 only */
    vjp(c, 1, 2, cot, zin, opd_in, &rc);
    expect_rel("images 1..2", rg.img, rc.img, 2 * 64 * 64, 1e-10);
    expect_rel("zernike 1..2", rg.z, rc.z, 6, 1e-10);
    expect_rel("opd_map 1..2", rg.opd, rc.opd, 63, 1e-10);
    for (int i = 0; i < 63; ++i) /* another OPD map input: the kept pupils' OPD rows */
        opd_in[i] *= -2.0;
    vjp(g, 0, 3, cot, zin, opd_in, &rg);
    vjp(c, 0, 3, cot, zin, opd_in, &rc);
    expect_rel("images, map 2", rg.img, rc.img, 3 * 64 * 64, 1e-10);
    expect_rel("zernike, map 2", rg.z, rc.z, 9, 1e-10);
    expect_rel("opd_map, map 2", rg.opd, rc.opd, 63, 1e-10);
    vjp(g, 0, 3, cot, zin, NULL, &rg); /* none: the set's own map again */
    vjp(c, 0, 3, cot, zin, NULL, &rc);
    expect_rel("images, no map", rg.img, rc.img, 3 * 64 * 64, 1e-10);
    expect_rel("opd_map, no map", rg.opd, rc.opd, 63, 1e-10);
    unsetenv("PSFSIM_VJP_BACKEND");
    free(cot);
    psfsim_close(g);
    psfsim_close(c);
}

static void test_mft_on_the_cpu(void **state)
{
    (void)state;
    psfsim_set *g = open_set(MFT, "gpu", 0), *c = open_set(MFT, "cpu", 0);
    double *cot = calloc(40 * 40, sizeof *cot), ga[1], gb[1];
    cot[20 * 40 + 21] = 1.0;
    int j[1] = {7};
    double z[1] = {0.01};
    psfsim_inputs in;
    psfsim_inputs_init(&in);
    in.nterms = 1, in.j = j, in.zernike = z;
    psfsim_gradients gr;
    psfsim_gradients_init(&gr);
    char err[1024] = "";
    setenv("PSFSIM_VJP_BACKEND", "gpu", 1);
    gr.zernike = ga;
    assert_int_equal(psfsim_vjp(g, 0, 1, &in, cot, NULL, &gr, err, sizeof err), PSFSIM_ERR_BACKEND);
    assert_non_null(strstr(err, "an MFT set"));
    unsetenv("PSFSIM_VJP_BACKEND");
    assert_int_equal(psfsim_vjp(g, 0, 1, &in, cot, NULL, &gr, err, sizeof err), PSFSIM_OK);
    gr.zernike = gb;
    assert_int_equal(psfsim_vjp(c, 0, 1, &in, cot, NULL, &gr, err, sizeof err), PSFSIM_OK);
    assert_true(ga[0] == gb[0] && ga[0] != 0.0);
    free(cot);
    psfsim_close(g);
    psfsim_close(c);
}

int main(void)
{
    char err[1024] = "";
    const char *host = getenv("PSFSIM_VJP_HOST_MODULE"); /* tests/support/host_vjp_module.c */
    void *p = host && strcmp(host, "1") == 0 ? NULL : psfsim_device_alloc(0, 16, err, sizeof err);
    if (!p && !(host && strcmp(host, "1") == 0)) {
        printf("skipped: no CUDA device: %s\n", err);
        return 77;
    }
    if (p) psfsim_device_free(0, p);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fft_broadband_opd),
        cmocka_unit_test(test_mft_on_the_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
