/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage on the GPU (gpu/detector.h) against the CPU's
 * (cpu/detector.h): the same images (relative L2 <= 1e-5, the backends'
 * tolerance) for every effect alone and all together, detector-sampled and
 * oversampled, by FFT and by MFT, batched (a sweep of 6) and single
 * images, and odd detector sizes (the sampling offset); every effect with
 * an asymmetric IPC kernel at s = 1 (the C2R straight into the detector
 * images) and s = 2, 4 (the fold, gpu/detector.h), even and odd M; sub-batches
 * of more images than a thread takes (the multiply's groups); every checked CUDA
 * and cuFFT call of a detector set fails cleanly in turn, and a fresh
 * backend is right afterwards. The backend takes the stage's default path
 * (GPU_DETECTOR_PACKED: packed pairs): a sweep of 6 runs as two
 * sub-batches of 3, an odd count (the last pair with zeros), the sweep of
 * 20 as two of 10, the single image the R2C path; test_gpu_detector_pack
 * checks both paths directly; POPPY's frame (WebbPSF's s x s binning) on
 * every path that takes it. Skipped (exit 77) when psfsim has no GPU
 * backend or no CUDA device. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "app/set/image_set.h"
#include "tests/support/psf_harness.h"
#include "tests/support/testutil.h"

#define TOL 1e-5

static const psf_backend_ops *gpu;

#define BASE                                                                                       \
    "name = \"g\"; optics: { wavelength_nm = 700; aperture: { diameter_m = 2.0;"                   \
    " obscuration = 0.3; spiders: { count = 4; width_m = 0.03; }; }; };"                           \
    " sampling: { pupil_samples = %d; padding = 2.0; }; %s"                                        \
    " sweep: { defocus = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]; }; detector: { %s };"

/* The worst relative L2 of cfg's GPU images against its CPU ones (label
 * and detector printed), asserted <= TOL. */
static double compare_cfg(const char *cfg, const char *label, const char *detector)
{
    long long nc = 0, ng = 0;
    int mc = 0, mg = 0;
    float *c = harness_compute_all(cfg, NULL, &nc, &mc);
    float *g = harness_compute_all(cfg, gpu, &ng, &mg);
    assert_non_null(c);
    assert_non_null(g);
    assert_int_equal(nc, ng);
    assert_int_equal(mc, mg);
    size_t plane = (size_t)mc * mc;
    double worst = 0.0;
    for (long long k = 0; k < nc; ++k) {
        double d = tu_rel_l2(g + k * plane, c + k * plane, plane);
        if (!(d <= worst)) worst = d;
    }
    printf("%-44s %-60.60s M=%-4d worst rel L2 %.3g\n", label, detector, mc, worst);
    assert_true(worst <= TOL);
    free(c);
    free(g);
    return worst;
}

/* BASE with a grid of 2 samples (N = 96, the cuFFT paths) or of 64 (N =
 * 128, a power of two: the separable path, gpu/detector_sep.h). */
static double compare_on(int samples, const char *output, const char *detector)
{
    char cfg[2048], label[256];
    snprintf(cfg, sizeof cfg, BASE, samples, output, detector);
    snprintf(label, sizeof label, "%s%s", samples == 64 ? "N=128 " : "", output);
    return compare_cfg(cfg, label, detector);
}

static double compare(const char *output, const char *detector)
{
    return compare_on(48, output, detector);
}

static const char *const effects[] = {
    "oversample = 4; pixel_response = false;",
    "oversample = 4;",
    "oversample = 4; pixel_response = false; jitter_lambda_d = [0.05, 0.12];",
    "oversample = 4; pixel_response = false; charge_diffusion_px = 0.3;",
    "oversample = 4; pixel_response = false; ipc = [0.001, 0.02, 0.003, 0.015, 0.92, 0.017, "
    "0.002, 0.019, 0.003];",
    "oversample = 1; pixel_response = true; jitter_mas = 4.0;",
    "oversample = 3; jitter_mas = [2.0, 6.0]; charge_diffusion_px = 0.25; ipc = [0.0, 0.02, 0.0, "
    "0.02, 0.92, 0.02, 0.0, 0.02, 0.0];",
};

static void test_every_effect(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof effects / sizeof effects[0]; ++i) {
        compare("", effects[i]);
        char over[512];
        snprintf(over, sizeof over, "%s write = \"oversampled\";", effects[i]);
        compare("", over);
    }
}

static void test_mft_and_odd_sizes(void **state)
{
    (void)state;
    const char *all = effects[6];
    compare("output: { npix = 40; pixel_scale = 0.6; };", all);
    compare("output: { npix = 41; pixel_scale = 0.6; };", all); /* odd M: the offset */
    compare("output: { npix = 41; pixel_scale = 0.6; };", "oversample = 2; jitter_mas = 3.0;");
    compare("output: { npix = 37; pixel_scale_arcsec = 0.04; };", all);
}

