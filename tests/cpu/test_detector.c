/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage on the CPU (cpu/detector.h, psf_detector) against
 * closed forms, for the Airy pattern of a circular pupil (n = 128 samples
 * across D, grid N = 512, oversample s = 4: grid pixel lambda/(4D),
 * detector pixel lambda/D; the closed forms agree with the sampled disc to
 * its 1/n error, 0.2% of the centre pixel, 0.5% of the ensquared energy):
 *  - pixel_response: each detector pixel equals the integral of the Airy
 *    intensity (pi/4) (2 J1(pi r) / (pi r))^2 (r in lambda/D, unit flux)
 *    over that pixel (Gauss-Legendre quadrature), and so do the ensquared
 *    energies of the centred 1x1, 3x3 and 5x5 pixel boxes; without it the
 *    detector pixel is the Airy intensity at its centre times its area;
 *  - the grid image's transfer function with the pixel box is the
 *    unconvolved one times sinc(u) sinc(v), with Gaussian jitter (per
 *    axis) and charge diffusion times exp(-2 pi^2 sigma^2 u^2), and the
 *    jittered Airy's OTF equals the pupil autocorrelation of a disc (the
 *    chat function, Goodman, Fourier Optics 6.3) times that Gaussian;
 *  - IPC: the detector image is the circular 3x3 convolution of the one
 *    without; the flux is kept; s = 1 with nothing enabled is the image
 *    without a stage, bit for bit; bad stages are refused by create. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fftw3.h>

#include "backend/backend.h"
#include "backend/detector.h"

#define N 512
#define NSAMP 128
#define S 4
#define M (N / S)

/* The circular pupil, one monochromatic component of unit scale. */
static psf_problem airy_problem(void)
{
    psf_problem p;
    memset(&p, 0, sizeof p);
    p.npix = N;
    p.aperture = (psf_aperture){.shape = APERTURE_CIRCULAR, .diameter_m = 1.0};
    p.max_batch = 2;
    p.nimages = 2;
    p.pupil_samples = NSAMP;
    p.detector.oversample = S;
    return p;
}

/* Image of the Airy job through the CPU backend (out_npix^2 floats). */
static float *compute(const psf_problem *p)
{
    psf_backend *b = NULL;
    char err[512] = "";
    int rc = psf_backend_cpu.create(p, NULL, &b, err, sizeof err);
    if (rc) printf("create: %s\n", err);
    assert_int_equal(rc, 0);
    psf_job job;
    memset(&job, 0, sizeof job);
    job.ncomp = 1;
    job.comp[0] = (psf_component){.wavelength_m = 500e-9, .dx_m = 1.0 / NSAMP, .scale = 1.0};
    int m = psf_detector_out_npix(p);
    float *img = malloc((size_t)m * m * sizeof *img);
    assert_non_null(img);
    assert_int_equal(psf_backend_cpu.run(b, &job, 1, img, err, sizeof err), 0);
    psf_backend_cpu.destroy(b);
    return img;
}

static double total(const float *img, int m)
{
    double t = 0.0;
    for (size_t i = 0; i < (size_t)m * m; ++i)
        t += img[i];
    return t;
}

/* Airy intensity of unit flux, r in lambda/D. */
static double airy(double x, double y)
{
    double v = M_PI * sqrt(x * x + y * y);
    double a = v < 1e-9 ? 1.0 : 2.0 * j1(v) / v;
    return M_PI / 4.0 * a * a;
}

/* Its integral over [x0, x1] x [y0, y1] by 24-point Gauss-Legendre per
 * lambda/D per axis (nodes from Newton on P_n). */
