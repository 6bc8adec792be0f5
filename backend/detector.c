/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage's arithmetic (backend/detector.h). */
#include "backend/detector.h"

#include <math.h>
#include <stdio.h>

static int scale_of(const psf_detector *d)
{
    return d->oversample > 1 ? d->oversample : 1;
}

int psf_detector_convolves(const psf_detector *d)
{
    /* != 0: a negative or NaN sigma is a stage, which the check refuses. */
    return (d->pixel_response && !d->blocks) || d->jitter_px[0] != 0.0 || d->jitter_px[1] != 0.0 ||
           d->diffusion_px != 0.0 || d->ipc;
}

int psf_detector_active(const psf_detector *d)
{
    return psf_detector_convolves(d) || (d->sample && scale_of(d) > 1);
}

int psf_detector_out_npix(const psf_problem *problem)
{
    const psf_detector *d = &problem->detector;
    return d->sample ? problem->npix / scale_of(d) : problem->npix;
}

int psf_detector_check(const psf_detector *d, int npix, char *err, size_t errlen)
{
    int s = scale_of(d);
    if (d->oversample < 0 || (d->sample && npix % s != 0)) {
        snprintf(err, errlen, "detector: oversample %d does not divide the %d x %d grid",
                 d->oversample, npix, npix);
        return -1;
    }
    if (d->blocks && !d->pixel_response && s % 2 == 0) {
        snprintf(err, errlen,
                 "detector: WebbPSF's pixel of %d x %d grid pixels has its centre between "
                 "grid pixels: no point sample there (give the pixel response)",
                 s, s);
        return -1;
    }
    double sig[3] = {d->jitter_px[0], d->jitter_px[1], d->diffusion_px};
    for (int i = 0; i < 3; ++i)
        if (!(sig[i] >= 0.0) || !isfinite(sig[i])) {
            snprintf(err, errlen, "detector: Gaussian sigma %g is not finite and >= 0", sig[i]);
            return -1;
        }
    for (int i = 0; d->ipc && i < 9; ++i)
        if (!isfinite(d->ipc_kernel[i])) {
            snprintf(err, errlen, "detector: IPC kernel value %d is not finite", i);
            return -1;
        }
    return 0;
}

size_t psf_detector_otf_bytes(int npix)
{
    return 8 * (size_t)npix * (size_t)(npix / 2 + 1);
}

/* sin(pi x) / (pi x). */
static double sinc(double x)
{
    if (fabs(x) < 1e-8) return 1.0;
    return sin(M_PI * x) / (M_PI * x);
}

/* The separable part along one axis at u cycles per detector pixel: the
 * pixel box and the Gaussians of sigma sig (jitter) and diff (diffusion). */
static double axis_tf(const psf_detector *d, double u, double sig)
{
    double t = d->pixel_response && !d->blocks ? sinc(u) : 1.0;
    double var = sig * sig + d->diffusion_px * d->diffusion_px;
    return t * exp(-2.0 * M_PI * M_PI * var * u * u);
}

/* (*re, 0) times the IPC kernel's factor sum k[a][b] exp(-2 pi i ((b - 1) u
 * + (a - 1) v)) at (u, v). */
static void ipc_tf(const psf_detector *d, double u, double v, double *re, double *im)
{
    double hr = 0.0, hi = 0.0;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            double ph = -2.0 * M_PI * ((b - 1) * u + (a - 1) * v);
            hr += d->ipc_kernel[3 * a + b] * cos(ph);
            hi += d->ipc_kernel[3 * a + b] * sin(ph);
        }
    *im = *re * hi;
    *re *= hr;
}

/* psf_detector_otf's value at row r, column c, in double. */
static void otf_at(const psf_detector *d, int npix, int r, int c, double *re, double *im)
{
    int s = scale_of(d);
    double norm = 1.0 / ((double)npix * (double)npix);
    double v = (double)(r <= npix / 2 ? r : r - npix) * s / npix, u = (double)c * s / npix;
    double ty = axis_tf(d, v, d->jitter_px[1]);
    *re = norm * ty * axis_tf(d, u, d->jitter_px[0]);
    *im = 0.0;
    if (d->ipc) ipc_tf(d, u, v, re, im);
}

void psf_detector_otf_double(const psf_detector *d, int npix, double *otf)
{
    int nc = npix / 2 + 1;
    for (int r = 0; r < npix; ++r)
        for (int c = 0; c < nc; ++c) {
            size_t i = 2 * ((size_t)r * nc + c);
            otf_at(d, npix, r, c, &otf[i], &otf[i + 1]);
        }
}

