/* SPDX-License-Identifier: BSD-3-Clause */
/* The decomposition the GPU's separable path runs (gpu/detector_sep.h),
 * in double on the host, against the CPU's stage (cpu/detector.h: one
 * N x N R2C, the 2D transfer function, C2R, then D = s^2 G[i s + o][j s +
 * o]): each row circularly convolved with the inverse DFT of
 * psf_detector_axis_tables' tx, the columns i s + o kept, each of them
 * with ty's, s^2 and the rows i s + o kept, then the IPC kernel as a 3 x 3
 * circular stencil on the detector grid, out[i][j] = sum k[a][b]
 * D[i - (a - 1)][j - (b - 1)], clamped at 0 (psf_detector_clamp: these
 * test images are not band-limited, so the stage's exact image has
 * negatives of ~1e-4 of the peak). The same image to float rounding
 * (relative L2 <= 1e-6) for N = 16, 32, 64, s = 1, 2, 4 and M = 1 (s = N:
 * the offset o = N/2), sampled and (s = 1) unsampled, every effect with
 * an asymmetric IPC kernel, and without IPC. Also: the 2D table
 * (psf_detector_otf) is tx[c] ty[r] times the IPC factor (<= 1e-6 of its
 * largest value). Controls: the stencil flipped (k[2 - a][2 - b]) or the
 * axes' tables swapped differ (> 1e-4), so the checks can fail. */
#include <complex.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/detector.h"
#include "cpu/detector.h"
#include "tests/support/detector_cases.h"
#include "tests/support/testutil.h"

#define TOL 1e-6

/* How the reference is spoilt for the controls. */
enum { EXACT, FLIP_STENCIL, SWAP_AXES };

/* x (n values, stride st) circularly convolved with the inverse DFT of g
 * (real, n values, 1/n in them): DFT, times g, inverse DFT, in double. */
static void convolve(double *x, int n, size_t st, const float *g)
{
    double complex *f = malloc((size_t)n * sizeof *f);
    assert_non_null(f);
    for (int k = 0; k < n; ++k) {
        double complex a = 0.0;
        for (int j = 0; j < n; ++j)
            a += x[(size_t)j * st] * cexp(-2.0 * M_PI * I * (double)((long)k * j % n) / n);
        f[k] = a * g[k];
    }
    for (int j = 0; j < n; ++j) {
        double complex a = 0.0;
        for (int k = 0; k < n; ++k)
            a += f[k] * cexp(2.0 * M_PI * I * (double)((long)k * j % n) / n);
        x[(size_t)j * st] = creal(a);
    }
    free(f);
}

static int wrap(int a, int m)
{
    return ((a % m) + m) % m;
}

/* The separable decomposition of p's stage on grid into out (M^2). */
static void separable(const psf_problem *p, const float *grid, int spoil, float *out)
{
    const psf_detector *d = &p->detector;
    int n = p->npix, s = d->oversample > 1 ? d->oversample : 1;
    int m = d->sample ? n / s : n, o = d->sample ? psf_detector_sample_offset(d, n) : 0;
    float *tx = malloc((size_t)n * sizeof *tx), *ty = malloc((size_t)n * sizeof *ty);
    double *a = malloc((size_t)n * n * sizeof *a), *b = malloc((size_t)n * m * sizeof *b);
    double *c = malloc((size_t)m * m * sizeof *c);
    assert_true(tx && ty && a && b && c);
    psf_detector_axis_tables(d, n, spoil == SWAP_AXES ? ty : tx, spoil == SWAP_AXES ? tx : ty);
    for (size_t i = 0; i < (size_t)n * n; ++i)
        a[i] = grid[i];
    for (int r = 0; r < n; ++r) { /* pass A: rows, the sampled columns kept */
        convolve(a + (size_t)r * n, n, 1, tx);
        for (int j = 0; j < m; ++j)
            b[(size_t)r * m + j] = a[(size_t)r * n + (size_t)j * s + o];
    }
    for (int j = 0; j < m; ++j) { /* pass B: columns, s^2, the sampled rows kept */
        convolve(b + j, n, (size_t)m, ty);
        for (int i = 0; i < m; ++i)
            c[(size_t)i * m + j] = (double)s * s * b[(size_t)(i * s + o) * m + j];
    }
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < m; ++j) {
            double v = c[(size_t)i * m + j];
            if (d->ipc) {
                v = 0.0;
                for (int ka = 0; ka < 3; ++ka)
                    for (int kb = 0; kb < 3; ++kb) {
                        int ea = spoil == FLIP_STENCIL ? 2 - ka : ka;
                        int eb = spoil == FLIP_STENCIL ? 2 - kb : kb;
                        v += d->ipc_kernel[3 * ea + eb] *
                             c[(size_t)wrap(i - (ka - 1), m) * m + wrap(j - (kb - 1), m)];
                    }
            }
            out[(size_t)i * m + j] = psf_detector_clamp_value((float)v);
        }
    free(tx);
    free(ty);
    free(a);
    free(b);
    free(c);
}

