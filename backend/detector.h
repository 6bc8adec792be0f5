/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage's arithmetic, shared by the backends (psf_detector in
 * backend/backend.h; docs/design.md, "Detector"): which stage a problem
 * has, the size of run()'s images, and the transfer function on the grid's
 * real-FFT layout, computed on the host in double so that both backends
 * multiply by the same float values. */
#ifndef PSFSIM_BACKEND_DETECTOR_H
#define PSFSIM_BACKEND_DETECTOR_H

#include <stddef.h>

#include "backend/backend.h"
#include "optics/psf_hd.h"

/* 1 when the detector stage convolves (some kernel is enabled; WebbPSF's
 * blocks' pixel response is the sampling's sum, not a convolution). */
int psf_detector_convolves(const psf_detector *d);

/* 1 when run() does anything after the image: convolves or samples at s > 1. */
int psf_detector_active(const psf_detector *d);

/* The side of run()'s images: npix / s when sampled, else npix. */
int psf_detector_out_npix(const psf_problem *problem);

/* Check d for a grid of npix: s >= 1, npix % s == 0 when sampled, sigmas
 * finite and >= 0, the IPC kernel finite, blocks without pixel_response
 * only at odd s (or 1). Returns 0, or -1 with err. */
int psf_detector_check(const psf_detector *d, int npix, char *err, size_t errlen);

/* Bytes of psf_detector_otf's table for npix: 8 npix (npix / 2 + 1). */
size_t psf_detector_otf_bytes(int npix);

/* The transfer function of d's kernels, divided by npix^2 (the inverse
 * FFT's missing normalisation), on the real-to-complex layout of an
 * npix x npix image (FFTW's and cuFFT's): complex otf[2 (r (npix / 2 + 1)
 * + c)] (re, im) for row frequency index r (k_y = r, or r - npix above
 * npix / 2) and column c (k_x = c); u = k_x s / npix, v = k_y s / npix
 * cycles per detector pixel; the pixel box only for psfsim's detector
 * (blocks 0: WebbPSF's is the sampling's block sum, psf_detector_fold_otf).
 * Computed in double, stored as float. */
void psf_detector_otf(const psf_detector *d, int npix, float *otf);

/* The same table in double (the gradients' model, cpu/adjoint.h):
 * psf_detector_otf's values before their rounding to float. */
void psf_detector_otf_double(const psf_detector *d, int npix, double *otf);

/* The transfer function's separable part as two axes (the GPU's
 * separable path, gpu/detector_sep.h): tx[k] = X(u_k) / npix and
 * ty[k] = Y(v_k) / npix for full-length DFT index k < npix, u_k = v_k =
 * min(k, npix - k) s / npix cycles per detector pixel, X and Y the pixel
 * box, jitter (x: jitter_px[0], y: jitter_px[1]) and diffusion factors of
 * psf_detector_otf, which is tx[c] ty[r] (times the IPC kernel's factor)
 * at (r, c): without the IPC kernel the stage is a circular convolution
 * along rows with the inverse DFT of tx and then along columns with that
 * of ty (the DFT's separability). All are real and even in k. Computed in
 * double, stored as float. */
void psf_detector_axis_tables(const psf_detector *d, int npix, float *tx, float *ty);

/* img[0 .. n-1] below 0 set to 0, NaN kept (so that it is still found):
 * the stage's last step on both backends. In exact arithmetic the stage's
 * image is >= 0 (a non-negative image, band-limited on the grid, through
 * non-negative kernels: the box, Gaussians, a non-negative IPC kernel);
 * the transforms' float rounding, ~1e-7 of the peak, leaves small
 * negatives where the image is dark (the Airy rings' zeros), which
 * psfsim's check of every image (app/run/run_check.h) would refuse. */
PSF_HD float psf_detector_clamp_value(float x)
{
    return x < 0.0f ? 0.0f : x;
}

PSF_HD void psf_detector_clamp(float *img, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        img[i] = psf_detector_clamp_value(img[i]);
}

/* The grid sample o where detector pixel 0's sample is taken: psfsim's
 * (blocks 0), its centre, so that detector pixel M/2 is centred on the
 * optical axis (grid sample npix/2): npix/2 - s (M/2), M = npix / s; 0 for
 * even M, below s. WebbPSF's (blocks 1): 0, the block's first sample, with
 * pixel_response (the sum of the block from there); (s - 1)/2, the block's
 * centre, without (odd s). s = max(oversample, 1). */
int psf_detector_sample_offset(const psf_detector *d, int npix);

/* Detector pixel (i, j) from the convolved grid image (row-major npix x
 * npix) for s > 0, offset off (psf_detector_sample_offset) and block
 * (1: d->blocks with pixel_response and s > 1): the sum of the s x s block
 * from (i s + off, j s + off), rows outer, in float (WebbPSF's binning);
 * else s^2 grid[(i s + off) npix + j s + off]. The CPU stage, the host's
 * "both" and the GPU's sampling kernel run this code: the same bits. */
