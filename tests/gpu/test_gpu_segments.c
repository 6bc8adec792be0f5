/* SPDX-License-Identifier: BSD-3-Clause */
/* Segmented apertures on the GPU: the device builds its pupils itself
 * (gpu/pupil.cu, aperture_kernel, from optics/aperture_seg.h), so its
 * transmissions must equal the CPU's aperture_fill for the same aperture:
 * JWST-like (18 segments, struts) and Keck-like (36) arrays, rotated, with
 * an outer stop, an obscuration and listed vanes; a rotated hexagon with a
 * hexagonal obscuration; grey and binary edges, in FFT order.
 * Grey samples may differ by float rounding of differently contracted
 * arithmetic (nvcc's FMAs): |GPU - CPU| <= 1e-5; binary samples exactly on
 * a flat may flip: at most 1e-4 of the open samples. Links the GPU
 * backend's objects (tests/CMakeLists.txt); skipped (exit 77) without them
 * or without a CUDA device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifdef PSFSIM_HAVE_CUDA
#include "tests/support/cuda_skip.h"
#include "gpu/pupil.h"
#include "optics/aperture.h"

static cudaStream_t g_stream;

static psf_aperture segmented(double f, double gap, int rings, double angle, int edge)
{
    psf_aperture a;
    memset(&a, 0, sizeof a);
    a.shape = APERTURE_SEGMENTED;
    a.edge = edge ? EDGE_BINARY : EDGE_GREY;
    a.seg.flat_to_flat_m = f;
    a.seg.gap_m = gap;
    a.seg.rings = rings;
    a.seg.angle_deg = angle;
    a.seg.missing[0] = 1ULL;
    a.diameter_m = 2.0 * aperture_segments_radius(&a.seg);
    return a;
}

/* Compare the device's pupil of a (n samples across D, grid npix) with
 * aperture_fill's. */
static void compare(const psf_aperture *a, int n, int npix)
{
    double dx = a->diameter_m / n;
    size_t plane = (size_t)npix * npix;
    float *cpu = malloc(plane * sizeof *cpu), *gpu = calloc(plane, sizeof *gpu);
    assert_non_null(cpu);
    assert_non_null(gpu);
    char err[1024] = "";
    assert_int_equal(aperture_fill(a, npix, dx, cpu, err, sizeof err), 0);
    gpu_pupil_set set;
    memset(&set, 0, sizeof set);
    set.npix = npix;
    set.radius_m = 0.5 * a->diameter_m;
    aperture_geom_init(a, &set.geom);
    set.map_width_m = set.map_height_m = a->diameter_m;
    set.opd_width_m = set.opd_height_m = a->diameter_m;
    gpu_check chk;
    gpu_check_init(&chk, 0, err, sizeof err);
    gpu_pupil pp;
    if (gpu_pupil_build(&pp, &set, dx, g_stream, &chk) != 0) fail_msg("%s", err);
    size_t nopen = pp.nopen;
    float *amp = malloc((nopen ? nopen : 1) * sizeof *amp);
    unsigned *pos = malloc((nopen ? nopen : 1) * sizeof *pos);
    assert_non_null(amp);
    assert_non_null(pos);
    if (nopen &&
        (cudaMemcpy(amp, pp.amp, nopen * sizeof *amp, cudaMemcpyDeviceToHost) != cudaSuccess ||
         cudaMemcpy(pos, pp.pos, nopen * sizeof *pos, cudaMemcpyDeviceToHost) != cudaSuccess))
        fail_msg("cudaMemcpy failed");
    gpu_pupil_free(&pp);
    for (size_t k = 0; k < nopen; ++k) { /* FFT order back to the centred grid */
        int di = (int)(pos[k] / (unsigned)npix), dj = (int)(pos[k] % (unsigned)npix);
        int i = (di + npix / 2) % npix, j = (dj + npix / 2) % npix;
        gpu[(size_t)i * npix + j] = amp[k];
    }
    double worst = 0.0;
    long flips = 0, open = 0;
    for (size_t p = 0; p < plane; ++p) {
        double d = fabs((double)gpu[p] - (double)cpu[p]);
        worst = d > worst ? d : worst;
        flips += d > 0.5;
        open += cpu[p] > 0.0f;
    }
    if (a->edge == EDGE_GREY && worst > 1e-5)
        fail_msg("grey, n = %d, angle %g: |GPU - CPU| up to %g", n, a->seg.angle_deg, worst);
    if (a->edge == EDGE_BINARY && (double)flips > 1e-4 * (double)open)
        fail_msg("binary, n = %d: %ld of %ld samples differ", n, flips, open);
    assert_true(open > 0);
    free(cpu);
    free(gpu);
    free(amp);
    free(pos);
}

static void test_segments(void **state)
{
    (void)state;
    for (int edge = 0; edge < 2; ++edge) {
        psf_aperture j = segmented(1.32, 0.007, 2, 0.0, edge);
        j.spider_count = 3;
        j.spider_width_m = 0.1;
        j.spider_angle_deg = 90.0;
        compare(&j, 256, 512);
        j = segmented(1.32, 0.007, 2, 7.3, edge);
        j.obscuration = 0.1;
        j.seg.stop_diameter_m = 6.4;
        compare(&j, 200, 256);
        j.nvanes = 2; /* listed vanes: off the axis, with ends */
        j.vanes[0] = (psf_vane){200.0, 0.06, 0.4, 0.3, 2.9};
        j.vanes[1] = (psf_vane){-20.0, 0.05, -0.25, -1.0, 2.5};
        compare(&j, 200, 256);
        j.obscuration_hexagon = 1; /* a hexagonal obscuration at the segments' angle */
        j.obscuration = 0.2;
        compare(&j, 200, 256);
        psf_aperture h = {.shape = APERTURE_HEXAGON,
                          .diameter_m = 2.0785,
                          .angle_deg = 17.0,
                          .obscuration = 0.3,
                          .obscuration_hexagon = 1,
                          .edge = edge ? EDGE_BINARY : EDGE_GREY};
        compare(&h, 128, 256); /* a rotated single hexagon */
        psf_aperture k = segmented(1.5588, 0.003, 3, 0.0, edge);
        compare(&k, 256, 260);
        k = segmented(1.5588, 0.003, 3, 30.0, edge);
        compare(&k, 101, 128);
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
        cmocka_unit_test(test_segments),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    cudaStreamDestroy(g_stream);
    return rc;
#else
    printf("skipped: psfsim was built without the CUDA backend\n");
    return 77;
#endif
}
