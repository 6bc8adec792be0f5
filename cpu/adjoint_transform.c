/* SPDX-License-Identifier: BSD-3-Clause */
/* The transform of the gradients' model and its adjoint (cpu/adjoint.h):
 * E = F U, the intensity scale |E|^2, and B = F^H (scale g .* E). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/adjoint.h"

void adj_transform_free(adj_transform *t)
{
    if (t->fwd) fftw_destroy_plan(t->fwd);
    if (t->bwd) fftw_destroy_plan(t->bwd);
    fftw_free(t->buf);
    free(t->shift);
    free(t->e);
    free(t->box);
    free(t->t);
    free(t->wr);
    free(t->wc);
    memset(t, 0, sizeof *t);
}

/* shift[i] = the image pixel of the FFT's output index i (fftshift:
 * frequency (u, v) on pixel ((u + N/2) mod N, (v + N/2) mod N)). */
static void shift_table(int n, unsigned *shift)
{
    for (int u = 0; u < n; ++u)
        for (int v = 0; v < n; ++v)
            shift[(size_t)u * n + v] = (unsigned)(((u + n / 2) % n) * n + (v + n / 2) % n);
}

int adj_transform_init(adj_transform *t, const psf_problem *problem, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->mft = problem->mft;
    t->n = problem->npix;
    t->half_pixel = problem->half_pixel;
    size_t nn = (size_t)t->n * t->n;
    t->e = malloc(nn * sizeof *t->e);
    if (!t->e) {
        snprintf(err, errlen, "cpu: cannot allocate the gradients' %d x %d field", t->n, t->n);
        return -1;
    }
    if (t->mft) return 0;
    t->buf = fftw_malloc(nn * sizeof *t->buf);
    t->shift = malloc(nn * sizeof *t->shift);
    if (!t->buf || !t->shift) {
        adj_transform_free(t);
        snprintf(err, errlen, "cpu: cannot allocate the gradients' %d x %d FFT", t->n, t->n);
        return -1;
    }
    shift_table(t->n, t->shift);
    t->fwd = fftw_plan_dft_2d(t->n, t->n, t->buf, t->buf, FFTW_FORWARD, FFTW_ESTIMATE);
    t->bwd = fftw_plan_dft_2d(t->n, t->n, t->buf, t->buf, FFTW_BACKWARD, FFTW_ESTIMATE);
    if (!t->fwd || !t->bwd) {
        adj_transform_free(t);
        snprintf(err, errlen, "cpu: FFTW could not plan the gradients' %d x %d FFT", t->n, t->n);
        return -1;
    }
    return 0;
}

/* re + i im without arithmetic (C17 6.2.5: a complex is an array of its
 * real and imaginary parts); glibc's CMPLX needs GCC's __builtin_complex,
 * which clang lacks. */
static inline double complex cplx(double re, double im)
{
    union {
        double complex z;
        double part[2];
    } u = {.part = {re, im}};
    return u.z;
}

/* a b, the textbook product: C's own complex multiply checks for
 * infinities and NaNs (C17 Annex G), a library call per product without
 * -fcx-limited-range; the values here are finite. */
static inline double complex cmul(double complex a, double complex b)
{
    double ar = creal(a), ai = cimag(a), br = creal(b), bi = cimag(b);
    return cplx(ar * br - ai * bi, ar * bi + ai * br);
}

/* *p holds n items (growing it, contents lost). 0, or -1. */
static int reserve(double complex **p, size_t *cap, size_t n)
{
    if (n <= *cap) return 0;
    free(*p);
    *p = malloc((n ? n : 1) * sizeof **p);
    *cap = *p ? n : 0;
    return *p ? 0 : -1;
}

/* w[k][j] = exp(-2 pi i (j0 + j)(2k - centre2) a / 2) for k < m, j < nj
 * (cpu/mft.h's W, the integer product exact, reduced to a turn). */
static void mft_matrix(double a, int m, int centre2, int j0, int nj, double complex *w)
{
    for (int k = 0; k < m; ++k)
        for (int j = 0; j < nj; ++j) {
            double turns = (double)((long long)(j0 + j) * (2LL * k - centre2)) * (0.5 * a);
            turns -= floor(turns);
            w[(size_t)k * nj + j] = cexp(-2.0 * M_PI * I * turns);
        }
}

