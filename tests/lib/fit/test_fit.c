/* SPDX-License-Identifier: BSD-3-Clause */
/* The fit (lib/fit/fit.h) on synthetic models with known answers:
 * a linear model, whose covariance is (X^T W X)^-1 exactly; and a
 * one-dimensional phase retrieval (|DFT(A exp(i phi))|^2 of a pupil of 24
 * samples padded to 64, three focus-diverse images, five polynomial phase
 * terms) with its exact vector-Jacobian product: the gradient against
 * finite differences, noiseless recovery, and with Gaussian and with
 * Poisson noise the errors against the uncertainties the fit reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fit/fit.h"

/* ---- a linear model: I_k = X p (two pixels of each of two images) ---- */

static const double X[4][2] = {{1, 0.5}, {0.25, 2}, {-1, 1}, {3, 0.5}};

static int lin_forward(void *u, const double *p, double *img, char *e, size_t el)
{
    (void)u, (void)e, (void)el;
    for (int i = 0; i < 4; ++i)
        img[i] = X[i][0] * p[0] + X[i][1] * p[1];
    return 0;
}

static int lin_vjp(void *u, const double *p, const double *c, double *g, char *e, size_t el)
{
    (void)u, (void)p, (void)e, (void)el;
    g[0] = g[1] = 0;
    for (int i = 0; i < 4; ++i) {
        g[0] += c[i] * X[i][0];
        g[1] += c[i] * X[i][1];
    }
    return 0;
}

static fit_options defaults(void)
{
    fit_options o = {.noise = FIT_NOISE_UNIFORM,
                     .sigma = 1,
                     .gain = 1,
                     .passes = 1,
                     .max_iterations = 500,
                     .tolerance = 1e-12,
                     .fisher_step = 1e-4};
    return o;
}

typedef struct {
    double p[8], ps[8], f[4], fs[4], b[4], bs[4], cov[64], hist[2000];
    fit_result r;
} result_store;

static fit_result *result(result_store *s, const double *p0, int P)
{
    memset(s, 0, sizeof *s);
    memcpy(s->p, p0, sizeof(double) * P);
    s->r = (fit_result){.p = s->p,
                        .p_sigma = s->ps,
                        .flux = s->f,
                        .flux_sigma = s->fs,
                        .background = s->b,
                        .background_sigma = s->bs,
                        .covariance = s->cov,
                        .history = s->hist,
                        .max_history = 2000};
    return &s->r;
}

/* Weighted linear least squares: p = (X^T W X)^-1 X^T W d and its
 * covariance, against the closed form of the 2 x 2 inverse. */
static void linear_model(void **state)
{
    (void)state;
    fit_model m = {2, 2, 2, lin_forward, lin_vjp, NULL, NULL};
    double d[4] = {1.0, 2.0, -0.5, 3.5};
    fit_options o = defaults();
    o.sigma = 0.5; /* w = 4 */
    result_store s;
    double zero[2] = {0, 0};
    char err[256];
    fit_result *r = result(&s, zero, 2);
    assert_int_equal(fit_run(&m, d, &o, r, err, sizeof err), 0);
    double a = 0, b = 0, c = 0, y0 = 0, y1 = 0; /* X^T X = [[a b] [b c]], X^T d */
    for (int i = 0; i < 4; ++i) {
        a += X[i][0] * X[i][0];
        b += X[i][0] * X[i][1];
        c += X[i][1] * X[i][1];
        y0 += X[i][0] * d[i];
        y1 += X[i][1] * d[i];
    }
    double det = a * c - b * b;
    assert_true(fabs(s.p[0] - (c * y0 - b * y1) / det) < 1e-9);
    assert_true(fabs(s.p[1] - (a * y1 - b * y0) / det) < 1e-9);
    /* cov = sigma^2 (X^T X)^-1 */
    assert_true(fabs(s.ps[0] - 0.5 * sqrt(c / det)) < 1e-9);
    assert_true(fabs(s.ps[1] - 0.5 * sqrt(a / det)) < 1e-9);
    assert_true(fabs(s.cov[1] - 0.25 * (-b / det)) < 1e-9);
    assert_int_equal(r->fisher_ok, 1);
    assert_true(r->dof == 2.0);
    double chi2 = 0;
    for (int i = 0; i < 4; ++i) {
        double rr = d[i] - (X[i][0] * s.p[0] + X[i][1] * s.p[1]);
        chi2 += 4 * rr * rr;
    }
    assert_true(fabs(r->chi2 - chi2) < 1e-9);
    assert_true(r->nhistory >= 1);
}

