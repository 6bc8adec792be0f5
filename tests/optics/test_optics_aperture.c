/* SPDX-License-Identifier: BSD-3-Clause */
/* Aperture masks: grey-edge accuracy against brute-force supersampling,
 * analytic areas, orientation conventions (docs/design.md, "Aperture"), binary
 * edges, centro-symmetry, speed. */
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

/* ---- an independent statement of the open region, for brute force ---- */

typedef struct {
    psf_aperture a;
    double c[64], s[64]; /* vane directions */
} ref_aperture;

static void ref_init(ref_aperture *r, const psf_aperture *a)
{
    r->a = *a;
    for (int k = 0; k < a->spider_count && k < 64; ++k) {
        double phi = (a->spider_angle_deg + k * 360.0 / a->spider_count) * M_PI / 180.0;
        r->c[k] = cos(phi), r->s[k] = sin(phi);
    }
}

static int ref_inside(const ref_aperture *r, double x, double y)
{
    const psf_aperture *a = &r->a;
    double R = 0.5 * a->diameter_m, r2 = x * x + y * y;
    if (a->shape == APERTURE_CIRCULAR && r2 > R * R) return 0;
    if (a->shape == APERTURE_HEXAGON) {
        /* Vertices at (+-R, 0), (+-R/2, +-R sqrt(3)/2). */
        if (fabs(y) > R * sqrt(3.0) / 2.0) return 0;
        if (fabs(y) > sqrt(3.0) * (R - fabs(x))) return 0;
    }
    double ro = a->obscuration * R;
    if (r2 < ro * ro) return 0;
    for (int k = 0; k < a->spider_count; ++k) {
        double t = x * r->c[k] + y * r->s[k], s = -x * r->s[k] + y * r->c[k];
        if (t >= 0.0 && fabs(s) < 0.5 * a->spider_width_m) return 0;
    }
    return 1;
}

/* Open fraction of the cell of side h at (cx, cy) from K x K points. */
static double brute_fraction(const ref_aperture *r, double cx, double cy, double h, int K)
{
    long in = 0;
    for (int i = 0; i < K; ++i) {
        double y = cy + ((i + 0.5) / K - 0.5) * h;
        for (int j = 0; j < K; ++j)
            in += ref_inside(r, cx + ((j + 0.5) / K - 0.5) * h, y);
    }
    return (double)in / ((double)K * K);
}

static double urand(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return ((*seed >> 8) & 0xFFFFFF) / 16777216.0;
}

static psf_aperture circ(double d, double e, int count, double width, double angle)
{
    psf_aperture a;
    memset(&a, 0, sizeof a);
    a.shape = APERTURE_CIRCULAR;
    a.diameter_m = d;
    a.obscuration = e;
    a.spider_count = count;
    a.spider_width_m = width;
    a.spider_angle_deg = angle;
    a.edge = EDGE_GREY;
    return a;
}

/* ---- half-plane coverage ---- */

static void test_halfplane_formula(void **state)
{
    (void)state;
    unsigned seed = 7;
    const int K = 2000;
    for (int t = 0; t < 40; ++t) {
        /* Random normals, plus the axis-parallel (v = 0) and diagonal cases. */
        double ang = t == 0 ? 0.0 : t == 1 ? M_PI / 4 : t == 2 ? M_PI / 2 : 2 * M_PI * urand(&seed);
        double a = cos(ang), b = sin(ang), h = 0.5 + urand(&seed);
        double s = (urand(&seed) * 2.0 - 1.0) * 0.75 * h;
        long in = 0;
        for (int i = 0; i < K; ++i) {
            double y = ((i + 0.5) / K - 0.5) * h;
            for (int j = 0; j < K; ++j)
                in += a * ((j + 0.5) / K - 0.5) * h + b * y <= s;
        }
        double bf = (double)in / ((double)K * K), f = aperture_halfplane_fraction(a, b, s, h);
        assert_true(fabs(f - bf) < 3e-4); /* a grid line falls within 1/(2K) */
    }
    /* Closed forms: half the square, a corner triangle, fully in/out. */
    assert_true(fabs(aperture_halfplane_fraction(0.6, 0.8, 0.0, 1.0) - 0.5) < 1e-15);
    double r = sqrt(0.5); /* diagonal line cutting a corner triangle of legs 0.5 */
    assert_true(fabs(aperture_halfplane_fraction(r, r, -0.5 * r, 1.0) - 0.125) < 1e-15);
    assert_true(aperture_halfplane_fraction(r, r, 0.71, 1.0) == 1.0);
    assert_true(aperture_halfplane_fraction(1.0, 0.0, -0.5, 1.0) == 0.0);
    assert_true(fabs(aperture_halfplane_fraction(1.0, 0.0, 0.25, 1.0) - 0.75) < 1e-15);
}