PSF_HD float psf_detector_sample_at(const float *grid, int npix, int s, int off, int block, int i,
                                    int j)
{
    const float *p = grid + (size_t)(i * s + off) * npix + (size_t)(j * s + off);
    if (!block) return (float)s * (float)s * p[0];
    float sum = 0.0f;
    for (int a = 0; a < s; ++a)
        for (int b = 0; b < s; ++b)
            sum += p[(size_t)a * npix + b];
    return sum;
}

/* 1 when detector pixels are WebbPSF's block sums (psf_detector_sample_at's
 * block): d->blocks with pixel_response at s > 1. */
int psf_detector_bins(const psf_detector *d);

/* The detector image from the convolved grid image (row-major npix x
 * npix): out[i M + j] = psf_detector_sample_at(grid, npix, s, o, bins,
 * i, j), M = npix / s, o = psf_detector_sample_offset, bins =
 * psf_detector_bins. */
void psf_detector_sample(const psf_detector *d, const float *grid, int npix, float *out);

/* The fold (the GPU's path when it samples at s > 1): the detector image's
 * M x (M/2+1) half spectrum Z straight from the grid image's N x (N/2+1)
 * one X (R2C, unnormalised), so that one small M x M C2R of Z is D.
 * Derivation: with Y = X T (T = psf_detector_otf, 1/N^2 in it) the convolved
 * grid is G[n1][n2] = sum_k Y[k1][k2] e^{+2 pi i (k1 n1 + k2 n2)/N} (the
 * C2R). Per axis write k = p + M q (0 <= p < M, 0 <= q < s); as k s / N =
 * p / M + q, e^{2 pi i k (x s + o)/N} = e^{2 pi i p x/M} e^{2 pi i k o/N} for
 * a detector index x, so D[x1][x2] = s^2 G[x1 s + o][x2 s + o] =
 * sum_{p1,p2} Z[p1][p2] e^{+2 pi i (p1 x1 + p2 x2)/M} (the M x M C2R) with
 * Z[p1][p2] = s^2 sum_{q1,q2} Y[p1 + M q1][p2 + M q2] ph[k1] ph[k2],
 * ph[k] = e^{2 pi i k o/N}: the DFT of a decimated sequence is the sum of
 * the s aliased copies of its spectrum (the mean, 1/s, with both DFTs
 * normalised; Oppenheim & Schafer, Discrete-Time Signal Processing, 3rd ed.,
 * 4.6.1, downsampling), and the offset o is the shift theorem's phase.
 * Half-spectrum bookkeeping: the aliases k2 = p2 + M q2 cover [0, N) once;
 * those past the stored half (k2 > N/2) are conj(Y[(N - k1) % N][N - k2])
 * (a real image's DFT is Hermitian), the Nyquist row and column (k = N/2,
 * even N) are one stored copy each, used once; Z is then Hermitian itself,
 * so p2 <= M/2 is all the C2R takes (its Nyquist column p2 = M/2, even M,
 * included). The multiply is the stage's own, in float. */

/* WebbPSF's blocks (psf_detector_bins) are the same fold of a table with
 * the block's sum in it: G = IFFT(FFT(I) T B) with, per axis, B(k) =
 * (1/s) sum_{m < s} e^{+2 pi i k m/N} (the DFT of the block's mean, taken
 * forwards from each sample: G[n] = mean of I's samples n .. n + s - 1,
 * exactly, a real sequence's DFT, so B is Hermitian) and D = s^2 G[i s][j s],
 * o = 0: the block's sum. psf_detector_fold_otf is that table. */

/* The table the fold multiplies by: psf_detector_otf's T, times B(k_y)
 * B(k_x) when psf_detector_bins (computed in double, stored as float; the
 * same layout). */
void psf_detector_fold_otf(const psf_detector *d, int npix, float *otf);

/* The fold's phase table for npix: phase[2 k], phase[2 k + 1] = cos,
 * sin of 2 pi k o / npix for k < npix, o = psf_detector_sample_offset
 * (computed in double, k o reduced mod npix first; stored as float). Not
 * needed (all 1) when o = 0 (even M, or WebbPSF's blocks). */
void psf_detector_fold_phase(const psf_detector *d, int npix, float *phase);

/* (re, im) times the unit complex ph[0] + i ph[1], in float. */
PSF_HD void psf_detector_rotate(float *re, float *im, const float *ph)
{
    float t = *re * ph[0] - *im * ph[1];
    *im = *re * ph[1] + *im * ph[0];
    *re = t;
}

/* A packed pair's separation at frequency (k1, k2), 0 <= k1, k2 < npix:
 * zspec the full npix x npix forward C2C spectrum Z (unnormalised, complex
 * interleaved, row-major) of z = g1 + i g2 for two real images g1, g2;
 * x[0], x[1] = X1(k) = (Z(k) + conj Z(-k)) / 2 and x[2], x[3] = X2(k) =
 * (Z(k) - conj Z(-k)) / (2 i), -k taken mod npix on both axes: the two
 * images' own DFTs there, as their R2C's (each is Hermitian; Press et al.,
 * Numerical Recipes, 3rd ed., 12.3, FFT of two real functions
 * simultaneously). The halves are exact in float. */
