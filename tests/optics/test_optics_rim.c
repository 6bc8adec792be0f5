/* SPDX-License-Identifier: BSD-3-Clause */
/* Binary edges on the CPU (aperture_fill): samples exactly on a rim are open
 * (docs/design.md, "Aperture") whatever the diameter's value. Deciding
 * x*x + y*y > R*R in metres with an inexact D/n closed some of them: 64 to
 * 178 of 509 even pupil sizes were off (n = 80, D = 1 m: 5017 open samples
 * instead of 5025). For every n from 2 to 1024 and D = 1, 8.2 and 0.3 m the
 * open count is the exact lattice count (tests/support/rim_count.h); the
 * GPU's twin is tests/gpu/test_gpu_rim.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "optics/aperture.h"
#include "tests/support/rim_count.h"

static const double diameters[] = {1.0, 8.2, 0.3};

/* Open samples of a on an npix grid of pitch D/n. */
static long open_count(const psf_aperture *a, int n, int npix, float *amp)
{
    char err[256];
    if (aperture_fill(a, npix, a->diameter_m / n, amp, err, sizeof err)) fail_msg("%s", err);
    long c = 0;
    for (size_t k = 0; k < (size_t)npix * npix; ++k)
        c += amp[k] > 0.0f;
    return c;
}

static psf_aperture binary(psf_aperture_shape shape, double d, double e)
{
    psf_aperture a = {.shape = shape, .diameter_m = d, .obscuration = e, .edge = EDGE_BINARY};
    return a;
}

/* The grid n + 2 holds the circle for either parity of n (axis at N/2);
 * up to n = 256 also n + 3, the other centring's parity. */
static void test_circle(void **state)
{
    (void)state;
    float *amp = malloc(sizeof *amp * 1027 * 1027);
    assert_non_null(amp);
    for (int n = 2; n <= 1024; ++n) {
        long want = rim_count_circle(n, 0);
        for (int d = 0; d < 3; ++d) {
            psf_aperture a = binary(APERTURE_CIRCULAR, diameters[d], 0.0);
            for (int extra = 2; extra <= (n <= 256 ? 3 : 2); ++extra) {
                long got = open_count(&a, n, n + extra, amp);
                if (got != want)
                    fail_msg("n = %d, D = %g m, N = %d: %ld open samples, %ld on the lattice", n,
                             diameters[d], n + extra, got, want);
            }
        }
    }
    free(amp);
}

/* The obscuration's rim (r = e R) is open too: e = 0.5 puts it on the
 * lattice for even n; e = 0.33 (never on it) gives one count for every D. */
static void test_obscuration(void **state)
{
    (void)state;
    float *amp = malloc(sizeof *amp * 516 * 516);
    assert_non_null(amp);
    for (int n = 2; n <= 512; ++n) {
        long want = n % 2 == 0 ? rim_count_circle(n, (long)(n / 2) * (n / 2)) : -1;
        long first = -1;
        for (int d = 0; d < 3; ++d) {
            psf_aperture half = binary(APERTURE_CIRCULAR, diameters[d], 0.5);
            long got = open_count(&half, n, n + 2, amp);
            if (want >= 0 && got != want)
                fail_msg("n = %d, D = %g m, e = 0.5: %ld open samples, %ld on the lattice", n,
                         diameters[d], got, want);
            psf_aperture third = binary(APERTURE_CIRCULAR, diameters[d], 0.33);
            got = open_count(&third, n, n + 2, amp);
            if (first < 0) first = got;
            if (got != first)
                fail_msg("n = %d, e = 0.33: %ld open samples at D = %g m, %ld at D = 1 m", n, got,
                         diameters[d], first);
        }
    }
    free(amp);
}

/* The hexagon's vertices (on the x axis, on the lattice for even n) are
 * open, its flat sides never meet a sample. */
static void test_hexagon(void **state)
{
    (void)state;
    float *amp = malloc(sizeof *amp * 516 * 516);
    assert_non_null(amp);
    for (int n = 2; n <= 512; ++n) {
        long want = rim_count_hexagon(n);
        for (int d = 0; d < 3; ++d) {
            psf_aperture a = binary(APERTURE_HEXAGON, diameters[d], 0.0);
            long got = open_count(&a, n, n + 2, amp);
            if (got != want)
                fail_msg("hexagon n = %d, D = %g m: %ld open samples, %ld on the lattice", n,
                         diameters[d], got, want);
        }
    }
    free(amp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_circle),
        cmocka_unit_test(test_obscuration),
        cmocka_unit_test(test_hexagon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
