/* SPDX-License-Identifier: BSD-3-Clause */
/* csv_exact (app/output/csv_exact.h): the shortest of %.15g, %.16g, %.17g that
 * reads back as v, byte for byte what printing each and reading it back
 * with strtod gives, at a fraction of its cost: a random set's manifest has
 * one such cell per label term per image (12 million for a million images
 * of 12 terms), and three printf/strtod pairs per cell were most of the
 * host's time per image (bench/RESULTS.md, run 9). */
#include "app/output/csv_exact.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIDE 20 /* significant digits converted once, rounded to 15 and 16 */

/* v's decimal significand, digits d[0..WIDE) (d[0] != '0'), times 10^x;
 * exact: the digits are v's own, cut (not rounded) after WIDE, and sticky
 * says whether anything non-zero was cut; else they are printf's, rounded. */
typedef struct {
    char d[WIDE];
    int x, neg, exact, sticky;
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
static void printf_digits(double v, decimal *o)
{
    char b[48];
    snprintf(b, sizeof b, "%.*e", WIDE - 1, v); /* [-]d.ddd...de[+-]XX */
    const char *p = b;
    o->neg = *p == '-';
    p += o->neg;
    o->d[0] = p[0];
    memcpy(o->d + 1, p + 2, WIDE - 1);
    o->x = atoi(p + 2 + WIDE - 1 + 1);
    o->exact = o->sticky = 0;
}

#ifdef __SIZEOF_INT128__
/* v's digits exactly, in integers: |v| = m 2^q (m < 2^53), so
 * floor(|v| 10^k) = (m 5^k) >> -(q + k), with m 5^k < 2^128 for k <= 32.
 * k puts 20 to 22 digits before the point. 0, or -1 when |v| is outside
 * about 1e-12 .. 1e5 (the caller then asks printf). */
static int integer_digits(double v, decimal *o)
{
    int e;
    double f = frexp(fabs(v), &e); /* |v| = f 2^e, f in [0.5, 1) */
    unsigned long long m = (unsigned long long)ldexp(f, 53);
    int q = e - 53, k = 20 - (int)floor(log10(fabs(v)));
    int s = -(q + k);
    if (k < 0 || k > 32 || s < 0 || s >= 128) return -1;
    unsigned __int128 p5 = 1;
    for (int i = 0; i < k; ++i)
        p5 *= 5;
    unsigned __int128 t = (unsigned __int128)m * p5, n = t >> s;
    o->sticky = (t & (((unsigned __int128)1 << s) - 1)) != 0;
    /* n < 10^22: its digits as two halves of 11, in 64-bit arithmetic */
    const unsigned long long half = 100000000000ULL;
    unsigned long long hi = (unsigned long long)(n / half), lo = (unsigned long long)(n % half);
    char b[24];
    for (int i = 10; i >= 0; --i, lo /= 10)
        b[11 + i] = (char)('0' + lo % 10);
    for (int i = 10; i >= 0; --i, hi /= 10)
        b[i] = (char)('0' + hi % 10);
    int lead = 0;
    while (lead < 22 && b[lead] == '0')
        ++lead;
    int nd = 22 - lead;
    if (nd < WIDE) return -1; /* not reached: k gives 20 digits or more */
    memcpy(o->d, b + lead, WIDE);
    for (int i = lead + WIDE; i < 22; ++i)
        o->sticky |= b[i] != '0';
    o->x = nd - 1 - k;
    o->neg = v < 0;
    o->exact = 1;
    return 0;
}
#else
static int integer_digits(double v, decimal *o)
{
    (void)v;
    (void)o;
    return -1;
}
#endif

/* The first n digits of a, rounded to nearest as printf rounds v itself.
 * Exact digits: up when the tail is over half (digits, then sticky); a tie
 * (half exactly) returns -1. printf's digits: a tail of exactly 5000... may
 * have come from either side of the half-way point (or from it), which WIDE
 * digits cannot tell: -1 then; otherwise rounding a correctly rounded
 * WIDE-digit value is the same as rounding v (the half-way point has a
 * WIDE-digit form, and rounding is monotonic). */
static int round_to(const decimal *a, int n, decimal *r)
{
    *r = *a;
    int up = a->d[n] > '5';
    if (a->d[n] == '5') {
        up = a->exact && a->sticky;
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
        int x = abs(r->x);
        b[at++] = 'e';
        b[at++] = r->x < 0 ? '-' : '+';
        if (x >= 100) b[at++] = (char)('0' + x / 100);
        b[at++] = (char)('0' + x / 10 % 10);
        b[at++] = (char)('0' + x % 10);
        b[at] = '\0';
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
    memcpy(out, b, at + 1 <= outlen ? at + 1 : 0); /* at most 24 characters; outlen >= 32 */
}

/* Whether the n-digit decimal r (n <= 16), formatted as out, reads back as
 * v, i.e. lies strictly within half the spacing of doubles about v. An
 * integer significand below 2^53 times or over a power of ten up to 10^22
 * is one correctly rounded operation on exact doubles (Clinger 1990, "How
 * to read floating point numbers accurately", the fast path): the value
 * strtod gives. With a 64-bit long double the significand (< 10^16) and
 * 10^|e| up to 10^27 are exact and so are v's half-way points: one rounding
 * keeps the decimal's side of each (rounding is monotonic), and only a
 * quotient landing on one, or v a power of two (its lower spacing is half),
 * leaves it to strtod. */
static int reads_back(const decimal *r, int n, const char *out, double v)
{
    static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    unsigned long long m = 0;
    for (int i = 0; i < n; ++i)
        m = 10 * m + (unsigned long long)(r->d[i] - '0');
    int e = r->x - (n - 1);
    if (FLT_EVAL_METHOD == 0 && m <= (1ULL << 53) && e >= -22 && e <= 22) {
        double a = e >= 0 ? (double)m * p10[e] : (double)m / p10[-e];
        return (r->neg ? -a : a) == v;
    }
#if LDBL_MANT_DIG >= 64
    int ex;
    if (e >= -27 && e <= 27 && frexp(fabs(v), &ex) != 0.5) {
        long double p = 1;
        for (int i = 0; i < (e < 0 ? -e : e); ++i)
            p *= 10;
        long double c = e >= 0 ? (long double)m * p : (long double)m / p;
        long double h = ldexpl(1.0L, ex - 54), av = fabsl((long double)v);
        if (c > av - h && c < av + h) return 1;
        if (c < av - h || c > av + h) return 0;
    }
#endif
    return strtod(out, NULL) == v;
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
    if (integer_digits(v, &a) != 0) printf_digits(v, &a);
    for (int n = 15; n <= 17; ++n) {
        if (round_to(&a, n, &r) != 0) { /* a tie to tell apart: the exact method */
            exact_slow(out, outlen, v);
            return;
        }
        format_g(&r, n, out, outlen);
        if (n == 17 || reads_back(&r, n, out, v)) return; /* 17 digits always read back */
    }
}

void csv_fixed3(char *out, size_t outlen, double v)
{
#ifdef __SIZEOF_INT128__
    /* v = m 2^-s (s in 13 .. 127 here): v 1000 = m 1000 2^-s, cut after s
     * bits, rounded half to even as printf rounds in the default mode */
    int e;
    double f = frexp(v, &e);
    int s = 53 - e;
    if (v > 0 && v < 0x1p40 && s < 128 && outlen >= 24) {
        unsigned __int128 t = (unsigned __int128)(unsigned long long)ldexp(f, 53) * 1000U;
        unsigned __int128 half = (unsigned __int128)1 << (s - 1), rem = t & ((half << 1) - 1);
        unsigned long long n = (unsigned long long)(t >> s);
        n += rem > half || (rem == half && (n & 1));
        snprintf(out, outlen, "%llu.%03llu", n / 1000, n % 1000);
        return;
    }
#endif
    snprintf(out, outlen, "%.3f", v);
}
