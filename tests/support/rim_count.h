/* SPDX-License-Identifier: BSD-3-Clause */
/* Exact counts of the pupil samples binary edges open (docs/design.md,
 * "Aperture": a sample is open when its centre is inside, rims included),
 * for the rim tests of both backends (tests/optics/test_optics_rim.c,
 * tests/gpu/test_gpu_rim.c). Sample offsets (a, b) from the axis sample
 * are integers and the pupil pitch is D/n, so in units of half a pitch a
 * sample is the lattice point (2a, 2b) and the circle of diameter D has
 * radius n: everything below is integer arithmetic, or long double only
 * where sqrt(3) makes a tie impossible. */
#ifndef PSFSIM_RIM_COUNT_H
#define PSFSIM_RIM_COUNT_H

#include <math.h>

/* Samples with (2a)^2 + (2b)^2 <= m: for each a, |b| <= isqrt(floor((m -
 * 4a^2) / 4)). */
static inline long rim_count_disk(long m)
{
    long c = 0;
    for (long a = 0; 4 * a * a <= m; ++a) {
        long r = (m - 4 * a * a) / 4, b = (long)sqrt((double)r);
        while (b * b > r)
            --b;
        while ((b + 1) * (b + 1) <= r)
            ++b;
        c += (a == 0 ? 1 : 2) * (2 * b + 1);
    }
    return c;
}

/* Samples with (en)^2 <= (2a)^2 + (2b)^2 <= n^2, en2 = (e n)^2 given as an
 * integer (0: no obscuration). */
static inline long rim_count_circle(int n, long en2)
{
    return rim_count_disk((long)n * n) - (en2 > 0 ? rim_count_disk(en2 - 1) : 0);
}

/* Samples inside the hexagon of circumradius n (half pitches), vertices on
 * the x axis: |Y| <= n sqrt(3)/2 and |Y| <= sqrt(3) (n - |X|). Equality
 * needs sqrt(3) rational unless Y = 0, |X| = n (a vertex): decided exactly. */
static inline long rim_count_hexagon(int n)
{
    long c = 0;
    const long double s3 = sqrtl(3.0L);
    for (long a = -n; a <= n; ++a)
        for (long b = -n; b <= n; ++b) {
            long X = labs(2 * b), Y = labs(2 * a);
            if (Y == 0) {
                c += X <= n;
                continue;
            }
            c += (long double)Y <= s3 * 0.5L * n && (long double)Y <= s3 * (long double)(n - X);
        }
    return c;
}

#endif
