/* SPDX-License-Identifier: BSD-3-Clause */
/* A rotated single hexagon (psf_aperture.angle_deg) and a hexagonal
 * central obscuration (obscuration_hexagon): areas against the closed forms
 * 3 sqrt(3)/2 R^2 (minus 3 sqrt(3)/2 (e R)^2), grey edges against brute
 * force (within 1e-3), the point tests, and a 60-degree rotation leaving
 * the hexagon unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optics/aperture.h"
#include "optics/aperture_geom.h"
#include "tests/support/aperture_tests.h"

static psf_aperture hexagon(double d, double angle, double e, int obs_hex)
{
    psf_aperture a;
    memset(&a, 0, sizeof a);
    a.shape = APERTURE_HEXAGON;
    a.diameter_m = d;
    a.angle_deg = angle;
    a.obscuration = e;
    a.obscuration_hexagon = obs_hex;
    a.edge = EDGE_GREY;
    return a;
}

/* Inside the hexagon of circumradius R, vertices at angle (degrees). */
static int in_hexagon(double x, double y, double R, double angle)
{
    for (int k = 0; k < 6; ++k) {
        double phi = (30.0 + 60.0 * k + angle) * M_PI / 180.0;
        if (cos(phi) * x + sin(phi) * y > R * sqrt(3.0) / 2) return 0;
    }
    return 1;
}

static int ref_inside(const psf_aperture *a, double x, double y)
{
    double R = 0.5 * a->diameter_m, ang = a->shape == APERTURE_HEXAGON ? a->angle_deg : 0.0;
    if (a->shape == APERTURE_HEXAGON && !in_hexagon(x, y, R, ang)) return 0;
    if (a->shape == APERTURE_CIRCULAR && x * x + y * y > R * R) return 0;
    double ro = a->obscuration * R;
    if (a->obscuration_hexagon ? ro > 0.0 && in_hexagon(x, y, ro, ang) : x * x + y * y < ro * ro)
        return 0;
    return 1;
}

/* ref_inside for at_brute_fraction. */
static int ref_open(const void *ctx, double x, double y)
{
    return ref_inside((const psf_aperture *)ctx, x, y);
}

static void test_areas(void **state)
{
    (void)state;
    const double angles[] = {0.0, 15.0, 30.0, -47.0};
    for (int t = 0; t < 4; ++t) {
        psf_aperture a = hexagon(2.0, angles[t], 0.0, 0);
        double want = 1.5 * sqrt(3.0);
        assert_true(fabs(aperture_area_m2(&a) - want) < 1e-12);
        double got = at_grid_area(&a, 400, 404);
        if (fabs(got / want - 1.0) > 1e-5) fail_msg("angle %g: %.9g vs %.9g", angles[t], got, want);
        a = hexagon(2.0, angles[t], 0.4, 1);
        want = 1.5 * sqrt(3.0) * (1.0 - 0.16);
        assert_true(fabs(aperture_area_m2(&a) - want) < 1e-12);
        got = at_grid_area(&a, 400, 404);
        if (fabs(got / want - 1.0) > 1e-5)
            fail_msg("angle %g, obs: %.9g vs %.9g", angles[t], got, want);
    }
    psf_aperture c = hexagon(2.0, 0.0, 0.3, 1);
    c.shape = APERTURE_CIRCULAR;
    double want = M_PI - 1.5 * sqrt(3.0) * 0.09;
    assert_true(fabs(aperture_area_m2(&c) - want) < 1e-12);
    assert_true(fabs(at_grid_area(&c, 400, 404) / want - 1.0) < 1e-5);
}

static void test_grey_accuracy(void **state)
{
    (void)state;
    unsigned seed = 9;
    const int K = 2000;
    double worst = 0.0;
    for (int t = 0; t < 30; ++t) {
        psf_aperture a = hexagon(2.0, t % 2 ? 17.0 : -40.0, 0.35, t % 3 != 0);
        if (t % 5 == 0) a.shape = APERTURE_CIRCULAR;
        psf_aperture_geom g;
        aperture_geom_init(&a, &g);
        double R = t % 4 < 2 ? 1.0 : 0.35; /* the outer rim or the obscuration's */
        double ang =
            (a.shape == APERTURE_HEXAGON ? a.angle_deg : 0.0) + 60.0 * (int)(at_urand(&seed) * 6);
        double f = t % 7 == 0 ? 0.0 : at_urand(&seed), p0 = ang * M_PI / 180.0, p1 = p0 + M_PI / 3;
        double bx = R * ((1 - f) * cos(p0) + f * cos(p1)),
               by = R * ((1 - f) * sin(p0) + f * sin(p1));
        double dx = 2.0 / 97.0, x = bx + (at_urand(&seed) - 0.5) * dx,
               y = by + (at_urand(&seed) - 0.5) * dx;
        double e =
            fabs(aperture_sample(&g, x, y, dx) - at_brute_fraction(ref_open, &a, x, y, dx, K));
        worst = e > worst ? e : worst;
    }
    if (worst > 1e-3) fail_msg("worst grey error %g", worst);
}

static void test_points_and_symmetry(void **state)
{
    (void)state;
    psf_aperture a = hexagon(2.0, 30.0, 0.3, 1), b = hexagon(2.0, 90.0, 0.3, 1);
    psf_aperture_geom ga, gb;
    aperture_geom_init(&a, &ga);
    aperture_geom_init(&b, &gb);
    /* Rotated by 30 deg: a vertex at 30 deg, a flat across the x axis at R sqrt3/2. */
    assert_int_equal(aperture_point_open(&ga, 0.98 * cos(M_PI / 6), 0.98 * sin(M_PI / 6)), 1);
    assert_int_equal(aperture_point_open(&ga, 0.88, 0.0), 0);
    assert_int_equal(aperture_point_open(&ga, 0.85, 0.0), 1);
    assert_int_equal(aperture_point_open(&ga, 0.0, 0.0), 0);
    /* The obscuration likewise: a flat across the x axis at 0.3 sqrt3/2 =
     * 0.26, a vertex on the y axis at 0.3. */
    assert_int_equal(aperture_point_open(&ga, 0.25, 0.0), 0);
    assert_int_equal(aperture_point_open(&ga, 0.27, 0.0), 1);
    assert_int_equal(aperture_point_open(&ga, 0.0, 0.29), 0);
    assert_int_equal(aperture_point_open(&ga, 0.0, 0.31), 1);
    unsigned seed = 1;
    for (int t = 0; t < 20000; ++t) {
        double x = 2.2 * (at_urand(&seed) - 0.5), y = 2.2 * (at_urand(&seed) - 0.5);
        int o = aperture_point_open(&ga, x, y);
        assert_int_equal(aperture_point_open(&gb, x, y), o);
        assert_int_equal(ref_inside(&a, x, y), o);
    }
    /* Binary edges of a rotated hexagon: the point test at the sample centres. */
    a.edge = EDGE_BINARY;
    a.obscuration = 0.0;
    assert_true(fabs(at_grid_area(&a, 1000, 1004) / (1.5 * sqrt(3.0)) - 1.0) < 2e-3);
    char err[256];
    a.angle_deg = NAN;
    assert_int_equal(aperture_check(&a, err, sizeof err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_areas),
        cmocka_unit_test(test_grey_accuracy),
        cmocka_unit_test(test_points_and_symmetry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
