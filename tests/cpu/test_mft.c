/* SPDX-License-Identifier: BSD-3-Clause */
/* The matrix Fourier transform (Soummer et al. 2007, Optics Express 15,
 * 15935) and the output grid (output.npix, output.pixel_scale[_um]): the
 * MFT equals the FFT where both are exact, a broadband PSF matches the
 * weighted sum of Airy patterns (Born & Wolf, 7th ed., 8.5.2) on either
 * path, a one-wavelength set equals the monochromatic image, "sum"
 * normalisation, the choice of path and the reported pixel scales. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu/mft.h"
#include "optics/metrics.h"
#include "tests/support/psf_harness.h"
#include "tests/support/testutil.h"

/* An image computed through config -> image set -> CPU backend, with the
 * MFT forced when force_mft is set (cfg.mft_force, the test hook). */
typedef struct {
    int npix, mft;
    float *img;
    double ref_peak;
    double pix_ld, pix_arcsec, pix_um;
} computed;

static void compute(const char *text, long long k, int force_mft, computed *out)
{
    memset(out, 0, sizeof *out);
    char err[1024], path[4200];
    char *dir = tu_mkdtemp("mft");
    assert_non_null(dir);
    snprintf(path, sizeof path, "%s/t.cfg", dir);
    assert_int_equal(tu_write_file(path, text), 0);
    psf_config cfg;
    image_set set;
    memset(&set, 0, sizeof set);
    psf_backend *b = NULL;
    int rc = config_load(path, &cfg, err, sizeof err);
    tu_rmtree(dir);
    free(dir);
    cfg.mft_force = force_mft;
    if (rc == 0) rc = image_set_init(&set, &cfg, err, sizeof err);
    psf_problem desc;
    if (rc == 0) {
        image_set_problem(&set, 1, &desc);
        rc = psf_backend_cpu.create(&desc, NULL, &b, err, sizeof err);
    }
    double *storage = NULL;
    if (rc == 0) {
        out->npix = set.samp.npix;
        out->mft = set.mft;
        out->img = malloc((size_t)out->npix * out->npix * sizeof *out->img);
        storage = malloc(image_set_storage(&set) * sizeof *storage);
        psf_job job;
        image_info info;
        rc = image_set_job(&set, k, storage, &job, &info, err, sizeof err);
        if (rc == 0) rc = psf_backend_cpu.run(b, &job, 1, out->img, err, sizeof err);
        if (rc == 0) {
            image_set_finish_image(&set, &info, out->img);
            out->ref_peak = info.ref_peak;
            out->pix_ld = info.pixel_lambda_d;
            out->pix_arcsec = info.pixel_arcsec;
            out->pix_um = info.pixel_um;
        }
    }
    if (rc != 0) printf("compute: %s\n", err);
    free(storage);
    if (b) psf_backend_cpu.destroy(b);
    image_set_free(&set);
    config_free(&cfg);
    assert_int_equal(rc, 0);
}

/* A pupil box of rows x cols (interleaved complex) with some zero samples
 * and a whole zero row, from a fixed pseudo-random sequence. */
