/* SPDX-License-Identifier: BSD-3-Clause */
/* Listed spider vanes (psf_vane, optics/aperture_geom.h): grey edges of
 * offset vanes with start and end radii against brute force (within 1e-3),
 * the listed form of equally spaced radial vanes against the count form,
 * the point test at the vane's ends and offset sides, and the checks. */
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

static psf_aperture circle(double d)
{
    psf_aperture a;
    memset(&a, 0, sizeof a);
    a.shape = APERTURE_CIRCULAR;
    a.diameter_m = d;
    a.edge = EDGE_GREY;
    return a;
}

static void add_vane(psf_aperture *a, double ang, double w, double off, double r0, double r1)
{
    a->vanes[a->nvanes++] = (psf_vane){ang, w, off, r0, r1};
}

/* Independent point test: the circle minus each listed vane's strip. */
static int ref_inside(const psf_aperture *a, double x, double y)
{
    double R = 0.5 * a->diameter_m;
    if (x * x + y * y > R * R) return 0;
    for (int k = 0; k < a->nvanes; ++k) {
        const psf_vane *v = &a->vanes[k];
        double c = cos(v->angle_deg * M_PI / 180.0), s = sin(v->angle_deg * M_PI / 180.0);
        double t = x * c + y * s, u = -x * s + y * c;
        double t1 = v->r_end_m > 0.0 ? v->r_end_m : 1e300;
        if (t >= v->r_start_m && t <= t1 && fabs(u - v->offset_m) < 0.5 * v->width_m) return 0;
    }
    return 1;
}

/* ref_inside for at_brute_fraction. */
static int ref_open(const void *ctx, double x, double y)
{
    return ref_inside((const psf_aperture *)ctx, x, y);
}

static void test_grey_accuracy(void **state)
{
    (void)state;
    psf_aperture a = circle(6.6);
    add_vane(&a, 90.0, 0.08, 0.0, 0.0, 0.0);     /* radial, to the rim */
    add_vane(&a, 200.0, 0.06, 0.4, 0.3, 2.9);    /* offset, with both ends */
    add_vane(&a, -20.0, 0.05, -0.25, -1.0, 2.5); /* crossing the axis */
    add_vane(&a, 37.0, 0.1, 1.1, 0.0, 0.0);      /* far from the axis */
    psf_aperture_geom g;
    aperture_geom_init(&a, &g);
    unsigned seed = 5;
    double dx = 6.6 / 101.0, worst = 0.0;
    const int K = 2000;
    for (int t = 0; t < 60; ++t) {
        /* A point on vane k's side or end. */
        const psf_vane *v = &a.vanes[t % 4];
        double c = cos(v->angle_deg * M_PI / 180.0), s = sin(v->angle_deg * M_PI / 180.0);
        double len = v->r_end_m > 0.0 ? v->r_end_m : 3.0, tt, uu;
        if (t % 3 == 0) { /* an end (a corner at t % 6 == 0) */
            tt = (t / 3) % 2 ? v->r_start_m : len;
            uu = v->offset_m + (t % 6 == 0 ? 0.5 : at_urand(&seed) - 0.5) * v->width_m;
        } else {
            tt = v->r_start_m + at_urand(&seed) * (len - v->r_start_m);
            uu = v->offset_m + (t % 2 ? 0.5 : -0.5) * v->width_m;
        }
        double bx = tt * c - uu * s, by = tt * s + uu * c;
        double x = bx + (at_urand(&seed) - 0.5) * dx, y = by + (at_urand(&seed) - 0.5) * dx;
        double e =
            fabs(aperture_sample(&g, x, y, dx) - at_brute_fraction(ref_open, &a, x, y, dx, K));
        worst = e > worst ? e : worst;
    }
    if (worst > 1e-3) fail_msg("worst grey error %g", worst);
}

/* Four radial vanes listed = spiders.count = 4: the grids agree to the
 * grey edges' accuracy. */
static void test_listed_as_count(void **state)
{
    (void)state;
    psf_aperture a = circle(2.4), b = circle(2.4);
    b.spider_count = 4;
    b.spider_width_m = 0.05;
    b.spider_angle_deg = 45.0;
    for (int k = 0; k < 4; ++k)
        add_vane(&a, 45.0 + 90.0 * k, 0.05, 0.0, 0.0, 0.0);
    int n = 256;
    float *ga = malloc((size_t)n * n * sizeof *ga), *gb = malloc((size_t)n * n * sizeof *gb);
    assert_non_null(ga);
    assert_non_null(gb);
    char err[256];
    assert_int_equal(aperture_fill(&a, n, 2.4 / 250, ga, err, sizeof err), 0);
    assert_int_equal(aperture_fill(&b, n, 2.4 / 250, gb, err, sizeof err), 0);
    double worst = 0.0;
    for (int i = 0; i < n * n; ++i)
        worst = fabs(ga[i] - gb[i]) > worst ? fabs(ga[i] - gb[i]) : worst;
    free(ga);
    free(gb);
    if (worst > 2e-3) fail_msg("listed vs count vanes: %g", worst);
    assert_true(aperture_area_m2(&a) < 0.0); /* no closed form with listed vanes */
}

static void test_points_and_checks(void **state)
{
    (void)state;
    psf_aperture a = circle(2.0);
    add_vane(&a, 0.0, 0.1, 0.3, 0.2, 0.8); /* along +x, 0.3 m above the axis */
    psf_aperture_geom g;
    aperture_geom_init(&a, &g);
    assert_int_equal(aperture_point_open(&g, 0.5, 0.3), 0);
    assert_int_equal(aperture_point_open(&g, 0.5, 0.0), 1);  /* the axis line: clear */
    assert_int_equal(aperture_point_open(&g, 0.1, 0.3), 1);  /* before the start */
    assert_int_equal(aperture_point_open(&g, 0.9, 0.3), 1);  /* past the end */
    assert_int_equal(aperture_point_open(&g, 0.2, 0.3), 0);  /* the start blocks */
    assert_int_equal(aperture_point_open(&g, 0.5, 0.36), 1); /* beside it */
    char err[256];
    assert_int_equal(aperture_check(&a, err, sizeof err), 0);
    a.vanes[0].offset_m = 1.2; /* outside the aperture */
    assert_int_equal(aperture_check(&a, err, sizeof err), -1);
    assert_non_null(strstr(err, "outside"));
    a.vanes[0].offset_m = 0.3;
    a.vanes[0].r_end_m = 0.1; /* ends before it starts */
    assert_int_equal(aperture_check(&a, err, sizeof err), -1);
    a.vanes[0].r_end_m = 0.8;
    a.vanes[0].width_m = 0.0;
    assert_int_equal(aperture_check(&a, err, sizeof err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grey_accuracy),
        cmocka_unit_test(test_listed_as_count),
        cmocka_unit_test(test_points_and_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
