/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradients' detector stage (cpu/adjoint.h, adj_detector): its
 * transpose passes the dot-product test <D x, y> = <x, D^T y> (to 1e-12
 * relative, random x and y) for psfsim's stage (pixel box, jitter,
 * diffusion, IPC at s = 2, even and odd M), WebbPSF's blocks (s = 3, with
 * and without the pixel response's block sum), the unsampled grid
 * (detector.write = "oversampled") and the sampling alone; and its forward
 * equals the float stage (cpu/detector.h) to float rounding. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu/adjoint.h"
#include "cpu/detector.h"

static double uniform(unsigned long long *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*state >> 11) / 9007199254740992.0 - 0.5;
}

/* <D x, y> against <x, D^T y> and the forward against cpu_detector_apply
 * for stage det on an n x n grid. */
static void check_stage(const psf_detector *det, int n)
{
    psf_problem p;
    memset(&p, 0, sizeof p);
    p.npix = n;
    p.detector = *det;
    adj_detector d;
    char err[256];
    assert_int_equal(adj_detector_init(&d, &p, err, sizeof err), 0);
    int m = d.m;
    size_t nn = (size_t)n * n, mm = (size_t)m * m;
    double *x = malloc(nn * sizeof *x), *dx = malloc(mm * sizeof *dx);
    double *y = malloc(mm * sizeof *y), *dty = malloc(nn * sizeof *dty);
    unsigned long long st = 12345;
    for (size_t i = 0; i < nn; ++i)
        x[i] = uniform(&st) + 0.5; /* >= 0: an image (the float stage clamps at 0) */
    for (size_t i = 0; i < mm; ++i)
        y[i] = uniform(&st);
    adj_detector_forward(&d, x, dx);
    adj_detector_adjoint(&d, y, dty);
    double a = 0.0, b = 0.0, scale = 0.0;
    for (size_t i = 0; i < mm; ++i) {
        a += dx[i] * y[i];
        scale += fabs(dx[i] * y[i]);
    }
    for (size_t i = 0; i < nn; ++i)
        b += x[i] * dty[i];
    assert_true(fabs(a - b) <= 1e-12 * scale);
    /* the float stage: the same image to float rounding */
    cpu_detector fd;
    assert_int_equal(cpu_detector_create(&fd, &p, err, sizeof err), 0);
    float *xf = malloc(nn * sizeof *xf), *out = malloc(nn * sizeof *out);
    for (size_t i = 0; i < nn; ++i)
        xf[i] = (float)x[i];
    cpu_detector_work w = {0};
    if (fd.convolve) assert_int_equal(cpu_detector_work_alloc(&fd, &w), 0);
    cpu_detector_apply(&fd, &w, xf, out);
    double peak = 0.0, diff = 0.0;
    for (size_t i = 0; i < mm; ++i) {
        peak = fmax(peak, fabs(dx[i]));
        diff = fmax(diff, fabs(dx[i] - out[i]));
    }
    assert_true(diff <= 1e-5 * peak);
    cpu_detector_work_free(&w);
    cpu_detector_destroy(&fd);
    adj_detector_free(&d);
    free(x), free(dx), free(y), free(dty), free(xf), free(out);
}

static psf_detector full(int s)
{
    psf_detector d = {.oversample = s, .sample = 1, .pixel_response = 1};
    d.jitter_px[0] = 0.3;
    d.jitter_px[1] = 0.2;
    d.diffusion_px = 0.25;
    d.ipc = 1;
    const double k[9] = {0.0, 0.02, 0.01, 0.03, 0.9, 0.02, 0.0, 0.01, 0.01}; /* not symmetric */
    memcpy(d.ipc_kernel, k, sizeof k);
    return d;
}

static void test_psfsim_stage(void **state)
{
    (void)state;
    psf_detector d = full(2);
    check_stage(&d, 32); /* M = 16, even */
    check_stage(&d, 30); /* M = 15, odd: the sample offset o = 1 */
    d.sample = 0;        /* the convolved grid, unsampled */
    check_stage(&d, 32);
}

static void test_blocks_and_sampling(void **state)
{
    (void)state;
    psf_detector d = full(3);
    d.blocks = 1; /* WebbPSF's: the pixel response is the block's sum */
    check_stage(&d, 27);
    d.pixel_response = 0; /* the block's centre sample, s^2 times */
    check_stage(&d, 27);
    psf_detector plain = {.oversample = 2, .sample = 1}; /* sampling alone */
    check_stage(&plain, 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_psfsim_stage),
        cmocka_unit_test(test_blocks_and_sampling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
