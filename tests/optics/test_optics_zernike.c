/* SPDX-License-Identifier: BSD-3-Clause */
/* Zernike index conventions and polynomials against published tables,
 * closed forms, an independent recurrence and orthonormality integrals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "optics/zernike.h"

/* Noll 1976, table 1 (JOSA 66, 207): j -> (n, m), m > 0 cos, m < 0 sin. */
static const int noll_table[22][3] = {
    {1, 0, 0},   {2, 1, 1},  {3, 1, -1},  {4, 2, 0},  {5, 2, -2},  {6, 2, 2},
    {7, 3, -1},  {8, 3, 1},  {9, 3, -3},  {10, 3, 3}, {11, 4, 0},  {12, 4, 2},
    {13, 4, -2}, {14, 4, 4}, {15, 4, -4}, {16, 5, 1}, {17, 5, -1}, {18, 5, 3},
    {19, 5, -3}, {20, 5, 5}, {21, 5, -5}, {22, 6, 0},
};

static void test_noll_table(void **state)
{
    (void)state;
    for (int k = 0; k < 22; ++k) {
        int n = -9, m = -9, j = noll_table[k][0];
        assert_int_equal(zernike_noll_to_nm(j, &n, &m), 0);
        assert_int_equal(n, noll_table[k][1]);
        assert_int_equal(m, noll_table[k][2]);
        assert_int_equal(zernike_nm_to_noll(n, m), j);
        /* Noll's rule: even j is the cos term (m > 0), odd j the sin term. */
        if (m != 0) assert_true((j % 2 == 0) == (m > 0));
    }
}

static void test_round_trips(void **state)
{
    (void)state;
    int nmax_terms = (ZERNIKE_MAX_ORDER + 1) * (ZERNIKE_MAX_ORDER + 2) / 2;
    int n, m;
    for (int j = 1; j <= nmax_terms; ++j) {
        assert_int_equal(zernike_noll_to_nm(j, &n, &m), 0);
        assert_int_equal(zernike_nm_to_noll(n, m), j);
    }
    assert_int_equal(zernike_noll_to_nm(nmax_terms + 1, &n, &m), -1);
    assert_int_equal(zernike_noll_to_nm(0, &n, &m), -1);
    for (int j = 0; j < nmax_terms; ++j) {
        assert_int_equal(zernike_ansi_to_nm(j, &n, &m), 0);
        assert_int_equal(zernike_nm_to_ansi(n, m), j);
        assert_int_equal((n * (n + 2) + m) / 2, j);
    }
    assert_int_equal(zernike_ansi_to_nm(nmax_terms, &n, &m), -1);
    assert_int_equal(zernike_ansi_to_nm(-1, &n, &m), -1);
    /* Fringe: every (n, m) up to order 40 maps to a distinct j and back. */
    for (int nn = 0; nn <= 40; ++nn)
        for (int mm = -nn; mm <= nn; mm += 2) {
            int j = zernike_nm_to_fringe(nn, mm);
            assert_true(j >= 1);
            assert_int_equal(zernike_fringe_to_nm(j, &n, &m), 0);
            assert_int_equal(n, nn);
            assert_int_equal(m, mm);
        }
    for (int j = 1; j <= 2000; ++j) {
        assert_int_equal(zernike_fringe_to_nm(j, &n, &m), 0);
        assert_int_equal(zernike_nm_to_fringe(n, m), j);
    }
    assert_int_equal(zernike_fringe_to_nm(0, &n, &m), -1);
    assert_int_equal(zernike_nm_to_noll(2, 1), -1); /* n - |m| odd */
    assert_int_equal(zernike_nm_to_noll(2, 4), -1); /* |m| > n */
    assert_int_equal(zernike_index_to_nm((zernike_convention)7, 1, &n, &m), -1);
}

static void test_known_indices(void **state)
{
    (void)state;
    /* ANSI Z80.28: 0 piston, 1 (1,-1), 2 (1,1), 4 defocus, 12 spherical. */
    static const int ansi[][3] = {{0, 0, 0}, {1, 1, -1}, {2, 1, 1},  {3, 2, -2},
                                  {4, 2, 0}, {5, 2, 2},  {7, 3, -1}, {12, 4, 0}};
    /* Fringe (U. Arizona): 4 defocus, 5/6 astigmatism, 7/8 coma, 9 spherical,
     * 16 secondary spherical, 25 tertiary spherical, 36 (10,0). */
    static const int fringe[][3] = {{1, 0, 0},  {2, 1, 1},  {3, 1, -1},  {4, 2, 0},
                                    {5, 2, 2},  {6, 2, -2}, {7, 3, 1},   {8, 3, -1},
                                    {9, 4, 0},  {10, 3, 3}, {11, 3, -3}, {12, 4, 2},
                                    {16, 6, 0}, {25, 8, 0}, {36, 10, 0}, {49, 12, 0}};
    int n, m;
    for (size_t k = 0; k < sizeof ansi / sizeof ansi[0]; ++k) {
        assert_int_equal(zernike_index_to_nm(ZCONV_ANSI, ansi[k][0], &n, &m), 0);
        assert_int_equal(n, ansi[k][1]);
        assert_int_equal(m, ansi[k][2]);
    }
    for (size_t k = 0; k < sizeof fringe / sizeof fringe[0]; ++k) {
        assert_int_equal(zernike_index_to_nm(ZCONV_FRINGE, fringe[k][0], &n, &m), 0);
        assert_int_equal(n, fringe[k][1]);
        assert_int_equal(m, fringe[k][2]);
    }
}

