/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage on the GPU (psf_detector, backend/backend.h), the twin
 * of cpu/detector.h, with the CPU's transfer function (computed on the host
 * by backend/detector.h). Per sub-batch of n grid images one batched cuFFT
 * R2C, then:
 *  - sampled at s > 1: one fold kernel (psf_detector_fold_at: the multiply
 *    and the sum of the s^2 aliases into the M x (M/2+1) half spectrum of
 *    the detector image, s^2 and the offset's phase in it) and one batched
 *    M x M C2R straight into the detector images: no N x N C2R, no
 *    sampling pass;
 *  - else (s = 1, or the grid image written): one multiply kernel and one
 *    batched N x N C2R out of place into the images run() returns (1/N^2
 *    is in the table; at s = 1 the detector image is the grid image).
 * Sampling without a kernel is one sampling kernel. The same images as the
 * CPU's to float rounding (tests/cpu/test_detector_fold.c checks the fold
 * against cpu/detector.c's stage). Plans are made once per batch count and
 * kept (as gpu/plan_cache.h does). */
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

/* Images one thread of the multiply kernel takes (the default of
 * gpu_detector.multiply_per): the table's element read once for all of
 * them and independent loads in flight, as gpu/intensity.cu's
 * GPU_IMAGES_PER_THREAD (N = 256, 64 images: 1032 blocks of 256). The fold
 * kernel's default is 1 (gpu_detector.fold_per): at M = 64 its
 * M (M/2+1) = 2112 threads an image fill the device only with one thread
 * per image's element. bench/gpu_micro.cu part 4 times the others. */
#define GPU_DETECTOR_MULTIPLY_PER 8

typedef struct {
    long long batch; /* 0 = empty */
    cufftHandle r2c, c2r;
    unsigned long long used;
} gpu_detector_plan;

typedef struct {
    int active;   /* the problem has a stage (psf_detector_active) */
    int convolve; /* the FFT pass runs */
    int sample;   /* the detector image is written (else the grid image) */
    int fold;     /* convolve, sample and s > 1: the fold (c2r is M x M) */
    int npix, s, out_npix;
    cufftComplex *otf; /* device [N (N/2+1)] */
    float *phase;      /* device [2 N]: the fold's offset phase (psf_detector_fold_phase);
                          NULL without a fold or for even M (o = 0) */
    float *out[2];     /* device [C M^2] each when sampled: the detector images */
    gpu_detector_plan plans[GPU_DETECTOR_PLANS];
    unsigned long long tick;
    cudaStream_t stream;
    int fold_unroll;            /* 1: the fold kernel unrolled for s = 2, 4; the bench sets 0 */
    int multiply_per, fold_per; /* images a thread of the multiply, the fold kernel
                                   takes: GPU_DETECTOR_MULTIPLY_PER, 1; the bench sets others */
    int steps; /* 0: the whole stage; else only its first steps (1: R2C, 2: and the multiply
                  or the fold), for bench/gpu_micro.cu's breakdown: the images are then
                  not the stage's */
} gpu_detector;

/* Device bytes the stage takes at capacity C (images per sub-batch):
 * the table, the fold's phase table, the two detector-image buffers, and
 * cuFFT's work areas (the R2C's N x N and the C2R's, N x N or M x M)
 * estimated as one grid image pair per image (8 N^2 C). 0 without a stage. */
size_t gpu_detector_bytes(const psf_problem *problem, long long capacity);

/* Make the stage for problem at capacity C on stream (a zeroed d without
 * a stage). Returns 0, or -1 with chk's message. */
int gpu_detector_create(gpu_detector *d, const psf_problem *problem, int capacity,
                        cudaStream_t stream, gpu_check *chk);
void gpu_detector_destroy(gpu_detector *d);

/* The stage for n <= C grid images in grid (device, n N^2, cudaMalloc's
 * alignment; overwritten: by the convolved images when not sampled, else
 * scratch, the fold's spectra in it), with spec (device, >= n N (N/2+1)
 * complex) as the spectrum, enqueued on the stream; *result: the images
 * run() returns, out[q] (sampled) or grid. Returns 0, or -1 with chk's
 * message. */
int gpu_detector_apply(gpu_detector *d, float *grid, int n, cufftComplex *spec, int q,
                       float **result, gpu_check *chk);

#endif
