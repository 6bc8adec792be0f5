/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage on the CPU (cpu/detector.h). */
#include "cpu/detector.h"

#include <stdio.h>
#include <string.h>

#include "backend/detector.h"
#include "cpu/plan_cache.h"

int cpu_detector_create(cpu_detector *d, const psf_problem *problem, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    const psf_detector *det = &problem->detector;
    if (!psf_detector_active(det)) return 0;
    int n = problem->npix;
    if (psf_detector_check(det, n, err, errlen) != 0) return -1;
    d->npix = n;
    d->s = det->oversample > 1 ? det->oversample : 1;
    d->sample = det->sample;
    d->det = *det;
    d->convolve = psf_detector_convolves(det);
    if (!d->convolve) return 0;
    cpu_detector_work w;
    d->otf = fftwf_malloc(psf_detector_otf_bytes(n));
    if (!d->otf || cpu_detector_work_alloc(d, &w) != 0) {
        snprintf(err, errlen, "cpu: cannot allocate the detector stage's %dx%d buffers", n, n);
        cpu_detector_destroy(d);
        return -1;
    }
    psf_detector_otf(det, n, d->otf);
    cpu_fft_planner_enter(); /* the plans must not come from wisdom (cpu/plan_cache.h) */
    d->r2c = fftwf_plan_dft_r2c_2d(n, n, w.real, w.spec, FFTW_ESTIMATE);
    d->c2r = fftwf_plan_dft_c2r_2d(n, n, w.spec, w.real, FFTW_ESTIMATE);
    cpu_fft_planner_leave();
    cpu_detector_work_free(&w);
    if (!d->r2c || !d->c2r) {
        snprintf(err, errlen, "cpu: FFTW could not plan the %dx%d detector transforms", n, n);
        cpu_detector_destroy(d);
        return -1;
    }
    return 0;
}

void cpu_detector_destroy(cpu_detector *d)
{
    if (d->r2c) fftwf_destroy_plan(d->r2c);
    if (d->c2r) fftwf_destroy_plan(d->c2r);
    fftwf_free(d->otf);
    memset(d, 0, sizeof *d);
}

int cpu_detector_work_alloc(const cpu_detector *d, cpu_detector_work *w)
{
    size_t n = (size_t)d->npix;
    w->real = fftwf_malloc(n * n * sizeof *w->real);
    w->spec = fftwf_malloc(n * (n / 2 + 1) * sizeof *w->spec);
    if (w->real && w->spec) return 0;
    cpu_detector_work_free(w);
    return -1;
}

void cpu_detector_work_free(cpu_detector_work *w)
{
    fftwf_free(w->real);
    fftwf_free(w->spec);
    w->real = NULL;
    w->spec = NULL;
}

void cpu_detector_apply(const cpu_detector *d, cpu_detector_work *w, const float *grid, float *out)
{
    size_t n = (size_t)d->npix, plane = n * n;
    if (!d->convolve) { /* sampling alone */
        if (d->sample)
            psf_detector_sample(&d->det, grid, d->npix, out);
        else
            memcpy(out, grid, plane * sizeof *out);
        return;
    }
    memcpy(w->real, grid, plane * sizeof *grid); /* r2c may use its input as scratch */
    fftwf_execute_dft_r2c(d->r2c, w->real, w->spec);
    size_t nspec = n * (n / 2 + 1);
    for (size_t i = 0; i < nspec; ++i) { /* complex multiply, float as on the GPU */
        float a = w->spec[i][0], b = w->spec[i][1];
        float c = d->otf[2 * i], e = d->otf[2 * i + 1];
        w->spec[i][0] = a * c - b * e;
        w->spec[i][1] = a * e + b * c;
    }
    /* Into the planned buffer: out need not have FFTW's alignment. */
    fftwf_execute_dft_c2r(d->c2r, w->spec, w->real);
    if (d->sample)
        psf_detector_sample(&d->det, w->real, d->npix, out);
    else
        memcpy(out, w->real, plane * sizeof *out);
    size_t m = d->sample ? n / (size_t)d->s : n;
    psf_detector_clamp(out, m * m);
}