/* ---- grey edges vs brute force ---- */

/* Cells of side dx whose centre is within dx/2 (per axis) of (bx, by), a
 * boundary point, so that the boundary cuts them; returns the worst error. */
static double worst_near(const psf_aperture *a, double dx, double bx, double by, int ncell,
                         unsigned *seed)
{
    ref_aperture r;
    ref_init(&r, a);
    psf_aperture_geom g;
    aperture_geom_init(a, &g);
    double worst = 0.0;
    for (int k = 0; k < ncell; ++k) {
        double cx = bx + (urand(seed) - 0.5) * dx, cy = by + (urand(seed) - 0.5) * dx;
        double f = aperture_sample(&g, cx, cy, dx), bf = brute_fraction(&r, cx, cy, dx, 2000);
        double e = fabs(f - bf);
        if (e > worst) worst = e;
    }
    return worst;
}

static void test_grey_accuracy(void **state)
{
    (void)state;
    unsigned seed = 12345;
    const double D = 1.0;
    /* Coarse samples (n = 16, dx = D/16) make the circles' curvature and the
     * corners as hard as they get for real pupils. */
    double dx = D / 16.0, R = 0.5 * D, worst, phi;

    psf_aperture a = circ(D, 0.0, 0, 0.0, 0.0); /* outer circle */
    phi = 2 * M_PI * urand(&seed);
    worst = worst_near(&a, dx, R * cos(phi), R * sin(phi), 6, &seed);
    assert_true(worst < 1e-3);

    a = circ(D, 0.3, 0, 0.0, 0.0); /* obscuration of radius 2.4 dx */
    for (int k = 0; k < 3; ++k) {
        phi = 2 * M_PI * urand(&seed);
        worst = worst_near(&a, dx, 0.15 * cos(phi), 0.15 * sin(phi), 2, &seed);
        assert_true(worst < 1e-3);
    }

    a = circ(D, 0.0, 0, 0.0, 0.0); /* hexagon: an edge and a vertex */
    a.shape = APERTURE_HEXAGON;
    worst = worst_near(&a, dx, 0.3 * R, R * sqrt(3.0) / 2, 4, &seed);
    assert_true(worst < 1e-3);
    worst = worst_near(&a, dx, 0.5 * R, R * sqrt(3.0) / 2, 4, &seed); /* vertex */
    assert_true(worst < 1e-3);
    worst = worst_near(&a, dx, -R, 0.0, 4, &seed);
    assert_true(worst < 1e-3);

    /* Spiders at a random angle and along an axis, away from other edges:
     * one edge, and a vane narrower than the cell (both edges in it). */
    double ang = 360.0 * urand(&seed);
    a = circ(D, 0.2, 3, 0.3 * dx, ang);
    phi = ang * M_PI / 180.0;
    worst = worst_near(&a, dx, 0.3 * cos(phi), 0.3 * sin(phi), 6, &seed);
    assert_true(worst < 1e-3);
    a = circ(D, 0.2, 4, 1.7 * dx, 0.0);
    worst = worst_near(&a, dx, 0.3, 0.85 * dx, 4, &seed);
    assert_true(worst < 1e-3);

    /* Corners: vane meets the outer circle, the obscuration, the hexagon;
     * vanes meet each other at the axis (no obscuration). */
    a = circ(D, 0.3, 4, 0.6 * dx, ang);
    double hw = 0.3 * dx, xc = sqrt(R * R - hw * hw), xo = sqrt(0.15 * 0.15 - hw * hw);
    double c = cos(phi), s = sin(phi);
    worst = worst_near(&a, dx, xc * c - hw * s, xc * s + hw * c, 4, &seed);
    assert_true(worst < 1e-3);
    worst = worst_near(&a, dx, xo * c + hw * s, xo * s - hw * c, 4, &seed);
    assert_true(worst < 1e-3);
    a.shape = APERTURE_HEXAGON;
    a.obscuration = 0.0;
    worst = worst_near(&a, dx, 0.0, 0.0, 4, &seed); /* all vanes' ends */
    assert_true(worst < 1e-3);
    a.spider_angle_deg = 30.0; /* vane through the middle of the hexagon's side */
    a.spider_count = 6;
    worst = worst_near(&a, dx, R * 0.75, R * sqrt(3.0) / 4.0, 4, &seed);
    assert_true(worst < 1e-3);
    a.spider_angle_deg = 0.0; /* vane into the vertex */
    worst = worst_near(&a, dx, R, 0.0, 4, &seed);
    assert_true(worst < 1e-3);
}

