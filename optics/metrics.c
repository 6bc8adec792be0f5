/* SPDX-License-Identifier: BSD-3-Clause */
/* PSF metrics (docs/design.md, "Normalisation and metrics"; Mahajan, Optical
 * Imaging and Aberrations II, ch. 1: encircled energy as the fraction of the
 * total power inside a circle about the centre, FWHM of the azimuthal
 * average). Pixel (i, j) covers [i - 0.5, i + 0.5] x [j - 0.5, j + 0.5]. */
#include "optics/metrics.h"

#include <math.h>
#include <stdlib.h>

/* Sub-pixels per side for pixels that the encircled-energy circle cuts:
 * 256 points per pixel put the area error near 1e-3 of one pixel. */
#define EE_SUB 16
/* Radial bin of the FWHM profile: half a pixel keeps the first ring (r = 1)
 * apart from the peak pixel and the bins' spread in radius small. */
#define FWHM_BIN 0.5

psf_peak metrics_peak(const float *img, int npix)
{
    psf_peak p = {0, 0, -INFINITY};
    size_t n = (size_t)npix * npix;
    size_t best = 0;
    for (size_t k = 0; k < n; ++k)
        if (img[k] > p.value) p.value = img[k], best = k;
    if (n == 0) p.value = 0.0;
    p.row = (int)(best / (size_t)npix);
    p.col = (int)(best % (size_t)npix);
    return p;
}

double metrics_total(const float *img, int npix)
{
    double s = 0.0;
    size_t n = (size_t)npix * npix;
    for (size_t k = 0; k < n; ++k)
        s += img[k];
    return s;
}

/* Fraction of the unit pixel centred (dy, dx) from the circle's centre that
 * lies inside radius r. */
static double pixel_fraction_in_circle(double dy, double dx, double r)
{
    double ay = fabs(dy), ax = fabs(dx);
    double ny = ay > 0.5 ? ay - 0.5 : 0.0, nx = ax > 0.5 ? ax - 0.5 : 0.0;
    if (ny * ny + nx * nx >= r * r) return 0.0;
    double fy = ay + 0.5, fx = ax + 0.5;
    if (fy * fy + fx * fx <= r * r) return 1.0;
    int in = 0;
    for (int a = 0; a < EE_SUB; ++a) {
        double y = dy + (a + 0.5) / EE_SUB - 0.5;
        for (int b = 0; b < EE_SUB; ++b) {
            double x = dx + (b + 0.5) / EE_SUB - 0.5;
            in += y * y + x * x <= r * r;
        }
    }
    return (double)in / (EE_SUB * EE_SUB);
}

double metrics_encircled_energy(const float *img, int npix, double row_c, double col_c,
                                double radius_px)
{
    double total = metrics_total(img, npix);
    if (!(total != 0.0) || !(radius_px > 0.0)) return 0.0;
    int i0 = (int)floor(row_c - radius_px - 1.0), i1 = (int)ceil(row_c + radius_px + 1.0);
    int j0 = (int)floor(col_c - radius_px - 1.0), j1 = (int)ceil(col_c + radius_px + 1.0);
    if (i0 < 0) i0 = 0;
    if (j0 < 0) j0 = 0;
    if (i1 > npix - 1) i1 = npix - 1;
    if (j1 > npix - 1) j1 = npix - 1;
    double in = 0.0;
    for (int i = i0; i <= i1; ++i)
        for (int j = j0; j <= j1; ++j) {
            double f = pixel_fraction_in_circle(i - row_c, j - col_c, radius_px);
            if (f > 0.0) in += f * img[(size_t)i * npix + j];
        }
    return in / total;
}

double metrics_fwhm(const float *img, int npix)
{
    psf_peak p = metrics_peak(img, npix);
    if (!(p.value > 0.0)) return -1.0;
    /* Mean value and mean radius per bin: interpolating between the bins'
     * mean radii, not their edges, removes the binning bias. */
    int nb = (int)(npix * 1.5 / FWHM_BIN) + 2;
    double *acc = calloc(3 * (size_t)nb, sizeof *acc);
    if (!acc) return -1.0;
    double *sv = acc, *sr = acc + nb, *cnt = acc + 2 * (size_t)nb;
    for (int i = 0; i < npix; ++i)
        for (int j = 0; j < npix; ++j) {
            double r = hypot(i - p.row, j - p.col);
            int b = (int)(r / FWHM_BIN);
            sv[b] += img[(size_t)i * npix + j], sr[b] += r, cnt[b] += 1.0;
        }
    double half = 0.5 * p.value, r_prev = 0.0, v_prev = p.value, fwhm = -1.0;
    for (int b = 1; b < nb; ++b) {
        if (cnt[b] == 0.0) continue;
        double r = sr[b] / cnt[b], v = sv[b] / cnt[b];
        if (v < half) {
            fwhm = 2.0 * (r_prev + (v_prev - half) / (v_prev - v) * (r - r_prev));
            break;
        }
        r_prev = r, v_prev = v;
    }
    free(acc);
    return fwhm;
}

int metrics_radial_profile(const float *img, int npix, double row_c, double col_c, double bin_px,
                           int nbins, double *profile)
{
    if (nbins < 1 || !(bin_px > 0.0)) return -1;
    long long *cnt = calloc((size_t)nbins, sizeof *cnt);
    if (!cnt) return -1;
    for (int b = 0; b < nbins; ++b)
        profile[b] = 0.0;
    for (int i = 0; i < npix; ++i)
        for (int j = 0; j < npix; ++j) {
            double r = hypot(i - row_c, j - col_c) / bin_px;
            if (r >= nbins) continue;
            int b = (int)r;
            profile[b] += img[(size_t)i * npix + j];
            cnt[b]++;
        }
    int filled = 0;
    for (int b = 0; b < nbins; ++b)
        if (cnt[b]) profile[b] /= (double)cnt[b], ++filled;
    free(cnt);
    return filled;
}
