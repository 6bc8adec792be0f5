/* SPDX-License-Identifier: BSD-3-Clause */
/* Wavefront: Zernike sums on the pupil grid, signs and normalisation, focus
 * shift, OPD maps and their resampling (docs/design.md, "Aberrations"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "optics/wavefront.h"
#include "optics/zernike.h"

static float *wf(const int *n, const int *m, const double *c, int nt, int npix, int ns, double D,
                 const float *opd, double opd_to_waves)
{
    psf_modes modes = {nt, n, m};
    float *w = malloc(sizeof *w * (size_t)npix * npix);
    wavefront_fill(&modes, c, npix, D / ns, D, opd, opd_to_waves, w);
    return w;
}

static void test_defocus_values(void **state)
{
    (void)state;
    int n = 2, m = 0; /* Noll 4 */
    double c = 0.37;
    const int N = 80, ns = 64, k = N / 2;
    float *w = wf(&n, &m, &c, 1, N, ns, 2.0, NULL, 0.0);
    assert_true(fabs(w[k * N + k] + sqrt(3.0) * c) < 1e-6);            /* axis */
    assert_true(fabs(w[k * N + k + ns / 2] - sqrt(3.0) * c) < 1e-6);   /* rho = 1 on +x */
    assert_true(fabs(w[(k - ns / 2) * N + k] - sqrt(3.0) * c) < 1e-6); /* rho = 1 on -y */
    /* rho = 0.5: sqrt 3 (2 / 4 - 1) c. */
    assert_true(fabs(w[(k + ns / 4) * N + k] + 0.5 * sqrt(3.0) * c) < 1e-6);
    free(w);
}

static void test_tilt_sign(void **state)
{
    (void)state;
    const int N = 64, ns = 48, k = N / 2;
    int n = 1, m = 1; /* Noll 2: 2 rho cos theta, along +x = columns */
    double c = 0.5;
    float *w = wf(&n, &m, &c, 1, N, ns, 1.0, NULL, 0.0);
    for (int j = 1; j < N; ++j)
        assert_true(w[k * N + j] > w[k * N + j - 1]);
    for (int i = 1; i < N; ++i)
        assert_true(fabs(w[i * N + k]) < 1e-6); /* x = 0 column */
    /* x = D/2: 2 * 1 * c = 1. */
    assert_true(fabs(w[k * N + k + ns / 2] - 1.0) < 1e-6);
    free(w);
    m = -1; /* Noll 3: along +y = rows */
    w = wf(&n, &m, &c, 1, N, ns, 1.0, NULL, 0.0);
    for (int i = 1; i < N; ++i)
        assert_true(w[i * N + k] > w[(i - 1) * N + k]);
    free(w);
}

/* RMS over the unit disk of sum c_j Z_j is sqrt(sum c_j^2) (orthonormality). */
static void test_rms(void **state)
{
    (void)state;
    enum { NT = 14 };
    int n[NT], m[NT];
    double c[NT], ss = 0.0;
    for (int j = 0; j < NT; ++j) {
        zernike_noll_to_nm(j + 2, &n[j], &m[j]); /* Noll 2 .. 15: no piston */
        c[j] = 0.05 * ((j * 7) % 5 - 2) + 0.01 * j;
        ss += c[j] * c[j];
    }
    const int N = 520, ns = 512, k = N / 2;
    float *w = wf(n, m, c, NT, N, ns, 1.0, NULL, 0.0);
    double s2 = 0.0;
    long cnt = 0;
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
            double x = (j - k) / (ns / 2.0), y = (i - k) / (ns / 2.0);
            if (x * x + y * y > 1.0) continue;
            s2 += (double)w[i * N + j] * w[i * N + j];
            ++cnt;
        }
    assert_true(fabs(sqrt(s2 / cnt) / sqrt(ss) - 1.0) < 0.01);
    free(w);
}