/* Explicit factorial sum (Noll 1976, eq. 2) in long double. */
static long double radial_factorial(int n, int m, long double rho)
{
    long double s = 0.0L;
    for (int k = 0; k <= (n - m) / 2; ++k) {
        long double c = tgammal(n - k + 1) / (tgammal(k + 1) * tgammal((n + m) / 2 - k + 1) *
                                              tgammal((n - m) / 2 - k + 1));
        s += ((k & 1) ? -c : c) * powl(rho, n - 2 * k);
    }
    return s;
}

/* Independent recurrence in rho only (Shakibaei & Paramesran, Opt. Lett. 38,
 * 2487, 2013): R_n^m = rho (R_{n-1}^{|m-1|} + R_{n-1}^{m+1}) - R_{n-2}^m,
 * R_n^n = rho^n; table[n][m] for n <= 60, long double. */
#define RMAX 60
static void radial_table(long double rho, long double t[RMAX + 1][RMAX + 2])
{
    for (int n = 0; n <= RMAX; ++n)
        for (int m = 0; m <= RMAX + 1; ++m)
            t[n][m] = 0.0L;
    for (int n = 0; n <= RMAX; ++n)
        for (int m = n; m >= 0; m -= 2) {
            if (m == n) {
                t[n][m] = powl(rho, n);
                continue;
            }
            long double a = t[n - 1][m > 0 ? m - 1 : 1], b = t[n - 1][m + 1];
            t[n][m] = rho * (a + b) - (n >= 2 ? t[n - 2][m] : 0.0L);
        }
}

static void test_radial_reference(void **state)
{
    (void)state;
    static long double t[RMAX + 1][RMAX + 2];
    double worst_fact = 0.0, worst_rec = 0.0;
    for (int q = 0; q <= 100; ++q) {
        double rho = q / 100.0;
        radial_table(rho, t);
        for (int n = 0; n <= 40; ++n)
            for (int m = n & 1; m <= n; m += 2) {
                double r = zernike_radial(n, m, rho);
                assert_false(isnan(r) || isinf(r));
                double e = fabs(r - (double)t[n][m]);
                if (e > worst_rec) worst_rec = e;
                if (n <= 20) {
                    double f = fabs(r - (double)radial_factorial(n, m, rho));
                    if (f > worst_fact) worst_fact = f;
                }
            }
    }
    assert_true(worst_fact < 1e-11);
    assert_true(worst_rec < 1e-11);
}

static void test_radial_identities(void **state)
{
    (void)state;
    for (int n = 0; n <= ZERNIKE_MAX_ORDER; ++n)
        for (int m = n & 1; m <= n; m += 2) {
            /* R_n^m(1) = 1 for every n, m. */
            assert_true(fabs(zernike_radial(n, m, 1.0) - 1.0) < 1e-12);
            /* At rho = 0: 0 for m > 0, (-1)^(n/2) for m = 0. */
            double r0 = zernike_radial(n, m, 0.0);
            double want = m > 0 ? 0.0 : (((n / 2) & 1) ? -1.0 : 1.0);
            assert_true(r0 == want);
            for (int q = 0; q <= 200; ++q) {
                double r = zernike_radial(n, m, q / 200.0);
                assert_false(isnan(r) || isinf(r));
                assert_true(fabs(r) <= 1.0 + 1e-9); /* |R_n^m| <= 1 on [0, 1] */
            }
        }
    assert_true(zernike_radial(3, 2, 0.5) == 0.0); /* n - m odd */
    assert_true(zernike_radial(2, 4, 0.5) == 0.0); /* m > n */
}

/* int_0^1 R_n^m R_n'^m rho drho = delta / (2 (n + 1)), by 96-point
 * Gauss-Legendre in rho^2 (exact for polynomials in rho^2 of degree < 192). */
