/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU detector stage's three paths (gpu/detector.h) called directly
 * on grid images: the packed pairs (gpu_detector.packed 1: image 2p the
 * real, 2p+1 the imaginary part of complex image p, one C2C of ceil(n/2)
 * pairs, the fold or multiply of both images of a pair), the R2C of n
 * (packed 0) and, where the grid is a power of two, the separable path
 * (gpu_detector.separable, gpu/detector_sep.h: no cuFFT), each against the
 * CPU's stage (cpu/detector.h) image by image: relative L2 <= 1e-5, the
 * backends' tolerance (test_gpu_detector, through the backend, checks the
 * default path the same way). Every effect with an asymmetric IPC kernel
 * at s = 1, 2, 4, even and odd M (the offset's phase), and unsampled at
 * s = 4 (the N x N convolution); the separable path at N = 16 .. 1024
 * (each kernel size), s = 1, 2, 4 and N (M = 1), unsampled at s = 1, with
 * and without IPC (its two column kernels); n = 1 (always the R2C path of
 * the cuFFT ones), 2, 3, 5 and 8 images, the odd counts' last pair's
 * imaginary half filled with NaN beforehand (the stage zeroes it). Links
 * the GPU objects (tests/CMakeLists.txt); skipped (exit 77) without them
 * or without a CUDA device. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifdef PSFSIM_HAVE_CUDA
#include "tests/support/cuda_skip.h"
#include "backend/backend.h"
#include "backend/detector.h"
#include "cpu/detector.h"
#include "gpu/detector.h"
#include "tests/support/detector_cases.h"
#include "tests/support/testutil.h"

#define TOL 1e-5
#define CAP 8 /* the stage's capacity: the largest n */

static cudaStream_t g_stream;

/* The grid buffer as the stage takes n images: plain, or packed pairs
 * with an odd count's last imaginary half NaN (the stage must zero it). */
static void layout(const float *imgs, int n, size_t plane, int packed, float *host)
{
    if (!packed) {
        memcpy(host, imgs, (size_t)n * plane * sizeof *host);
        return;
    }
    for (int k = 0; k < n + (n & 1); ++k)
        for (size_t i = 0; i < plane; ++i)
            host[2 * ((size_t)(k / 2) * plane + i) + (k & 1)] =
                k < n ? imgs[(size_t)k * plane + i] : NAN;
}

enum { PATH_R2C, PATH_PACKED, PATH_SEPARABLE, PATHS };
static const char *const path_name[PATHS] = {"r2c", "packed", "sep"};

/* The GPU stage's n images of problem p on path into out (n M^2). */
static void gpu_images(const psf_problem *p, const float *imgs, int n, int path, float *out)
{
    int packed = path == PATH_PACKED;
    char err[512] = "";
    gpu_check chk;
    gpu_check_init(&chk, 0, err, sizeof err);
    chk.fail_at = 0;
    gpu_detector d;
    assert_int_equal(gpu_detector_create(&d, p, CAP, g_stream, &chk), 0);
    d.packed = packed;
    assert_int_equal(d.separable, gpu_detector_sep_supports(p));
    d.separable = path == PATH_SEPARABLE;
    assert_int_equal(gpu_detector_packs(&d, n), packed && n >= 2);
    size_t plane = (size_t)p->npix * p->npix, m = (size_t)psf_detector_out_npix(p);
    size_t grid_floats = (size_t)gpu_detector_grid_images(p, CAP) * plane;
    assert_true(grid_floats >= (size_t)(n + (n & 1)) * plane);
    float *host = malloc(grid_floats * sizeof *host), *grid = NULL, *res = NULL;
    cufftComplex *spec = NULL;
    assert_non_null(host);
    layout(imgs, n, plane, packed && n >= 2, host);
    assert_int_equal(GPU_CUDA(&chk, cudaMalloc((void **)&grid, grid_floats * sizeof(float))), 0);
    assert_int_equal(GPU_CUDA(&chk, cudaMalloc((void **)&spec, CAP * plane * sizeof *spec)), 0);
    assert_int_equal(
        GPU_CUDA(&chk, cudaMemcpy(grid, host, grid_floats * sizeof(float), cudaMemcpyHostToDevice)),
        0);
    if (gpu_detector_apply(&d, grid, n, spec, 0, &res, &chk) != 0) fail_msg("%s", err);
    assert_int_equal(GPU_CUDA(&chk, cudaStreamSynchronize(g_stream)), 0);
    assert_int_equal(GPU_CUDA(&chk, cudaMemcpy(out, res, (size_t)n * m * m * sizeof *out,
                                               cudaMemcpyDeviceToHost)),
                     0);
    cudaFree(grid);
    cudaFree(spec);
    gpu_detector_destroy(&d);
    free(host);
}

/* n images of problem (npix, s, sample, ipc) on every path it has against
 * the CPU's stage; the worst relative L2 printed and asserted <= TOL. */
static void compare(int npix, int s, int sample, int ipc, int n)
{
    psf_problem p = detector_case_problem(npix, s, sample);
    p.detector.ipc = ipc;
    size_t plane = (size_t)npix * npix, m = (size_t)psf_detector_out_npix(&p), mm = m * m;
    float *imgs = malloc((size_t)n * plane * sizeof *imgs),
          *ref = malloc((size_t)n * mm * sizeof *ref);
    float *out = malloc((size_t)n * mm * sizeof *out);
    assert_true(imgs && ref && out);
    cpu_detector cd;
    char err[256];
    assert_int_equal(cpu_detector_create(&cd, &p, err, sizeof err), 0);
    cpu_detector_work w;
    assert_int_equal(cpu_detector_work_alloc(&cd, &w), 0);
    for (int k = 0; k < n; ++k) {
        detector_case_grid(npix, k, imgs + (size_t)k * plane);
        cpu_detector_apply(&cd, &w, imgs + (size_t)k * plane, ref + (size_t)k * mm);
    }
    cpu_detector_work_free(&w);
    cpu_detector_destroy(&cd);
    int paths = gpu_detector_sep_supports(&p) ? PATHS : PATH_SEPARABLE;
    for (int path = 0; path < paths; ++path) {
        gpu_images(&p, imgs, n, path, out);
        double worst = 0.0;
        for (int k = 0; k < n; ++k) {
            double e = tu_rel_l2(out + (size_t)k * mm, ref + (size_t)k * mm, mm);
            if (!(e <= worst)) worst = e;
        }
        printf("N=%-4d s=%-4d %-9s M=%-4zu ipc=%d n=%d %-6s worst rel L2 %.3g\n", npix, s,
               sample ? "sampled" : "unsampled", m, ipc, n, path_name[path], worst);
        assert_true(worst <= TOL);
    }
    free(imgs);
    free(ref);
    free(out);
}

static void test_paths_against_cpu(void **state)
{
    (void)state;
    static const int cases[][3] = {{96, 1, 1}, {45, 1, 1}, {96, 2, 1}, {90, 2, 1},
                                   {96, 4, 1}, {84, 4, 1}, {96, 4, 0}};
    static const int counts[] = {1, 2, 3, 5, 8};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c)
            compare(cases[i][0], cases[i][1], cases[i][2], 1, counts[c]);
}

