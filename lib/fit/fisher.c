/* SPDX-License-Identifier: BSD-3-Clause */
/* The fit's Fisher information and its inverse (lib/fit/fit.h): the
 * Cramer-Rao bound of the fitted parameters for Gaussian pixel noise of
 * the weights' variances, F = J^T W J (Kay, "Fundamentals of Statistical
 * Signal Processing: Estimation Theory", 1993, eq. 3.31), which for
 * Poisson pixels of variance m is the Poisson Fisher information
 * sum (dm/da)(dm/db) / m itself. The Jacobian's columns of p come from
 * forward differences of the forward model: a vector-Jacobian product
 * gives a row of J (one pixel), and J has K n rows but only P columns, so
 * P forward evaluations are the cheaper way to it. With a model computed
 * in double a small step keeps both errors small: truncation O(h) (about
 * h |d2I/dp2| / |dI/dp|, 1e-4 relative at h = 1e-5 waves) and rounding
 * O(eps / h) (1e-11). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fit/fit.h"
#include "lib/fit/lapack.h"

/* F's rows and columns of p against each image's flux and background
 * (P + k and P + nf + k, row-major N x N) from y [K][2][P]: image k's
 * U^T sqrt(w) I, then U^T sqrt(w) (fit_device.fisher's layout); those
 * not fitted (nf, nb 0) left out. */
static void put_cross(double *F, const double *y, int K, int P, int N, int nf, int nb)
{
    for (int k = 0; k < K; ++k) {
        int at[2] = {nf ? P + k : -1, nb ? P + nf + k : -1}; /* the flux's row, the background's */
        for (int c = 0; c < 2; ++c)
            for (int a = 0; at[c] >= 0 && a < P; ++a)
                F[(size_t)a * N + at[c]] = F[(size_t)at[c] * N + a] = y[(2 * k + c) * P + a];
    }
}

/* F's block of p (a, b < P) and p against each image's flux and
 * background (rows P .. N, row-major N x N), from the weighted Jacobian
 * u [P][K n] (u_a = sqrt(w) f_k dI_k/dp_a: column-major K n x P for BLAS)
 * and sw = sqrt(w), swi = sqrt(w) I ([K n] each): F_ab = u_a . u_b
 * (dsyrk), F_a,f_k = sum_i w J_a I_k = u_a . swi over image k, F_a,b_k =
 * u_a . sw there (dgemv each). BLAS, since the P (P + 1) / 2 dot products
 * over K n pixels are most of the Fisher step's time (0.1 s of scalar
 * loops at P = 34, K n = 196,608 on the GPU machine's host). y: [K][2][P]
 * (put_cross's). */
static void fisher_products(const fit_lapack *la, const double *u, const double *sw,
                            const double *swi, size_t n, int K, int P, int N, int nf, int nb,
                            double *y, double *F)
{
    int total = (int)((size_t)K * n), ni = (int)n, one = 1;
    const double d1 = 1.0, d0 = 0.0;
    /* column-major C (ldc N) upper = row-major F's lower triangle */
    la->dsyrk("U", "T", &P, &total, &d1, u, &total, &d0, F, &N);
    for (int a = 0; a < P; ++a)
        for (int b = a + 1; b < P; ++b)
            F[(size_t)a * N + b] = F[(size_t)b * N + a];
    for (int k = 0; k < K; ++k) {
        const double *xs[2] = {nf ? swi : NULL, nb ? sw : NULL};
        for (int c = 0; c < 2; ++c)
            if (xs[c])
                la->dgemv("T", &ni, &P, &d1, u + (size_t)k * n, &total, xs[c] + (size_t)k * n, &one,
                          &d0, y + (size_t)(2 * k + c) * P, &one);
    }
    put_cross(F, y, K, P, N, nf, nb);
}

/* F's rows of p (and p against the fluxes and backgrounds) by forward
 * differences here: P forwards of the model, the weighted columns, BLAS.
 * 0, or -1 (a callback, memory) with err. */
static int products_here(fit_state *st, const fit_lapack *la, const double *p, double h, int P,
                         int N, double *F)
{
    const fit_model *m = st->model;
    int K = m->nimages, nf = st->opt->fit_flux ? K : 0, nb = st->opt->fit_background ? K : 0;
    size_t n = m->npix, total = (size_t)K * n;
    /* jac: the weighted columns [P][K n], then I(p + h e_j), sqrt(w),
     * sqrt(w) I; and y [K][2][P] */
    double *jac = malloc(sizeof(double) * ((size_t)(P + 3) * total + 2 * (size_t)K * P));
    double *q = malloc(sizeof(double) * m->nparams);
    if (!jac || !q) {
        free(jac);
        free(q);
        snprintf(st->err, st->errlen, "out of memory for the Fisher matrix (%d parameters)", N);
        return -1;
    }
    /* st->img holds I(p) (fit_run's last fit_loss) */
    double *plus = jac + (size_t)P * total, *sw = plus + total, *swi = sw + total, *y = swi + total;
    for (size_t t = 0; t < total; ++t) {
        sw[t] = sqrt(st->w[t]);
        swi[t] = sw[t] * st->img[t];
    }
    memcpy(q, p, sizeof(double) * m->nparams);
    int rc = 0;
    for (int j = 0; j < P && rc == 0; ++j) { /* column j: sqrt(w) f_k dI_k/dp_j */
        double *col = jac + (size_t)j * total;
        q[j] = p[j] + h;
        rc = m->forward(m->user, q, plus, st->err, st->errlen);
        q[j] = p[j];
        for (int k = 0; rc == 0 && k < K; ++k) {
            double c = st->flux[k] / h;
            for (size_t i = 0; i < n; ++i) {
                size_t t = (size_t)k * n + i;
                col[t] = sw[t] * c * (plus[t] - st->img[t]);
            }
        }
    }
    if (rc == 0) fisher_products(la, jac, sw, swi, n, K, P, N, nf, nb, y, F);
    free(q);
    free(jac);
    return rc == 0 ? 0 : -1;
}