/* ---- areas ---- */

static double grid_area(const psf_aperture *a, int n, int npix)
{
    double dx = a->diameter_m / n;
    float *amp = malloc(sizeof *amp * (size_t)npix * npix);
    char err[256];
    assert_int_equal(aperture_fill(a, npix, dx, amp, err, sizeof err), 0);
    double s = 0.0;
    for (size_t k = 0; k < (size_t)npix * npix; ++k)
        s += amp[k];
    free(amp);
    return s * dx * dx;
}

static void test_area_convergence(void **state)
{
    (void)state;
    psf_aperture a = circ(2.0, 0.33, 4, 0.02 * 2.0, 45.0);
    double want = aperture_area_m2(&a);
    for (int n = 64; n <= 256; n *= 2) {
        a.edge = EDGE_GREY;
        double eg = fabs(grid_area(&a, n, n + 8) / want - 1.0);
        a.edge = EDGE_BINARY;
        double eb = fabs(grid_area(&a, n, n + 8) / want - 1.0);
        assert_true(eg < 1e-3);
        assert_true(eb > eg);
    }
}

static void test_area_closed_forms(void **state)
{
    (void)state;
    double D = 3.0, R = 1.5;
    psf_aperture a = circ(D, 0.0, 0, 0.0, 0.0);
    assert_true(fabs(aperture_area_m2(&a) - M_PI * R * R) < 1e-12);
    a.obscuration = 0.4;
    assert_true(fabs(aperture_area_m2(&a) - M_PI * R * R * (1 - 0.16)) < 1e-12);
    a.shape = APERTURE_HEXAGON;
    a.obscuration = 0.0;
    assert_true(fabs(aperture_area_m2(&a) - 1.5 * sqrt(3.0) * R * R) < 1e-12);
    a.obscuration = 0.5; /* inside the hexagon: a plain disk comes off */
    assert_true(fabs(aperture_area_m2(&a) - (1.5 * sqrt(3.0) - M_PI * 0.25) * R * R) < 1e-12);
    /* A cross of two full strips (4 vanes on the axes, no obscuration):
     * 2 strips in the disk minus their (2 hw)^2 square counted twice. */
    double hw = 0.1;
    double strip = 2.0 * (hw * sqrt(R * R - hw * hw) + R * R * asin(hw / R));
    a = circ(D, 0.0, 4, 2 * hw, 0.0);
    assert_true(fabs(aperture_area_m2(&a) - (M_PI * R * R - (2 * strip - 4 * hw * hw))) < 1e-12);
    a.spider_count = 2; /* one full strip */
    assert_true(fabs(aperture_area_m2(&a) - (M_PI * R * R - strip)) < 1e-12);
    a.shape = APERTURE_FILE;
    assert_true(aperture_area_m2(&a) < 0.0);
}

/* Overlapping vanes (near the axis, with no or a small obscuration) and
 * hexagons with vanes, against a fine grey grid. */
static void test_area_vane_overlaps(void **state)
{
    (void)state;
    static const int counts[] = {3, 4, 6, 8};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k) {
        for (int hexa = 0; hexa < 2; ++hexa)
            for (int obs = 0; obs < 2; ++obs) {
                /* obs = 1: an obscuration that cuts the vanes' overlap. */
                psf_aperture a = circ(1.0, obs ? 0.06 : 0.0, counts[k], 0.08, 17.0);
                if (hexa) a.shape = APERTURE_HEXAGON;
                double want = aperture_area_m2(&a), got = grid_area(&a, 1024, 1032);
                assert_true(fabs(got / want - 1.0) < 2e-5);
            }
    }
    /* Wide vanes whose central polygon (circumradius 0.46 D) pokes out of
     * the hexagon (apothem 0.43 D), leaving slivers near the vertices. */
    psf_aperture a = circ(1.0, 0.0, 3, 0.8, 5.0);
    a.shape = APERTURE_HEXAGON;
    assert_true(fabs(grid_area(&a, 1024, 1032) / aperture_area_m2(&a) - 1.0) < 2e-5);
}

/* ---- conventions ---- */

static float *fill(const psf_aperture *a, int n, int npix)
{
    float *amp = malloc(sizeof *amp * (size_t)npix * npix);
    char err[256];
    assert_int_equal(aperture_fill(a, npix, a->diameter_m / n, amp, err, sizeof err), 0);
    return amp;
}