void psf_detector_otf(const psf_detector *d, int npix, float *otf)
{
    int nc = npix / 2 + 1;
    for (int r = 0; r < npix; ++r)
        for (int c = 0; c < nc; ++c) {
            double re, im;
            otf_at(d, npix, r, c, &re, &im);
            otf[2 * ((size_t)r * nc + c)] = (float)re;
            otf[2 * ((size_t)r * nc + c) + 1] = (float)im;
        }
}

void psf_detector_axis_tables(const psf_detector *d, int npix, float *tx, float *ty)
{
    int s = scale_of(d);
    for (int k = 0; k < npix; ++k) {
        double u = (double)(k <= npix / 2 ? k : npix - k) * s / npix;
        tx[k] = (float)(axis_tf(d, u, d->jitter_px[0]) / npix);
        ty[k] = (float)(axis_tf(d, u, d->jitter_px[1]) / npix);
    }
}

int psf_detector_bins(const psf_detector *d)
{
    return d->blocks && d->pixel_response && scale_of(d) > 1;
}

int psf_detector_sample_offset(const psf_detector *d, int npix)
{
    int s = scale_of(d);
    if (d->blocks) return psf_detector_bins(d) ? 0 : (s - 1) / 2;
    return npix / 2 - s * ((npix / s) / 2);
}

void psf_detector_sample(const psf_detector *d, const float *grid, int npix, float *out)
{
    int s = scale_of(d), m = npix / s, off = psf_detector_sample_offset(d, npix);
    int block = psf_detector_bins(d);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < m; ++j)
            out[(size_t)i * m + j] = psf_detector_sample_at(grid, npix, s, off, block, i, j);
}

/* B(k) of one axis (backend/detector.h, psf_detector_fold_otf):
 * (1/s) sum_{m < s} e^{+2 pi i k m / npix}, k m reduced mod npix. */
static void block_tf(int npix, int s, int k, double *re, double *im)
{
    double r = 0.0, i = 0.0;
    for (int m = 0; m < s; ++m) {
        double t = 2.0 * M_PI * (double)(((long long)k * m) % npix) / npix;
        r += cos(t);
        i += sin(t);
    }
    *re = r / s;
    *im = i / s;
}

void psf_detector_fold_otf(const psf_detector *d, int npix, float *otf)
{
    psf_detector_otf(d, npix, otf);
    if (!psf_detector_bins(d)) return;
    int s = scale_of(d), nc = npix / 2 + 1;
    /* T again in double (not its float copy; no box: blocks) times B(k_y) B(k_x). */
    double norm = 1.0 / ((double)npix * (double)npix);
    for (int r = 0; r < npix; ++r) {
        double v = (double)(r <= npix / 2 ? r : r - npix) * s / npix, byr, byi;
        double ty = axis_tf(d, v, d->jitter_px[1]);
        block_tf(npix, s, r, &byr, &byi);
        for (int c = 0; c < nc; ++c) {
            double u = (double)c * s / npix, bxr, bxi;
            double tr = norm * ty * axis_tf(d, u, d->jitter_px[0]), ti = 0.0;
            if (d->ipc) ipc_tf(d, u, v, &tr, &ti);
            block_tf(npix, s, c, &bxr, &bxi);
            double br = byr * bxr - byi * bxi, bi = byr * bxi + byi * bxr;
            otf[2 * ((size_t)r * nc + c)] = (float)(tr * br - ti * bi);
            otf[2 * ((size_t)r * nc + c) + 1] = (float)(tr * bi + ti * br);
        }
    }
}

void psf_detector_fold_phase(const psf_detector *d, int npix, float *phase)
{
    long long o = psf_detector_sample_offset(d, npix);
    for (int k = 0; k < npix; ++k) {
        double t = 2.0 * M_PI * (double)((k * o) % npix) / npix;
        phase[2 * k] = (float)cos(t);
        phase[2 * k + 1] = (float)sin(t);
    }
}

void psf_detector_fold(const float *spec, const float *otf, const float *phase, int npix, int s,
                       float *z)
{
    int m = npix / s, mc = m / 2 + 1;
    for (int p1 = 0; p1 < m; ++p1)
        for (int p2 = 0; p2 < mc; ++p2)
            psf_detector_fold_at(spec, otf, phase, npix, s, p1, p2, z + 2 * ((size_t)p1 * mc + p2));
}

void psf_detector_fold_pair(const float *zspec, const float *otf, const float *phase, int npix,
                            int s, float *z1, float *z2)
{
    int m = npix / s, mc = m / 2 + 1;
    for (int p1 = 0; p1 < m; ++p1)
        for (int p2 = 0; p2 < mc; ++p2) {
            size_t i = 2 * ((size_t)p1 * mc + p2);
            float z[4];
            psf_detector_fold_pair_at(zspec, otf, phase, npix, s, p1, p2, z);
            z1[i] = z[0];
            z1[i + 1] = z[1];
            z2[i] = z[2];
            z2[i + 1] = z[3];
        }
}