/* The same rows from the model's device (fit_device.fisher): G and y
 * there, placed into F here. */
static int products_there(fit_state *st, const double *p, double h, int P, int N, double *F)
{
    const fit_model *m = st->model;
    int K = m->nimages, nf = st->opt->fit_flux ? K : 0, nb = st->opt->fit_background ? K : 0;
    double *G = malloc(sizeof(double) * ((size_t)P * P + 2 * (size_t)K * P));
    if (!G) {
        snprintf(st->err, st->errlen, "out of memory for the Fisher matrix (%d parameters)", N);
        return -1;
    }
    double *y = G + (size_t)P * P;
    int rc = m->device->fisher(m->user, p, P, h, st->flux, G, y, st->err, st->errlen);
    for (int a = 0; rc == 0 && a < P; ++a)
        for (int b = 0; b < P; ++b)
            F[(size_t)a * N + b] = G[(size_t)a * P + b];
    if (rc == 0) put_cross(F, y, K, P, N, nf, nb);
    free(G);
    return rc == 0 ? 0 : -1;
}

int fit_fisher(fit_state *st, const double *p, double h, fit_result *res)
{
    const fit_model *m = st->model;
    const fit_options *o = st->opt;
    int K = m->nimages;
    int P = fit_nfisher(m, o);
    size_t n = m->npix;
    int nf = o->fit_flux ? K : 0, nb = o->fit_background ? K : 0;
    int N = P + nf + nb;
    fit_lapack lapack;
    if (fit_lapack_get(&lapack, st->err, st->errlen) != 0) return -1;
    double *F = calloc((size_t)N * N, sizeof(double));
    if (!F) {
        snprintf(st->err, st->errlen, "out of memory for the Fisher matrix (%d parameters)", N);
        return -1;
    }
    int rc = m->device && m->device->fisher ? products_there(st, p, h, P, N, F)
                                            : products_here(st, &lapack, p, h, P, N, F);
    if (rc != 0) {
        free(F);
        return -1;
    }
    for (int k = 0; k < K; ++k) { /* each image's own flux and background */
        size_t o0 = (size_t)k * n;
        double sii = 0, si = 0, s1 = 0;
        for (size_t i = 0; i < n; ++i) {
            double w = st->w[o0 + i], im = st->img[o0 + i];
            sii += w * im * im;
            si += w * im;
            s1 += w;
        }
        if (nf) F[(size_t)(P + k) * N + P + k] = sii;
        if (nb) F[(size_t)(P + nf + k) * N + P + nf + k] = s1;
        if (nf && nb)
            F[(size_t)(P + k) * N + P + nf + k] = F[(size_t)(P + nf + k) * N + P + k] = si;
    }
    /* D^-1/2 F D^-1/2 has a unit diagonal: its inverse is D^1/2 F^-1 D^1/2 */
    double *scale = malloc(sizeof(double) * N);
    int info = scale ? 0 : -1;
    for (int a = 0; a < N && info == 0; ++a) {
        if (!(F[(size_t)a * N + a] > 0))
            info = a + 1; /* a parameter the images do not see */
        else
            scale[a] = 1.0 / sqrt(F[(size_t)a * N + a]);
    }
    if (info == 0) {
        for (int a = 0; a < N; ++a)
            for (int b = 0; b < N; ++b)
                F[(size_t)a * N + b] *= scale[a] * scale[b];
        lapack.dpotrf("L", &N, F, &N, &info);
        if (info == 0) lapack.dpotri("L", &N, F, &N, &info);
    }
    res->fisher_ok = info == 0;
    /* dpotri fills the lower triangle (column-major), the upper of our rows */
#define INV(a, b) ((a) <= (b) ? F[(size_t)(a)*N + (b)] : F[(size_t)(b)*N + (a)])
    for (int a = 0; a < P; ++a) {
        res->p_sigma[a] = info == 0 ? sqrt(INV(a, a)) * scale[a] : NAN;
        if (res->covariance)
            for (int b = 0; b < P; ++b)
                res->covariance[(size_t)a * P + b] =
                    info == 0 ? INV(a, b) * scale[a] * scale[b] : NAN;
    }
    for (int k = 0; k < K; ++k) {
        res->flux_sigma[k] = !nf ? 0 : info == 0 ? sqrt(INV(P + k, P + k)) * scale[P + k] : NAN;
        res->background_sigma[k] = !nb ? 0
                                   : info == 0
                                       ? sqrt(INV(P + nf + k, P + nf + k)) * scale[P + nf + k]
                                       : NAN;
    }
#undef INV
    free(scale);
    free(F);
    return 0;
}
