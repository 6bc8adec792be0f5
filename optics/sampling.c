/* SPDX-License-Identifier: BSD-3-Clause */
/* Sampling math (docs/design.md, "Sampling"; Goodman, Introduction to Fourier
 * Optics, 3rd ed., sec. 4.2 and 5.3: the focal plane is the pupil's Fourier
 * transform scaled by lambda f, so an N-point DFT of pitch dx has frequency
 * pitch 1 / (N dx), i.e. an angle lambda / (N dx)). */
#include "optics/sampling.h"

#include <math.h>
#include <stdio.h>

/* Largest FFT size accepted: N^2 complex floats must stay addressable with
 * int-sized row arithmetic elsewhere (65536^2 = 2^32 elements). */
#define SAMPLING_MAX_NPIX 65536

#define ARCSEC_PER_RAD 206264.80624709636

static int fail(char *err, size_t errlen, const char *msg, double got)
{
    if (err && errlen) snprintf(err, errlen, "%s (got %g)", msg, got);
    return -1;
}

int sampling_init(int pupil_samples, double padding, double diameter_m, psf_sampling *s, char *err,
                  size_t errlen)
{
    if (pupil_samples < 8)
        return fail(err, errlen, "sampling: pupil_samples must be >= 8", pupil_samples);
    if (!(padding >= 1.0) || !isfinite(padding))
        return fail(err, errlen, "sampling: padding must be a finite number >= 1", padding);
    if (!(diameter_m > 0.0) || !isfinite(diameter_m))
        return fail(err, errlen, "aperture: diameter_m must be > 0", diameter_m);
    double nf = floor(padding * pupil_samples + 0.5);
    if (nf > SAMPLING_MAX_NPIX)
        return fail(err, errlen, "sampling: FFT size N = padding * pupil_samples exceeds 65536",
                    nf);
    s->pupil_samples = pupil_samples;
    s->npix = (int)nf;
    s->padding = nf / pupil_samples;
    s->diameter_m = diameter_m;
    s->dx_m = diameter_m / pupil_samples;
    return 0;
}

double sampling_pixscale_lambda_d(const psf_sampling *s)
{
    return (double)s->pupil_samples / s->npix;
}

double sampling_pixscale_rad(const psf_sampling *s, double wavelength_m)
{
    return wavelength_m / (s->npix * s->dx_m);
}

double sampling_pixscale_arcsec(const psf_sampling *s, double wavelength_m)
{
    return sampling_pixscale_rad(s, wavelength_m) * ARCSEC_PER_RAD;
}

double sampling_pixscale_um(const psf_sampling *s, double wavelength_m, double f_number)
{
    return sampling_pixscale_lambda_d(s) * wavelength_m * 1e6 * f_number;
}

int sampling_is_fast_size(int npix)
{
    if (npix < 1) return 0;
    static const int primes[4] = {2, 3, 5, 7};
    for (int k = 0; k < 4; ++k)
        while (npix % primes[k] == 0)
            npix /= primes[k];
    return npix == 1;
}