static void test_radial_orthogonality_high_order(void **state)
{
    (void)state;
    enum { NQ = 96 };
    double x[NQ], w[NQ];
    /* Gauss-Legendre nodes on [-1, 1] by Newton on P_NQ. */
    for (int i = 0; i < NQ; ++i) {
        double z = cos(M_PI * (i + 0.75) / (NQ + 0.5)), dp = 0.0;
        for (int it = 0; it < 100; ++it) {
            double p0 = 1.0, p1 = z;
            for (int k = 2; k <= NQ; ++k) {
                double p2 = ((2.0 * k - 1.0) * z * p1 - (k - 1.0) * p0) / k;
                p0 = p1, p1 = p2;
            }
            dp = NQ * (z * p1 - p0) / (z * z - 1.0);
            double dz = p1 / dp;
            z -= dz;
            if (fabs(dz) < 1e-16) break;
        }
        x[i] = z, w[i] = 2.0 / ((1.0 - z * z) * dp * dp);
    }
    int pairs[][3] = {{40, 0, 40}, {40, 0, 38}, {40, 10, 40},  {40, 10, 30},
                      {60, 2, 60}, {60, 2, 58}, {100, 0, 100}, {99, 1, 97}};
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; ++k) {
        int n = pairs[k][0], m = pairs[k][1], n2 = pairs[k][2];
        double s = 0.0;
        for (int i = 0; i < NQ; ++i) {
            double u = 0.5 * (x[i] + 1.0), rho = sqrt(u); /* u = rho^2 */
            s += 0.5 * w[i] * zernike_radial(n, m, rho) * zernike_radial(n2, m, rho) * 0.5;
        }
        double want = n == n2 ? 1.0 / (2.0 * (n + 1)) : 0.0;
        assert_true(fabs(s - want) < 1e-10 * (n + 1));
    }
}

static void test_values_at_axis(void **state)
{
    (void)state;
    int n, m;
    zernike_noll_to_nm(1, &n, &m);
    assert_true(fabs(zernike_eval(n, m, 0.0, 0.3) - 1.0) < 1e-15);
    zernike_noll_to_nm(4, &n, &m);
    assert_true(fabs(zernike_eval(n, m, 0.0, 1.1) + sqrt(3.0)) < 1e-14);
    assert_true(fabs(zernike_eval(n, m, 1.0, 1.1) - sqrt(3.0)) < 1e-14);
    zernike_noll_to_nm(11, &n, &m);
    assert_true(fabs(zernike_eval(n, m, 0.0, 2.0) - sqrt(5.0)) < 1e-14);
    for (int j = 1; j <= 231; ++j) {
        zernike_noll_to_nm(j, &n, &m);
        double v = zernike_eval(n, m, 0.0, 0.7);
        if (m != 0)
            assert_true(v == 0.0);
        else
            assert_true(fabs(fabs(v) - sqrt(n + 1.0)) < 1e-12);
    }
    /* Noll 2 = 2 rho cos theta, Noll 3 = 2 rho sin theta, Noll 6 = sqrt 6 rho^2 cos 2 theta. */
    assert_true(fabs(zernike_eval(1, 1, 0.5, 0.0) - 1.0) < 1e-15);
    assert_true(fabs(zernike_eval(1, -1, 0.5, M_PI / 2) - 1.0) < 1e-15);
    assert_true(fabs(zernike_eval(2, 2, 1.0, 0.0) - sqrt(6.0)) < 1e-14);
}

/* Gram matrix of Noll 1..36 over the unit disk: midpoint rule in rho (400
 * rings) times a uniform 128-point theta rule (exact for the trig degrees
 * up to 10 used here). Normalised by the disk area pi. */
static void test_orthonormality(void **state)
{
    (void)state;
    enum { J = 36, NR = 400, NT = 128 };
    int n[J], m[J];
    for (int j = 0; j < J; ++j)
        zernike_noll_to_nm(j + 1, &n[j], &m[j]);
    static double g[J][J];
    double z[J];
    for (int a = 0; a < NR; ++a) {
        double rho = (a + 0.5) / NR;
        for (int b = 0; b < NT; ++b) {
            double th = 2.0 * M_PI * b / NT, wgt = rho * (1.0 / NR) * (2.0 * M_PI / NT) / M_PI;
            for (int j = 0; j < J; ++j)
                z[j] = zernike_eval(n[j], m[j], rho, th);
            for (int i = 0; i < J; ++i)
                for (int j = 0; j <= i; ++j)
                    g[i][j] += wgt * z[i] * z[j];
        }
    }
    for (int i = 0; i < J; ++i)
        for (int j = 0; j <= i; ++j) {
            if (i == j)
                assert_true(fabs(g[i][j] - 1.0) < 0.005);
            else
                assert_true(fabs(g[i][j]) < 0.005);
        }
}

static void test_sum(void **state)
{
    (void)state;
    int n[3] = {2, 1, 4}, m[3] = {0, 1, 0};
    double c[3] = {0.5, -0.25, 0.0};
    double rho = 0.6, th = 0.4;
    double want = 0.5 * zernike_eval(2, 0, rho, th) - 0.25 * zernike_eval(1, 1, rho, th);
    assert_true(fabs(zernike_sum(3, n, m, c, rho, th) - want) < 1e-15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_noll_table),
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_known_indices),
        cmocka_unit_test(test_radial_reference),
        cmocka_unit_test(test_radial_identities),
        cmocka_unit_test(test_radial_orthogonality_high_order),
        cmocka_unit_test(test_values_at_axis),
        cmocka_unit_test(test_orthonormality),
        cmocka_unit_test(test_sum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