/* Tikhonov regularisation of the second parameter (reg_first 1): p =
 * (X^T W X + diag(0, lambda))^-1 X^T W d; the Fisher matrix of the first
 * alone (nfisher 1): its sigma is 1 / sqrt(sum w x_0^2), the second held. */
static void linear_regularised(void **state)
{
    (void)state;
    fit_model m = {2, 2, 2, lin_forward, lin_vjp, NULL, NULL};
    double d[4] = {1.0, 2.0, -0.5, 3.5};
    fit_options o = defaults();
    o.reg_first = 1;
    o.reg_lambda = 3.0;
    o.nfisher = 1;
    result_store s;
    double zero[2] = {0, 0};
    char err[256];
    fit_result *r = result(&s, zero, 2);
    s.ps[1] = -7; /* left alone */
    assert_int_equal(fit_run(&m, d, &o, r, err, sizeof err), 0);
    double a = 0, b = 0, c = 3.0, y0 = 0, y1 = 0;
    for (int i = 0; i < 4; ++i) {
        a += X[i][0] * X[i][0];
        b += X[i][0] * X[i][1];
        c += X[i][1] * X[i][1];
        y0 += X[i][0] * d[i];
        y1 += X[i][1] * d[i];
    }
    double det = a * c - b * b;
    assert_true(fabs(s.p[0] - (c * y0 - b * y1) / det) < 1e-8);
    assert_true(fabs(s.p[1] - (a * y1 - b * y0) / det) < 1e-8);
    assert_true(fabs(s.ps[0] - 1 / sqrt(a)) < 1e-9);
    assert_true(s.ps[1] == -7);
    assert_true(r->dof == 3.0);
}

/* ---- a one-dimensional phase retrieval ---- */

enum { NP = 24, NF = 64, K = 3, P = 5 };
static const double DIV[K] = {-1.5, 0.0, 1.5}; /* radians of x^2 */

static double basis(int j, int x) /* x^(j+2) on [-1, 1], j = 0..P-1 */
{
    double t = -1.0 + 2.0 * (x + 0.5) / NP;
    return pow(t, j + 2);
}

static void field(const double *p, int k, double complex *E, double complex *F)
{
    for (int x = 0; x < NP; ++x) {
        double phi = DIV[k] * basis(0, x);
        for (int j = 0; j < P; ++j)
            phi += p[j] * basis(j, x);
        E[x] = cexp(I * phi);
    }
    for (int u = 0; u < NF; ++u) {
        double complex s = 0;
        for (int x = 0; x < NP; ++x)
            s += E[x] * cexp(-2 * I * M_PI * (double)(u * x) / NF);
        F[u] = s / NP;
    }
}

static int pr_forward(void *u, const double *p, double *img, char *e, size_t el)
{
    (void)u, (void)e, (void)el;
    double complex E[NP], F[NF];
    for (int k = 0; k < K; ++k) {
        field(p, k, E, F);
        for (int i = 0; i < NF; ++i)
            img[k * NF + i] = creal(F[i] * conj(F[i]));
    }
    return 0;
}

/* grad_phi(x) = -2 Im(E_x conj(G_x)), G = D^H (c F) (D the DFT / NP) */
static int pr_vjp(void *u, const double *p, const double *c, double *g, char *e, size_t el)
{
    (void)u, (void)e, (void)el;
    double complex E[NP], F[NF];
    for (int j = 0; j < P; ++j)
        g[j] = 0;
    for (int k = 0; k < K; ++k) {
        field(p, k, E, F);
        for (int x = 0; x < NP; ++x) {
            double complex G = 0;
            for (int v = 0; v < NF; ++v)
                G += cexp(2 * I * M_PI * (double)(v * x) / NF) * c[k * NF + v] * F[v];
            G /= NP;
            double gphi = -2 * cimag(E[x] * conj(G));
            for (int j = 0; j < P; ++j)
                g[j] += gphi * basis(j, x);
        }
    }
    return 0;
}

static const double TRUTH[P] = {0.3, -0.4, 0.25, 0.2, -0.15};

