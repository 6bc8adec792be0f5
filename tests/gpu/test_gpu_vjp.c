/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradients on the GPU (lib/vjp_gpu.c, gpu/adjoint.cu) through the C
 * API, against the same set on the CPU: a broadband FFT set in nm with an
 * OPD map in memory and "sum" normalisation, its
 * images, Zernike and OPD-map gradients equal to 1e-10 relative with
 * PSFSIM_VJP_BACKEND=gpu (no fall-back), for part of the set (first 1,
 * count 2) and after the OPD map input changes or goes (the kept state's
 * OPD rows rewritten); an MFT set refused with PSFSIM_ERR_BACKEND
 * under PSFSIM_VJP_BACKEND=gpu and computed on the CPU without it (the same
 * bits). psfsim_vjp_device (the cotangent and images in device memory,
 * double and float): equal to psfsim_vjp's (1e-12 relative; float: the
 * widened cotangent's gradients, the images rounded to float) on the
 * GPU's path (FFT, a part of the set, the poppy turn) and through the
 * host (the MFT, a CPU set); host memory and bad dtypes refused with
 * nothing written. Links libpsfsim.so as a user does. Skipped (exit 77) without a
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

#include <dlfcn.h>
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

/* The poppy orientation on the FFT (an odd frame, 297 -> 99 by blocks):
 * turned on the device by run_device. */
static const char *const POPPY_FFT =
    "name = \"p\";\n"
    "optics: { wavelength_nm = 600.0; aperture: { diameter_m = 2.0; obscuration = 0.2; }; };\n"
    "sampling: { pupil_samples = 33; padding = 3.0; };\n"
    "output: { orientation = \"poppy\"; };\n"
    "detector: { oversample = 3; pixel_response = true; };\n"
    "aberrations: { units = \"waves\"; zernike = ((5, 0.04), (8, -0.03)); };\n"
    "sweep: { defocus = [0.0, 0.05, -0.1]; };\n";

static void *dev_alloc(size_t bytes)
{
    char err[1024] = "";
    void *p = psfsim_device_alloc(0, bytes, err, sizeof err);
    if (!p) fail_msg("device_alloc: %s", err);
    return p;
}

static void dev_copy(void *dst, const void *src, size_t bytes)
{
    char err[1024] = "";
    if (psfsim_device_copy(0, dst, src, bytes, err, sizeof err) != PSFSIM_OK)
        fail_msg("device_copy: %s", err);
}

/* A call's Zernike inputs (terms 4, 6, 11) and gradients; opd: the OPD
 * map's input and gradient too (63 values) when not NULL. */
typedef struct {
    int j[3];
    psfsim_inputs in;
    psfsim_gradients gr;
} call;

static void call_init(call *c, const double *zin, double *gz, const double *opd_in, double *gopd)
{
    c->j[0] = 4, c->j[1] = 6, c->j[2] = 11;
    psfsim_inputs_init(&c->in);
    c->in.nterms = 3, c->in.j = c->j, c->in.zernike = zin, c->in.opd_map = opd_in;
    psfsim_gradients_init(&c->gr);
    c->gr.zernike = gz;
    c->gr.opd_map = opd_in ? gopd : NULL;
}

/* Set s's images [first, first + count) (M x M): psfsim_vjp_device with
 * the cotangent and images on the device, in double and in float, against
 * psfsim_vjp on the host: double equal to 1e-12 relative; float: the
 * gradients equal psfsim_vjp's of the float cotangent widened (1e-12),
 * the images its images rounded to float (1e-7 of the peak). */