static double airy_box(double x0, double x1, double y0, double y1)
{
    enum { G = 24 };
    static double node[G], weight[G];
    if (weight[0] == 0.0)
        for (int i = 0; i < G; ++i) {
            double z = cos(M_PI * (i + 0.75) / (G + 0.5)), pp = 0.0;
            for (int it = 0; it < 100; ++it) {
                double p1 = 1.0, p2 = 0.0;
                for (int j = 1; j <= G; ++j) {
                    double p3 = p2;
                    p2 = p1;
                    p1 = ((2.0 * j - 1.0) * z * p2 - (j - 1.0) * p3) / j;
                }
                pp = G * (z * p1 - p2) / (z * z - 1.0);
                double z1 = z;
                z = z1 - p1 / pp;
                if (fabs(z - z1) < 1e-15) break;
            }
            node[i] = z;
            weight[i] = 2.0 / ((1.0 - z * z) * pp * pp);
        }
    int nx = (int)ceil(x1 - x0 - 1e-9), ny = (int)ceil(y1 - y0 - 1e-9);
    double sum = 0.0, hx = (x1 - x0) / nx / 2.0, hy = (y1 - y0) / ny / 2.0;
    for (int bx = 0; bx < nx; ++bx)
        for (int by = 0; by < ny; ++by) {
            double cx = x0 + (2 * bx + 1) * hx, cy = y0 + (2 * by + 1) * hy;
            for (int i = 0; i < G; ++i)
                for (int j = 0; j < G; ++j)
                    sum += weight[i] * weight[j] * airy(cx + hx * node[i], cy + hy * node[j]);
        }
    return sum * hx * hy;
}

/* The sampled disc's equivalent diameter over D, sqrt(4 A / pi) / n, A its
 * open samples: for the grid image of unit scale peak / sum = A / N^2
 * (|sum P|^2 = A^2, Parseval's sum N^2 A). The closed forms are taken
 * for this diameter (a 1/n effect: 0.5% of the peak at n = 128). */
static double equivalent_diameter(void)
{
    psf_problem p = airy_problem();
    p.detector = (psf_detector){0};
    float *grid = compute(&p);
    double area = grid[(N / 2) * N + N / 2] / total(grid, N) * N * N;
    free(grid);
    return sqrt(4.0 * area / M_PI) / NSAMP;
}

/* The integral over the box [x0, x1] x [y0, y1] (lambda/D) of the Airy
 * pattern of the disc of diameter e D. */
static double airy_box_e(double e, double x0, double x1, double y0, double y1)
{
    return airy_box(e * x0, e * x1, e * y0, e * y1);
}

static void test_pixel_integral(void **state)
{
    (void)state;
    psf_problem p = airy_problem();
    p.detector.sample = 1;
    p.detector.pixel_response = 1;
    float *img = compute(&p);
    double flux = total(img, M), worst = 0.0, e = equivalent_diameter();
    printf("equivalent diameter %.5f D\n", e);
    for (int i = M / 2 - 3; i <= M / 2 + 3; ++i)
        for (int j = M / 2 - 3; j <= M / 2 + 3; ++j) {
            double x = j - M / 2, y = i - M / 2;
            double want = airy_box_e(e, x - 0.5, x + 0.5, y - 0.5, y + 0.5);
            worst = fmax(worst, fabs(img[i * M + j] / flux - want));
        }
    printf("pixel integrals: worst |error| %.2e of a centre pixel %.4f\n", worst,
           airy_box(-0.5, 0.5, -0.5, 0.5));
    assert_true(worst < 1.5e-3);
    for (int h = 0; h <= 2; ++h) { /* ensquared energy of the (2h+1)^2 box */
        double got = 0.0;
        for (int i = M / 2 - h; i <= M / 2 + h; ++i)
            for (int j = M / 2 - h; j <= M / 2 + h; ++j)
                got += img[i * M + j] / flux;
        double want = airy_box_e(e, -h - 0.5, h + 0.5, -h - 0.5, h + 0.5);
        printf("ensquared energy %dx%d: %.5f, closed form %.5f\n", 2 * h + 1, 2 * h + 1, got, want);
        assert_true(fabs(got - want) < 6e-3);
    }
    free(img);
}

