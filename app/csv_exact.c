/* SPDX-License-Identifier: BSD-3-Clause */
/* csv_exact (app/manifest.h): the shortest of %.15g, %.16g, %.17g that
 * reads back as v, byte for byte what printing each and reading it back
 * with strtod gives, at a fraction of its cost: a random set's manifest has
 * one such cell per label term per image (12 million for a million images
 * of 12 terms), and three printf/strtod pairs per cell were most of the
 * host's time per image (bench/RESULTS.md, run 9). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/manifest.h"

#define WIDE 20 /* significant digits converted once, rounded to 15 and 16 */

/* v's decimal significand, digits d[0..WIDE) (d[0] != '0'), times 10^x. */
typedef struct {
    char d[WIDE];
    int x, neg;
} decimal;

/* The exact method: print with 15, 16, 17 digits, keep the first that strtod
 * reads back as v (glibc's printf and strtod are correctly rounded). */
static void exact_slow(char *out, size_t outlen, double v)
{
    for (int digits = 15; digits <= 17; ++digits) {
        snprintf(out, outlen, "%.*g", digits, v);
        if (strtod(out, NULL) == v) return;
    }
}

/* v (finite, non-zero) to WIDE correctly rounded digits (one printf). */
static void to_decimal(double v, decimal *o)
{
    char b[48];
    snprintf(b, sizeof b, "%.*e", WIDE - 1, v); /* [-]d.ddd...de[+-]XX */
    const char *p = b;
    o->neg = *p == '-';
    p += o->neg;
    o->d[0] = p[0];
    memcpy(o->d + 1, p + 2, WIDE - 1);
    o->x = atoi(p + 2 + WIDE - 1 + 1);
}

/* The first n digits of a, rounded to nearest as printf rounds v itself.
 * A tail of exactly 5000...: v may lie on either side of the half-way point
 * (or on it), which WIDE digits cannot tell: returns -1 then. Rounding a
 * correctly rounded WIDE-digit value is otherwise the same as rounding v
 * (the half-way point has a WIDE-digit form, and rounding is monotonic). */
static int round_to(const decimal *a, int n, decimal *r)
{
    *r = *a;
    int up = a->d[n] > '5';
    if (a->d[n] == '5') {
        up = 0;
        for (int i = n + 1; i < WIDE; ++i)
            up |= a->d[i] != '0';
        if (!up) return -1;
    }
    for (int i = n - 1; up && i >= 0; --i) {
        if (r->d[i] == '9') {
            r->d[i] = '0';
            continue;
        }
        r->d[i]++;
        up = 0;
    }
    if (up) { /* 999... became 1000...: one more decade */
        r->d[0] = '1';
        r->x++;
    }
    return 0;
}

/* %.<n>g of the n digits of r (C17 7.21.6.1: style e when x < -4 or x >= n,
 * trailing zeros and a bare point removed, at least two exponent digits). */
static void format_g(const decimal *r, int n, char *out, size_t outlen)
{
    int last = n - 1;
    while (last > 0 && r->d[last] == '0')
        --last;
    char b[64];
    size_t at = 0;
    if (r->neg) b[at++] = '-';
    if (r->x < -4 || r->x >= n) {
        b[at++] = r->d[0];
        if (last > 0) {
            b[at++] = '.';
            memcpy(b + at, r->d + 1, (size_t)last);
            at += (size_t)last;
        }
        snprintf(b + at, sizeof b - at, "e%c%02d", r->x < 0 ? '-' : '+', abs(r->x));
    } else if (r->x >= 0) {
        memcpy(b + at, r->d, (size_t)r->x + 1);
        at += (size_t)r->x + 1;
        if (last > r->x) {
            b[at++] = '.';
            memcpy(b + at, r->d + r->x + 1, (size_t)(last - r->x));
            at += (size_t)(last - r->x);
        }
        b[at] = '\0';
    } else {
        b[at++] = '0';
        b[at++] = '.';
        for (int i = 0; i < -r->x - 1; ++i)
            b[at++] = '0';
        memcpy(b + at, r->d, (size_t)last + 1);
        at += (size_t)last + 1;
        b[at] = '\0';
    }
    snprintf(out, outlen, "%s", b);
}

/* Whether the n-digit decimal r, formatted as out, reads back as v. An
 * integer significand below 2^53 times or over a power of ten up to 10^22
 * is one correctly rounded operation on exact doubles (Clinger 1990, "How
 * to read floating point numbers accurately", the fast path): the value
 * strtod gives. Otherwise strtod itself. */
static int reads_back(const decimal *r, int n, const char *out, double v)
{
    static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    long long m = 0;
    for (int i = 0; i < n; ++i)
        m = 10 * m + (r->d[i] - '0');
    int e = r->x - (n - 1);
    if (FLT_EVAL_METHOD != 0 || m > (1LL << 53) || e < -22 || e > 22) return strtod(out, NULL) == v;
    double a = e >= 0 ? (double)m * p10[e] : (double)m / p10[-e];
    return (r->neg ? -a : a) == v;
}

void csv_exact(char *out, size_t outlen, double v)
{
    if (isnan(v)) {
        out[0] = '\0';
        return;
    }
    if (v == 0 || isinf(v) || outlen < 32) {
        exact_slow(out, outlen, v);
        return;
    }
    decimal a, r;
    to_decimal(v, &a);
    for (int n = 15; n <= 17; ++n) {
        if (round_to(&a, n, &r) != 0) { /* a tie to tell apart: the exact method */
            exact_slow(out, outlen, v);
            return;
        }
        format_g(&r, n, out, outlen);
        if (n == 17 || reads_back(&r, n, out, v)) return; /* 17 digits always read back */
    }
}
