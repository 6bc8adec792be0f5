/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/select/probe.h"
#include "backend/cpu_count.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "app/base/clock.h"
#include "app/base/log.h"
#include "app/formats/fits.h"
#include "app/select/gpu.h"
#include "app/formats/png_io.h"

static const int probe_sizes[PROBE_NSIZES] = {64, 128, 256, 512, 1024};
#define PROBE_TERMS 3

/* A representative set: an obscured circular pupil with coma, spherical and
 * defocus, sampled at n = N/2 (padding 2). */
typedef struct {
    int n[PROBE_TERMS], m[PROBE_TERMS];
    double coeff[PROBE_TERMS];
    psf_problem desc;
    psf_backend_options opt;
} probe_set;

static void probe_set_init(probe_set *s, int npix, int batch, int device, const char *cache_dir)
{
    static const int n[PROBE_TERMS] = {2, 3, 4}, m[PROBE_TERMS] = {0, 1, 0};
    static const double c[PROBE_TERMS] = {0.1, 0.05, 0.02};
    memset(s, 0, sizeof *s);
    memcpy(s->n, n, sizeof n);
    memcpy(s->m, m, sizeof m);
    memcpy(s->coeff, c, sizeof c);
    s->desc.npix = npix;
    s->desc.aperture =
        (psf_aperture){.shape = APERTURE_CIRCULAR, .diameter_m = 1.0, .obscuration = 0.3};
    s->desc.modes = (psf_modes){.nterms = PROBE_TERMS, .n = s->n, .m = s->m};
    s->desc.max_batch = batch;
    s->desc.nimages = batch;
    s->opt.cache_dir = cache_dir;
    s->opt.device = device;
    s->opt.warn = log_warn_text;
}