static float *random_box(int rows, int cols)
{
    float *p = malloc((size_t)rows * cols * 2 * sizeof *p);
    unsigned x = 12345u;
    for (int i = 0; i < rows * cols * 2; ++i) {
        x = x * 1103515245u + 12345u;
        p[i] = (float)((x >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    for (int i = 0; i < rows * cols; i += 7)
        p[2 * i] = p[2 * i + 1] = 0.0f;
    for (int c = 0; c < cols; ++c)
        p[2 * (2 * cols + c)] = p[2 * (2 * cols + c) + 1] = 0.0f;
    return p;
}

/* cpu_mft_accumulate against the sums written out in double (Soummer et al.
 * 2007, eq. 1-3), on a box that is neither square nor centred, an odd image
 * size and an arbitrary pixel; the image is added to; ranges are checked. */
static void test_mft_kernel_against_direct_sum(void **state)
{
    (void)state;
    const int rows = 13, cols = 17, row_off = -6, col_off = -9, m = 37;
    const double a = 0.0123;
    float *p = random_box(rows, cols);
    cpu_mft_table t;
    cpu_mft_work w;
    memset(&w, 0, sizeof w);
    char err[256];
    assert_int_equal(cpu_mft_table_build(&t, a, m, -9, 26, err, sizeof err), 0);
    float *img = calloc((size_t)m * m, sizeof *img);
    double *want = calloc((size_t)m * m, sizeof *want);
    for (int i = 0; i < m * m; ++i)
        img[i] = 1.0f; /* accumulates onto what is there */
    assert_int_equal(
        cpu_mft_accumulate(&t, p, rows, cols, row_off, col_off, 0.5f, 1, &w, img, err, sizeof err),
        0);
    for (int k1 = 0; k1 < m; ++k1)
        for (int k2 = 0; k2 < m; ++k2) {
            double er = 0.0, ei = 0.0;
            for (int r = 0; r < rows; ++r)
                for (int c = 0; c < cols; ++c) {
                    double ph = -2.0 * M_PI * a *
                                ((row_off + r) * (double)(k1 - m / 2) +
                                 (col_off + c) * (double)(k2 - m / 2));
                    double pr = p[2 * (r * cols + c)], pi = p[2 * (r * cols + c) + 1];
                    er += pr * cos(ph) - pi * sin(ph);
                    ei += pr * sin(ph) + pi * cos(ph);
                }
            want[k1 * m + k2] = 1.0 + 0.5 * (er * er + ei * ei);
        }
    double num = 0.0, den = 0.0;
    for (int i = 0; i < m * m; ++i) {
        num += (img[i] - want[i]) * (img[i] - want[i]);
        den += want[i] * want[i];
    }
    printf("MFT kernel vs direct double sum: rel L2 %.3g\n", sqrt(num / den));
    assert_true(sqrt(num / den) < 1e-6);
    /* A box outside the table's offsets is refused. */
    assert_int_equal(
        cpu_mft_accumulate(&t, p, rows, cols, -10, col_off, 1.0f, 1, &w, img, err, sizeof err), -1);
    printf("%s\n", err);
    assert_non_null(strstr(err, "outside the table"));
    cpu_mft_table_free(&t);
    cpu_mft_work_free(&w);
    free(p);
    free(img);
    free(want);
}

/* A transform large enough to be split over threads gives the same bits
 * with 1 and with 3 threads. */
static void test_mft_threads_same_result(void **state)
{
    (void)state;
    const int rows = 150, cols = 160, m = 448; /* 4e7 multiply-adds: threaded */
    float *p = random_box(rows, cols);
    cpu_mft_table t;
    cpu_mft_work w;
    memset(&w, 0, sizeof w);
    char err[256];
    assert_int_equal(cpu_mft_table_build(&t, 1.0 / 500.0, m, -80, 160, err, sizeof err), 0);
    float *one = calloc((size_t)m * m, sizeof *one), *three = calloc((size_t)m * m, sizeof *three);
    assert_int_equal(
        cpu_mft_accumulate(&t, p, rows, cols, -75, -80, 1.0f, 1, &w, one, err, sizeof err), 0);
    assert_int_equal(
        cpu_mft_accumulate(&t, p, rows, cols, -75, -80, 1.0f, 3, &w, three, err, sizeof err), 0);
    assert_memory_equal(one, three, (size_t)m * m * sizeof *one);
    cpu_mft_table_free(&t);
    cpu_mft_work_free(&w);
    free(p);
    free(one);
    free(three);
}

/* (a) optics.wavelengths_nm = [550.0] is optics.wavelength_nm = 550, on the
 * FFT path and on the MFT's. */
static void test_one_wavelength_set_is_monochromatic(void **state)
{
    (void)state;
#define BASE_TWO_WAYS                                                                              \
    "name = \"t\"; optics: { %s aperture: { diameter_m = 2.0; obscuration = 0.25; }; }; "          \
    "sampling: { pupil_samples = 48; padding = 2.5; }; "                                           \
    "aberrations: { zernike = ((4, 0.1), (8, -0.07)); }; %s"
    const char *grids[2] = {"", "output: { npix = 100; pixel_scale = 0.3; };"};
    for (int g = 0; g < 2; ++g) {
        computed mono, set;
        compute(tu_format(BASE_TWO_WAYS, "wavelength_nm = 550;", grids[g]), 0, 0, &mono);
        compute(tu_format(BASE_TWO_WAYS, "wavelengths_nm = [550.0];", grids[g]), 0, 0, &set);
        assert_int_equal(mono.mft, g);
        assert_int_equal(set.npix, mono.npix);
        double d = tu_rel_l2(set.img, mono.img, (size_t)mono.npix * mono.npix);
        printf("%s: one-wavelength set vs monochromatic: rel L2 %.3g\n", g ? "MFT" : "FFT", d);
        assert_true(d < 1e-7);
        free(mono.img);
        free(set.img);
    }
}

/* (b) The MFT onto the FFT's own grid (npix = N, pixel n/N lambda/D) is
 * the FFT, for even and odd N and n, with aberrations (tilt included, so
 * the direction is checked too) and an obscured pupil with spiders. */
static void test_mft_equals_fft(void **state)
{
    (void)state;
    const int ns[] = {64, 64, 51, 51, 40};
    const double qs[] = {2.0, 1.51, 1.9, 2.5, 3.0}; /* N = 128, 97, 97, 128, 120 */
    const char *norms[] = {"peak", "peak", "sum", "peak", "sum"};
    for (int c = 0; c < 5; ++c) {
        const char *t = tu_format(
            "name = \"t\"; optics: { wavelength_nm = 633; aperture: { diameter_m = 1.0; "
            "obscuration = 0.3; spiders: { count = 3; width_m = 0.04; angle_deg = 17; }; }; }; "
            "sampling: { pupil_samples = %d; padding = %.3f; }; normalization = \"%s\"; "
            "aberrations: { zernike = ((2, 0.4), (3, -0.25), (4, 0.3), (6, 0.2), (7, -0.15), "
            "(11, 0.1)); };",
            ns[c], qs[c], norms[c]);
        computed fft, mft;
        compute(t, 0, 0, &fft);
        compute(t, 0, 1, &mft);
        assert_int_equal(fft.mft, 0);
        assert_int_equal(mft.mft, 1);
        assert_int_equal(mft.npix, fft.npix);
        double d = tu_rel_l2(mft.img, fft.img, (size_t)fft.npix * fft.npix);
        printf("n = %d, N = %d (%s): MFT vs FFT rel L2 %.3g, ref peaks %.9g %.9g\n", ns[c],
               fft.npix, norms[c], d, mft.ref_peak, fft.ref_peak);
        assert_true(d <= 1e-5);
        assert_true(fabs(mft.ref_peak / fft.ref_peak - 1.0) < 1e-5);
        assert_true(fabs(mft.pix_ld - fft.pix_ld) <= 1e-15);
        free(fft.img);
        free(mft.img);
    }
}

/* The broadband Airy pattern with energy weights w_c (each monochromatic
 * PSF carries energy w_c; its peak is then proportional to w_c / lambda_c^2,
 * the aperture's area over lambda^2): at r in lambda_ref/D,
 *   I(r) = sum_c w_c (lambda_ref/lambda_c)^2 [2 J1(v_c)/v_c]^2
 *          / sum_c w_c (lambda_ref/lambda_c)^2,  v_c = pi r lambda_ref/lambda_c,
 * so I(0) = 1 ("peak" normalisation). Born & Wolf, 7th ed., 8.5.2. */
static double airy_sum(double r, const double *wl, const double *w, int nc)
{
    double num = 0.0, den = 0.0, ref = wl[0];
    for (int c = 0; c < nc; ++c) {
        double f = (ref / wl[c]) * (ref / wl[c]);
        double v = M_PI * r * ref / wl[c];
        double a = v < 1e-8 ? 1.0 : 2.0 * jn(1, v) / v;
        num += w[c] * f * a * a;
        den += w[c] * f;
    }
    return num / den;
}

/* Largest |azimuthal mean of img - azimuthal mean of airy_sum| over rings of
 * one pixel out to rmax_px, both averaged over the same pixels. */
static double airy_profile_error(const float *img, int npix, double pix_ld, double rmax_px,
                                 const double *wl, const double *w, int nc)
{
    int nb = (int)ceil(rmax_px) + 1, h = npix / 2;
    double *si = calloc((size_t)nb, sizeof *si), *sa = calloc((size_t)nb, sizeof *sa);
    int *cnt = calloc((size_t)nb, sizeof *cnt);
    assert_true(si && sa && cnt);
    for (int i = 0; i < npix; ++i)
        for (int j = 0; j < npix; ++j) {
            double r = hypot(i - h, j - h);
            int b = (int)floor(r + 0.5);
            if (r > rmax_px || b >= nb) continue;
            si[b] += img[(size_t)i * npix + j];
            sa[b] += airy_sum(r * pix_ld, wl, w, nc);
            cnt[b]++;
        }
    double worst = 0.0;
    int at = 0;
    for (int b = 0; b < nb; ++b) {
        if (!cnt[b]) continue;
        double e = fabs(si[b] - sa[b]) / cnt[b];
        if (e > worst) {
            worst = e;
            at = b;
        }
    }
    printf("  worst ring %d px (%.2f lambda_ref/D): |profile - Airy sum| = %.3g of the peak\n", at,
           at * pix_ld, worst);
    free(si);
    free(sa);
    free(cnt);
    return worst;
}

#define BROADBAND_OPTICS                                                                           \
    "name = \"t\"; optics: { wavelengths_nm = [500.0, 600.0, 700.0]; weights = [0.2, 0.5, 0.3]; "  \
    "f_number = 8; aperture: { diameter_m = 0.5; }; }; "

/* Third dark ring of J1 (v = 10.1735) of the longest wavelength, in
 * lambda_ref/D: 10.1735 / pi * 700 / 500. */
#define THIRD_RING_700 (10.1735 / M_PI * 700.0 / 500.0)

/* (c) Broadband through the MFT: pixel 0.1 lambda_ref/D, 128 x 128. */
static void test_broadband_airy_mft(void **state)
{
    (void)state;
    const double wl[3] = {500, 600, 700}, w[3] = {0.2, 0.5, 0.3};
    computed r;
    compute(BROADBAND_OPTICS "sampling: { pupil_samples = 128; }; "
                             "output: { npix = 128; pixel_scale = 0.1; };",
            0, 0, &r);
    assert_int_equal(r.mft, 1);
    assert_int_equal(r.npix, 128);
    float axis = r.img[64 * 128 + 64];
    printf("MFT broadband: axis %.7f, pixel %.4f lambda_ref/D\n", axis, r.pix_ld);
    assert_true(fabs(axis - 1.0) < 1e-5); /* "peak": the unaberrated broadband peak is 1 */
    assert_true(fabs(r.pix_ld - 0.1) < 1e-15);
    assert_true(airy_profile_error(r.img, r.npix, 0.1, THIRD_RING_700 / 0.1, wl, w, 3) < 0.01);
    free(r.img);

    /* The same grid given in micrometres: 0.1 lambda_ref F# = 0.1 * 0.5 um * 8 = 0.4 um. */
    computed u;
    compute(BROADBAND_OPTICS "sampling: { pupil_samples = 128; }; "
                             "output: { npix = 128; pixel_scale_um = 0.4; };",
            0, 0, &u);
    computed again;
    compute(BROADBAND_OPTICS "sampling: { pupil_samples = 128; }; "
                             "output: { npix = 128; pixel_scale = 0.1; };",
            0, 0, &again);
    double d = tu_rel_l2(u.img, again.img, 128 * 128);
    printf("pixel_scale_um = 0.4 vs pixel_scale = 0.1: rel L2 %.3g; pixel %.6g um, %.6g "
           "lambda/D, %.6g arcsec\n",
           d, u.pix_um, u.pix_ld, u.pix_arcsec);
    assert_true(d < 1e-6);
    assert_true(fabs(u.pix_um - 0.4) < 1e-15);
    assert_true(fabs(u.pix_ld - 0.1) < 1e-12);
    /* 0.1 * 500 nm / 0.5 m in arcsec */
    assert_true(fabs(u.pix_arcsec / (0.1 * 500e-9 / 0.5 * 206264.80624709636) - 1.0) < 1e-12);
    free(u.img);
    free(again.img);
}

/* (d) The same broadband PSF through the FFT (per-wavelength pupil pitch):
 * n = 128, padding 10, pixel 0.1 lambda_min/D. */
static void test_broadband_airy_fft(void **state)
{
    (void)state;
    const double wl[3] = {500, 600, 700}, w[3] = {0.2, 0.5, 0.3};
    computed r;
    compute(BROADBAND_OPTICS "sampling: { pupil_samples = 128; padding = 10; };", 0, 0, &r);
    assert_int_equal(r.mft, 0);
    assert_int_equal(r.npix, 1280);
    printf("FFT broadband: pixel %.4f lambda_ref/D\n", r.pix_ld);
    assert_true(fabs(r.pix_ld - 0.1) < 1e-15);
    assert_true(airy_profile_error(r.img, r.npix, 0.1, THIRD_RING_700 / 0.1, wl, w, 3) < 0.01);
    free(r.img);
}

/* (e) "sum" normalisation of MFT images: the image sums to 1 (a field that
 * cuts the PSF's wings and a broadband set), and the Strehl of the
 * unaberrated image stays 1. */
static void test_mft_sum_normalisation(void **state)
{
    (void)state;
    const char *texts[2] = {
        "name = \"t\"; optics: { wavelength_nm = 550; aperture: { diameter_m = 1.0; "
        "obscuration = 0.2; }; }; sampling: { pupil_samples = 64; }; normalization = \"sum\"; "
        "aberrations: { zernike = ((5, 0.3), (8, -0.2)); }; output: { npix = 48; pixel_scale = "
        "0.37; };",
        BROADBAND_OPTICS "sampling: { pupil_samples = 64; }; normalization = \"sum\"; "
                         "output: { npix = 64; pixel_scale = 0.25; };"};
    for (int t = 0; t < 2; ++t) {
        computed r;
        compute(texts[t], 0, 0, &r);
        assert_int_equal(r.mft, 1);
        double total = metrics_total(r.img, r.npix);
        double strehl = metrics_peak(r.img, r.npix).value / r.ref_peak;
        printf("sum %.9f, peak / ref_peak %.6f\n", total, strehl);
        assert_true(fabs(total - 1.0) < 1e-6);
        if (t == 1) assert_true(fabs(strehl - 1.0) < 1e-5);
        free(r.img);
    }
    /* Through the harness (run_sink.c's order: run, finish, metrics). */
    psf_result hr;
    assert_int_equal(harness_compute(texts[1], 0, NULL, &hr), 0);
    assert_true(fabs(metrics_total(hr.img, hr.npix) - 1.0) < 1e-6);
    assert_true(fabs(hr.strehl - 1.0) < 1e-5);
    harness_free(&hr);
}

/* The FFT is kept exactly where the output grid is the FFT's, and the MFT
 * chosen otherwise; the pixel reported is the output grid's. */
static void test_choice_of_path(void **state)
{
    (void)state;
    /* n = 50, padding 2: N = 100, pixel 0.5 lambda/D = 0.5 * 0.5 um * 10 = 2.5 um. */
#define BASE_PATH                                                                                  \
    "name = \"t\"; optics: { wavelength_nm = 500; f_number = 10; aperture: "                       \
    "{ diameter_m = 1.0; }; }; sampling: { pupil_samples = 50; }; %s"
    const struct {
        const char *out;
        int mft, npix;
        double pix_ld;
    } cases[] = {
        {"", 0, 100, 0.5},
        {"output: { npix = 100; };", 0, 100, 0.5},
        {"output: { pixel_scale = 0.5; };", 0, 100, 0.5},
        {"output: { npix = 100; pixel_scale = 0.5; };", 0, 100, 0.5},
        {"output: { pixel_scale_um = 2.5; };", 0, 100, 0.5},
        {"output: { npix = 101; };", 1, 101, 0.5},
        {"output: { pixel_scale = 0.25; };", 1, 100, 0.25},
        {"output: { npix = 64; pixel_scale = 0.5000001; };", 1, 64, 0.5000001},
        {"output: { pixel_scale_um = 1.0; };", 1, 100, 0.2},
    };
    computed fft;
    compute(tu_format(BASE_PATH, ""), 0, 0, &fft);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        computed r;
        compute(tu_format(BASE_PATH, cases[c].out), 0, 0, &r);
        printf("%-48s -> %s, %d x %d, %.7g lambda/D\n", cases[c].out[0] ? cases[c].out : "(none)",
               r.mft ? "MFT" : "FFT", r.npix, r.npix, r.pix_ld);
        assert_int_equal(r.mft, cases[c].mft);
        assert_int_equal(r.npix, cases[c].npix);
        assert_true(fabs(r.pix_ld - cases[c].pix_ld) < 1e-12);
        if (!r.mft) assert_memory_equal(r.img, fft.img, sizeof(float) * 100 * 100);
        free(r.img);
    }
    free(fft.img);

    /* A wavelength sweep at a fixed um pixel: one angle, lambda/D varying. */
    const char *sweep = "name = \"t\"; optics: { f_number = 10; aperture: { diameter_m = 1.0; "
                        "}; }; sampling: { pupil_samples = 50; }; sweep: { wavelength_nm = "
                        "[500.0, 1000.0]; }; output: { npix = 64; pixel_scale_um = 2.5; };";
    computed s0, s1;
    compute(sweep, 0, 0, &s0);
    compute(sweep, 1, 0, &s1);
    assert_int_equal(s0.mft, 1); /* 0.5 lambda/D at 500 nm is the FFT's, not at 1000 nm */
    assert_true(fabs(s0.pix_ld - 0.5) < 1e-12 && fabs(s1.pix_ld - 0.25) < 1e-12);
    assert_true(fabs(s0.pix_um - 2.5) < 1e-15 && fabs(s1.pix_um - 2.5) < 1e-15);
    assert_true(fabs(s0.pix_arcsec - s1.pix_arcsec) < 1e-12 * s0.pix_arcsec);
    /* At 1000 nm the PSF is twice as wide: its first dark ring (1.22 lambda/D)
     * at 1.22 / 0.25 = 4.9 pixels, against 2.4 at 500 nm. */
    float e0 = s0.img[32 * 64 + 34], e1 = s1.img[32 * 64 + 34];
    printf("2 px off axis: %.4f at 500 nm, %.4f at 1000 nm\n", e0, e1);
    assert_true(e1 > 0.5 && e0 < 0.2);
    free(s0.img);
    free(s1.img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mft_kernel_against_direct_sum),
        cmocka_unit_test(test_mft_threads_same_result),
        cmocka_unit_test(test_one_wavelength_set_is_monochromatic),
        cmocka_unit_test(test_mft_equals_fft),
        cmocka_unit_test(test_broadband_airy_mft),
        cmocka_unit_test(test_broadband_airy_fft),
        cmocka_unit_test(test_mft_sum_normalisation),
        cmocka_unit_test(test_choice_of_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
