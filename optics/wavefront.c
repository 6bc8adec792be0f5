/* SPDX-License-Identifier: BSD-3-Clause */
/* Wavefront error over the pupil grid: Zernike sums, OPD maps, focus shift
 * (docs/design.md, "Aberrations"). The per-sample formulas (zernike.h,
 * map_sample.h) are the ones the GPU kernels use. */
#include "optics/wavefront.h"
#include "optics/map_sample.h"
#include "optics/zernike.h"

#include <math.h>

double wavefront_focus_shift_to_z4_um(double dz_um, double f_number)
{
    if (!(f_number > 0.0)) return NAN;
    double w020 = dz_um / (8.0 * f_number * f_number);
    return w020 / (2.0 * sqrt(3.0));
}

void wavefront_fill(const psf_modes *modes, const double *coeff_waves, int npix, double dx_m,
                    double diameter_m, const float *opd, double opd_to_waves, float *w)
{
    const int c = npix / 2;
    const double inv_r = 2.0 / diameter_m;
    const int nt = modes ? modes->nterms : 0;
    for (int i = 0; i < npix; ++i) {
        double y = (double)(i - c) * dx_m;
        for (int j = 0; j < npix; ++j) {
            double x = (double)(j - c) * dx_m;
            double rho = sqrt(x * x + y * y) * inv_r, theta = atan2(y, x);
            size_t k = (size_t)i * npix + j;
            double v = nt > 0 ? zernike_sum(nt, modes->n, modes->m, coeff_waves, rho, theta) : 0.0;
            if (opd) v += opd[k] * opd_to_waves;
            w[k] = (float)v;
        }
    }
}

void wavefront_fill_basis(const psf_modes *modes, int npix, double dx_m, double diameter_m,
                          float *basis)
{
    const int c = npix / 2;
    const double inv_r = 2.0 / diameter_m;
    const size_t plane = (size_t)npix * npix;
    for (int i = 0; i < npix; ++i) {
        double y = (double)(i - c) * dx_m;
        for (int j = 0; j < npix; ++j) {
            double x = (double)(j - c) * dx_m;
            double rho = sqrt(x * x + y * y) * inv_r, theta = atan2(y, x);
            size_t k = (size_t)i * npix + j;
            for (int t = 0; t < modes->nterms; ++t)
                basis[t * plane + k] = (float)zernike_eval(modes->n[t], modes->m[t], rho, theta);
        }
    }
}

void wavefront_resample_map_wh(const float *map, int rows, int cols, double width_m,
                               double height_m, int npix, double dx_m, float *out)
{
    const int c = npix / 2;
    for (int i = 0; i < npix; ++i) {
        double y = (double)(i - c) * dx_m;
        for (int j = 0; j < npix; ++j)
            out[(size_t)i * npix + j] =
                map_bilinear_wh(map, rows, cols, width_m, height_m, (double)(j - c) * dx_m, y);
    }
}

void wavefront_resample_map(const float *map, int rows, int cols, double diameter_m, int npix,
                            double dx_m, float *out)
{
    wavefront_resample_map_wh(map, rows, cols, diameter_m, diameter_m, npix, dx_m, out);
}
