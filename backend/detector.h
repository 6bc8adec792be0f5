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

/* 1 when the detector stage convolves (some kernel is enabled). */
int psf_detector_convolves(const psf_detector *d);

/* 1 when run() does anything after the image: convolves or samples at s > 1. */
int psf_detector_active(const psf_detector *d);

/* The side of run()'s images: npix / s when sampled, else npix. */
int psf_detector_out_npix(const psf_problem *problem);

/* Check d for a grid of npix: s >= 1, npix % s == 0 when sampled, sigmas
 * finite and >= 0, the IPC kernel finite. Returns 0, or -1 with err. */
int psf_detector_check(const psf_detector *d, int npix, char *err, size_t errlen);

/* Bytes of psf_detector_otf's table for npix: 8 npix (npix / 2 + 1). */
size_t psf_detector_otf_bytes(int npix);

/* The transfer function of d's kernels, divided by npix^2 (the inverse
 * FFT's missing normalisation), on the real-to-complex layout of an
 * npix x npix image (FFTW's and cuFFT's): complex otf[2 (r (npix / 2 + 1)
 * + c)] (re, im) for row frequency index r (k_y = r, or r - npix above
 * npix / 2) and column c (k_x = c); u = k_x s / npix, v = k_y s / npix
 * cycles per detector pixel. Computed in double, stored as float. */
void psf_detector_otf(const psf_detector *d, int npix, float *otf);

/* The grid sample o of detector pixel 0's centre, so that detector pixel
 * M/2 is centred on the optical axis (grid sample npix/2): npix/2 - s (M/2),
 * M = npix / s; 0 for even M, below s. */
int psf_detector_sample_offset(int npix, int s);

/* The detector image from the convolved grid image (row-major npix x
 * npix): out[i M + j] = s^2 grid[(i s + o) npix + j s + o], M = npix / s,
 * o = psf_detector_sample_offset. */
void psf_detector_sample(const float *grid, int npix, int s, float *out);

#endif