static void probe_job(const probe_set *s, psf_job *job)
{
    memset(job, 0, sizeof *job);
    job->ncomp = 1;
    job->comp[0] = (psf_component){
        .wavelength_m = 500e-9, .dx_m = 2.0 / s->desc.npix, .scale = 1.0, .coeff_waves = s->coeff};
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median wall time of reps run() calls of nb images after one warm-up,
 * whose time goes to *first_us when not NULL. */
static int time_runs(const psf_backend_ops *ops, psf_backend *b, psf_job *jobs, int nb, float *img,
                     int reps, double *us, double *first_us, char *err, size_t errlen)
{
    double t[16];
    if (reps > 16) reps = 16;
    for (int i = -1; i < reps; ++i) {
        double t0 = clock_us();
        if (ops->run(b, jobs, nb, img, err, errlen) != 0) return -1;
        if (i >= 0)
            t[i] = clock_us() - t0;
        else if (first_us)
            *first_us = clock_us() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    *us = t[reps / 2];
    return 0;
}

/* Create a backend for N and batch on device, time create, one image and
 * the batch. */
static int probe_size(const psf_backend_ops *ops, int npix, int batch, int device,
                      const char *cache_dir, double *create_us, double *b1_us, double *bb_us,
                      char *err, size_t errlen)
{
    probe_set s;
    probe_set_init(&s, npix, batch, device, cache_dir);
    psf_backend *b = NULL;
    double t0 = clock_us();
    if (ops->create(&s.desc, &s.opt, &b, err, errlen) != 0) return -1;
    *create_us = clock_us() - t0;
    psf_job *jobs = calloc((size_t)batch, sizeof *jobs);
    float *img = ops->alloc_images(b, (size_t)batch * npix * npix);
    int rc = -1;
    if (jobs && img) {
        for (int i = 0; i < batch; ++i)
            probe_job(&s, &jobs[i]);
        /* Fewer repeats for big grids keeps the whole probe well under a second. */
        int reps = npix <= 256 ? 9 : 3;
        double first = 0;
        rc = time_runs(ops, b, jobs, 1, img, reps, b1_us, &first, err, errlen);
        /* The first run builds the pupil (aperture, basis): a set-up cost. */
        if (rc == 0 && first > *b1_us) *create_us += first - *b1_us;
        if (rc == 0 && bb_us) rc = time_runs(ops, b, jobs, batch, img, 3, bb_us, NULL, err, errlen);
    } else {
        snprintf(err, errlen, "probe: out of memory");
    }
    if (img) ops->free_images(b, img);
    free(jobs);
    ops->destroy(b);
    return rc;
}

/* Images in the large-batch run at N: 2^24 pixels, between 4 and 1024 images. */
static int big_batch(int npix)
{
    long long b = (1LL << 24) / ((long long)npix * npix);
    return b < 4 ? 4 : b > 1024 ? 1024 : (int)b;
}

/* Every other device against device 0: the large batch at PROBE_REL_NPIX
 * (the throughput that shares a set among GPUs). A device that fails is
 * left out of "all" (its speed 0 means: do not count it). */
static int probe_devices(probe_figures *f, const psf_backend_ops *gpu, char *note, size_t notelen)
{
    int ref = 0;
    while (ref < f->nsizes && f->npix[ref] != PROBE_REL_NPIX)
        ++ref;
    if (ref == f->nsizes) return -1;
    f->gpu_rel_speed[0] = 1.0;
    for (int d = 1; d < f->gpu_count; ++d) {
        double create, b1, bb;
        char why[512];
        if (probe_size(gpu, PROBE_REL_NPIX, f->big_batch[ref], d, NULL, &create, &b1, &bb, why,
                       sizeof why) != 0 ||
            !(bb > 0)) {
            snprintf(note, notelen, "GPU %d: %s", d, why);
            continue;
        }
        f->gpu_rel_speed[d] = f->gpu_bb_us[ref] / bb;
    }
    return 0;
}

static int probe_gpu(probe_figures *f, const psf_backend_ops *gpu, char *note, size_t notelen)
{
    gpu_basics gb;
    if (gpu_module_probe(&gb, note, notelen) != 0) return -1;
    snprintf(f->gpu_name, sizeof f->gpu_name, "%s", gb.name);
    f->gpu_start_us = gb.start_us;
    f->gpu_launch_us = gb.launch_us;
    f->gpu_h2d_us = gb.h2d_us;
    f->gpu_d2h_us = gb.d2h_us;
    f->gpu_d2h_gbs = gb.d2h_gbs;
    for (int i = 0; i < f->nsizes; ++i)
        if (probe_size(gpu, f->npix[i], f->big_batch[i], 0, NULL, &f->gpu_create_us[i],
                       &f->gpu_b1_us[i], &f->gpu_bb_us[i], note, notelen) != 0)
            return -1;
    /* The first set-up at each size also loads that size's cuFFT kernels
     * (CUDA's lazy module loading): 4 ms one time, 200 ms another on the
     * H200 machine (bench/RESULTS.md, run 4). A second set-up shows the
     * steady cost; the lower of the two is kept. */
    for (int i = 0; i < f->nsizes; ++i) {
        double create, b1;
        if (probe_size(gpu, f->npix[i], f->big_batch[i], 0, NULL, &create, &b1, NULL, note,
                       notelen) == 0 &&
            create < f->gpu_create_us[i])
            f->gpu_create_us[i] = create;
    }
    f->gpu_count = gb.device_count < PROBE_MAX_GPUS ? gb.device_count : PROBE_MAX_GPUS;
    return probe_devices(f, gpu, note, notelen);
}

/* Encode + write cost of one 256x256 image, per megapixel: a 16-bit log
 * PNG and a FITS file, each the median of 3, into the temp directory. */
static void probe_writers(probe_figures *f)
{
    enum { N = 256 };
    float *img = malloc((size_t)N * N * sizeof *img);
    if (!img) return;
    for (int i = 0; i < N; ++i) /* an Airy-like falloff: realistic compression */
        for (int j = 0; j < N; ++j) {
            double r = hypot(i - N / 2, j - N / 2) + 1.0;
            img[(size_t)i * N + j] = (float)(fabs(sin(r)) / (r * r * r));
        }
    const char *tmp = getenv("TMPDIR");
    char path[4200], err[512];
    double tp[3] = {0}, tf[3] = {0};
    for (int r = 0; r < 3; ++r) {
        snprintf(path, sizeof path, "%s/psfsim-probe-%ld.png", tmp ? tmp : "/tmp", (long)getpid());
        double t0 = clock_us();
        if (psf_png_write_image(path, img, N, 16, STRETCH_LOG, 1e6, 1, err, sizeof err) == 0)
            tp[r] = clock_us() - t0;
        unlink(path);
        snprintf(path, sizeof path, "%s/psfsim-probe-%ld.fits", tmp ? tmp : "/tmp", (long)getpid());
        t0 = clock_us();
        if (psf_fits_write_image(path, img, N, NULL, 0, err, sizeof err) == 0)
            tf[r] = clock_us() - t0;
        unlink(path);
    }
    qsort(tp, 3, sizeof *tp, cmp_double);
    qsort(tf, 3, sizeof *tf, cmp_double);
    f->png_us_per_mpix = tp[1] / (N * N * 1e-6);
    f->fits_us_per_mpix = tf[1] / (N * N * 1e-6);
    free(img);
}

int probe_measure(probe_figures *f, int with_gpu, const char *cache_dir, char *gpu_note,
                  size_t notelen, char *err, size_t errlen)
{
    double t0 = clock_us();
    memset(f, 0, sizeof *f);
    gpu_note[0] = '\0';
    f->nsizes = PROBE_NSIZES;
    long nproc = psf_cpu_count();
    f->cpu_threads = nproc > 0 ? (int)nproc : 1;
    for (int i = 0; i < PROBE_NSIZES; ++i) {
        f->npix[i] = probe_sizes[i];
        f->big_batch[i] = big_batch(probe_sizes[i]);
    }
    /* GPU first: its start cost is only real as the process's first CUDA
     * call; loading the module (cuFFT, the CUDA runtime) is part of it. */
    double tl = clock_us();
    const psf_backend_ops *gpu = with_gpu ? psf_backend_gpu() : NULL;
    double load_us = clock_us() - tl;
    if (gpu)
        f->have_gpu = probe_gpu(f, gpu, gpu_note, notelen) == 0;
    else if (with_gpu)
        snprintf(gpu_note, notelen, "%s", gpu_module_error());
    if (f->have_gpu) f->gpu_start_us += load_us;
    for (int i = 0; i < PROBE_NSIZES; ++i)
        if (probe_size(&psf_backend_cpu, f->npix[i], 1, 0, cache_dir, &f->cpu_create_us[i],
                       &f->cpu_us[i], NULL, err, errlen) != 0)
            return -1;
    probe_writers(f);
    f->probe_us = clock_us() - t0;
    return 0;
}