static void test_point_sampling(void **state)
{
    (void)state;
    psf_problem p = airy_problem();
    p.detector.sample = 1;
    float *img = compute(&p);
    p.detector = (psf_detector){0};
    float *grid = compute(&p);
    double flux = total(grid, N), worst = 0.0, e = equivalent_diameter();
    for (int i = M / 2 - 3; i <= M / 2 + 3; ++i)
        for (int j = M / 2 - 3; j <= M / 2 + 3; ++j) {
            assert_true(img[i * M + j] == (float)(S * S) * grid[(i * S) * N + j * S]);
            double want = e * e * airy(e * (j - M / 2), e * (i - M / 2));
            worst = fmax(worst, fabs(img[i * M + j] / flux - want));
        }
    printf("point samples: worst |error| %.2e\n", worst);
    assert_true(worst < 1e-3);
    free(img);
    free(grid);
}

/* The r2c transform of an N x N image. */
static fftwf_complex *spectrum(const float *img)
{
    float *in = fftwf_malloc(sizeof(float) * N * N);
    fftwf_complex *out = fftwf_malloc(sizeof(fftwf_complex) * N * (N / 2 + 1));
    fftwf_plan plan = fftwf_plan_dft_r2c_2d(N, N, in, out, FFTW_ESTIMATE);
    memcpy(in, img, sizeof(float) * N * N);
    fftwf_execute(plan);
    fftwf_destroy_plan(plan);
    fftwf_free(in);
    return out;
}

typedef double (*transfer_fn)(double u, double v, const psf_detector *d);

static double sinc(double x)
{
    return fabs(x) < 1e-12 ? 1.0 : sin(M_PI * x) / (M_PI * x);
}

static double box_tf(double u, double v, const psf_detector *d)
{
    (void)d;
    return sinc(u) * sinc(v);
}

static double gauss_tf(double u, double v, const psf_detector *d)
{
    double vx = d->jitter_px[0] * d->jitter_px[0] + d->diffusion_px * d->diffusion_px;
    double vy = d->jitter_px[1] * d->jitter_px[1] + d->diffusion_px * d->diffusion_px;
    return exp(-2.0 * M_PI * M_PI * (vx * u * u + vy * v * v));
}

/* The grid image with d over the one without, in the Fourier domain, is
 * tf(u, v) wherever the OTF is above 1e-3 of its peak; returns the worst
 * relative error. */
static double ratio_error(psf_detector d, transfer_fn tf)
{
    psf_problem p = airy_problem();
    float *plain = compute(&p);
    p.detector = d;
    float *conv = compute(&p);
    fftwf_complex *a = spectrum(plain), *b = spectrum(conv);
    double worst = 0.0, peak = a[0][0];
    for (int r = 0; r < N; ++r)
        for (int c = 0; c <= N / 2; ++c) {
            size_t i = (size_t)r * (N / 2 + 1) + c;
            double mag = hypot(a[i][0], a[i][1]);
            if (mag < 1e-3 * peak) continue;
            double u = (double)c * S / N, v = (double)(r <= N / 2 ? r : r - N) * S / N;
            double want = tf(u, v, &d);
            double re = (b[i][0] * a[i][0] + b[i][1] * a[i][1]) / (mag * mag);
            double im = (b[i][1] * a[i][0] - b[i][0] * a[i][1]) / (mag * mag);
            worst = fmax(worst, hypot(re - want, im) * mag / peak);
        }
    fftwf_free(a);
    fftwf_free(b);
    free(plain);
    free(conv);
    return worst;
}

static void test_transfer_functions(void **state)
{
    (void)state;
    psf_detector d = {.oversample = S, .pixel_response = 1};
    double e = ratio_error(d, box_tf);
    printf("pixel box: worst error %.2e\n", e);
    assert_true(e < 1e-5);
    d = (psf_detector){.oversample = S, .jitter_px = {0.3, 0.7}};
    e = ratio_error(d, gauss_tf);
    printf("jitter (0.3, 0.7) px: worst error %.2e\n", e);
    assert_true(e < 1e-5);
    d = (psf_detector){.oversample = S, .diffusion_px = 0.25};
    e = ratio_error(d, gauss_tf);
    printf("charge diffusion 0.25 px: worst error %.2e\n", e);
    assert_true(e < 1e-5);
}

