/* SPDX-License-Identifier: BSD-3-Clause */
/* Zernike polynomials, orthonormal over the unit disk (unit RMS), in the
 * Noll (1976, JOSA 66, 207), ANSI/OSA (Z80.28) and Fringe (University of
 * Arizona) index orders. m > 0 is the cos(m theta) term, m < 0 the
 * sin(|m| theta) term. Normalisation sqrt(2 (n + 1)) for m != 0 and
 * sqrt(n + 1) for m = 0 (Noll 1976, eq. 3). */
#ifndef PSFSIM_ZERNIKE_H
#define PSFSIM_ZERNIKE_H

#include "optics/psf_hd.h"

#include <math.h>

typedef enum { ZCONV_NOLL = 0, ZCONV_ANSI = 1, ZCONV_FRINGE = 2 } zernike_convention;

/* Index conversions. Return 0, or -1 when j is out of range (Noll/Fringe
 * j < 1, ANSI j < 0, or a radial order above ZERNIKE_MAX_ORDER). */
#define ZERNIKE_MAX_ORDER 100
int zernike_noll_to_nm(int j, int *n, int *m);
int zernike_ansi_to_nm(int j, int *n, int *m);
int zernike_fringe_to_nm(int j, int *n, int *m);
int zernike_index_to_nm(zernike_convention conv, int j, int *n, int *m);
/* Noll index of (n, m); -1 if (n, m) is not a valid pair. */
int zernike_nm_to_noll(int n, int m);
/* ANSI index (n (n + 2) + m) / 2 and Fringe index
 * (1 + (n + |m|)/2)^2 - 2|m| + (m < 0) of (n, m); -1 if (n, m) is not a
 * valid pair (n >= 0, |m| <= n, n - |m| even, n <= ZERNIKE_MAX_ORDER). */
int zernike_nm_to_ansi(int n, int m);
int zernike_nm_to_fringe(int n, int m);
/* Index of (n, m) in convention conv; -1 if invalid. */
int zernike_nm_to_index(zernike_convention conv, int n, int m);

/* Radial polynomial R_n^|m|(rho), 0 <= rho <= 1, through the Jacobi
 * polynomial relation R_n^m(rho) = (-1)^k rho^m P_k^(m,0)(1 - 2 rho^2),
 * k = (n - m)/2, and the Jacobi three-term recurrence (Abramowitz & Stegun
 * 22.7.1), which stays accurate to n = 100 where the explicit factorial sum
 * loses all digits past n ~ 40. Exact 0/1 at rho = 0, no NaN. */
PSF_HD double zernike_radial(int n, int m, double rho)
{
    if (m < 0) m = -m;
    if (n < m || ((n - m) & 1)) return 0.0;
    int k = (n - m) / 2;
    double x = 1.0 - 2.0 * rho * rho;
    double a = (double)m, p0 = 1.0, p1 = 0.5 * ((a + 2.0) * x + a);
    double p = (k == 0) ? p0 : p1;
    for (int i = 2; i <= k; ++i) {
        double c1 = 2.0 * i * (i + a) * (2.0 * i + a - 2.0);
        double c2 = (2.0 * i + a - 1.0) * (a * a);
        double c3 = (2.0 * i + a - 1.0) * (2.0 * i + a) * (2.0 * i + a - 2.0);
        double c4 = 2.0 * (i + a - 1.0) * (i - 1.0) * (2.0 * i + a);
        p = ((c2 + c3 * x) * p1 - c4 * p0) / c1;
        p0 = p1;
        p1 = p;
    }
    double rm = 1.0;
    for (int i = 0; i < m; ++i)
        rm *= rho;
    return ((k & 1) ? -1.0 : 1.0) * rm * p;
}

/* RMS-normalised Zernike Z_n^m at (rho, theta); theta from +x towards +y, radians. */
PSF_HD double zernike_eval(int n, int m, double rho, double theta)
{
    int am = m < 0 ? -m : m;
    double norm = (m == 0) ? sqrt((double)n + 1.0) : sqrt(2.0 * ((double)n + 1.0));
    double ang = (m == 0) ? 1.0 : (m > 0 ? cos(am * theta) : sin(am * theta));
    return norm * zernike_radial(n, am, rho) * ang;
}

/* sum_k coeff[k] Z_{n[k]}^{m[k]}(rho, theta) over nterms modes: the wavefront
 * at one pupil sample, in the coefficients' unit. Zero coefficients are
 * skipped (most sweeps set only a few modes). */
PSF_HD double zernike_sum(int nterms, const int *n, const int *m, const double *coeff, double rho,
                          double theta)
{
    double w = 0.0;
    for (int k = 0; k < nterms; ++k)
        if (coeff[k] != 0.0) w += coeff[k] * zernike_eval(n[k], m[k], rho, theta);
    return w;
}

#endif