static void device_equals_host(psfsim_set *s, int m, long long first, long long count, int opd)
{
    size_t n = (size_t)count * m * m;
    double *cot = malloc(n * sizeof *cot), *img = malloc(n * sizeof *img);
    double *dimg = malloc(n * sizeof *dimg);
    float *cf = malloc(n * sizeof *cf), *fimg = malloc(n * sizeof *fimg);
    double zin[9], opd_in[63], gz[9], gopd[63], dz[9], dopd[63];
    unsigned st = 11;
    for (size_t i = 0; i < n; ++i) {
        st = st * 1103515245u + 12345u;
        cot[i] = (double)(st >> 8) / 16777216.0 - 0.5 + 1e-9 * (double)(i % 7);
        cf[i] = (float)cot[i];
    }
    for (int i = 0; i < 9; ++i)
        zin[i] = 0.01 * cos(1.3 * i);
    for (int i = 0; i < 63; ++i)
        opd_in[i] = 5.0 * sin(0.4 * i);
    call h, d;
    call_init(&h, zin, gz, opd ? opd_in : NULL, gopd);
    call_init(&d, zin, dz, opd ? opd_in : NULL, dopd);
    char err[1024] = "";
    void *dcot = dev_alloc(n * sizeof(double)), *dout = dev_alloc(n * sizeof(double));
    /* double */
    assert_int_equal(psfsim_vjp(s, first, count, &h.in, cot, img, &h.gr, err, sizeof err),
                     PSFSIM_OK);
    dev_copy(dcot, cot, n * sizeof *cot);
    if (psfsim_vjp_device(s, first, count, &d.in, dcot, PSFSIM_FLOAT64, dout, &d.gr, NULL, err,
                          sizeof err) != PSFSIM_OK)
        fail_msg("vjp_device: %s", err);
    dev_copy(dimg, dout, n * sizeof *dimg);
    expect_rel("device images", dimg, img, n, 1e-12);
    expect_rel("device zernike", dz, gz, (size_t)count * 3, 1e-12);
    if (opd) expect_rel("device opd_map", dopd, gopd, 63, 1e-12);
    /* float: the widened cotangent's host result */
    for (size_t i = 0; i < n; ++i)
        cot[i] = (double)cf[i];
    assert_int_equal(psfsim_vjp(s, first, count, &h.in, cot, img, &h.gr, err, sizeof err),
                     PSFSIM_OK);
    dev_copy(dcot, cf, n * sizeof *cf);
    if (psfsim_vjp_device(s, first, count, &d.in, dcot, PSFSIM_FLOAT32, dout, &d.gr, NULL, err,
                          sizeof err) != PSFSIM_OK)
        fail_msg("vjp_device float: %s", err);
    dev_copy(fimg, dout, n * sizeof *fimg);
    expect_rel("float zernike", dz, gz, (size_t)count * 3, 1e-12);
    if (opd) expect_rel("float opd_map", dopd, gopd, 63, 1e-12);
    for (size_t i = 0; i < n; ++i)
        dimg[i] = (double)fimg[i];
    expect_rel("float images", dimg, img, n, 1e-7);
    /* no images wanted: the same gradients */
    memset(dz, 0, sizeof dz);
    assert_int_equal(psfsim_vjp_device(s, first, count, &d.in, dcot, PSFSIM_FLOAT32, NULL, &d.gr,
                                       NULL, err, sizeof err),
                     PSFSIM_OK);
    expect_rel("float zernike, no images", dz, gz, (size_t)count * 3, 1e-12);
    psfsim_device_free(0, dcot);
    psfsim_device_free(0, dout);
    free(cot);
    free(img);
    free(dimg);
    free(cf);
    free(fimg);
}

static void test_device_cotangent(void **state)
{
    (void)state;
    setenv("PSFSIM_VJP_BACKEND", "gpu", 1); /* the GPU's path, no fall-back */
    psfsim_set *g = open_set(FFT_BROADBAND, "gpu", 1);
    device_equals_host(g, 64, 0, 3, 1);
    device_equals_host(g, 64, 1, 2, 1); /* a part: the rows' offsets */
    psfsim_close(g);
    psfsim_set *p = open_set(POPPY_FFT, "gpu", 0);
    psfsim_info info;
    assert_int_equal(psfsim_describe(p, &info, NULL, 0), PSFSIM_OK);
    device_equals_host(p, info.npix, 0, 3, 0); /* turned on the device */
    psfsim_close(p);
    unsetenv("PSFSIM_VJP_BACKEND");
    /* out of the GPU's scope (the MFT) and a CPU set: through the host, the
     * same bits as psfsim_vjp */
    psfsim_set *m = open_set(MFT, "gpu", 0), *c = open_set(FFT_BROADBAND, "cpu", 1);
    device_equals_host(m, 40, 0, 1, 0);
    device_equals_host(c, 64, 0, 3, 1);
    psfsim_close(c);
    /* the MFT under PSFSIM_VJP_BACKEND=gpu: refused as psfsim_vjp */
    setenv("PSFSIM_VJP_BACKEND", "gpu", 1);
    double gz[3];
    call d;
    call_init(&d, (double[3]){0}, gz, NULL, NULL);
    void *dcot = dev_alloc(40 * 40 * sizeof(double));
    char err[1024] = "";
    assert_int_equal(
        psfsim_vjp_device(m, 0, 1, &d.in, dcot, PSFSIM_FLOAT64, NULL, &d.gr, NULL, err, sizeof err),
        PSFSIM_ERR_BACKEND);
    assert_non_null(strstr(err, "an MFT set"));
    unsetenv("PSFSIM_VJP_BACKEND");
    psfsim_device_free(0, dcot);
    psfsim_close(m);
}

