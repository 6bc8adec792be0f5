/* The FFTW3 backend: psf_backend_cpu (app/backend.h). One plan per set,
 * pupils cached per pupil pitch, images computed one after another. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/backend.h"
#include "fft_plan.h"
#include "pupil_cache.h"

/* Grids from this size up use FFTW's threads inside one transform; below it
 * the threads' start-up costs more than they save. */
#define CPU_THREADED_MIN_NPIX 512
/* Measuring a plan takes 0.1-1 s (0.17 s at N = 256, 0.5 s at 1024 on the
 * development machine) and saves 2-4x per transform: it pays off from about
 * this many pixels to transform in the set. With wisdom it is free. */
#define CPU_MEASURE_MIN_WORK (16.0 * 1024 * 1024)

struct psf_backend {
    psf_set_desc set;
    cpu_fft_plan fft;
    cpu_pupil pupils[PSF_MAX_COMPONENTS];
    int npupils;
    int current; /* pupil whose samples are in fft.in, -1 = none */
};

static int cpu_threads(const psf_set_desc *set)
{
    if (set->npix < CPU_THREADED_MIN_NPIX) return 1;
    if (set->threads > 0) return set->threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void cpu_destroy(psf_backend *b)
{
    if (!b) return;
    for (int i = 0; i < b->npupils; ++i) cpu_pupil_free(&b->pupils[i]);
    cpu_fft_plan_destroy(&b->fft);
    free(b);
}

static int cpu_create(const psf_set_desc *set, psf_backend **out, char *err, size_t errlen)
{
    *out = NULL;
    psf_backend *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "cpu: out of memory");
        return -1;
    }
    b->set = *set;
    b->current = -1;
    double work = (double)set->npix * set->npix * (double)(set->nimages > 0 ? set->nimages : 1);
    if (cpu_fft_plan_create(&b->fft, set->npix, cpu_threads(set), work >= CPU_MEASURE_MIN_WORK,
                            set->fftw_wisdom, err, errlen) != 0) {
        free(b);
        return -1;
    }
    *out = b;
    return 0;
}

/* The pupil for pitch dx_m, built on first use. */
static int pupil_for(psf_backend *b, double dx_m, char *err, size_t errlen)
{
    for (int i = 0; i < b->npupils; ++i)
        if (fabs(b->pupils[i].dx_m - dx_m) <= 1e-12 * dx_m) return i;
    if (b->npupils == PSF_MAX_COMPONENTS) {
        snprintf(err, errlen, "cpu: more than %d pupil pitches in one set", PSF_MAX_COMPONENTS);
        return -1;
    }
    if (cpu_pupil_build(&b->pupils[b->npupils], &b->set, dx_m, err, errlen) != 0) return -1;
    return b->npupils++;
}

/* image += scale |out|^2 with the zero frequency moved from 0 to N/2. */
static void accumulate_shifted(const fftwf_complex *out, int npix, float scale, float *image)
{
    int h = npix / 2;
    for (int u = 0; u < npix; ++u) {
        const fftwf_complex *src = out + (size_t)u * npix;
        float *dst = image + (size_t)((u + h) % npix) * npix;
        int split = npix - h; /* columns v < split go to v + h, the rest wrap */
        for (int v = 0; v < split; ++v)
            dst[v + h] += scale * (src[v][0] * src[v][0] + src[v][1] * src[v][1]);
        for (int v = split; v < npix; ++v)
            dst[v - split] += scale * (src[v][0] * src[v][0] + src[v][1] * src[v][1]);
    }
}

static int cpu_run_one(psf_backend *b, const psf_job *job, float *image, char *err, size_t errlen)
{
    int npix = b->set.npix;
    memset(image, 0, (size_t)npix * npix * sizeof *image);
    for (int c = 0; c < job->ncomp; ++c) {
        const psf_component *comp = &job->comp[c];
        int p = pupil_for(b, comp->dx_m, err, errlen);
        if (p < 0) return -1;
        if (b->current >= 0 && b->current != p) cpu_pupil_clear(&b->pupils[b->current], b->fft.in);
        b->current = p;
        cpu_pupil_field(&b->pupils[p], b->set.modes.nterms, comp->coeff_waves, comp->opd_to_waves,
                        b->fft.in);
        cpu_fft_plan_execute(&b->fft);
        accumulate_shifted(b->fft.out, npix, (float)comp->scale, image);
    }
    return 0;
}

static int cpu_run(psf_backend *b, const psf_job *jobs, int njobs, float *images, char *err,
                   size_t errlen)
{
    size_t plane = (size_t)b->set.npix * b->set.npix;
    for (int k = 0; k < njobs; ++k)
        if (cpu_run_one(b, &jobs[k], images + (size_t)k * plane, err, errlen) != 0) return -1;
    return 0;
}

static float *cpu_alloc_images(psf_backend *b, size_t nfloats)
{
    (void)b;
    return malloc(nfloats * sizeof(float));
}

static void cpu_free_images(psf_backend *b, float *images)
{
    (void)b;
    free(images);
}

const psf_backend_ops psf_backend_cpu = {
    .name = "cpu",
    .create = cpu_create,
    .run = cpu_run,
    .destroy = cpu_destroy,
    .alloc_images = cpu_alloc_images,
    .free_images = cpu_free_images,
    .preferred_batch = 64,
};
