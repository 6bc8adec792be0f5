/* SPDX-License-Identifier: BSD-3-Clause */
/* The matrix Fourier transform on the GPU (gpu/mft.h, cuBLAS) against
 * the CPU's (cpu/mft.c): the same images (relative L2 <= 1e-5) for
 * monochromatic and broadband sets on output grids of odd and even size,
 * with aberrations, maps and pupils without their basis; the MFT onto the
 * FFT's own grid equals the GPU's FFT; many matrices (more than the backend
 * keeps) in one run; runs of several sizes through one backend; every
 * checked call (cuBLAS included) failing in turn. Skipped (exit 77) when
 * psfsim has no GPU backend or no CUDA device. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "app/config/config.h"
#include "app/formats/fits.h"
#include "app/select/gpu.h"
#include "app/set/image_set.h"
#include "tests/support/psf_harness.h"
#include "tests/support/testutil.h"

#define TOL 1e-5

static const psf_backend_ops *gpu;

/* A config loaded for calling a backend's ops directly (the MFT forced when
 * force is set: psf_config.mft_force, the test hook). */
typedef struct {
    psf_config cfg;
    image_set set;
    psf_problem desc;
    double *storage;
    psf_job *jobs;
    image_info *infos;
    int nimages, npix;
    size_t plane;
} loaded;

static void load(loaded *l, const char *text, int force, int max_batch)
{
    memset(l, 0, sizeof *l);
    char err[1024], path[4200];
    char *dir = tu_mkdtemp("gpu_mft");
    assert_non_null(dir);
    snprintf(path, sizeof path, "%s/t.cfg", dir);
    assert_int_equal(tu_write_file(path, text), 0);
    int rc = config_load(path, &l->cfg, err, sizeof err);
    tu_rmtree(dir);
    free(dir);
    if (rc == 0) {
        l->cfg.mft_force = force;
        rc = image_set_init(&l->set, &l->cfg, err, sizeof err);
    }
    if (rc != 0) printf("load: %s\n", err);
    assert_int_equal(rc, 0);
    l->nimages = (int)l->set.nimages;
    l->npix = l->set.samp.npix;
    l->plane = (size_t)l->npix * l->npix;
    image_set_problem(&l->set, max_batch, &l->desc);
    size_t per = image_set_storage(&l->set);
    l->storage = calloc((size_t)l->nimages * per + 1, sizeof *l->storage);
    l->jobs = calloc((size_t)l->nimages, sizeof *l->jobs);
    l->infos = calloc((size_t)l->nimages, sizeof *l->infos);
    assert_true(l->storage && l->jobs && l->infos);
    for (int k = 0; k < l->nimages; ++k)
        assert_int_equal(image_set_job(&l->set, k, l->storage + (size_t)k * per, &l->jobs[k],
                                       &l->infos[k], err, sizeof err),
                         0);
}

static void unload(loaded *l)
{
    free(l->storage);
    free(l->jobs);
    free(l->infos);
    image_set_free(&l->set);
    config_free(&l->cfg);
}