PSF_HD void psf_detector_unpack_at(const float *zspec, int npix, int k1, int k2, float *x)
{
    size_t i = (size_t)k1 * npix + k2;
    size_t j = (size_t)(k1 ? npix - k1 : 0) * npix + (size_t)(k2 ? npix - k2 : 0);
    float zr = zspec[2 * i], zi = zspec[2 * i + 1], wr = zspec[2 * j], wi = zspec[2 * j + 1];
    x[0] = 0.5f * (zr + wr);
    x[1] = 0.5f * (zi - wi);
    x[2] = 0.5f * (zi + wi);
    x[3] = 0.5f * (wr - zr);
}

/* The fold at (p1, p2) of PAIR + 1 images: PAIR = 0, spec the half
 * spectrum X of one image, z[0..1]; PAIR = 1, spec a packed pair's full
 * spectrum (psf_detector_unpack_at), z[0..3] the two images' values. Each
 * alias's X at its stored half-spectrum index (k1, k2), or (-k1, -k2)
 * conjugated past the half, times the table there: the same float
 * operations for both. Callers pass PAIR as a constant (inlined away). */
PSF_HD void psf_detector_fold_core(const float *spec, int pair, const float *otf,
                                   const float *phase, int npix, int s, int p1, int p2, float *z)
{
    int m = npix / s, nc = npix / 2 + 1, nimg = pair ? 2 : 1;
    float re[2] = {0.0f, 0.0f}, im[2] = {0.0f, 0.0f};
    for (int q1 = 0; q1 < s; ++q1) {
        int k1 = p1 + m * q1, k1n = k1 ? npix - k1 : 0;
        float ar[2] = {0.0f, 0.0f}, ai[2] = {0.0f, 0.0f};
        for (int q2 = 0; q2 < s; ++q2) {
            int k2 = p2 + m * q2, stored = k2 < nc;
            int j1 = stored ? k1 : k1n, j2 = stored ? k2 : npix - k2;
            size_t i = (size_t)j1 * nc + j2;
            float x[4];
            if (pair) {
                psf_detector_unpack_at(spec, npix, j1, j2, x);
            } else {
                x[0] = spec[2 * i];
                x[1] = spec[2 * i + 1];
            }
            float c = otf[2 * i], e = otf[2 * i + 1];
            for (int h = 0; h < nimg; ++h) {
                float a = x[2 * h], b = x[2 * h + 1];
                float yr = a * c - b * e, yi = a * e + b * c;
                if (!stored) yi = -yi;
                if (phase) psf_detector_rotate(&yr, &yi, phase + 2 * k2);
                ar[h] += yr;
                ai[h] += yi;
            }
        }
        for (int h = 0; h < nimg; ++h) {
            if (phase) psf_detector_rotate(&ar[h], &ai[h], phase + 2 * k1);
            re[h] += ar[h];
            im[h] += ai[h];
        }
    }
    float s2 = (float)s * (float)s;
    for (int h = 0; h < nimg; ++h) {
        z[2 * h] = s2 * re[h];
        z[2 * h + 1] = s2 * im[h];
    }
}

/* Z[p1][p2] of the fold into z[0], z[1] (re, im): spec and otf the grid's
 * half spectrum X and the table T, complex interleaved [npix (npix/2+1)];
 * phase psf_detector_fold_phase's table, or NULL for o = 0; 0 <= p1 < M,
 * 0 <= p2 <= M/2, M = npix / s. At s = 1 it is the multiply (Z = X T).
 * The GPU's fold kernel runs this code. */
PSF_HD void psf_detector_fold_at(const float *spec, const float *otf, const float *phase, int npix,
                                 int s, int p1, int p2, float *z)
{
    psf_detector_fold_core(spec, 0, otf, phase, npix, s, p1, p2, z);
}

/* The same for a packed pair (the GPU's packed path): zspec the pair's
 * full npix x npix C2C spectrum (psf_detector_unpack_at); z[0], z[1] image
 * 1's Z[p1][p2], z[2], z[3] image 2's, each equal to psf_detector_fold_at
 * of that image's R2C spectrum up to the FFTs' rounding. */
PSF_HD void psf_detector_fold_pair_at(const float *zspec, const float *otf, const float *phase,
                                      int npix, int s, int p1, int p2, float *z)
{
    psf_detector_fold_core(zspec, 1, otf, phase, npix, s, p1, p2, z);
}

/* The whole fold of one image on the host: z [M (M/2+1)] complex
 * interleaved, from spec, otf and phase as psf_detector_fold_at's. */
void psf_detector_fold(const float *spec, const float *otf, const float *phase, int npix, int s,
                       float *z);

/* The fold of a packed pair on the host: zspec the pair's full C2C
 * spectrum, z1 and z2 [M (M/2+1)] complex interleaved the two images' Z
 * (psf_detector_fold_pair_at). */
void psf_detector_fold_pair(const float *zspec, const float *otf, const float *phase, int npix,
                            int s, float *z1, float *z2);

#endif
