/* SPDX-License-Identifier: BSD-3-Clause */
/* Checks of an image set that computes but may not mean what its config
 * asks: warnings, each one line naming the config's file, line and key,
 * which the run logs (log_warn) and adds to the timing log's summary
 * (NAME_timing.csv, rows "warning"; docs/config.md). */
#ifndef PSFSIM_SET_CHECKS_H
#define PSFSIM_SET_CHECKS_H

#include "app/set/image_set_types.h"

#define SET_NOTES_MAX 8
#define SET_NOTE_LEN 640

typedef struct {
    int n;
    char text[SET_NOTES_MAX][SET_NOTE_LEN]; /* "FILE:LINE: KEY: MESSAGE", one line each */
} set_notes;

/* The warnings of set s (image_set_init done) into notes (zeroed first;
 * at most SET_NOTES_MAX, the rest dropped):
 *  - aberrations.units = "waves" (or an OPD map in waves) with non-zero
 *    terms in a set that spans wavelengths (sweep.wavelength_nm, or a
 *    broadband optics.wavelengths_nm): a coefficient in waves is the same
 *    phase at every wavelength, not the same optical path, so the
 *    aberration scales with the wavelength (docs/design.md, "Aberrations");
 *  - a wavefront step between neighbouring pupil samples that may exceed
 *    half a wave (the phase is undersampled: a tilt past the field wraps
 *    the PSF around). The step is bounded once per set, not measured per
 *    image: sum over the modes of G_t A_t 2 dx/D, A_t the largest |total
 *    coefficient| of mode t over the set (its term plus the largest |value|
 *    of each swept list and table column adding to it, focus shifts as
 *    their defocus), plus, for a random set, the largest over the draws
 *    made of sum_t G_t |x_t(d)| (the values drawn, recomputed from the
 *    seed; past 20,000,000 values 5 sigma or the half-width per term), G_t
 *    the largest |grad Z_t| over the unit disk
 *    (set_checks_zernike_max_gradient), plus the OPD map's largest step
 *    between map pixels scaled to the pupil pitch; each in waves at every
 *    wavelength and pitch the set computes (broadband FFT pitches dx
 *    lambda/lambda_min). A bound: it may warn for a sweep whose largest
 *    values never meet in one image, never misses a step;
 *  - Q = N/n < 2 (FFT): the intensity, whose spectrum is 2n wide, is
 *    undersampled; with the MFT a pixel coarser than lambda/(2D) at the
 *    shortest wavelength;
 *  - an FFT size N with a prime factor above 7 (slow FFTs; the next size
 *    of factors 2, 3, 5, 7 is named).
 * No I/O, no errors. */
void set_checks_warn(const image_set *s, set_notes *notes);

/* The largest |grad Z_n^m| over the unit disk (per unit rho) of the
 * unit-RMS Zernike term, on the rim: N_nm R_n^|m|'(1) = N_nm (n(n+2) -
 * m^2)/2, which is at least the tangential part |m| N_nm. The radial
 * derivative follows from R = (-1)^k rho^m P_k^(m,0)(1 - 2 rho^2), k =
 * (n - |m|)/2, with P_k^(a,b)'(x) = (k+a+b+1)/2 P_(k-1)^(a+1,b+1)(x) and
 * P_k^(a,b)(-1) = (-1)^k C(k+b, k) (DLMF 18.9.15, 18.6.1). That the rim
 * holds the maximum is checked numerically for n <= 12 by
 * tests/app/set/test_set_checks.c. Exposed for the tests. */
double set_checks_zernike_max_gradient(int n, int m);

/* The maps image_set_init loaded, before any work: a transmission map
 * that is 0 everywhere (a closed aperture; NaN pixels read as 0), an OPD
 * map that is 0 everywhere (a wrong file or scale), and the OPD map's
 * largest |value| (times scale) within CFG_MAX_WAVES waves at the set's
 * shortest wavelength (nm: CFG_MAX_WAVES wavelengths). Returns 0, or -1
 * with "FILE:LINE: KEY: PATH: ..." in err, KEY the map's file key (or
 * aberrations.opd_map.scale when it is written and makes the OPD 0 or too
 * large). */
int set_checks_maps(const image_set *s, char *err, size_t errlen);

#endif