static void test_hexagon_orientation(void **state)
{
    (void)state;
    const int n = 100, N = 128, c = N / 2;
    for (int edge = 0; edge < 2; ++edge) {
        psf_aperture a = circ(1.0, 0.0, 0, 0.0, 0.0);
        a.shape = APERTURE_HEXAGON;
        a.edge = edge ? EDGE_BINARY : EDGE_GREY;
        float *amp = fill(&a, n, N);
        assert_true(amp[c * N + c + n / 2 - 1] == 1.0f); /* towards the +x vertex */
        assert_true(amp[c * N + c - n / 2 + 1] == 1.0f); /* towards the -x vertex */
        assert_true(amp[(c + 45) * N + c] == 0.0f);      /* beyond the flat side at 0.433 D */
        assert_true(amp[(c - 45) * N + c] == 0.0f);
        assert_true(amp[(c + 42) * N + c] == 1.0f); /* inside it */
        free(amp);
        a.shape = APERTURE_CIRCULAR; /* a circle is open there */
        amp = fill(&a, n, N);
        assert_true(amp[(c + 45) * N + c] == 1.0f);
        free(amp);
    }
}

static void test_spider_orientation(void **state)
{
    (void)state;
    const int n = 64, N = 80, c = N / 2;
    psf_aperture a = circ(1.0, 0.2, 1, 2.0 / n, 90.0); /* vane towards +y (rows) */
    float *amp = fill(&a, n, N);
    for (int k = 8; k < 30; ++k) {
        assert_true(amp[(c + k) * N + c] == 0.0f);
        assert_true(amp[(c - k) * N + c] == 1.0f);
        assert_true(amp[c * N + c + k] == 1.0f);
        assert_true(amp[c * N + c - k] == 1.0f);
    }
    free(amp);
    a.spider_angle_deg = 0.0; /* towards +x (columns) */
    amp = fill(&a, n, N);
    for (int k = 8; k < 30; ++k) {
        assert_true(amp[c * N + c + k] == 0.0f);
        assert_true(amp[c * N + c - k] == 1.0f);
        assert_true(amp[(c + k) * N + c] == 1.0f);
    }
    free(amp);
    /* 4 vanes from 45 deg: the diagonals are blocked, the axes open. */
    a = circ(1.0, 0.2, 4, 2.0 / n, 45.0);
    amp = fill(&a, n, N);
    for (int k = 8; k < 20; ++k) {
        assert_true(amp[(c + k) * N + c + k] == 0.0f);
        assert_true(amp[(c - k) * N + c + k] == 0.0f);
        assert_true(amp[(c + k) * N + c - k] == 0.0f);
        assert_true(amp[(c - k) * N + c - k] == 0.0f);
        assert_true(amp[(c + k) * N + c] == 1.0f);
        assert_true(amp[c * N + c + k] == 1.0f);
    }
    free(amp);
}

static void test_binary_boundaries(void **state)
{
    (void)state;
    /* dx = 1 m, R = 8 m: samples fall exactly on the boundaries. */
    const int n = 16, N = 24, c = N / 2;
    psf_aperture a = circ(16.0, 0.25, 0, 0.0, 0.0);
    a.edge = EDGE_BINARY;
    float *amp = fill(&a, n, N);
    assert_true(amp[(c + 8) * N + c] == 1.0f); /* r = R */
    assert_true(amp[c * N + c - 8] == 1.0f);
    assert_true(amp[(c + 8) * N + c + 1] == 0.0f); /* r^2 = 65 > 64 */
    assert_true(amp[(c + 2) * N + c] == 1.0f);     /* r = e R = 2 */
    assert_true(amp[(c + 1) * N + c + 1] == 0.0f); /* r^2 = 2 < 4 */
    for (size_t k = 0; k < (size_t)N * N; ++k)
        assert_true(amp[k] == 0.0f || amp[k] == 1.0f);
    free(amp);
    a = circ(16.0, 0.0, 1, 2.0, 0.0); /* vane along +x, |y| < 1 blocked */
    a.edge = EDGE_BINARY;
    amp = fill(&a, n, N);
    assert_true(amp[(c + 1) * N + c + 5] == 1.0f); /* |s| = w/2: open */
    assert_true(amp[(c - 1) * N + c + 5] == 1.0f);
    assert_true(amp[c * N + c + 5] == 0.0f);
    assert_true(amp[c * N + c] == 0.0f); /* t = 0 is blocked (t >= 0) */
    assert_true(amp[c * N + c - 1] == 1.0f);
    free(amp);
    a.spider_angle_deg = 90.0; /* along +y: exact axis-parallel edges too */
    amp = fill(&a, n, N);
    assert_true(amp[(c + 5) * N + c + 1] == 1.0f);
    assert_true(amp[(c + 5) * N + c] == 0.0f);
    free(amp);
}