/* Every effect with an asymmetric IPC kernel at oversample s, into all. */
static void all_effects(char *all, size_t len, int s)
{
    snprintf(all, len,
             "oversample = %d; jitter_mas = [2.0, 6.0]; charge_diffusion_px = 0.25; "
             "ipc = [0.001, 0.02, 0.003, 0.015, 0.92, 0.017, 0.002, 0.019, 0.003];",
             s);
}

/* Every effect, an asymmetric IPC kernel, s = 1, 2, 4: the GPU's two
 * paths (gpu/detector.h: the multiply, the fold; packed by default, in
 * sub-batches of 3: odd) against the CPU's stage; FFT (M = 96) and MFT
 * (M = 41: o = 1 at s = 2, 2 at s = 4); s = 2, 4 run the fold kernel
 * unrolled, s = 3 (effects[6], test_mft_and_odd_sizes) its general loop. */
static void test_paths_all_effects(void **state)
{
    (void)state;
    static const int s[] = {1, 2, 4};
    for (int i = 0; i < 3; ++i) {
        char all[512];
        all_effects(all, sizeof all, s[i]);
        compare("", all);
        compare("output: { npix = 41; pixel_scale = 0.6; };", all);
    }
}

/* A sweep of 20: sub-batches of 10, so the multiply's thread groups of
 * GPU_DETECTOR_MULTIPLY_PER = 8 images are one full and one short (2), at
 * s = 1 (the multiply) and s = 2 (the fold), against the CPU. */
static void test_thread_groups(void **state)
{
    (void)state;
    static const char *const all[2] = {
        "oversample = 1; jitter_mas = [2.0, 6.0]; charge_diffusion_px = 0.25;",
        "oversample = 2; jitter_mas = [2.0, 6.0]; charge_diffusion_px = 0.25;"};
    for (int i = 0; i < 2; ++i) {
        char cfg[2048];
        snprintf(cfg, sizeof cfg,
                 "name = \"g\"; optics: { wavelength_nm = 700; aperture: { diameter_m = 2.0;"
                 " obscuration = 0.3; }; }; sampling: { pupil_samples = 48; padding = 2.0; };"
                 " sweep: { defocus = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45,"
                 " 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]; }; detector: { %s };",
                 all[i]);
        compare_cfg(cfg, "sweep of 20", all[i]);
    }
}

/* One image at a time: the single-image path (its CUDA graph, then the stage). */
static void test_single_image(void **state)
{
    (void)state;
    char cfg[2048];
    for (int k = 0; k < 6; ++k) {
        snprintf(cfg, sizeof cfg, BASE, k < 3 ? 48 : 64, "", k < 3 ? effects[6] : effects[5]);
        psf_result c, g;
        assert_int_equal(harness_compute(cfg, k, NULL, &c), 0);
        assert_int_equal(harness_compute(cfg, k, gpu, &g), 0);
        assert_int_equal(c.npix, g.npix);
        double d = tu_rel_l2(g.img, c.img, (size_t)c.npix * c.npix);
        printf("single image %d (N = %d): rel L2 %.3g\n", k, k < 3 ? 96 : 128, d);
        assert_true(d <= TOL);
        harness_free(&c);
        harness_free(&g);
    }
}

/* Every checked call fails in turn (PSFSIM_GPU_FAIL_AT = n) while a
 * detector set is computed: the failure is the injected one, reported. */
static void fault_injection(int samples, const char *detector)
{
    char cfg[2048];
    snprintf(cfg, sizeof cfg, BASE, samples, "", detector);
    long long n = 1;
    for (; n < 2000; ++n) {
        char val[32];
        snprintf(val, sizeof val, "%lld", n);
        setenv("PSFSIM_GPU_FAIL_AT", val, 1);
        long long count = 0;
        int m = 0;
        float *g = harness_compute_all(cfg, gpu, &count, &m);
        unsetenv("PSFSIM_GPU_FAIL_AT");
        if (g) {
            free(g);
            break;
        }
    }
    printf("a detector set (%d samples) makes %lld checked calls; each failed cleanly in turn\n",
           samples, n - 1);
    assert_true(n > 10 && n < 2000);
    compare_on(samples, "", detector);
}

static void test_fault_injection(void **state)
{
    (void)state;
    fault_injection(48, effects[6]);
    fault_injection(64, "oversample = 2; jitter_mas = [2.0, 6.0]; charge_diffusion_px = 0.25; "
                        "ipc = [0.001, 0.02, 0.003, 0.015, 0.92, 0.017, 0.002, 0.019, 0.003];");
}

/* N = 128 (64 samples, padding 2): the separable path through the
 * backend, every effect alone and together at s = 1, 2, 4, the grid image
 * written at s = 1 (separable) and 2, 4 (not: the cuFFT path), and MFT
 * grids of 64 at s = 4 and 2 (M = 16, 32) and of 32 at s = 1. */
