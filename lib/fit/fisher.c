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

/* Pixels of one tile of fisher_products: P + 2 rows of them (37 x 256
 * doubles, 76 KiB at P = 35) stay in the core's cache while every pair
 * of rows is summed. */
#define FISHER_TILE 256

/* sum x_i y_i over len in four interleaved partial sums (a dependency
 * chain of len / 4 additions: the compiler keeps the order written, so
 * a single sum would be one long chain). */
static double dot(const double *x, const double *y, size_t len)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= len; i += 4) {
        s0 += x[i] * y[i];
        s1 += x[i + 1] * y[i + 1];
        s2 += x[i + 2] * y[i + 2];
        s3 += x[i + 3] * y[i + 3];
    }
    for (; i < len; ++i)
        s0 += x[i] * y[i];
    return (s0 + s1) + (s2 + s3);
}

/* One tile of len pixels: jac's rows at the tile (stride total), its
 * weights w and images im; adds into F's rows a < P the columns b >= a,
 * column cf (-1: none) the flux's and cb the background's. u: [len]. */
static void fisher_tile(const double *jac, size_t total, const double *w, const double *im,
                        size_t len, int P, int N, int cf, int cb, double *u, double *F)
{
    for (int a = 0; a < P; ++a) {
        const double *ja = jac + (size_t)a * total;
        for (size_t i = 0; i < len; ++i)
            u[i] = w[i] * ja[i];
        for (int b = a; b < P; ++b)
            F[(size_t)a * N + b] += dot(u, jac + (size_t)b * total, len);
        if (cf >= 0) F[(size_t)a * N + cf] += dot(u, im, len);
        if (cb >= 0) {
            double sb = 0;
            for (size_t i = 0; i < len; ++i)
                sb += u[i];
            F[(size_t)a * N + cb] += sb;
        }
    }
}

/* F's block of p (a, b < P) and p against each image's flux and
 * background (rows P .. N), from jac [P][K n] (columns of J by
 * parameter), the weights and the images: F_ab = sum_t w_t J_at J_bt,
 * F_a,f_k = sum_i w J_a I_k, F_a,b_k = sum_i w J_a. The sums run over
 * tiles of pixels (each tile's weighted rows u_a = w J_a made once, then
 * every pair's dot product from the cache), so J is read from memory once
 * instead of P + 1 times: the naive pairwise sums took 0.15 s at P = 34,
 * K n = 196,608. The order of the sums is fixed: the result is the same
 * on every run. */
static void fisher_products(const double *jac, const fit_state *st, int P, int N, int nf, int nb,
                            double *F)
{
    const fit_model *m = st->model;
    size_t n = m->npix, total = (size_t)m->nimages * n;
    double u[FISHER_TILE];
    for (int k = 0; k < m->nimages; ++k)
        for (size_t i0 = 0; i0 < n; i0 += FISHER_TILE) {
            size_t t0 = (size_t)k * n + i0, len = n - i0 < FISHER_TILE ? n - i0 : FISHER_TILE;
            fisher_tile(jac + t0, total, st->w + t0, st->img + t0, len, P, N, nf ? P + k : -1,
                        nb ? P + nf + k : -1, u, F);
        }
    for (int a = 0; a < P; ++a) { /* the lower triangle and the flux/background columns */
        for (int b = a + 1; b < P; ++b)
            F[(size_t)b * N + a] = F[(size_t)a * N + b];
        for (int c = P; c < N; ++c)
            F[(size_t)c * N + a] = F[(size_t)a * N + c];
    }
}

int fit_fisher(fit_state *st, const double *p, double h, fit_result *res)
{
    const fit_model *m = st->model;
    const fit_options *o = st->opt;
    int K = m->nimages;
    int P = o->nfisher > 0 && o->nfisher < m->nparams ? o->nfisher : m->nparams;
    size_t n = m->npix, total = (size_t)K * n;
    int nf = o->fit_flux ? K : 0, nb = o->fit_background ? K : 0;
    int N = P + nf + nb;
    fit_lapack lapack;
    if (fit_lapack_get(&lapack, st->err, st->errlen) != 0) return -1;
    double *jac = malloc(sizeof(double) * ((size_t)P * total + total));
    double *F = calloc((size_t)N * N, sizeof(double));
    if (!jac || !F) {
        free(jac);
        free(F);
        snprintf(st->err, st->errlen, "out of memory for the Fisher matrix (%d parameters)", N);
        return -1;
    }
    /* st->img holds I(p) (fit_run's last fit_loss) */
    double *plus = jac + (size_t)P * total;
    double *q = malloc(sizeof(double) * m->nparams);
    if (!q) {
        free(jac);
        free(F);
        snprintf(st->err, st->errlen, "out of memory for the Fisher matrix (%d parameters)", N);
        return -1;
    }
    memcpy(q, p, sizeof(double) * m->nparams);
    for (int j = 0; j < P; ++j) { /* column j: f_k dI_k/dp_j, forward differences */
        double *col = jac + (size_t)j * total;
        q[j] = p[j] + h;
        int rc = m->forward(m->user, q, plus, st->err, st->errlen);
        q[j] = p[j];
        if (rc != 0) {
            free(q);
            free(jac);
            free(F);
            return -1;
        }
        for (int k = 0; k < K; ++k)
            for (size_t i = 0; i < n; ++i) {
                size_t t = (size_t)k * n + i;
                col[t] = st->flux[k] * (plus[t] - st->img[t]) / h;
            }
    }
    fisher_products(jac, st, P, N, nf, nb, F);
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
    free(q);
    free(jac);
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
