/* SPDX-License-Identifier: BSD-3-Clause */
/* PSF metrics on an N x N image (row-major, float, optical axis at (N/2, N/2)):
 * peak, Strehl ratio, encircled energy, FWHM (docs/design.md, "Normalisation and
 * metrics"; Mahajan, Optical Imaging and Aberrations II, ch. 1). */
#ifndef PSFSIM_METRICS_H
#define PSFSIM_METRICS_H

typedef struct {
    int row, col; /* location of the maximum, 0-based */
    double value; /* the maximum */
} psf_peak;

/* Location and value of the maximum (the first one in row-major order;
 * NaN pixels are never the maximum). */
psf_peak metrics_peak(const float *img, int npix);

/* Sum of all pixels, accumulated in double. */
double metrics_total(const float *img, int npix);

/* Fraction of the image total inside a circle of radius radius_px pixels
 * centred at (row_c, col_c) (pixel centres at integer coordinates); pixels
 * cut by the circle count by the fraction of their area inside it (16 x 16
 * sub-pixels). 0 when the total is 0 or radius_px <= 0. */
double metrics_encircled_energy(const float *img, int npix, double row_c, double col_c,
                                double radius_px);

/* Full width at half maximum in pixels, from the azimuthally averaged
 * profile about the peak (bins of 0.5 pixel, each at its pixels' mean
 * radius), with linear interpolation at the half level. -1 when the peak is
 * not positive, the profile never falls below half of it, or memory runs
 * out. */
double metrics_fwhm(const float *img, int npix);

/* Azimuthally averaged radial profile about (row_c, col_c) in bins of
 * bin_px pixels: profile[b] = mean of pixels with b*bin_px <= r < (b+1)*bin_px,
 * nbins entries (0 for an empty bin). Returns the number of non-empty bins,
 * or -1 when nbins < 1, bin_px <= 0 or memory runs out. */
int metrics_radial_profile(const float *img, int npix, double row_c, double col_c, double bin_px,
                           int nbins, double *profile);

#endif