static void pr_gradient(void **state)
{
    (void)state;
    fit_model m = {K, NF, P, pr_forward, pr_vjp, NULL, NULL};
    double d[K * NF], w[K * NF], img[K * NF], cot[K * NF], fl[K], bk[K], lk[K];
    pr_forward(NULL, TRUTH, d, NULL, 0);
    fit_options o = defaults();
    o.fit_flux = o.fit_background = 1;
    for (int i = 0; i < K * NF; ++i)
        d[i] = 1000 * d[i] + 3; /* flux 1000, background 3 */
    char err[64];
    fit_state st = {.model = &m,
                    .data = d,
                    .opt = &o,
                    .w = w,
                    .img = img,
                    .cot = cot,
                    .flux = fl,
                    .bkg = bk,
                    .lossk = lk,
                    .err = err,
                    .errlen = sizeof err};
    fit_weights(&st, NULL);
    double p[P] = {0.1, 0.1, -0.1, 0, 0.05}, g[P];
    fit_loss(&st, p, g);
    for (int j = 0; j < P; ++j) {
        double h = 1e-6, q[P];
        memcpy(q, p, sizeof q);
        q[j] = p[j] + h;
        double lp = fit_loss(&st, q, NULL);
        q[j] = p[j] - h;
        double lm = fit_loss(&st, q, NULL);
        double fd = (lp - lm) / (2 * h);
        assert_true(fabs(fd - g[j]) < 1e-5 * (fabs(fd) + 1));
    }
    /* the flux and background of the truth come back exactly */
    fit_loss(&st, TRUTH, NULL);
    for (int k = 0; k < K; ++k) {
        assert_true(fabs(fl[k] - 1000) < 1e-8);
        assert_true(fabs(bk[k] - 3) < 1e-8);
    }
}

/* Noiseless data with a flux and background: the truth recovered;
 * max_linesearch as fit_options's. */
static void noiseless_fit(int max_linesearch)
{
    fit_model m = {K, NF, P, pr_forward, pr_vjp, NULL, NULL};
    double d[K * NF];
    pr_forward(NULL, TRUTH, d, NULL, 0);
    for (int i = 0; i < K * NF; ++i)
        d[i] = 500 * d[i] + 2;
    fit_options o = defaults();
    o.fit_flux = o.fit_background = 1;
    o.max_linesearch = max_linesearch;
    result_store s;
    double zero[P] = {0};
    char err[256];
    fit_result *r = result(&s, zero, P);
    assert_int_equal(fit_run(&m, d, &o, r, err, sizeof err), 0);
    for (int j = 0; j < P; ++j)
        assert_true(fabs(s.p[j] - TRUTH[j]) < 1e-6);
    for (int k = 0; k < K; ++k) {
        assert_true(fabs(s.f[k] - 500) < 1e-4);
        assert_true(fabs(s.b[k] - 2) < 1e-6);
    }
    assert_true(r->chi2 < 1e-10);
    /* the history falls to the end */
    assert_true(r->nhistory >= 2 && s.hist[r->nhistory - 1] < s.hist[0] * 1e-6);
}

static void pr_noiseless(void **state)
{
    (void)state;
    noiseless_fit(0);
}

/* Line searches of one try: the first search runs out (liblbfgs's
 * LBFGSERR_MAXIMUMLINESEARCH), and the fit goes on from there with
 * liblbfgs's own limit (lbfgs_driver.c) to the same truth. */
static void pr_linesearch_out_of_tries(void **state)
{
    (void)state;
    noiseless_fit(1);
}

/* A seeded generator (splitmix64), its normal and Poisson draws. */
static uint64_t rng = 12345;
static double uniform01(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}
static double normal01(void)
{
    return sqrt(-2 * log(uniform01())) * cos(2 * M_PI * uniform01());
}
static double poisson(double mean)
{
    if (mean > 50) { /* the normal approximation, rounded: exact enough at these means */
        double v = floor(mean + sqrt(mean) * normal01() + 0.5);
        return v > 0 ? v : 0;
    }
    double l = exp(-mean), t = uniform01();
    int k = 0;
    while (t > l) {
        t *= uniform01();
        ++k;
    }
    return k;
}

/* Over many noise draws: sum ((p - truth) / sigma)^2 / (draws P) near 1
 * (a chi-square of draws P degrees of freedom), i.e. the reported
 * uncertainties are the errors' spread. */
