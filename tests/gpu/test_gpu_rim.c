/* SPDX-License-Identifier: BSD-3-Clause */
/* Binary edges on the GPU: the twin of tests/optics/test_optics_rim.c. The
 * GPU builds its pupils on the device (gpu/pupil.cu, aperture_kernel), so
 * the rim test there must be the CPU's integer one (optics/aperture_geom.h,
 * aperture_index_open): for every n from 2 to 1024 and D = 1, 8.2 and
 * 0.3 m the device's open-sample count (gpu_pupil.nopen) is the exact
 * lattice count, in FFT order and in the MFT's natural order, with and
 * without an obscuration, and for the hexagon. Links the GPU backend's
 * objects (tests/CMakeLists.txt); skipped (exit 77) without them or
 * without a CUDA device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#ifdef PSFSIM_HAVE_CUDA
#include "tests/support/cuda_skip.h"
#include "gpu/pupil.h"
#include "tests/support/rim_count.h"

static const double diameters[] = {1.0, 8.2, 0.3};
static cudaStream_t g_stream;

/* The device's open samples of a on an npix grid of pitch D/n. */
static long gpu_open_count(const psf_aperture *a, int n, int npix, int natural)
{
    gpu_pupil_set set;
    memset(&set, 0, sizeof set);
    set.npix = npix;
    set.natural = natural;
    set.radius_m = 0.5 * a->diameter_m;
    aperture_geom_init(a, &set.geom);
    set.map_width_m = set.map_height_m = a->diameter_m;
    set.opd_width_m = set.opd_height_m = a->diameter_m;
    char err[1024] = "";
    gpu_check chk;
    gpu_check_init(&chk, 0, err, sizeof err);
    gpu_pupil pp;
    if (gpu_pupil_build(&pp, &set, a->diameter_m / n, g_stream, &chk) != 0)
        fail_msg("n = %d: %s", n, err);
    long c = (long)pp.nopen;
    gpu_pupil_free(&pp);
    return c;
}

static psf_aperture binary(psf_aperture_shape shape, double d, double e)
{
    psf_aperture a = {.shape = shape, .diameter_m = d, .obscuration = e, .edge = EDGE_BINARY};
    return a;
}

static void expect_count(const psf_aperture *a, int n, int npix, int natural, long want)
{
    long got = gpu_open_count(a, n, npix, natural);
    if (got != want)
        fail_msg("shape %d, n = %d, D = %g m, e = %g, N = %d (%s order): %ld open samples, %ld "
                 "on the lattice",
                 (int)a->shape, n, a->diameter_m, a->obscuration, npix, natural ? "natural" : "FFT",
                 got, want);
}

static void test_circle(void **state)
{
    (void)state;
    for (int n = 2; n <= 1024; ++n) {
        long want = rim_count_circle(n, 0);
        for (int d = 0; d < 3; ++d) {
            psf_aperture a = binary(APERTURE_CIRCULAR, diameters[d], 0.0);
            expect_count(&a, n, n + 2, 0, want);
            if (n <= 256) expect_count(&a, n, n + 3, 1, want);
        }
    }
}

static void test_obscuration_and_hexagon(void **state)
{
    (void)state;
    for (int n = 2; n <= 512; n += 2) {
        long want = rim_count_circle(n, (long)(n / 2) * (n / 2)), hex = rim_count_hexagon(n);
        for (int d = 0; d < 3; ++d) {
            psf_aperture a = binary(APERTURE_CIRCULAR, diameters[d], 0.5);
            expect_count(&a, n, n + 2, 0, want);
            a = binary(APERTURE_HEXAGON, diameters[d], 0.0);
            expect_count(&a, n, n + 2, 0, hex);
        }
    }
}
#endif

int main(void)
{
#ifdef PSFSIM_HAVE_CUDA
    int skip = cuda_device_or_skip();
    if (skip) return skip;
    if (cudaStreamCreate(&g_stream) != cudaSuccess) {
        printf("cannot create a CUDA stream\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_circle),
        cmocka_unit_test(test_obscuration_and_hexagon),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    cudaStreamDestroy(g_stream);
    return rc;
#else
    printf("skipped: psfsim was built without the CUDA backend\n");
    return 77;
#endif
}