static void test_opd_added(void **state)
{
    (void)state;
    enum { N = 16 };
    float opd[N * N];
    for (int i = 0; i < N * N; ++i)
        opd[i] = (float)(i % 7) - 3.0f;
    int n = 2, m = 0;
    double c = 0.0;
    float *w = wf(&n, &m, &c, 1, N, 12, 1.0, opd, 0.25);
    for (int i = 0; i < N * N; ++i)
        assert_true(fabs(w[i] - 0.25 * opd[i]) < 1e-7);
    free(w);
    psf_modes none = {0, NULL, NULL};
    w = malloc(sizeof *w * N * N);
    wavefront_fill(&none, NULL, N, 1.0 / 12, 1.0, NULL, 0.0, w);
    for (int i = 0; i < N * N; ++i)
        assert_true(w[i] == 0.0f);
    free(w);
}

static void test_basis(void **state)
{
    (void)state;
    int n[2] = {2, 3}, m[2] = {0, -1};
    double c[2] = {0.3, -0.7};
    const int N = 40;
    psf_modes modes = {2, n, m};
    float *b = malloc(sizeof *b * 2 * N * N), *w = malloc(sizeof *w * N * N);
    wavefront_fill_basis(&modes, N, 1.0 / 32, 1.0, b);
    wavefront_fill(&modes, c, N, 1.0 / 32, 1.0, NULL, 0.0, w);
    for (int i = 0; i < N * N; ++i)
        assert_true(fabs(c[0] * b[i] + c[1] * b[N * N + i] - w[i]) < 1e-5);
    free(b);
    free(w);
}

static void test_focus_shift(void **state)
{
    (void)state;
    /* dz = 8 F^2 um -> W020 = 1 um -> Z4 = 1 / (2 sqrt 3) um. */
    double F = 5.6;
    assert_true(fabs(wavefront_focus_shift_to_z4_um(8 * F * F, F) - 1.0 / (2 * sqrt(3.0))) < 1e-15);
    assert_true(fabs(wavefront_focus_shift_to_z4_um(-80.0, 2.0) + 2.5 / (2 * sqrt(3.0))) < 1e-15);
    assert_true(wavefront_focus_shift_to_z4_um(0.0, 8.0) == 0.0);
    assert_true(isnan(wavefront_focus_shift_to_z4_um(10.0, 0.0)));
}

static void test_resample(void **state)
{
    (void)state;
    const int rows = 10, cols = 14, N = 64, ns = 48, k = N / 2;
    const double D = 2.0, dx = D / ns;
    float map[10 * 14], *out = malloc(sizeof *out * N * N);
    for (int i = 0; i < rows * cols; ++i)
        map[i] = 1.25f;
    wavefront_resample_map(map, rows, cols, D, N, dx, out);
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
            int inside = abs(i - k) <= ns / 2 && abs(j - k) <= ns / 2;
            assert_true(out[i * N + j] == (inside ? 1.25f : 0.0f));
        }
    /* Ramp: map value = 3 x + 2 y at the pixel centres; bilinear
     * reproduces it exactly between the outermost centres. */
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            double x = ((c + 0.5) / cols - 0.5) * D, y = ((r + 0.5) / rows - 0.5) * D;
            map[r * cols + c] = (float)(3 * x + 2 * y);
        }
    wavefront_resample_map(map, rows, cols, D, N, dx, out);
    double xmax = (0.5 - 0.5 / cols) * D, ymax = (0.5 - 0.5 / rows) * D;
    int checked = 0;
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
            double x = (j - k) * dx, y = (i - k) * dx;
            if (fabs(x) > xmax || fabs(y) > ymax) continue;
            assert_true(fabs(out[i * N + j] - (3 * x + 2 * y)) < 1e-5);
            ++checked;
        }
    assert_true(checked > 1500);
    /* Row 0 of the map is at y = -D/2: a map that is 1 on row 0 only
     * shows up at small row indices. */
    for (int i = 0; i < rows * cols; ++i)
        map[i] = i < cols ? 1.0f : 0.0f;
    wavefront_resample_map(map, rows, cols, D, N, dx, out);
    assert_true(out[(k - ns / 2) * N + k] == 1.0f);
    assert_true(out[(k + ns / 2) * N + k] == 0.0f);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defocus_values),
        cmocka_unit_test(test_tilt_sign),
        cmocka_unit_test(test_rms),
        cmocka_unit_test(test_opd_added),
        cmocka_unit_test(test_basis),
        cmocka_unit_test(test_focus_shift),
        cmocka_unit_test(test_resample),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