static void noise_trials(int photon, double *ratio)
{
    fit_model m = {K, NF, P, pr_forward, pr_vjp, NULL, NULL};
    double clean[K * NF], d[K * NF];
    pr_forward(NULL, TRUTH, clean, NULL, 0);
    double peak = 0;
    for (int i = 0; i < K * NF; ++i)
        peak = clean[i] > peak ? clean[i] : peak;
    fit_options o = defaults();
    o.fit_flux = o.fit_background = 1;
    o.tolerance = 1e-10;
    if (photon) {
        o.noise = FIT_NOISE_PHOTON;
        o.sigma = 2; /* read noise */
        o.passes = 2;
    } else {
        o.sigma = 0.01;
    }
    const int draws = 60;
    double sum = 0;
    for (int t = 0; t < draws; ++t) {
        for (int i = 0; i < K * NF; ++i)
            d[i] = photon ? poisson(1e4 * clean[i] / peak + 5) + 2 * normal01()
                          : clean[i] / peak + 0.01 * normal01();
        result_store s;
        char err[256];
        fit_result *r = result(&s, TRUTH, P);
        assert_int_equal(fit_run(&m, d, &o, r, err, sizeof err), 0);
        assert_int_equal(r->fisher_ok, 1);
        for (int j = 0; j < P; ++j) {
            double z = (s.p[j] - TRUTH[j]) / s.ps[j];
            sum += z * z;
        }
    }
    *ratio = sum / (draws * P);
}

static void pr_gaussian_noise(void **state)
{
    (void)state;
    double ratio;
    noise_trials(0, &ratio);
    printf("gaussian noise: mean z^2 %.3f\n", ratio);
    /* chi-square of 300 degrees of freedom / 300: 1 +- 0.08 (1 sigma) */
    assert_true(ratio > 0.7 && ratio < 1.35);
}

static void pr_photon_noise(void **state)
{
    (void)state;
    double ratio;
    noise_trials(1, &ratio);
    printf("photon noise: mean z^2 %.3f\n", ratio);
    assert_true(ratio > 0.7 && ratio < 1.35);
}

/* ---- a model with its own device (fit_device): the same fit ---- */

/* A "device" that evaluates on the host from pr_forward and pr_vjp, with
 * the flux and background solved by Cramer's rule written out here, and
 * the Fisher products by plain sums: an independent account of what
 * fit_device's callbacks promise. */
static struct {
    double d[K * NF], w[K * NF], fixed[2 * K];
    int fit, loads, losses, fishers, image_calls;
} dev;

static int dv_load(void *u, const double *d, const double *w, int fit, const double *fixed, char *e,
                   size_t el)
{
    (void)u, (void)e, (void)el;
    memcpy(dev.d, d, sizeof dev.d);
    memcpy(dev.w, w, sizeof dev.w);
    memcpy(dev.fixed, fixed, sizeof dev.fixed);
    dev.fit = fit;
    dev.loads++;
    return 0;
}

static int dv_loss(void *u, const double *p, double *out, double *grad, double *imgout, char *e,
                   size_t el)
{
    double img[K * NF], cot[K * NF];
    pr_forward(u, p, img, e, el);
    for (int k = 0; k < K; ++k) {
        const double *im = img + k * NF, *d = dev.d + k * NF, *w = dev.w + k * NF;
        double a11 = 0, a12 = 0, a22 = 0, r1 = 0, r2 = 0, loss = 0;
        for (int i = 0; i < NF; ++i) { /* [sum w I^2, sum w I; sum w I, sum w] (f b) = ... */
            a11 += w[i] * im[i] * im[i];
            a12 += w[i] * im[i];
            a22 += w[i];
            r1 += w[i] * im[i] * d[i];
            r2 += w[i] * d[i];
        }
        assert_int_equal(dev.fit, 3); /* the test's fits solve both */
        double f = (r1 * a22 - r2 * a12) / (a11 * a22 - a12 * a12);
        double b = (a11 * r2 - a12 * r1) / (a11 * a22 - a12 * a12);
        for (int i = 0; i < NF; ++i) {
            double r = d[i] - f * im[i] - b;
            loss += 0.5 * w[i] * r * r;
            cot[k * NF + i] = -f * w[i] * r;
        }
        out[3 * k] = f;
        out[3 * k + 1] = b;
        out[3 * k + 2] = loss;
    }
    dev.losses++;
    if (!grad) { /* a pass's end: the images instead */
        dev.image_calls++;
        memcpy(imgout, img, sizeof img);
        return 0;
    }
    return pr_vjp(u, p, cot, grad, e, el);
}

