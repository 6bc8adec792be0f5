/* SPDX-License-Identifier: BSD-3-Clause */
/* csv_exact (app/output/csv_exact.h) gives, byte for byte, what its definition
 * gives: the first of %.15g, %.16g, %.17g that strtod reads back as v.
 * Checked on about two million doubles: random bit patterns (every exponent,
 * subnormals), sums of normal draws as a random set's labels are, short
 * decimals (k / 10^n, whose 17-digit forms end in 000 or 999), halves
 * (ties at 15 and 16 digits), integers about 2^53, and the special values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/output/csv_exact.h"

/* The definition (docs/config.md, the manifest's z<j> cells). */
static void by_definition(char *out, size_t outlen, double v)
{
    if (isnan(v)) {
        out[0] = '\0';
        return;
    }
    for (int digits = 15; digits <= 17; ++digits) {
        snprintf(out, outlen, "%.*g", digits, v);
        if (strtod(out, NULL) == v) return;
    }
}

static long long g_checked;

static void check(double v)
{
    char want[48], got[48];
    by_definition(want, sizeof want, v);
    memset(got, 'x', sizeof got);
    csv_exact(got, sizeof got, v);
    if (strcmp(want, got) != 0) fail_msg("%a: want \"%s\", got \"%s\"", v, want, got);
    g_checked++;
}

/* xorshift64*: a fixed, fast stream of test inputs. */
static uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static double uniform(uint64_t *s)
{
    return (double)(next(s) >> 11) * 0x1p-53;
}

static void test_bit_patterns(void **state)
{
    (void)state;
    uint64_t s = 88172645463325252ULL;
    for (int i = 0; i < 300000; ++i) {
        uint64_t b = next(&s);
        double v;
        memcpy(&v, &b, sizeof v);
        check(v);
    }
}

static void test_label_like(void **state)
{
    (void)state;
    uint64_t s = 1234567ULL;
    for (int i = 0; i < 300000; ++i) {
        /* Box-Muller normal times sigma 0.05, as sweep.random draws them */
        double u1 = uniform(&s) + 0x1p-60, u2 = uniform(&s);
        double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
        check(0.05 * z);
        check(z * pow(10, (int)(next(&s) % 41) - 20));
    }
}

static void test_short_decimals(void **state)
{
    (void)state;
    for (int n = -25; n <= 25; ++n)
        for (long long k = -3000; k <= 3000; ++k) {
            check((double)k * pow(10, n));
            check((double)k / pow(10, -n));
        }
    /* halves at 15 and 16 digits: ties printf breaks to even */
    for (long long k = 0; k < 20000; ++k) {
        check((double)(100000000000000LL + k) + 0.5);
        check((double)(1000000000000000LL + k) + 0.5);
        check(((double)(100000000000000LL + k) + 0.5) * 1e-10);
    }
    for (long long m = (1LL << 53) - 5000; m <= (1LL << 53) + 5000; ++m)
        check((double)m);
}

static void test_specials(void **state)
{
    (void)state;
    const double v[] = {0.0,
                        -0.0,
                        1.0,
                        -1.0,
                        0.1,
                        1e-5,
                        1e-4,
                        9.999e-5,
                        1e15,
                        1e16,
                        1e17,
                        1e22,
                        1e23,
                        DBL_MAX,
                        DBL_MIN,
                        -DBL_MIN,
                        5e-324,
                        INFINITY,
                        -INFINITY,
                        0.5,
                        9.5,
                        99999999999999.95,
                        999999999999999.5,
                        0.099999999999999995};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i)
        check(v[i]);
    char out[32] = "x";
    csv_exact(out, sizeof out, NAN);
    assert_string_equal(out, "");
    print_message("%lld doubles checked\n", g_checked);
}

static void check3(double v)
{
    char want[64], got[64];
    snprintf(want, sizeof want, "%.3f", v);
    csv_fixed3(got, sizeof got, v);
    if (strcmp(want, got) != 0) fail_msg("%a: want \"%s\", got \"%s\"", v, want, got);
}

/* csv_fixed3 is %.3f: timings as they come, halves of a thousandth (exact
 * ties, to even), thousandths, the ends of its integer range and beyond. */
static void test_fixed3(void **state)
{
    (void)state;
    uint64_t s = 42ULL;
    for (int i = 0; i < 300000; ++i) {
        check3(uniform(&s) * 1e5);
        check3(uniform(&s) * pow(10, (int)(next(&s) % 30) - 15));
    }
    for (long long k = 0; k < 600000; ++k)
        check3((double)k / 2048.0); /* multiples of 2^-11: ties at 0.0005 among them */
    for (long long k = 0; k < 100000; ++k) {
        check3((double)k / 1000.0);
        check3((double)k + 0.0005);
    }
    const double v[] = {0.0,    -0.0,       -1.5,      0.0005,   0.0015,   0.0025,
                        0x1p40, 0x1p40 - 1, 0x1p-120,  0x1p-127, 0x1p-140, 1e300,
                        5e-324, INFINITY,   -INFINITY, NAN,      999.9995, 1e12 + 0.25};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i)
        check3(v[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bit_patterns),   cmocka_unit_test(test_label_like),
        cmocka_unit_test(test_short_decimals), cmocka_unit_test(test_specials),
        cmocka_unit_test(test_fixed3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