/* Run all images of l through backend b in runs of `per` jobs into images. */
static int run_in_batches(const psf_backend_ops *ops, psf_backend *b, const loaded *l, int per,
                          float *images, char *err, size_t errlen)
{
    for (int k0 = 0; k0 < l->nimages; k0 += per) {
        int n = l->nimages - k0 < per ? l->nimages - k0 : per;
        if (ops->run(b, l->jobs + k0, n, images + (size_t)k0 * l->plane, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* Every image of l through a fresh backend of ops in runs of per, finished
 * as the run loop does (image_set_finish_image: "sum" normalisation).
 * Returns the malloc'd images. */
static float *compute_all(loaded *l, const psf_backend_ops *ops, int per)
{
    char err[1024];
    psf_backend *b = NULL;
    int rc = ops->create(&l->desc, NULL, &b, err, sizeof err);
    if (rc != 0) printf("%s create: %s\n", ops->name, err);
    assert_int_equal(rc, 0);
    float *img = malloc((size_t)l->nimages * l->plane * sizeof *img);
    assert_non_null(img);
    rc = run_in_batches(ops, b, l, per, img, err, sizeof err);
    if (rc != 0) printf("%s run: %s\n", ops->name, err);
    assert_int_equal(rc, 0);
    ops->destroy(b);
    for (int k = 0; k < l->nimages; ++k)
        image_set_finish_image(&l->set, &l->infos[k], img + (size_t)k * l->plane);
    return img;
}

/* Worst relative L2 difference of a's images from b's. */
static double worst_l2(const float *a, const float *b, int nimages, size_t plane)
{
    double worst = 0.0;
    for (int k = 0; k < nimages; ++k) {
        double d = tu_rel_l2(a + (size_t)k * plane, b + (size_t)k * plane, plane);
        if (!(d <= worst)) worst = d; /* NaN sticks */
    }
    return worst;
}

/* The GPU's MFT images of text equal the CPU's to TOL (runs of 4). */
static void compare_mft(const char *what, const char *text)
{
    loaded l;
    load(&l, text, 0, 4);
    assert_int_equal(l.set.mft, 1);
    float *cpu = compute_all(&l, &psf_backend_cpu, 4);
    float *g = compute_all(&l, gpu, 4);
    double worst = worst_l2(g, cpu, l.nimages, l.plane);
    printf("%-44s M=%-4d G=%-4d %3d image(s): worst rel L2 %.3g\n", what, l.npix, l.desc.pupil_npix,
           l.nimages, worst);
    assert_true(worst <= TOL);
    free(cpu);
    free(g);
    unload(&l);
}

#define MONO                                                                                       \
    "name = \"t\"; optics: { wavelength_nm = 633; aperture: { diameter_m = 1.0; %s }; }; "         \
    "sampling: { pupil_samples = %d; }; %s output: { npix = %d; pixel_scale = %.4f; };"

/* Monochromatic sets, odd and even M and G, with aberrations (tilt too, so
 * the orientation is checked), obscuration, spiders, hexagon, binary edges. */
static void test_monochromatic(void **state)
{
    (void)state;
    static const struct {
        int n, m;
        double pix;
        const char *aperture, *extra;
    } cases[] = {
        {64, 100, 0.3,
         "obscuration = 0.3; spiders: { count = 3; width_m = 0.04; angle_deg = 17; };",
         "aberrations: { zernike = ((2, 0.4), (3, -0.25), (4, 0.3), (6, 0.2), (11, 0.1)); };"},
        {51, 101, 0.37, "obscuration = 0.2;",
         "aberrations: { zernike = ((4, 0.2), (7, -0.15), (8, 0.05)); };"},
        {48, 63, 0.5, "shape = \"hexagon\";", "aberrations: { zernike = ((5, 0.1)); };"},
        {33, 128, 0.25, "edge = \"binary\";",
         "normalization = \"sum\"; sweep: { defocus = [0.0, 0.3, 0.6, 0.9, 1.2]; };"},
        {96, 47, 0.9, "", "aberrations: { zernike = ((2, 1.0), (3, 0.5)); };"},
        {20, 9, 0.5, "", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        compare_mft(tu_format("mono n=%d M=%d pixel %g", cases[i].n, cases[i].m, cases[i].pix),
                    tu_format(MONO, cases[i].aperture, cases[i].n, cases[i].extra, cases[i].m,
                              cases[i].pix));
}

/* output.orientation = "poppy": the grid half a pixel off (psf_problem.half_pixel,
 * even M; an FFT set then goes by the MFT too), the same on both backends. */
static void test_half_pixel(void **state)
{
    (void)state;
    const char *ab = "aberrations: { zernike = ((2, 0.3), (5, 0.1), (8, 0.05)); };";
    compare_mft("poppy orientation, M=64 (an FFT set's grid)",
                tu_format("name = \"t\"; optics: { wavelength_nm = 633; aperture: { diameter_m "
                          "= 1.0; obscuration = 0.2; }; }; sampling: { pupil_samples = 32; }; %s "
                          "output: { orientation = \"poppy\"; };",
                          ab));
    loaded l;
    load(&l,
         tu_format("name = \"t\"; optics: { wavelength_nm = 633; aperture: { diameter_m = "
                   "1.0; }; }; sampling: { pupil_samples = 48; }; %s output: { npix = 90; "
                   "pixel_scale = 0.3; orientation = \"poppy\"; };",
                   ab),
         0, 4);
    assert_int_equal(l.desc.half_pixel, 1);
    unload(&l);
    compare_mft("poppy orientation, M=90 pixel 0.3",
                tu_format("name = \"t\"; optics: { wavelength_nm = 633; aperture: { diameter_m = "
                          "1.0; }; }; sampling: { pupil_samples = 48; }; %s output: { npix = 90; "
                          "pixel_scale = 0.3; orientation = \"poppy\"; };",
                          ab));
}

#define BROADBAND                                                                                  \
    "name = \"bb\"; optics: { wavelengths_nm = [480.0, 550.0, 700.0]; weights = [0.2, 0.5, 0.3];"  \
    " f_number = 8; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };"                        \
    " sampling: { pupil_samples = %d; }; aberrations: { zernike = ( (4, 0.1), (9, 0.05) ); };"     \
    " sweep: { defocus = [0.0, 0.2, 0.4, 0.6, 0.8]; }; output: { npix = %d; %s };"

/* Broadband sets: one matrix per wavelength, several per pass. */
static void test_broadband(void **state)
{
    (void)state;
    compare_mft("broadband, pixel 0.2 lambda_ref/D, even M",
                tu_format(BROADBAND, 64, 96, "pixel_scale = 0.2;"));
    compare_mft("broadband, pixel 0.31 lambda_ref/D, odd M",
                tu_format(BROADBAND, 57, 75, "pixel_scale = 0.31;"));
    compare_mft("broadband, pixel 0.9 um", tu_format(BROADBAND, 64, 64, "pixel_scale_um = 0.9;"));
}

/* A transmission map and an OPD map (sampled on the MFT's pupil grid). */
static void test_maps(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("gpu_mft_maps");
    assert_non_null(dir);
    char tpath[4200], opath[4200], err[1024];
    snprintf(tpath, sizeof tpath, "%s/pupil.fits", dir);
    snprintf(opath, sizeof opath, "%s/opd.fits", dir);
    enum { MT = 64, MO = 48 };
    static float tm[MT * MT], om[MO * MO];
    for (int r = 0; r < MT; ++r)
        for (int c = 0; c < MT; ++c) {
            double x = (c + 0.5) / MT - 0.5, y = (r + 0.5) / MT - 0.5;
            tm[r * MT + c] =
                x * x + y * y < 0.25 ? (float)(0.6 + 0.4 * sin(7.0 * x) * cos(5.0 * y)) : 0.0f;
        }
    for (int r = 0; r < MO; ++r)
        for (int c = 0; c < MO; ++c) {
            double x = (c + 0.5) / MO - 0.5, y = (r + 0.5) / MO - 0.5;
            om[r * MO + c] = (float)(80.0 * sin(9.0 * x) * cos(6.0 * y) + 30.0 * x);
        }
    assert_int_equal(psf_fits_write_image(tpath, tm, MT, NULL, 0, err, sizeof err), 0);
    assert_int_equal(psf_fits_write_image(opath, om, MO, NULL, 0, err, sizeof err), 0);
    compare_mft(
        "maps: transmission file + OPD map",
        tu_format("name = \"maps\"; optics: { wavelengths_nm = [500.0, 650.0];"
                  " aperture: { shape = \"file\"; file = \"%s\"; diameter_m = 1.0;"
                  " obscuration = 0.1; spiders: { count = 3; width_m = 0.02; angle_deg = 30; };"
                  " }; }; sampling: { pupil_samples = 60; };"
                  " aberrations: { zernike = ( (5, 0.05) ); opd_map: { file = \"%s\";"
                  " units = \"nm\"; }; }; sweep: { defocus = [0.0, 0.3]; };"
                  " output: { npix = 81; pixel_scale = 0.45; };",
                  tpath, opath));
    tu_rmtree(dir);
    free(dir);
}

/* Pupils kept without their Zernike basis: the field kernels evaluate
 * zernike_eval from the sample's position on the natural-order grid. */
static void test_no_basis(void **state)
{
    (void)state;
    setenv("PSFSIM_GPU_BASIS_MAX_MB", "0", 1);
    compare_mft(
        "no basis (zernike_eval per image)",
        tu_format(MONO, "obscuration = 0.3;", 70,
                  "aberrations: { zernike = ( (2, 0.3), (4, 0.2), (7, -0.1), (12, 0.05) ); };"
                  " sweep: { defocus = [0.0, 0.4, 0.8]; };",
                  90, 0.33));
    unsetenv("PSFSIM_GPU_BASIS_MAX_MB");
}

/* The MFT onto the FFT's own grid (forced) is the FFT, on the GPU too: even
 * and odd N, tilt included. */
static void test_mft_equals_fft(void **state)
{
    (void)state;
    const int ns[] = {64, 51, 40};
    const double qs[] = {2.0, 1.9, 3.0}; /* N = 128, 97, 120 */
    for (int c = 0; c < 3; ++c) {
        const char *t = tu_format(
            "name = \"t\"; optics: { wavelength_nm = 633; aperture: { diameter_m = 1.0; "
            "obscuration = 0.3; spiders: { count = 3; width_m = 0.04; angle_deg = 17; }; }; }; "
            "sampling: { pupil_samples = %d; padding = %.3f; }; "
            "aberrations: { zernike = ((2, 0.4), (3, -0.25), (4, 0.3), (6, 0.2), (7, -0.15), "
            "(11, 0.1)); }; sweep: { defocus = [0.0, 0.5]; };",
            ns[c], qs[c]);
        loaded lf, lm;
        load(&lf, t, 0, 4);
        load(&lm, t, 1, 4);
        assert_int_equal(lf.set.mft, 0);
        assert_int_equal(lm.set.mft, 1);
        assert_int_equal(lf.npix, lm.npix);
        float *fft = compute_all(&lf, gpu, 4);
        float *mft = compute_all(&lm, gpu, 4);
        double d = worst_l2(mft, fft, lf.nimages, lf.plane);
        printf("n = %d, N = %d: GPU MFT vs GPU FFT worst rel L2 %.3g\n", ns[c], lf.npix, d);
        assert_true(d <= TOL);
        free(fft);
        free(mft);
        unload(&lf);
        unload(&lm);
    }
}

/* A wavelength sweep at a fixed um pixel: one matrix per image, more than
 * the backend keeps (2 x PSF_MAX_COMPONENTS = 128), in runs of 4 (old
 * matrices replaced between passes) and in one run of every image (two
 * sub-batches of 140 jobs, one pass each: the second pass's 129th matrix
 * replaces one of its own, so the pass is run first). */
static void test_many_matrices(void **state)
{
    (void)state;
    char wl[4096] = "";
    const int count = 280; /* two sub-batches of 140: the second's 129th matrix evicts */
    for (int i = 0; i < count; ++i) {
        size_t len = strlen(wl);
        snprintf(wl + len, sizeof wl - len, "%s%.2f", i ? ", " : "", 450.0 + 1.25 * i);
    }
    const char *text =
        tu_format("name = \"w\"; optics: { f_number = 10; aperture: { diameter_m = 1.0;"
                  " obscuration = 0.25; }; }; sampling: { pupil_samples = 16; };"
                  " aberrations: { zernike = ((4, 0.1)); };"
                  " sweep: { wavelength_nm = [%s]; }; output: { npix = 24; pixel_scale_um "
                  "= 1.7; };",
                  wl);
    loaded l;
    load(&l, text, 0, count);
    assert_int_equal(l.set.mft, 1);
    assert_int_equal(l.nimages, count);
    float *cpu = compute_all(&l, &psf_backend_cpu, 4);
    float *by4 = compute_all(&l, gpu, 4);
    float *all = compute_all(&l, gpu, count);
    double d4 = worst_l2(by4, cpu, l.nimages, l.plane),
           dall = worst_l2(all, cpu, l.nimages, l.plane);
    printf("%d matrices: runs of 4 worst rel L2 %.3g, one run %.3g\n", count, d4, dall);
    assert_true(d4 <= TOL);
    assert_true(dall <= TOL);
    free(cpu);
    free(by4);
    free(all);
    unload(&l);
}

/* One backend, runs of 1, 3 and all images (slots reused by other pupils
 * and by the same), twice each: every run equals the CPU, and the same
 * batching gives the same bits. */
static void test_reuse(void **state)
{
    (void)state;
    loaded l;
    load(&l, tu_format(BROADBAND, 48, 70, "pixel_scale = 0.27;"), 0, 8);
    size_t total = (size_t)l.nimages * l.plane;
    float *cpu = compute_all(&l, &psf_backend_cpu, 4);
    char err[1024];
    psf_backend *b = NULL;
    assert_int_equal(gpu->create(&l.desc, NULL, &b, err, sizeof err), 0);
    float *img = gpu->alloc_images(b, total);
    float *prev[9] = {0};
    assert_non_null(img);
    static const int pers[] = {1, 3, 8, 3, 1, 8};
    for (size_t i = 0; i < sizeof pers / sizeof pers[0]; ++i) {
        for (size_t p = 0; p < total; ++p)
            img[p] = NAN;
        int rc = run_in_batches(gpu, b, &l, pers[i], img, err, sizeof err);
        if (rc != 0) printf("run: %s\n", err);
        assert_int_equal(rc, 0);
        for (int k = 0; k < l.nimages; ++k)
            image_set_finish_image(&l.set, &l.infos[k], img + (size_t)k * l.plane);
        double d = worst_l2(img, cpu, l.nimages, l.plane);
        printf("runs of %d: worst rel L2 %.3g to the CPU\n", pers[i], d);
        assert_true(d <= TOL);
        if (prev[pers[i]]) {
            assert_memory_equal(img, prev[pers[i]], total * sizeof *img);
        } else {
            prev[pers[i]] = malloc(total * sizeof *img);
            assert_non_null(prev[pers[i]]);
            memcpy(prev[pers[i]], img, total * sizeof *img);
        }
    }
    for (int i = 0; i < 9; ++i)
        free(prev[i]);
    gpu->free_images(b, img);
    gpu->destroy(b);
    free(cpu);
    unload(&l);
}

/* create + runs of 4 and 1 + destroy with PSFSIM_GPU_FAIL_AT=n. Returns 1
 * when something failed (with the injected-fault message, checked), 0 when
 * all succeeded; *cublas set when the failing call was a cuBLAS one. */
static int fault_once(const loaded *l, long long n, float *images, int *cublas)
{
    char val[32], err[1024] = "", want[64];
    snprintf(val, sizeof val, "%lld", n);
    setenv("PSFSIM_GPU_FAIL_AT", val, 1);
    snprintf(want, sizeof want, "injected fault at CUDA call %lld (", n);
    psf_backend *b = NULL;
    int rc = gpu->create(&l->desc, NULL, &b, err, sizeof err);
    unsetenv("PSFSIM_GPU_FAIL_AT");
    const char *where = "create";
    if (rc == 0) {
        assert_non_null(b);
        where = "run";
        rc = run_in_batches(gpu, b, l, 4, images, err, sizeof err);
        if (rc == 0) rc = gpu->run(b, l->jobs, 1, images, err, sizeof err);
        gpu->destroy(b);
    } else {
        assert_null(b);
    }
    if (rc == 0) return 0;
    if (!strstr(err, want)) fail_msg("FAIL_AT=%lld: %s failed with \"%s\"", n, where, err);
    if (strstr(err, "(cublas")) {
        *cublas = 1;
        printf("FAIL_AT=%lld: %s: %s\n", n, where, err);
    }
    return 1;
}

/* Every checked call of an MFT set, cuBLAS's included, fails cleanly in
 * turn; afterwards a fresh backend is right. */
static void test_fault_injection(void **state)
{
    (void)state;
    loaded l;
    load(&l, tu_format(BROADBAND, 32, 40, "pixel_scale = 0.3;"), 0, 4);
    size_t total = (size_t)l.nimages * l.plane;
    float *images = malloc(total * sizeof *images);
    assert_non_null(images);
    long long n = 1;
    int cublas = 0;
    while (n < 1000 && fault_once(&l, n, images, &cublas))
        ++n;
    printf("the MFT sequence makes %lld checked calls; each one failed cleanly in turn\n", n - 1);
    assert_true(n > 20 && n < 1000);
    assert_true(cublas);
    float *cpu = compute_all(&l, &psf_backend_cpu, 4);
    float *g = compute_all(&l, gpu, 4);
    double d = worst_l2(g, cpu, l.nimages, l.plane);
    printf("after the faults, a fresh backend: worst rel L2 %.3g to the CPU\n", d);
    assert_true(d <= TOL);
    free(cpu);
    free(g);
    free(images);
    unload(&l);
}

int main(void)
{
    unsetenv("PSFSIM_GPU_FAIL_AT");
    unsetenv("PSFSIM_GPU_BASIS_MAX_MB");
    char why[1100];
    if (!(gpu = harness_gpu(why, sizeof why))) { /* tests/support/psf_harness.h */
        printf("skipped: %s\n", why);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_monochromatic),  cmocka_unit_test(test_broadband),
        cmocka_unit_test(test_maps),           cmocka_unit_test(test_no_basis),
        cmocka_unit_test(test_mft_equals_fft), cmocka_unit_test(test_many_matrices),
        cmocka_unit_test(test_reuse),          cmocka_unit_test(test_fault_injection),
        cmocka_unit_test(test_half_pixel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