static int dv_fisher(void *u, const double *p, int nf, double h, const double *flux, double *G,
                     double *y, char *e, size_t el)
{
    static double img[K * NF], plus[P][K * NF];
    double q[P];
    pr_forward(u, p, img, e, el);
    for (int j = 0; j < nf; ++j) {
        memcpy(q, p, sizeof q);
        q[j] += h;
        pr_forward(u, q, plus[j], e, el);
        for (int t = 0; t < K * NF; ++t)
            plus[j][t] = sqrt(dev.w[t]) * flux[t / NF] * (plus[j][t] - img[t]) / h;
    }
    for (int a = 0; a < nf; ++a) {
        for (int b = 0; b < nf; ++b) {
            G[a * nf + b] = 0;
            for (int t = 0; t < K * NF; ++t)
                G[a * nf + b] += plus[a][t] * plus[b][t];
        }
        for (int k = 0; k < K; ++k) {
            y[(2 * k) * nf + a] = y[(2 * k + 1) * nf + a] = 0;
            for (int i = k * NF; i < (k + 1) * NF; ++i) {
                y[(2 * k) * nf + a] += plus[a][i] * sqrt(dev.w[i]) * img[i];
                y[(2 * k + 1) * nf + a] += plus[a][i] * sqrt(dev.w[i]);
            }
        }
    }
    dev.fishers++;
    return 0;
}

static const fit_device host_device = {dv_load, dv_loss, dv_fisher};

/* A photon-noise fit (two passes: three weights loaded) with the
 * device and without: the same coefficients, fluxes and uncertainties to
 * the rounding of their different sums; the device did the evaluations,
 * the passes' fitted images and the Fisher step. */
static void device_path(void **state)
{
    (void)state;
    fit_model host = {K, NF, P, pr_forward, pr_vjp, NULL, NULL};
    fit_model there = {K, NF, P, pr_forward, pr_vjp, NULL, &host_device};
    double clean[K * NF], d[K * NF];
    pr_forward(NULL, TRUTH, clean, NULL, 0);
    rng = 777;
    for (int i = 0; i < K * NF; ++i)
        d[i] = poisson(2e4 * clean[i] + 5) + 2 * normal01();
    fit_options o = defaults();
    o.fit_flux = o.fit_background = 1;
    o.noise = FIT_NOISE_PHOTON;
    o.sigma = 2;
    o.passes = 2;
    o.tolerance = 1e-12;
    result_store a, b;
    double zero[P] = {0};
    char err[256];
    fit_result *ra = result(&a, zero, P), *rb = result(&b, zero, P);
    assert_int_equal(fit_run(&host, d, &o, ra, err, sizeof err), 0);
    memset(&dev, 0, sizeof dev);
    assert_int_equal(fit_run(&there, d, &o, rb, err, sizeof err), 0);
    assert_int_equal(dev.loads, 3); /* weights from the data, then each pass's fitted images */
    assert_true(dev.losses > 10 && dev.losses <= rb->evaluations);
    assert_int_equal(dev.fishers, 1);
    assert_int_equal(dev.image_calls, 3); /* each pass's end, and the last weights' */
    assert_int_equal(ra->fisher_ok, 1);
    assert_int_equal(rb->fisher_ok, 1);
    assert_true(rb->seconds_device > 0 && ra->seconds_device == 0);
    for (int j = 0; j < P; ++j) {
        assert_true(fabs(a.p[j] - b.p[j]) < 1e-6 * a.ps[j]);
        assert_true(fabs(a.ps[j] - b.ps[j]) < 1e-6 * a.ps[j]);
    }
    for (int k = 0; k < K; ++k) {
        assert_true(fabs(a.f[k] - b.f[k]) < 1e-6 * a.fs[k]);
        assert_true(fabs(a.fs[k] - b.fs[k]) < 1e-6 * a.fs[k]);
        assert_true(fabs(a.bs[k] - b.bs[k]) < 1e-6 * a.bs[k]);
    }
    assert_true(fabs(ra->chi2 - rb->chi2) < 1e-9 * ra->chi2);
    for (int i = 0; i < P * P; ++i)
        assert_true(fabs(a.cov[i] - b.cov[i]) < 1e-6 * a.ps[i / P] * a.ps[i % P]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linear_model),      cmocka_unit_test(linear_regularised),
        cmocka_unit_test(pr_gradient),       cmocka_unit_test(pr_noiseless),
        cmocka_unit_test(pr_gaussian_noise), cmocka_unit_test(pr_photon_noise),
        cmocka_unit_test(device_path),       cmocka_unit_test(pr_linesearch_out_of_tries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