static void test_separable(void **state)
{
    (void)state;
    for (size_t i = 0; i < 6; ++i) /* effects[6] is s = 3, which 128 does not divide */
        compare_on(64, "", effects[i]);
    static const int s[] = {1, 2, 4};
    for (int i = 0; i < 3; ++i) {
        char all[512];
        all_effects(all, sizeof all, s[i]);
        compare_on(64, "", all);
        char over[600];
        snprintf(over, sizeof over, "%s write = \"oversampled\";", all);
        compare_on(64, "", over);
    }
    compare_on(64, "output: { npix = 64; pixel_scale = 0.6; };", effects[1]);
    compare_on(64, "output: { npix = 64; pixel_scale = 0.6; };",
               "oversample = 2; jitter_mas = 3.0; charge_diffusion_px = 0.2;");
    compare_on(64, "output: { npix = 32; pixel_scale = 0.6; };", effects[5]);
}

/* output.orientation = "poppy" (issue 26): WebbPSF's detector, the grid
 * binned s x s. Every effect (the fold with the block's sum in its table,
 * psf_detector_fold_otf; packed and not), the pixel response alone (the
 * sampling kernel's block sums), the grid written (no box), odd M at even
 * s, a power-of-two grid (not the separable path, which keeps columns,
 * not block sums), odd s point samples at the block's centre. */
static void test_poppy_blocks(void **state)
{
    (void)state;
    const char *even = "output: { npix = 32; pixel_scale = 0.5; orientation = \"poppy\"; };";
    const char *odd = "output: { npix = 21; pixel_scale = 0.5; orientation = \"poppy\"; };";
    static const int s[] = {2, 3, 4};
    for (int i = 0; i < 3; ++i) {
        char all[512], over[600];
        all_effects(all, sizeof all, s[i]);
        snprintf(over, sizeof over, "%s write = \"oversampled\";", all);
        compare(even, all);
        compare(odd, all);
        compare(odd, over);
    }
    compare(even, "oversample = 4;");
    compare(odd, "oversample = 4;");
    compare(odd, "oversample = 3; pixel_response = false; jitter_mas = 3.0;");
    compare(odd, "oversample = 3; pixel_response = false;");
    compare_on(64, "output: { npix = 32; pixel_scale = 0.5; orientation = \"poppy\"; };",
               "oversample = 4; jitter_mas = 3.0; charge_diffusion_px = 0.2;");
}

/* Broadband at N = 128 through the backend (the separable path): 3
 * wavelengths over a sweep of 6 (sub-batches of 3 images, 9 fields: one
 * pass, the intensities fused into the stage's first pass), and 64 over a
 * sweep of 20 (sub-batches of 10 images, 640 fields: several passes, the
 * images accumulated, then the unfused stage), every effect, s = 1 and 2;
 * against the CPU. */
static void test_separable_broadband(void **state)
{
    (void)state;
    static const int nwl[2] = {3, 64}, nimg[2] = {6, 20};
    for (int c = 0; c < 2; ++c)
        for (int s = 1; s <= 2; ++s) {
            char wl[1024] = "", sweep[512] = "", all[512], cfg[4096];
            for (int i = 0; i < nwl[c]; ++i)
                snprintf(wl + strlen(wl), sizeof wl - strlen(wl), "%s%.1f", i ? ", " : "",
                         600.0 + 200.0 * i / (nwl[c] - 1));
            for (int i = 0; i < nimg[c]; ++i)
                snprintf(sweep + strlen(sweep), sizeof sweep - strlen(sweep), "%s%.2f",
                         i ? ", " : "", 0.05 * i);
            all_effects(all, sizeof all, s);
            snprintf(cfg, sizeof cfg,
                     "name = \"g\"; optics: { wavelengths_nm = [%s]; aperture: { diameter_m = "
                     "2.0; obscuration = 0.3; }; }; sampling: { pupil_samples = 64; padding = "
                     "2.0; }; sweep: { defocus = [%s]; }; detector: { %s };",
                     wl, sweep, all);
            char label[64];
            snprintf(label, sizeof label, "N=128 %d wavelengths x %d", nwl[c], nimg[c]);
            compare_cfg(cfg, label, all);
        }
}

int main(void)
{
    unsetenv("PSFSIM_GPU_FAIL_AT");
    char why[1100];
    if (!(gpu = harness_gpu(why, sizeof why))) {
        printf("skipped: %s\n", why);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_effect),      cmocka_unit_test(test_mft_and_odd_sizes),
        cmocka_unit_test(test_paths_all_effects), cmocka_unit_test(test_thread_groups),
        cmocka_unit_test(test_single_image),      cmocka_unit_test(test_fault_injection),
        cmocka_unit_test(test_separable),         cmocka_unit_test(test_separable_broadband),
        cmocka_unit_test(test_poppy_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
