/* SPDX-License-Identifier: BSD-3-Clause */
/* Zernike index conventions <-> (n, m). Sources: Noll, JOSA 66, 207 (1976),
 * table 1 (modes ordered by n, then |m|; even j the cos term, odd j the sin
 * term); ANSI Z80.28-2004 (j = (n (n + 2) + m) / 2); University of Arizona
 * Fringe order (Wyant & Creath, Applied Optics and Optical Engineering XI,
 * 1992, ch. 1): j = (1 + (n + |m|)/2)^2 - 2|m| + (m < 0). That formula
 * matches the classic 37-term Fringe set for j <= 36 only: OpticStudio's
 * Z37 is (12, 0), which is j = 49 here, while j = 37 here is (6, 6) (the
 * ordering prysm's 49-term Fringe set uses). */
#include "optics/zernike.h"

#include <math.h>

static int valid_nm(int n, int m)
{
    int am = m < 0 ? -m : m;
    return n >= 0 && n <= ZERNIKE_MAX_ORDER && am <= n && ((n - am) & 1) == 0;
}

int zernike_noll_to_nm(int j, int *n, int *m)
{
    if (j < 1) return -1;
    int nn = 0;
    /* Row nn holds j = nn (nn + 1)/2 + 1 ... (nn + 1)(nn + 2)/2. */
    while ((long long)(nn + 1) * (nn + 2) / 2 < j) {
        if (++nn > ZERNIKE_MAX_ORDER) return -1;
    }
    int p = j - nn * (nn + 1) / 2 - 1; /* position in the row, from 0 */
    /* |m| runs 0, 2, 2, 4, 4, ... (n even) or 1, 1, 3, 3, ... (n odd). */
    int am = (nn & 1) ? 2 * (p / 2) + 1 : 2 * ((p + 1) / 2);
    *n = nn;
    *m = am == 0 ? 0 : ((j & 1) ? -am : am);
    return 0;
}

int zernike_nm_to_noll(int n, int m)
{
    if (!valid_nm(n, m)) return -1;
    int j0 = n * (n + 1) / 2 + 1; /* first j of row n */
    if (m == 0) return j0;
    int am = m < 0 ? -m : m;
    int ja = j0 + am - 1; /* the row's two j for |m|: ja and ja + 1 */
    int want_even = m > 0;
    return ((ja & 1) == 0) == want_even ? ja : ja + 1;
}

int zernike_ansi_to_nm(int j, int *n, int *m)
{
    if (j < 0) return -1;
    int nn = 0;
    while ((long long)(nn + 1) * (nn + 2) / 2 <= j) {
        if (++nn > ZERNIKE_MAX_ORDER) return -1;
    }
    *n = nn;
    *m = 2 * j - nn * (nn + 2);
    return 0;
}

int zernike_nm_to_ansi(int n, int m)
{
    if (!valid_nm(n, m)) return -1;
    return (n * (n + 2) + m) / 2;
}

int zernike_fringe_to_nm(int j, int *n, int *m)
{
    if (j < 1) return -1;
    /* d = (n + |m|)/2 is the smallest d with (d + 1)^2 >= j. */
    long long d = (long long)sqrt((double)j) - 1;
    if (d < 0) d = 0;
    while ((d + 1) * (d + 1) < j)
        ++d;
    while (d > 0 && d * d >= j)
        --d;
    long long r = (d + 1) * (d + 1) - j; /* 2|m| - (m < 0), in 0 .. 2d */
    long long am = (r + 1) / 2;
    long long nn = 2 * d - am;
    if (nn > ZERNIKE_MAX_ORDER) return -1;
    *n = (int)nn;
    *m = (r & 1) ? -(int)am : (int)am;
    return 0;
}

int zernike_nm_to_fringe(int n, int m)
{
    if (!valid_nm(n, m)) return -1;
    int am = m < 0 ? -m : m;
    int b = 1 + (n + am) / 2;
    return b * b - 2 * am + (m < 0 ? 1 : 0);
}

int zernike_index_to_nm(zernike_convention conv, int j, int *n, int *m)
{
    switch (conv) {
    case ZCONV_NOLL:
        return zernike_noll_to_nm(j, n, m);
    case ZCONV_ANSI:
        return zernike_ansi_to_nm(j, n, m);
    case ZCONV_FRINGE:
        return zernike_fringe_to_nm(j, n, m);
    }
    return -1;
}

int zernike_nm_to_index(zernike_convention conv, int n, int m)
{
    switch (conv) {
    case ZCONV_NOLL:
        return zernike_nm_to_noll(n, m);
    case ZCONV_ANSI:
        return zernike_nm_to_ansi(n, m);
    case ZCONV_FRINGE:
        return zernike_nm_to_fringe(n, m);
    }
    return -1;
}