static void test_centro_symmetry(void **state)
{
    (void)state;
    static const int sizes[][2] = {{64, 64}, {63, 63}, {50, 64}, {51, 63}, {40, 101}};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; ++t) {
        int n = sizes[t][0], N = sizes[t][1], c = N / 2;
        for (int variant = 0; variant < 3; ++variant) {
            psf_aperture a = circ(1.0, variant ? 0.3 : 0.0, variant == 2 ? 4 : 0, 0.05, 45.0);
            float *amp = fill(&a, n, N);
            for (int i = 0; i < N; ++i)
                for (int j = 0; j < N; ++j) {
                    int i2 = 2 * c - i, j2 = 2 * c - j;
                    if (i2 < 0 || i2 >= N || j2 < 0 || j2 >= N) continue;
                    assert_true(amp[i * N + j] == amp[i2 * N + j2]);
                }
            free(amp);
        }
    }
}

static void test_file_shape(void **state)
{
    (void)state;
    float map[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    psf_aperture a = circ(1.0, 0.0, 0, 0.0, 0.0);
    a.shape = APERTURE_FILE;
    a.map = map, a.map_rows = 2, a.map_cols = 2;
    const int n = 16, N = 24, c = N / 2;
    float *amp = fill(&a, n, N);
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
            int inside = abs(i - c) <= n / 2 && abs(j - c) <= n / 2;
            assert_true(amp[i * N + j] == (inside ? 0.5f : 0.0f));
        }
    free(amp);
    a.obscuration = 0.5; /* applied on top of the map */
    amp = fill(&a, n, N);
    assert_true(amp[c * N + c] == 0.0f);
    assert_true(amp[(c + 7) * N + c + 7] == 0.5f);
    free(amp);
}

static void test_errors(void **state)
{
    (void)state;
    float amp[64];
    char err[256];
    psf_aperture a = circ(0.0, 0.0, 0, 0.0, 0.0);
    err[0] = 0;
    assert_int_equal(aperture_fill(&a, 8, 0.1, amp, err, sizeof err), -1);
    assert_non_null(strstr(err, "diameter"));
    a = circ(1.0, 1.0, 0, 0.0, 0.0);
    assert_int_equal(aperture_fill(&a, 8, 0.1, amp, err, sizeof err), -1);
    assert_non_null(strstr(err, "obscuration"));
    a = circ(1.0, 0.0, 0, 0.0, 0.0);
    a.shape = APERTURE_FILE;
    assert_int_equal(aperture_fill(&a, 8, 0.1, amp, err, sizeof err), -1);
    assert_non_null(strstr(err, "map"));
    a = circ(1.0, 0.0, -1, 0.0, 0.0);
    assert_int_equal(aperture_check(&a, err, sizeof err), -1);
    a = circ(1.0, 0.0, 2, -0.1, 0.0);
    assert_int_equal(aperture_check(&a, err, sizeof err), -1);
    assert_true(aperture_area_m2(&a) < 0.0);
    a = circ(1.0, 0.0, 0, 0.0, 0.0);
    assert_int_equal(aperture_fill(&a, 8, 0.0, amp, err, sizeof err), -1);
    assert_int_equal(aperture_fill(&a, 8, 0.1, amp, NULL, 0), 0);
}

/* N = 4096, n = 2048, obscuration and 4 spiders: the largest grid the
 * tests fill, its grey area within 1e-5 of the closed form (its speed is
 * measured in bench/, never here). */
static void test_large_grid(void **state)
{
    (void)state;
    const int N = 4096;
    psf_aperture a = circ(2.4, 0.33, 4, 0.02, 45.0);
    float *amp = malloc(sizeof *amp * (size_t)N * N);
    assert_non_null(amp);
    const double dx = 2.4 / 2048;
    assert_int_equal(aperture_fill(&a, N, dx, amp, NULL, 0), 0);
    double sum = 0.0;
    for (size_t i = 0; i < (size_t)N * N; ++i)
        sum += amp[i];
    free(amp);
    assert_true(fabs(sum * dx * dx / aperture_area_m2(&a) - 1.0) < 1e-5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_halfplane_formula),
        cmocka_unit_test(test_grey_accuracy),
        cmocka_unit_test(test_area_convergence),
        cmocka_unit_test(test_area_closed_forms),
        cmocka_unit_test(test_area_vane_overlaps),
        cmocka_unit_test(test_hexagon_orientation),
        cmocka_unit_test(test_spider_orientation),
        cmocka_unit_test(test_binary_boundaries),
        cmocka_unit_test(test_centro_symmetry),
        cmocka_unit_test(test_file_shape),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_large_grid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
