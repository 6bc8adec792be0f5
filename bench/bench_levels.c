/* SPDX-License-Identifier: BSD-3-Clause */
/* Issue 17: images per second into host memory through the backend
 * interface (backend/backend.h), floats (run) against 16- or 8-bit levels
 * with their measures (run_levels: the stretch on the device for the
 * GPU), for one set of IMAGES N x N images in calls of BATCH images into
 * two pinned buffers from alloc_images, as psfsim's run loop does (a
 * circular pupil of n = N/2 samples with coma and defocus, as
 * bench_backends.c). Before timing, the first batch's levels are checked
 * against psf_png_stretch_levels of its floats (mismatches printed; 0
 * expected). Prints CSV rows: path,npix,images,batch,seconds,images_per_s,GB_per_s
 *
 * Usage: psfsim_bench_levels cpu|gpu N:IMAGES [BATCH [BITS [STRETCH [DR]]]]
 *   BATCH default 2048, BITS 16, STRETCH linear|log|sqrt (default log), DR 1e5.
 * On the H200 (issue 17's figure, 256x256 16-bit, 100,000 images):
 *   build/bench/psfsim_bench_levels gpu 256:100000 2048 16 log 1e5 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/formats/png_io.h"
#include "app/select/gpu.h"
#include "backend/backend.h"
#include "backend/levels.h"
#include "bench/bench_time.h"

typedef struct {
    const psf_backend_ops *ops;
    psf_backend *b;
    psf_job *jobs;
    int npix, batch;
    long long images;
    void *buf[2]; /* alloc_images: floats, or levels in their memory */
    double *meas;
} bench_run;

/* The whole set through one path: 0 or -1 with err. */
static int whole_set(bench_run *r, int levels, double *seconds, char *err, size_t errlen)
{
    double t0 = now_s();
    int rc = 0;
    for (long long k = 0, i = 0; k < r->images && rc == 0; k += r->batch, ++i) {
        int nb = r->images - k < r->batch ? (int)(r->images - k) : r->batch;
        void *dst = r->buf[i & 1];
        rc = levels ? r->ops->run_levels(r->b, r->jobs, nb, (unsigned short *)dst, r->meas, err,
                                         errlen)
                    : r->ops->run(r->b, r->jobs, nb, (float *)dst, err, errlen);
    }
    *seconds = now_s() - t0;
    return rc;
}

/* The first batch's levels against the host stretch of its floats. */
static long long check_levels(bench_run *r, const psf_problem *p, char *err, size_t errlen)
{
    size_t plane = (size_t)r->npix * r->npix;
    unsigned short *ref = malloc(plane * sizeof *ref);
    float *img = (float *)r->buf[0];
    unsigned short *lev = (unsigned short *)r->buf[1];
    if (!ref || r->ops->run(r->b, r->jobs, r->batch, img, err, errlen) != 0 ||
        r->ops->run_levels(r->b, r->jobs, r->batch, lev, r->meas, err, errlen) != 0) {
        free(ref);
        return -1;
    }
    long long wrong = 0;
    for (int i = 0; i < r->batch; ++i) {
        psf_png_stretch_levels(img + i * plane, r->npix, p->levels.bits,
                               (png_stretch)p->levels.stretch, p->levels.dynamic_range, ref);
        for (size_t q = 0; q < plane; ++q)
            wrong += lev[i * plane + q] != ref[q];
    }
    free(ref);
    return wrong;
}