/* The separable path's kernel sizes and shapes (gpu/detector_sep.h). */
static void test_separable_against_cpu(void **state)
{
    (void)state;
    static const int cases[][4] = {{16, 1, 1, 1},   {32, 1, 1, 1},  {64, 1, 1, 1},   {128, 1, 1, 1},
                                   {256, 1, 1, 1},  {512, 1, 1, 1}, {1024, 1, 1, 1}, {256, 1, 1, 0},
                                   {1024, 1, 1, 0}, {256, 1, 0, 1}, {64, 1, 0, 0},   {256, 2, 1, 1},
                                   {256, 4, 1, 1},  {256, 4, 1, 0}, {128, 4, 1, 1},  {512, 4, 1, 1},
                                   {64, 8, 1, 1},   {32, 32, 1, 1}, {16, 4, 1, 0}};
    static const int counts[] = {1, 2, 3};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        psf_problem p = detector_case_problem(cases[i][0], cases[i][1], cases[i][2]);
        assert_true(gpu_detector_sep_supports(&p));
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c)
            compare(cases[i][0], cases[i][1], cases[i][2], cases[i][3], counts[c]);
    }
    /* Not separable: not a power of two; unsampled at s > 1. */
    psf_problem p = detector_case_problem(96, 1, 1);
    assert_false(gpu_detector_sep_supports(&p));
    p = detector_case_problem(256, 4, 0);
    assert_false(gpu_detector_sep_supports(&p));
}

/* The group's stream, made once (the device is there: main checked). */
static int stream_setup(void **state)
{
    (void)state;
    return cudaStreamCreate(&g_stream) == cudaSuccess ? 0 : -1;
}

static int stream_teardown(void **state)
{
    (void)state;
    return cudaStreamDestroy(g_stream) == cudaSuccess ? 0 : -1;
}
#endif

int main(void)
{
#ifdef PSFSIM_HAVE_CUDA
    int skip = cuda_device_or_skip();
    if (skip) return skip;
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_paths_against_cpu),
                                       cmocka_unit_test(test_separable_against_cpu)};
    return cmocka_run_group_tests(tests, stream_setup, stream_teardown);
#else
    printf("skipped: psfsim was built without the CUDA backend\n");
    return 77;
#endif
}
