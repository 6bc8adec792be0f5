/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim's backends timed through their own interface (backend/backend.h), as
 * psfsim runs them: a circular pupil of n = N/2 samples with coma and
 * defocus (the reference pipelines' rho^2 cos(phi) is no Zernike term; the
 * work per sample is the same), images to host memory.
 * Prints CSV rows: pipeline,npix,images,seconds_total,us_per_psf
 *  - psfsim_<be>_single: one image per run() call, median of repeats;
 *  - psfsim_<be>_batch: IMAGES images in calls of the backend's preferred batch.
 * Usage: psfsim_bench_backends cpu|gpu N:IMAGES [N:IMAGES ...] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "bench/bench_time.h"
#include "app/select/gpu.h"

static int bench(const psf_backend_ops *ops, int npix, long long images)
{
    static const int zn[2] = {3, 2}, zm[2] = {1, 0};
    static const double coeff[2] = {0.3, 0.1};
    int batch = images < ops->preferred_batch ? (int)images : ops->preferred_batch;
    if ((double)batch * npix * npix * 4 > 2e9) batch = (int)fmax(1, 2e9 / (4.0 * npix * npix));
    psf_problem d = {.npix = npix, .max_batch = batch, .nimages = images};
    d.aperture = (psf_aperture){.shape = APERTURE_CIRCULAR, .diameter_m = 1.0};
    d.modes = (psf_modes){.nterms = 2, .n = zn, .m = zm};
    char err[1024];
    psf_backend *b;
    if (ops->create(&d, NULL, &b, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", ops->name, err);
        return -1;
    }
    psf_job *jobs = calloc((size_t)batch, sizeof *jobs);
    float *img = ops->alloc_images(b, (size_t)batch * npix * npix);
    for (int i = 0; i < batch; ++i) {
        jobs[i].ncomp = 1;
        jobs[i].comp[0] = (psf_component){
            .wavelength_m = 500e-9, .dx_m = 2.0 / npix, .scale = 1.0, .coeff_waves = coeff};
    }
    int rc = 0, reps = npix <= 512 ? 51 : npix <= 2048 ? 11 : 5;
    double t[51];
    for (int r = -3; r < reps && rc == 0; ++r) {
        double t0 = now_s();
        rc = ops->run(b, jobs, 1, img, err, sizeof err);
        if (r >= 0) t[r] = now_s() - t0;
    }
    if (rc == 0) {
        qsort(t, (size_t)reps, sizeof *t, cmp);
        printf("psfsim_%s_single,%d,1,%.6f,%.2f\n", ops->name, npix, t[reps / 2],
               t[reps / 2] * 1e6);
        fflush(stdout);
    }
    if (rc == 0 && images > 1) {
        rc = ops->run(b, jobs, batch, img, err, sizeof err); /* warm the batch plan */
        double t0 = now_s();
        for (long long k = 0; k < images && rc == 0; k += batch) {
            int nb = images - k < batch ? (int)(images - k) : batch;
            rc = ops->run(b, jobs, nb, img, err, sizeof err);
        }
        double tb = now_s() - t0;
        if (rc == 0)
            printf("psfsim_%s_batch,%d,%lld,%.6f,%.3f\n", ops->name, npix, images, tb,
                   tb / images * 1e6);
        fflush(stdout);
    }
    if (rc != 0) fprintf(stderr, "%s: %s\n", ops->name, err);
    ops->free_images(b, img);
    free(jobs);
    ops->destroy(b);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s cpu|gpu N:IMAGES [N:IMAGES ...]\n", argv[0]);
        return 2;
    }
    const psf_backend_ops *ops = !strcmp(argv[1], "gpu") ? psf_backend_gpu() : &psf_backend_cpu;
    if (!ops) {
        fprintf(stderr, "built without the GPU backend\n");
        return 2;
    }
    int rc = 0;
    for (int i = 2; i < argc; ++i) {
        int npix;
        long long images;
        if (sscanf(argv[i], "%d:%lld", &npix, &images) != 2) return 2;
        rc |= bench(ops, npix, images);
    }
    return rc ? 1 : 0;
}