/* The MFT of u (pp's box): E = Wr P Wc^T. */
static int mft_forward(adj_transform *t, const adj_pupil *pp, const psf_component *comp,
                       const double complex *u)
{
    int m = t->n, r = pp->p.rows, c = pp->p.cols, g = pp->grid;
    if (reserve(&t->box, &t->cap_box, (size_t)r * c) || reserve(&t->t, &t->cap_t, (size_t)r * m) ||
        reserve(&t->wr, &t->cap_wr, (size_t)m * r) || reserve(&t->wc, &t->cap_wc, (size_t)m * c))
        return -1;
    t->rows = r;
    t->cols = c;
    double a = comp->dx_m * comp->out_pixel_rad / comp->wavelength_m;
    int centre2 = 2 * (m / 2) - (t->half_pixel ? 1 : 0);
    mft_matrix(a, m, centre2, pp->p.row0 - g / 2, r, t->wr);
    mft_matrix(a, m, centre2, pp->p.col0 - g / 2, c, t->wc);
    memset(t->box, 0, (size_t)r * c * sizeof *t->box);
    for (size_t k = 0; k < pp->p.nopen; ++k)
        t->box[pp->p.dest[k]] = u[k];
    for (int i = 0; i < r; ++i) /* T[i][kc] = sum_j P[i][j] Wc[kc][j] */
        for (int kc = 0; kc < m; ++kc) {
            double complex s = 0.0;
            for (int j = 0; j < c; ++j)
                s += cmul(t->box[(size_t)i * c + j], t->wc[(size_t)kc * c + j]);
            t->t[(size_t)i * m + kc] = s;
        }
    memset(t->e, 0, (size_t)m * m * sizeof *t->e);
    for (int kr = 0; kr < m; ++kr) /* E[kr][.] = sum_i Wr[kr][i] T[i][.] (rows: in cache) */
        for (int i = 0; i < r; ++i) {
            double complex w = t->wr[(size_t)kr * r + i], *e = t->e + (size_t)kr * m;
            const double complex *row = t->t + (size_t)i * m;
            for (int kc = 0; kc < m; ++kc)
                e[kc] += cmul(w, row[kc]);
        }
    return 0;
}

int adj_transform_forward(adj_transform *t, const adj_pupil *pp, const psf_component *comp,
                          const double complex *u, char *err, size_t errlen)
{
    size_t nn = (size_t)t->n * t->n;
    if (t->mft) {
        if (mft_forward(t, pp, comp, u) == 0) return 0;
        snprintf(err, errlen, "cpu: cannot allocate the gradients' MFT of a %d x %d box",
                 pp->p.rows, pp->p.cols);
        return -1;
    }
    memset(t->buf, 0, nn * sizeof *t->buf);
    for (size_t k = 0; k < pp->p.nopen; ++k) {
        t->buf[pp->p.dest[k]][0] = creal(u[k]);
        t->buf[pp->p.dest[k]][1] = cimag(u[k]);
    }
    fftw_execute(t->fwd);
    for (size_t i = 0; i < nn; ++i)
        t->e[i] = t->buf[i][0] + I * t->buf[i][1];
    return 0;
}

void adj_transform_intensity(const adj_transform *t, double scale, double *image)
{
    size_t nn = (size_t)t->n * t->n;
    for (size_t i = 0; i < nn; ++i) {
        double p = scale * (creal(t->e[i]) * creal(t->e[i]) + cimag(t->e[i]) * cimag(t->e[i]));
        image[t->mft ? i : t->shift[i]] += p;
    }
}

double adj_transform_dot(const adj_transform *t, const double *g)
{
    size_t nn = (size_t)t->n * t->n;
    double sum = 0.0;
    for (size_t i = 0; i < nn; ++i)
        sum += g[t->mft ? i : t->shift[i]] *
               (creal(t->e[i]) * creal(t->e[i]) + cimag(t->e[i]) * cimag(t->e[i]));
    return sum;
}

/* B = Wr^H G conj(Wc) into t->box (G = scale g .* E in t->e). */
static void mft_adjoint(adj_transform *t)
{
    int m = t->n, r = t->rows, c = t->cols;
    memset(t->t, 0, (size_t)r * m * sizeof *t->t);
    for (int i = 0; i < r; ++i) /* V[i][.] = sum_kr conj(Wr[kr][i]) G[kr][.] */
        for (int kr = 0; kr < m; ++kr) {
            double complex w = conj(t->wr[(size_t)kr * r + i]), *v = t->t + (size_t)i * m;
            const double complex *g = t->e + (size_t)kr * m;
            for (int kc = 0; kc < m; ++kc)
                v[kc] += cmul(w, g[kc]);
        }
    memset(t->box, 0, (size_t)r * c * sizeof *t->box);
    for (int i = 0; i < r; ++i) /* B[i][.] = sum_kc V[i][kc] conj(Wc[kc][.]) */
        for (int kc = 0; kc < m; ++kc) {
            double complex v = t->t[(size_t)i * m + kc], *b = t->box + (size_t)i * c;
            const double complex *w = t->wc + (size_t)kc * c;
            for (int j = 0; j < c; ++j)
                b[j] += cmul(v, conj(w[j]));
        }
}

void adj_transform_adjoint(adj_transform *t, const adj_pupil *pp, const double *g, double scale,
                           double complex *b)
{
    size_t nn = (size_t)t->n * t->n;
    if (t->mft) {
        for (size_t i = 0; i < nn; ++i)
            t->e[i] *= scale * g[i];
        mft_adjoint(t);
        for (size_t k = 0; k < pp->p.nopen; ++k)
            b[k] = t->box[pp->p.dest[k]];
        return;
    }
    for (size_t i = 0; i < nn; ++i) {
        double complex v = scale * g[t->shift[i]] * t->e[i];
        t->buf[i][0] = creal(v);
        t->buf[i][1] = cimag(v);
    }
    fftw_execute(t->bwd);
    for (size_t k = 0; k < pp->p.nopen; ++k)
        b[k] = t->buf[pp->p.dest[k]][0] + I * t->buf[pp->p.dest[k]][1];
}
