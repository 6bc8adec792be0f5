/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage's cost (psf_detector, docs/design.md "Detector"): a
 * set of IMAGES N x N images (a circular pupil of n = N/2 samples with
 * coma and defocus, as bench_backends.c) through a backend's interface,
 * in calls of its preferred batch, with the stage's effects off and on.
 * The target: all effects at most 1.5x the device compute time of
 * none (10,000 images of 256 x 256 on the GPU). Modes:
 *  - none: no stage (the set as before);
 *  - pixel, jitter, diffusion, ipc: one effect at oversample 1 (one
 *    R2C + multiply + C2R pass);
 *  - all: the four together at oversample 1 (the same single pass);
 *  - all4: the four at oversample 4 on the same N x N grid, written as
 *    the N/4 x N/4 detector image (the pass and the sampling kernel).
 * Prints CSV rows: backend,mode,grid,out,images,seconds,us_per_image,ratio
 * (ratio: seconds over the none row's, when it ran first). The wall time
 * includes the copies to the host, which overlap the compute; for the
 * device compute alone run each mode in its own process under Nsight
 * Systems and compare the kernel and cuFFT totals.
 * Usage: psfsim_bench_detector cpu|gpu N IMAGES [mode ...] (default: all modes) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/detector.h"
#include "app/select/gpu.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const double ipc_kernel[9] = {0.0, 0.02, 0.0, 0.02, 0.92, 0.02, 0.0, 0.02, 0.0};

/* The stage of a mode; -1 for an unknown one. */
static int detector_of(const char *mode, psf_detector *d)
{
    memset(d, 0, sizeof *d);
    int all = !strcmp(mode, "all") || !strcmp(mode, "all4");
    if (!strcmp(mode, "none")) return 0;
    if (!all && strcmp(mode, "pixel") && strcmp(mode, "jitter") && strcmp(mode, "diffusion") &&
        strcmp(mode, "ipc"))
        return -1;
    d->oversample = !strcmp(mode, "all4") ? 4 : 1;
    d->sample = 1;
    d->pixel_response = all || !strcmp(mode, "pixel");
    if (all || !strcmp(mode, "jitter")) d->jitter_px[0] = d->jitter_px[1] = 0.2;
    if (all || !strcmp(mode, "diffusion")) d->diffusion_px = 0.25;
    if (all || !strcmp(mode, "ipc")) {
        d->ipc = 1;
        memcpy(d->ipc_kernel, ipc_kernel, sizeof ipc_kernel);
    }
    return 0;
}

/* Seconds for the set in mode, or a negative value on failure. */
static double bench(const psf_backend_ops *ops, int npix, long long images, const char *mode,
                    int *out_npix)
{
    static const int zn[2] = {3, 2}, zm[2] = {1, 0};
    static const double coeff[2] = {0.3, 0.1};
    int batch = images < ops->preferred_batch ? (int)images : ops->preferred_batch;
    psf_problem d = {.npix = npix, .max_batch = batch, .nimages = images};
    d.aperture = (psf_aperture){.shape = APERTURE_CIRCULAR, .diameter_m = 1.0};
    d.modes = (psf_modes){.nterms = 2, .n = zn, .m = zm};
    if (detector_of(mode, &d.detector) != 0) {
        fprintf(stderr, "unknown mode %s\n", mode);
        return -1.0;
    }
    *out_npix = psf_detector_out_npix(&d);
    char err[1024];
    psf_backend *b;
    if (ops->create(&d, NULL, &b, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", ops->name, err);
        return -1.0;
    }
    psf_job *jobs = calloc((size_t)batch, sizeof *jobs);
    float *img = ops->alloc_images(b, (size_t)batch * *out_npix * *out_npix);
    int rc = jobs && img ? 0 : -1;
    for (int i = 0; i < batch && rc == 0; ++i) {
        jobs[i].ncomp = 1;
        jobs[i].comp[0] = (psf_component){
            .wavelength_m = 500e-9, .dx_m = 2.0 / npix, .scale = 1.0, .coeff_waves = coeff};
    }
    if (rc == 0) rc = ops->run(b, jobs, batch, img, err, sizeof err); /* plans, pupils */
    double t0 = now_s();
    for (long long k = 0; k < images && rc == 0; k += batch) {
        int nb = images - k < batch ? (int)(images - k) : batch;
        rc = ops->run(b, jobs, nb, img, err, sizeof err);
    }
    double t = now_s() - t0;
    if (rc != 0) fprintf(stderr, "%s %s: %s\n", ops->name, mode, err);
    if (img) ops->free_images(b, img);
    free(jobs);
    ops->destroy(b);
    return rc == 0 ? t : -1.0;
}

int main(int argc, char **argv)
{
    static const char *const all_modes[] = {"none", "pixel", "jitter", "diffusion",
                                            "ipc",  "all",   "all4"};
    if (argc < 4) {
        fprintf(stderr, "usage: %s cpu|gpu N IMAGES [mode ...]\n", argv[0]);
        return 2;
    }
    const psf_backend_ops *ops = !strcmp(argv[1], "gpu") ? psf_backend_gpu() : &psf_backend_cpu;
    if (!ops) {
        fprintf(stderr, "built without the GPU backend\n");
        return 2;
    }
    int npix = atoi(argv[2]);
    long long images = atoll(argv[3]);
    if (npix < 8 || images < 1) return 2;
    int nmodes = argc > 4 ? argc - 4 : (int)(sizeof all_modes / sizeof all_modes[0]);
    const char *const *modes = argc > 4 ? (const char *const *)argv + 4 : all_modes;
    double base = 0.0;
    int rc = 0;
    printf("backend,mode,grid,out,images,seconds,us_per_image,ratio\n");
    for (int i = 0; i < nmodes; ++i) {
        int out = 0;
        double t = bench(ops, npix, images, modes[i], &out);
        if (t < 0) {
            rc = 1;
            continue;
        }
        if (!strcmp(modes[i], "none")) base = t;
        printf("%s,%s,%d,%d,%lld,%.6f,%.3f,%s%.3f\n", ops->name, modes[i], npix, out, images, t,
               t / images * 1e6, base > 0 ? "" : "nan", base > 0 ? t / base : 0.0);
        fflush(stdout);
    }
    return rc;
}