/* The relative L2 of the decomposition (spoilt or not) against the CPU's
 * stage for (npix, s, sample, ipc); printed. */
static double difference(int npix, int s, int sample, int ipc, int spoil)
{
    psf_problem p = detector_case_problem(npix, s, sample);
    p.detector.ipc = ipc;
    int m = psf_detector_out_npix(&p);
    size_t plane = (size_t)npix * npix, mm = (size_t)m * m;
    float *grid = malloc(plane * sizeof *grid), *ref = malloc(mm * sizeof *ref),
          *got = malloc(mm * sizeof *got);
    assert_true(grid && ref && got);
    detector_case_grid(npix, 1, grid);
    cpu_detector cd;
    cpu_detector_work w;
    char err[256];
    assert_int_equal(cpu_detector_create(&cd, &p, err, sizeof err), 0);
    assert_int_equal(cpu_detector_work_alloc(&cd, &w), 0);
    cpu_detector_apply(&cd, &w, grid, ref);
    cpu_detector_work_free(&w);
    cpu_detector_destroy(&cd);
    separable(&p, grid, spoil, got);
    double e = tu_rel_l2(got, ref, mm);
    printf("N=%-3d s=%-2d %-9s M=%-3d ipc=%d spoil=%d rel L2 %.3g\n", npix, s,
           sample ? "sampled" : "unsampled", m, ipc, spoil, e);
    free(grid);
    free(ref);
    free(got);
    return e;
}

static void test_decomposition(void **state)
{
    (void)state;
    static const int cases[][3] = {{16, 1, 1}, {32, 1, 0}, {64, 1, 1},  {64, 1, 0}, {64, 2, 1},
                                   {64, 4, 1}, {32, 4, 1}, {16, 16, 1}, {64, 64, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        for (int ipc = 0; ipc < 2; ++ipc)
            assert_true(difference(cases[i][0], cases[i][1], cases[i][2], ipc, EXACT) <= TOL);
}

static void test_controls(void **state)
{
    (void)state;
    assert_true(difference(64, 1, 1, 1, FLIP_STENCIL) > 1e-4);
    assert_true(difference(64, 2, 1, 1, FLIP_STENCIL) > 1e-4);
    assert_true(difference(64, 1, 1, 0, SWAP_AXES) > 1e-4);
}

/* psf_detector_otf = tx[c] ty[r] (the IPC factor too when on). */
static void test_tables(void **state)
{
    (void)state;
    for (int ipc = 0; ipc < 2; ++ipc)
        for (int s = 1; s <= 4; s *= 2) {
            int n = 64, nc = n / 2 + 1;
            psf_problem p = detector_case_problem(n, s, 1);
            p.detector.ipc = ipc;
            float *otf = malloc(psf_detector_otf_bytes(n)), tx[64], ty[64];
            assert_non_null(otf);
            psf_detector_otf(&p.detector, n, otf);
            psf_detector_axis_tables(&p.detector, n, tx, ty);
            double worst = 0.0, top = 0.0;
            for (int r = 0; r < n; ++r)
                for (int c = 0; c < nc; ++c) {
                    double u = (double)c * s / n, v = (double)(r <= n / 2 ? r : r - n) * s / n;
                    double complex h = 1.0;
                    if (ipc) {
                        h = 0.0;
                        for (int a = 0; a < 3; ++a)
                            for (int b = 0; b < 3; ++b)
                                h += p.detector.ipc_kernel[3 * a + b] *
                                     cexp(-2.0 * M_PI * I * ((b - 1) * u + (a - 1) * v));
                    }
                    double complex want = (double)tx[c] * ty[r] * h;
                    size_t i = 2 * ((size_t)r * nc + c);
                    double complex got = otf[i] + I * otf[i + 1];
                    worst = fmax(worst, cabs(got - want));
                    top = fmax(top, cabs(want));
                }
            printf("tables s=%d ipc=%d worst %.3g of %.3g\n", s, ipc, worst, top);
            assert_true(worst <= 1e-6 * top);
            free(otf);
        }
}
int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_decomposition),
                                       cmocka_unit_test(test_controls),
                                       cmocka_unit_test(test_tables)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
