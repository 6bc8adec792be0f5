/* SPDX-License-Identifier: BSD-3-Clause */
/* Sampling: how the pupil grid and the PSF grid relate (docs/design.md, "Sampling").
 *
 * n = pupil_samples across the circumscribed diameter D, pupil pitch dx = D/n,
 * FFT size N = floor(padding * n + 0.5), PSF pixel = (n/N) lambda/D
 * = lambda/(N dx) radians = (n/N) lambda F# in the focal plane
 * (Goodman, Introduction to Fourier Optics, 3rd ed., sec. 4.2 and 5.3). */
#ifndef PSFSIM_SAMPLING_H
#define PSFSIM_SAMPLING_H

#include <stddef.h>

typedef struct {
    int pupil_samples; /* n, samples across D */
    int npix;          /* N, FFT and image size (N x N) */
    double padding;    /* effective Q = N / n */
    double diameter_m; /* D, circumscribed aperture diameter, metres */
    double dx_m;       /* pupil pitch D / n, metres */
} psf_sampling;

/* Fill *s from n (>= 8), padding (>= 1) and D (> 0, metres).
 * Returns 0, or -1 with a message in err when an argument is out of range
 * or N would exceed 65536. */
int sampling_init(int pupil_samples, double padding, double diameter_m, psf_sampling *s, char *err,
                  size_t errlen);

/* PSF pixel in lambda/D: n/N. */
double sampling_pixscale_lambda_d(const psf_sampling *s);
/* PSF pixel in radians at wavelength_m: lambda / (N dx). */
double sampling_pixscale_rad(const psf_sampling *s, double wavelength_m);
/* PSF pixel in arcseconds at wavelength_m. */
double sampling_pixscale_arcsec(const psf_sampling *s, double wavelength_m);
/* PSF pixel in micrometres in the focal plane at F-number f_number: (n/N) lambda F#. */
double sampling_pixscale_um(const psf_sampling *s, double wavelength_m, double f_number);
/* 1 when N's prime factors are only 2, 3, 5, 7 (FFT-friendly), else 0. */
int sampling_is_fast_size(int npix);

#endif
