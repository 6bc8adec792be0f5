/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage of the gradients' model and its transpose
 * (cpu/adjoint.h). The stage is linear: D = S (h * I), h the real kernel
 * whose DFT is the transfer function T (backend/detector.h: T(-k) =
 * conj T(k), each factor the DFT of a real kernel), S the sampling. Its
 * transpose is I' = h~ * (S^T D'): the sampling's scatter (S^T puts s^2
 * D'[i][j] on grid sample (i s + o, j s + o), or D'[i][j] on each of
 * WebbPSF's block's s^2 samples), then the correlation with h, whose
 * transfer function is conj(T) (the adjoint of a circular convolution;
 * e.g. Strang, Introduction to Linear Algebra, 5th ed., 8.3: the
 * transpose of a circulant matrix is the circulant of the reversed
 * kernel). No clamp at 0: the double model has no rounding negatives. */
#include <stdio.h>
#include <string.h>

#include "backend/detector.h"
#include "cpu/adjoint.h"

void adj_detector_free(adj_detector *d)
{
    if (d->r2c) fftw_destroy_plan(d->r2c);
    if (d->c2r) fftw_destroy_plan(d->c2r);
    fftw_free(d->otf);
    fftw_free(d->real);
    fftw_free(d->spec);
    memset(d, 0, sizeof *d);
}

int adj_detector_init(adj_detector *d, const psf_problem *problem, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    const psf_detector *det = &problem->detector;
    int n = problem->npix;
    d->n = d->m = n;
    if (!psf_detector_active(det)) return 0;
    if (psf_detector_check(det, n, err, errlen) != 0) return -1;
    d->active = 1;
    d->s = det->oversample > 1 ? det->oversample : 1;
    d->sample = det->sample;
    d->m = psf_detector_out_npix(problem);
    d->off = psf_detector_sample_offset(det, n);
    d->bins = psf_detector_bins(det);
    d->convolve = psf_detector_convolves(det);
    if (!d->convolve) return 0;
    size_t nc = (size_t)n * (size_t)(n / 2 + 1);
    d->otf = fftw_malloc(2 * nc * sizeof *d->otf);
    d->real = fftw_malloc((size_t)n * n * sizeof *d->real);
    d->spec = fftw_malloc(nc * sizeof *d->spec);
    if (!d->otf || !d->real || !d->spec) {
        adj_detector_free(d);
        snprintf(err, errlen, "cpu: cannot allocate the gradients' %d x %d detector", n, n);
        return -1;
    }
    psf_detector_otf_double(det, n, d->otf);
    d->r2c = fftw_plan_dft_r2c_2d(n, n, d->real, d->spec, FFTW_ESTIMATE);
    d->c2r = fftw_plan_dft_c2r_2d(n, n, d->spec, d->real, FFTW_ESTIMATE);
    if (!d->r2c || !d->c2r) {
        adj_detector_free(d);
        snprintf(err, errlen, "cpu: FFTW could not plan the gradients' %d x %d detector", n, n);
        return -1;
    }
    return 0;
}

/* d->real = IFFT(FFT(d->real) T) (conj = 0) or with conj(T) (conj = 1);
 * T holds the 1/n^2. */
static void convolve(adj_detector *d, int conj)
{
    size_t nc = (size_t)d->n * (size_t)(d->n / 2 + 1);
    fftw_execute(d->r2c);
    for (size_t i = 0; i < nc; ++i) {
        double a = d->spec[i][0], b = d->spec[i][1];
        double c = d->otf[2 * i], e = conj ? -d->otf[2 * i + 1] : d->otf[2 * i + 1];
        d->spec[i][0] = a * c - b * e;
        d->spec[i][1] = a * e + b * c;
    }
    fftw_execute(d->c2r);
}

void adj_detector_forward(adj_detector *d, const double *grid, double *out)
{
    int n = d->n, s = d->s, m = d->m;
    size_t nn = (size_t)n * n;
    if (!d->active) {
        memcpy(out, grid, nn * sizeof *out);
        return;
    }
    const double *g = grid;
    if (d->convolve) {
        memcpy(d->real, grid, nn * sizeof *grid);
        convolve(d, 0);
        g = d->real;
    }
    if (!d->sample) {
        if (g != out) memcpy(out, g, nn * sizeof *out);
        return;
    }
    for (int i = 0; i < m; ++i) /* psf_detector_sample_at, in double */
        for (int j = 0; j < m; ++j) {
            const double *p = g + (size_t)(i * s + d->off) * n + (size_t)(j * s + d->off);
            double v = 0.0;
            for (int a = 0; d->bins && a < s; ++a)
                for (int b = 0; b < s; ++b)
                    v += p[(size_t)a * n + b];
            out[(size_t)i * m + j] = d->bins ? v : (double)s * s * p[0];
        }
}

void adj_detector_adjoint(adj_detector *d, const double *g_out, double *g_grid)
{
    int n = d->n, s = d->s, m = d->m;
    size_t nn = (size_t)n * n;
    if (!d->active) {
        memcpy(g_grid, g_out, nn * sizeof *g_grid);
        return;
    }
    double *g = d->convolve ? d->real : g_grid;
    if (!d->sample) {
        memcpy(g, g_out, nn * sizeof *g);
    } else {
        memset(g, 0, nn * sizeof *g);
        for (int i = 0; i < m; ++i) /* the sampling's transpose: its scatter */
            for (int j = 0; j < m; ++j) {
                double v = g_out[(size_t)i * m + j];
                double *p = g + (size_t)(i * s + d->off) * n + (size_t)(j * s + d->off);
                if (!d->bins) {
                    p[0] += (double)s * s * v;
                    continue;
                }
                for (int a = 0; a < s; ++a)
                    for (int b = 0; b < s; ++b)
                        p[(size_t)a * n + b] += v;
            }
    }
    if (!d->convolve) return;
    convolve(d, 1);
    memcpy(g_grid, d->real, nn * sizeof *g_grid);
}
