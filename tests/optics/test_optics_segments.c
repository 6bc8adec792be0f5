/* SPDX-License-Identifier: BSD-3-Clause */
/* Segmented apertures (optics/aperture_seg.h): the numbering's round trip,
 * the open area against the closed form (present segments times sqrt(3)/2
 * f^2), grey edges against brute force at rotated flats, gaps and the
 * outer stop, left-out segments, the 60-degree symmetry of the grid, and
 * the checks of aperture_check. */
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

/* JWST-like: 18 segments of 1.32 m flat to flat, 7 mm gaps, no centre. */
static psf_aperture jwst_like(double angle_deg)
{
    psf_aperture a;
    memset(&a, 0, sizeof a);
    a.shape = APERTURE_SEGMENTED;
    a.edge = EDGE_GREY;
    a.seg.flat_to_flat_m = 1.32;
    a.seg.gap_m = 0.007;
    a.seg.rings = 2;
    a.seg.angle_deg = angle_deg;
    a.seg.missing[0] = 1ULL;
    a.diameter_m = 2.0 * aperture_segments_radius(&a.seg);
    return a;
}

/* An independent point test: every present segment's six flats, from the
 * segment centres aperture_segment_center gives (checked separately). */
typedef struct {
    psf_aperture a;
    int n;
    double cx[APERTURE_SEG_MAX], cy[APERTURE_SEG_MAX], nx[6], ny[6];
} ref_segments;

static void ref_init(ref_segments *r, const psf_aperture *a)
{
    r->a = *a;
    r->n = 0;
    int nseg = aperture_segment_count(a->seg.rings);
    for (int k = 0; k < nseg; ++k) {
        if ((a->seg.missing[k / 64] >> (k % 64)) & 1ULL) continue;
        aperture_segment_center(&a->seg, k, &r->cx[r->n], &r->cy[r->n]);
        r->n++;
    }
    for (int e = 0; e < 6; ++e) {
        double phi = (30.0 + 60.0 * e + a->seg.angle_deg) * M_PI / 180.0;
        r->nx[e] = cos(phi), r->ny[e] = sin(phi);
    }
}

static int ref_inside(const ref_segments *r, double x, double y)
{
    const psf_aperture *a = &r->a;
    double R = 0.5 * a->diameter_m, r2 = x * x + y * y, h = 0.5 * a->seg.flat_to_flat_m;
    double rc2 = 4.0 * h * h / 3.0;
    if (a->seg.stop_diameter_m > 0.0 && 4.0 * r2 > a->seg.stop_diameter_m * a->seg.stop_diameter_m)
        return 0;
    if (r2 < a->obscuration * a->obscuration * R * R) return 0;
    for (int k = 0; k < r->n; ++k) {
        double u = x - r->cx[k], v = y - r->cy[k];
        if (u * u + v * v > rc2) continue;
        int in = 1;
        for (int e = 0; e < 6 && in; ++e)
            in = r->nx[e] * u + r->ny[e] * v <= h;
        if (in) return 1;
    }
    return 0;
}

/* ref_inside for at_brute_fraction. */
static int ref_open(const void *ctx, double x, double y)
{
    return ref_inside((const ref_segments *)ctx, x, y);
}

