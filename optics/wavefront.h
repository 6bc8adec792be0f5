/* SPDX-License-Identifier: BSD-3-Clause */
/* Wavefront error W over the pupil: a sum of Zernike terms plus an optional
 * OPD map, and the pupil field A exp(+i 2 pi W / lambda) (docs/design.md,
 * "Aberrations" and "Propagation"). */
#ifndef PSFSIM_WAVEFRONT_H
#define PSFSIM_WAVEFRONT_H

#include <stddef.h>

/* A set of Zernike modes shared by every image of a set: n[k], m[k] for
 * k = 0..nterms-1 (m signed, see zernike.h). */
typedef struct {
    int nterms;
    const int *n;
    const int *m;
} psf_modes;

/* Focus shift to defocus: a detector shift dz_um at F-number f_number is a
 * peak-to-valley defocus W020 = dz / (8 F^2) (Born & Wolf, 7th ed., 9.2 and
 * Mahajan, Optical Imaging and Aberrations I, 2.3), i.e. a Noll 4 RMS of
 * W020 / (2 sqrt 3). Positive dz is the detector moved towards the pupil
 * (inside focus) in psfsim's exp(+i 2 pi W/lambda), forward-transform
 * convention (docs/design.md, "Aberrations"). Returns that RMS in micrometres
 * of wavefront (positive for positive dz), or NaN when f_number <= 0. */
double wavefront_focus_shift_to_z4_um(double dz_um, double f_number);

/* Fill w[N*N] (row-major, centred as in aperture.h) with the wavefront error
 * in waves: sum_k coeff_waves[k] Z_k(rho, theta), rho = r / (D/2), plus
 * opd[i] * opd_to_waves when opd is not NULL (opd: N*N, resampled). Samples with
 * rho > 1 get the polynomial value too (callers mask by the aperture). */
void wavefront_fill(const psf_modes *modes, const double *coeff_waves, int npix, double dx_m,
                    double diameter_m, const float *opd, double opd_to_waves, float *w);

/* Fill basis[nterms * N * N] with the modes themselves: plane k (at
 * k * N * N, row-major, centred as in aperture.h) is Z_{n[k]}^{m[k]} at
 * rho = r / (D/2), so that a backend computes each image's wavefront as
 * sum_k c_k plane_k without re-evaluating polynomials per image. */
void wavefront_fill_basis(const psf_modes *modes, int npix, double dx_m, double diameter_m,
                          float *basis);

/* Resample an OPD or transmission map (rows x cols, row-major, covering the
 * D x D square centred on the axis, row 0 at y = -D/2) onto the N x N pupil
 * grid of pitch dx_m by bilinear interpolation of the map's sample centres;
 * samples outside the square get 0. out is N*N, row-major, centred. */
void wavefront_resample_map(const float *map, int rows, int cols, double diameter_m, int npix,
                            double dx_m, float *out);

/* wavefront_resample_map of a map covering width_m x height_m centred on
 * the axis (map_bilinear_wh, optics/map_sample.h: a map placed at its pixel
 * scale); width = height = D is wavefront_resample_map. */
void wavefront_resample_map_wh(const float *map, int rows, int cols, double width_m,
                               double height_m, int npix, double dx_m, float *out);

#endif