/* The disc's normalised autocorrelation at rho = f / (D / lambda). */
static double chat(double rho)
{
    if (rho >= 1.0) return 0.0;
    return 2.0 / M_PI * (acos(rho) - rho * sqrt(1.0 - rho * rho));
}

static void test_jittered_airy_otf(void **state)
{
    (void)state;
    psf_problem p = airy_problem();
    p.detector.jitter_px[0] = p.detector.jitter_px[1] = 0.2; /* 0.2 lambda/D */
    float *img = compute(&p);
    fftwf_complex *a = spectrum(img);
    double worst = 0.0, peak = a[0][0];
    for (int r = 0; r < N; ++r)
        for (int c = 0; c <= N / 2; ++c) {
            double kx = c, ky = r <= N / 2 ? r : r - N;
            double rho = hypot(kx, ky) / NSAMP; /* D/lambda is NSAMP grid frequencies */
            double u = kx * S / N, v = ky * S / N;
            double want = chat(rho) * exp(-2.0 * M_PI * M_PI * 0.04 * (u * u + v * v));
            size_t i = (size_t)r * (N / 2 + 1) + c;
            worst = fmax(worst, fabs(hypot(a[i][0], a[i][1]) / peak - want));
        }
    printf("jittered Airy OTF against chat x Gaussian: worst %.2e\n", worst);
    assert_true(worst < 7e-3);
    fftwf_free(a);
    free(img);
}

static void test_ipc_and_flux(void **state)
{
    (void)state;
    static const double k[9] = {0.001, 0.02, 0.003, 0.015, 0.92, 0.017, 0.002, 0.019, 0.003};
    psf_problem p = airy_problem();
    p.detector.sample = 1;
    p.detector.pixel_response = 1;
    float *plain = compute(&p);
    p.detector.ipc = 1;
    memcpy(p.detector.ipc_kernel, k, sizeof k);
    float *ipc = compute(&p);
    double worst = 0.0, peak = plain[(M / 2) * M + M / 2];
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < M; ++j) {
            double want = 0.0;
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b)
                    want += k[3 * a + b] * plain[((i - a + 1 + M) % M) * M + (j - b + 1 + M) % M];
            worst = fmax(worst, fabs(ipc[i * M + j] - want) / peak);
        }
    printf("IPC: worst error %.2e of the peak\n", worst);
    assert_true(worst < 1e-5);
    p.detector = (psf_detector){0};
    float *grid = compute(&p);
    double f0 = total(grid, N), f1 = total(plain, M), f2 = total(ipc, M);
    printf("flux: grid %.7f, detector %.7f, with IPC %.7f\n", f0, f1, f2);
    assert_true(fabs(f1 - f0) < 1e-5 * f0 && fabs(f2 - f0) < 1e-5 * f0);
    free(plain);
    free(ipc);
    free(grid);
}

static void test_identity_and_refusals(void **state)
{
    (void)state;
    psf_problem p = airy_problem();
    p.detector = (psf_detector){0};
    float *a = compute(&p);
    p.detector = (psf_detector){.oversample = 1, .sample = 1};
    float *b = compute(&p);
    assert_memory_equal(a, b, sizeof(float) * N * N);
    free(a);
    free(b);
    psf_backend *be = NULL;
    char err[512];
    p.detector = (psf_detector){.oversample = 3, .sample = 1}; /* 3 does not divide 256 */
    assert_int_equal(psf_backend_cpu.create(&p, NULL, &be, err, sizeof err), -1);
    assert_non_null(strstr(err, "oversample 3"));
    p.detector = (psf_detector){.oversample = 4, .jitter_px = {-1.0, 0.0}};
    assert_int_equal(psf_backend_cpu.create(&p, NULL, &be, err, sizeof err), -1);
    assert_non_null(strstr(err, "sigma"));
    assert_null(be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pixel_integral),     cmocka_unit_test(test_point_sampling),
        cmocka_unit_test(test_transfer_functions), cmocka_unit_test(test_jittered_airy_otf),
        cmocka_unit_test(test_ipc_and_flux),       cmocka_unit_test(test_identity_and_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
