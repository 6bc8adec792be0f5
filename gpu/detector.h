/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage on the GPU (psf_detector, backend/backend.h), the twin
 * of cpu/detector.h: per sub-batch of n grid images, one batched cuFFT R2C,
 * one multiply kernel by the transfer function (computed on the host by
 * backend/detector.h, the CPU's values), one batched C2R back into the
 * images, and a sampling kernel into the detector images. Plans are made
 * once per batch count and kept (as gpu/plan_cache.h does). */
#ifndef PSFSIM_GPU_DETECTOR_H
#define PSFSIM_GPU_DETECTOR_H

#include <stddef.h>

#include <cuda_runtime.h>
#include <cufft.h>

extern "C" {
#include "backend/backend.h"
}
#include "gpu/cuda_check.h"

/* Batch counts whose plans are kept (a run uses at most two, and one more
 * for the single-image path). */
#define GPU_DETECTOR_PLANS 4

typedef struct {
    long long batch; /* 0 = empty */
    cufftHandle r2c, c2r;
    unsigned long long used;
} gpu_detector_plan;

typedef struct {
    int active;   /* the problem has a stage (psf_detector_active) */
    int convolve; /* the FFT pass runs */
    int sample;   /* the detector image is written (else the grid image) */
    int npix, s, out_npix;
    cufftComplex *otf; /* device [N (N/2+1)] */
    float *out[2];     /* device [C M^2] each when sampled: the detector images */
    gpu_detector_plan plans[GPU_DETECTOR_PLANS];
    unsigned long long tick;
    cudaStream_t stream;
} gpu_detector;

/* Device bytes the stage takes at capacity C (images per sub-batch):
 * the table, the two detector-image buffers, and cuFFT's work areas
 * estimated as one grid image pair per image (8 N^2 C). 0 without a stage. */
size_t gpu_detector_bytes(const psf_problem *problem, long long capacity);

/* Make the stage for problem at capacity C on stream (a zeroed d without
 * a stage). Returns 0, or -1 with chk's message. */
int gpu_detector_create(gpu_detector *d, const psf_problem *problem, int capacity,
                        cudaStream_t stream, gpu_check *chk);
void gpu_detector_destroy(gpu_detector *d);

/* The stage for n <= C grid images in grid (device, n N^2, overwritten by
 * the convolved images), with spec (device, >= n N (N/2+1) complex) as the
 * spectrum, enqueued on the stream; *result: the images run() returns,
 * out[q] (sampled) or grid. Returns 0, or -1 with chk's message. */
int gpu_detector_apply(gpu_detector *d, float *grid, int n, cufftComplex *spec, int q,
                       float **result, gpu_check *chk);

#endif