static int bench(const psf_backend_ops *ops, int npix, long long images, int batch,
                 const psf_levels_out *lo)
{
    static const int zn[2] = {3, 2}, zm[2] = {1, 0};
    static const double coeff[2] = {0.3, 0.1};
    if (batch > images) batch = (int)images;
    psf_problem p = {.npix = npix, .max_batch = batch, .nimages = images, .levels = *lo};
    p.aperture = (psf_aperture){.shape = APERTURE_CIRCULAR, .diameter_m = 1.0};
    p.modes = (psf_modes){.nterms = 2, .n = zn, .m = zm};
    char err[1024];
    bench_run r = {.ops = ops, .npix = npix, .batch = batch, .images = images};
    if (ops->create(&p, NULL, &r.b, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", ops->name, err);
        return -1;
    }
    size_t plane = (size_t)npix * npix;
    r.jobs = calloc((size_t)batch, sizeof *r.jobs);
    r.meas = malloc((size_t)batch * PSF_MEASURES * sizeof *r.meas);
    for (int q = 0; q < 2; ++q)
        r.buf[q] = ops->alloc_images(r.b, (size_t)batch * plane);
    int rc = r.jobs && r.meas && r.buf[0] && r.buf[1] ? 0 : -1;
    for (int i = 0; i < batch && rc == 0; ++i) {
        r.jobs[i].ncomp = 1;
        r.jobs[i].comp[0] = (psf_component){
            .wavelength_m = 500e-9, .dx_m = 2.0 / npix, .scale = 1.0, .coeff_waves = coeff};
    }
    long long wrong = rc == 0 ? check_levels(&r, &p, err, sizeof err) : -1;
    if (wrong < 0) rc = -1;
    if (rc == 0)
        fprintf(stderr, "%s: first batch of %d: %lld levels differ from the host stretch\n",
                ops->name, batch, wrong);
    for (int levels = 0; levels <= 1 && rc == 0; ++levels) {
        double s = 0;
        rc = whole_set(&r, levels, &s, err, sizeof err);
        double bytes = (double)images * plane * (levels ? 2.0 : 4.0);
        if (rc == 0)
            printf("%s_%s,%d,%lld,%d,%.4f,%.0f,%.2f\n", ops->name,
                   levels ? (lo->bits == 8 ? "levels8" : "levels16") : "float32", npix, images,
                   batch, s, images / s, bytes / s / 1e9);
        fflush(stdout);
    }
    if (rc != 0) fprintf(stderr, "%s: %s\n", ops->name, err);
    for (int q = 0; q < 2; ++q)
        if (r.buf[q]) ops->free_images(r.b, (float *)r.buf[q]);
    free(r.jobs);
    free(r.meas);
    ops->destroy(r.b);
    return rc;
}

int main(int argc, char **argv)
{
    int npix;
    long long images;
    if (argc < 3 || sscanf(argv[2], "%d:%lld", &npix, &images) != 2 || npix < 2 || images < 1) {
        fprintf(stderr, "usage: %s cpu|gpu N:IMAGES [BATCH [BITS [linear|log|sqrt [DR]]]]\n",
                argv[0]);
        return 2;
    }
    const psf_backend_ops *ops = !strcmp(argv[1], "gpu") ? psf_backend_gpu() : &psf_backend_cpu;
    if (!ops) {
        fprintf(stderr, "built without the GPU backend\n");
        return 2;
    }
    int batch = argc > 3 ? atoi(argv[3]) : 2048;
    psf_levels_out lo = {.bits = argc > 4 ? atoi(argv[4]) : 16,
                         .stretch = PSF_STRETCH_LOG,
                         .dynamic_range = argc > 6 ? atof(argv[6]) : 1e5};
    if (argc > 5)
        lo.stretch = !strcmp(argv[5], "linear") ? PSF_STRETCH_LINEAR
                     : !strcmp(argv[5], "sqrt") ? PSF_STRETCH_SQRT
                                                : PSF_STRETCH_LOG;
    if (batch < 1 || (lo.bits != 8 && lo.bits != 16)) {
        fprintf(stderr, "BATCH >= 1, BITS 8 or 16\n");
        return 2;
    }
    printf("path,npix,images,batch,seconds,images_per_s,GB_per_s\n");
    return bench(ops, npix, images, batch, &lo) ? 1 : 0;
}
