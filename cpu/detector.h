/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage on the CPU (psf_detector, backend/backend.h): one
 * real-to-complex FFTW transform of the grid image, one multiply by the
 * transfer function (backend/detector.h), the complex-to-real inverse,
 * then the detector image sampled from it. Plans made once per set (FFTW
 * manual 4.2, "plan once, execute many"), executed with the new-array
 * interface so that image-parallel lanes can share them (manual 5.4). */
#ifndef PSFSIM_CPU_DETECTOR_H
#define PSFSIM_CPU_DETECTOR_H

#include <stddef.h>

#include <fftw3.h>

#include "backend/backend.h"

typedef struct {
    int npix;         /* N: the grid */
    int s;            /* oversample (>= 1) */
    int sample;       /* write the detector image (N/s)^2, else the grid image N^2 */
    int convolve;     /* some kernel enabled: the FFT pass runs */
    psf_detector det; /* the problem's stage (the sampling: psf_detector_sample) */
    float *otf;       /* [N (N/2+1)] complex: backend/detector.h's table */
    fftwf_plan r2c;   /* real N x N -> complex N x (N/2+1) */
    fftwf_plan c2r;   /* its inverse (unnormalised: the 1/N^2 is in otf) */
} cpu_detector;

/* One lane's buffers for the stage: the real grid and its spectrum. */
typedef struct {
    float *real;         /* N^2, fftwf_malloc */
    fftwf_complex *spec; /* N (N/2+1) */
} cpu_detector_work;

/* Plan the stage of problem->detector for the npix grid (FFTW_ESTIMATE:
 * the stage is one transform pair per image). Returns 0, or -1 with err
 * (a detector psf_detector_check refuses, allocation, planner). A problem
 * without a detector stage leaves d zeroed and returns 0. */
int cpu_detector_create(cpu_detector *d, const psf_problem *problem, char *err, size_t errlen);
void cpu_detector_destroy(cpu_detector *d);

/* Buffers for one lane. Returns 0, or -1 (out of memory). */
int cpu_detector_work_alloc(const cpu_detector *d, cpu_detector_work *w);
void cpu_detector_work_free(cpu_detector_work *w);

/* The stage for one image: grid (N^2, row-major, axis at N/2; read only)
 * to out ((N/s)^2 when sampled, else N^2). Thread-safe over distinct w. */
void cpu_detector_apply(const cpu_detector *d, cpu_detector_work *w, const float *grid, float *out);

#endif