static void test_numbering(void **state)
{
    (void)state;
    psf_segments s;
    memset(&s, 0, sizeof s);
    s.flat_to_flat_m = 1.0;
    s.gap_m = 0.1;
    s.rings = APERTURE_SEG_MAX_RINGS;
    s.angle_deg = 17.0;
    psf_aperture_geom g;
    psf_aperture a;
    memset(&a, 0, sizeof a);
    a.shape = APERTURE_SEGMENTED;
    a.diameter_m = 100.0;
    a.seg = s;
    aperture_geom_init(&a, &g);
    assert_int_equal(aperture_segment_count(s.rings), APERTURE_SEG_MAX);
    assert_int_equal(aperture_segment_count(2), 19);
    double p = 1.1, x, y;
    for (int k = 0; k < APERTURE_SEG_MAX; ++k) {
        assert_int_equal(aperture_segment_center(&s, k, &x, &y), 0);
        int q, r;
        aps_nearest(&g.seg, x, y, &q, &r);
        assert_int_equal(aps_index(q, r), k);
    }
    assert_int_equal(aperture_segment_center(&s, APERTURE_SEG_MAX, &x, &y), -1);
    assert_int_equal(aperture_segment_center(&s, -1, &x, &y), -1);
    /* Segment 1: the first of ring 1, at 30 deg (+ angle), one pitch out;
     * segment 2 at 90 deg; segment 7, ring 2's first, at 30 deg, 2 p out. */
    s.angle_deg = 0.0;
    aperture_segment_center(&s, 1, &x, &y);
    assert_true(fabs(x - p * sqrt(3.0) / 2) < 1e-12 && fabs(y - 0.5 * p) < 1e-12);
    aperture_segment_center(&s, 2, &x, &y);
    assert_true(fabs(x) < 1e-12 && fabs(y - p) < 1e-12);
    aperture_segment_center(&s, 7, &x, &y);
    assert_true(fabs(x - p * sqrt(3.0)) < 1e-12 && fabs(y - p) < 1e-12);
    aperture_segment_center(&s, 8, &x, &y); /* between 7 and ring 2's 90-deg corner */
    assert_true(fabs(x - p * sqrt(3.0) / 2) < 1e-12 && fabs(y - 1.5 * p) < 1e-12);
}

static void test_area(void **state)
{
    (void)state;
    const double angles[] = {0.0, 30.0, 7.3};
    for (int t = 0; t < 3; ++t) {
        psf_aperture a = jwst_like(angles[t]);
        double want = 18 * 0.5 * sqrt(3.0) * 1.32 * 1.32;
        assert_true(fabs(aperture_area_m2(&a) - want) < 1e-12);
        double got = at_grid_area(&a, 500, 512);
        if (fabs(got / want - 1.0) > 1e-5)
            fail_msg("angle %g: grid area %.9g m^2, closed form %.9g", angles[t], got, want);
    }
    /* Keck-like: 36 segments, 0.9 m side (1.5588 m flat to flat), 3 rings, no centre. */
    psf_aperture k = jwst_like(0.0);
    k.seg.flat_to_flat_m = 0.9 * sqrt(3.0);
    k.seg.gap_m = 0.003;
    k.seg.rings = 3;
    k.diameter_m = 2.0 * aperture_segments_radius(&k.seg);
    double want = 36 * 1.5 * sqrt(3.0) * 0.81;
    assert_true(fabs(aperture_area_m2(&k) - want) < 1e-9);
    assert_true(fabs(at_grid_area(&k, 600, 608) / want - 1.0) < 1e-5);
    /* The binary grid's area converges too (point test at sample centres). */
    k.edge = EDGE_BINARY;
    assert_true(fabs(at_grid_area(&k, 1000, 1008) / want - 1.0) < 2e-3);
    /* Areas not in closed form are refused. */
    k.seg.stop_diameter_m = 9.0;
    assert_true(aperture_area_m2(&k) < 0.0);
}

/* Grey samples near flats (rotated), gaps, vertices and the stop against
 * 2000 x 2000 point sampling: within 1e-3 as for the single hexagon. */
static void test_grey_accuracy(void **state)
{
    (void)state;
    unsigned seed = 11;
    psf_aperture a = jwst_like(7.3);
    a.seg.stop_diameter_m = 6.4;
    a.obscuration = 0.1;
    psf_aperture_geom g;
    aperture_geom_init(&a, &g);
    ref_segments ref;
    ref_init(&ref, &a);
    double dx = a.diameter_m / 97.0, worst = 0.0;
    const int K = 2000;
    for (int t = 0; t < 40; ++t) {
        /* A point on a random segment's boundary (a vertex at t % 5 == 0). */
        int k = 1 + (int)(at_urand(&seed) * 18);
        double cx, cy;
        aperture_segment_center(&a.seg, k, &cx, &cy);
        double phi = (a.seg.angle_deg + 60.0 * (int)(at_urand(&seed) * 6)) * M_PI / 180.0;
        double rc = 1.32 / sqrt(3.0), f = t % 5 == 0 ? 0.0 : at_urand(&seed);
        double bx = cx + rc * ((1 - f) * cos(phi) + f * cos(phi + M_PI / 3));
        double by = cy + rc * ((1 - f) * sin(phi) + f * sin(phi + M_PI / 3));
        double x = bx + (at_urand(&seed) - 0.5) * dx, y = by + (at_urand(&seed) - 0.5) * dx;
        double e =
            fabs(aperture_sample(&g, x, y, dx) - at_brute_fraction(ref_open, &ref, x, y, dx, K));
        worst = e > worst ? e : worst;
    }
    if (worst > 1e-3) fail_msg("worst grey error %g", worst);
}