/* Host memory for the cotangent or the images, a dtype not float: refused
 * (PSFSIM_ERR_ARGUMENT) before anything is computed, nothing written (the
 * gradients and the device images keep their sentinels). */
static void test_device_refusals(void **state)
{
    (void)state;
    psfsim_set *g = open_set(FFT_BROADBAND, "gpu", 1);
    size_t n = 3 * 64 * 64;
    double *host = calloc(n, sizeof *host), *back = malloc(n * sizeof *back), gz[9];
    double *fill = malloc(n * sizeof *fill);
    for (size_t i = 0; i < n; ++i)
        fill[i] = -7.0;
    void *dcot = dev_alloc(n * sizeof(double)), *dimg = dev_alloc(n * sizeof(double));
    dev_copy(dcot, host, n * sizeof *host);
    dev_copy(dimg, fill, n * sizeof *fill);
    double zin[9] = {0};
    call d;
    call_init(&d, zin, gz, NULL, NULL);
    char err[1024] = "";
    struct {
        const void *cot;
        int dtype;
        void *img;
        const char *says;
    } cases[] = {
        {host, PSFSIM_FLOAT64, dimg, "the cotangent is not CUDA device memory (pageable"},
        {dcot, PSFSIM_FLOAT64, back, "the images array is not CUDA device memory"},
        {dcot, PSFSIM_UINT16, dimg, "dtype 1: PSFSIM_FLOAT32 (0) or PSFSIM_FLOAT64 (2)"},
        {NULL, PSFSIM_FLOAT64, dimg, "no set, cotangent or grads given"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        for (int i = 0; i < 9; ++i)
            gz[i] = 42.0;
        for (size_t i = 0; i < n; ++i)
            back[i] = 3.0;
        err[0] = '\0';
        assert_int_equal(psfsim_vjp_device(g, 0, 3, &d.in, cases[k].cot, cases[k].dtype,
                                           cases[k].img, &d.gr, NULL, err, sizeof err),
                         PSFSIM_ERR_ARGUMENT);
        if (!strstr(err, cases[k].says)) fail_msg("case %zu: %s", k, err);
        for (int i = 0; i < 9; ++i)
            assert_true(gz[i] == 42.0);
        for (size_t i = 0; cases[k].img == back && i < n; ++i)
            assert_true(back[i] == 3.0);
        dev_copy(back, dimg, n * sizeof *back);
        for (size_t i = 0; i < n; ++i)
            assert_true(back[i] == -7.0);
    }
    /* count 0: nothing, no pointer checked */
    assert_int_equal(
        psfsim_vjp_device(g, 0, 0, &d.in, host, PSFSIM_FLOAT64, back, &d.gr, NULL, err, sizeof err),
        PSFSIM_OK);
    /* the host module counts the caller's stream waited for: once a call */
    void *mod = getenv("PSFSIM_VJP_HOST_MODULE")
                    ? dlopen(getenv("PSFSIM_GPU_MODULE"), RTLD_NOW | RTLD_NOLOAD)
                    : NULL;
    int (*waits)(void) = mod ? (int (*)(void))dlsym(mod, "psfsim_host_module_waits") : NULL;
    if (waits) {
        int before = waits();
        assert_int_equal(psfsim_vjp_device(g, 0, 3, &d.in, dcot, PSFSIM_FLOAT64, NULL, &d.gr, NULL,
                                           err, sizeof err),
                         PSFSIM_OK);
        assert_int_equal(waits(), before + 1);
    }
    if (mod) dlclose(mod);
    psfsim_device_free(0, dcot);
    psfsim_device_free(0, dimg);
    free(host);
    free(back);
    free(fill);
    psfsim_close(g);
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
        cmocka_unit_test(test_device_cotangent),
        cmocka_unit_test(test_device_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