/* Left-out segments are dark, the others open at their centres; a 60-degree
 * rotation of the array maps the grid onto itself (up to the sampling:
 * compared through the areas of each segment's neighbourhood). */
static void test_missing_and_points(void **state)
{
    (void)state;
    psf_aperture a = jwst_like(0.0);
    a.seg.missing[0] |= 1ULL << 5;
    psf_aperture_geom g;
    aperture_geom_init(&a, &g);
    ref_segments ref;
    ref_init(&ref, &a);
    for (int k = 0; k < 19; ++k) {
        double x, y;
        aperture_segment_center(&a.seg, k, &x, &y);
        int want = k != 0 && k != 5;
        assert_int_equal(aperture_point_open(&g, x, y), want);
        assert_int_equal(ref_inside(&ref, x, y), want);
    }
    /* In a gap: closed. Between segments 0 and 1 (centre missing, so
     * halfway across the pitch from segment 1 towards the axis is open
     * only within segment 1). */
    double x, y, p = 1.327;
    aperture_segment_center(&a.seg, 1, &x, &y);
    assert_int_equal(aperture_point_open(&g, 0.5 * x, 0.5 * y), 0);
    double u = (0.5 * p + 0.001) / p; /* 1 mm past the gap's middle, in the gap */
    assert_int_equal(aperture_point_open(&g, u * x, u * y), 0);
    u = (0.5 * p + 0.004) / p; /* 0.5 mm inside segment 1's flat */
    assert_int_equal(aperture_point_open(&g, u * x, u * y), 1);
    /* Six-fold: without segment 5 left out, the open region is the same
     * at the point rotated by 60 degrees, and with the array rotated by 60. */
    a = jwst_like(0.0);
    aperture_geom_init(&a, &g);
    psf_aperture b = jwst_like(60.0);
    psf_aperture_geom g60;
    aperture_geom_init(&b, &g60);
    ref_init(&ref, &a);
    unsigned seed = 3;
    double c = 0.5, sn = 0.5 * sqrt(3.0);
    int nopen = 0;
    for (int t = 0; t < 20000; ++t) {
        double px = (at_urand(&seed) - 0.5) * 7.0, py = (at_urand(&seed) - 0.5) * 7.0;
        int o = aperture_point_open(&g, px, py);
        nopen += o;
        assert_int_equal(aperture_point_open(&g, c * px - sn * py, sn * px + c * py), o);
        assert_int_equal(aperture_point_open(&g60, px, py), o);
        assert_int_equal(ref_inside(&ref, px, py), o);
    }
    assert_true(nopen > 5000);
}

static void test_checks(void **state)
{
    (void)state;
    char err[256];
    psf_aperture a = jwst_like(0.0);
    assert_int_equal(aperture_check(&a, err, sizeof err), 0);
    a.seg.gap_m = -0.001;
    assert_int_equal(aperture_check(&a, err, sizeof err), -1);
    assert_non_null(strstr(err, "overlap"));
    a.seg.gap_m = 1.32;
    assert_int_equal(aperture_check(&a, err, sizeof err), -1);
    a = jwst_like(0.0);
    a.seg.rings = APERTURE_SEG_MAX_RINGS + 1;
    assert_int_equal(aperture_check(&a, err, sizeof err), -1);
    a = jwst_like(0.0);
    a.diameter_m = 6.0;
    assert_int_equal(aperture_check(&a, err, sizeof err), -1);
    assert_non_null(strstr(err, "diameter_m"));
    a.seg.stop_diameter_m = 5.9; /* the stop holds what is open */
    assert_int_equal(aperture_check(&a, err, sizeof err), 0);
    a = jwst_like(0.0);
    a.seg.flat_to_flat_m = 0.0;
    assert_int_equal(aperture_check(&a, err, sizeof err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numbering),     cmocka_unit_test(test_area),
        cmocka_unit_test(test_grey_accuracy), cmocka_unit_test(test_missing_and_points),
        cmocka_unit_test(test_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
