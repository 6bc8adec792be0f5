/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage on the GPU (psf_detector, backend/backend.h), the twin
 * of cpu/detector.h, with the CPU's transfer function (computed on the host
 * by backend/detector.h). Where the separable path applies (a power-of-two
 * grid, the detector image written or s = 1: gpu/detector_sep.h, the
 * default GPU_DETECTOR_SEPARABLE) it runs that: two kernels, no cuFFT.
 * Else, per sub-batch of n grid images one batched cuFFT R2C, then:
 *  - sampled at s > 1: one fold kernel (psf_detector_fold_at: the multiply
 *    and the sum of the s^2 aliases into the M x (M/2+1) half spectrum of
 *    the detector image, s^2 and the offset's phase in it) and one batched
 *    M x M C2R straight into the detector images: no N x N C2R, no
 *    sampling pass;
 *  - else (s = 1, or the grid image written): one multiply kernel and one
 *    batched N x N C2R out of place into the images run() returns (1/N^2
 *    is in the table; at s = 1 the detector image is the grid image).
 * Packed (gpu_detector.packed, the default GPU_DETECTOR_PACKED; n >= 2):
 * the grid holds the images as pairs, image 2p in the real part and 2p+1
 * in the imaginary part of complex N x N image p (gpu_psf_intensity_pairs
 * writes them so: no extra pass), and one in-place batched C2C of
 * ceil(n/2) pairs replaces the R2C (cheaper per image than the R2C on the
 * H200: bench/gpu_micro.cu part 4's detector_fft rows); the fold kernel
 * separates the two spectra on the fly (psf_detector_fold_pair_at) and
 * writes both images' M x (M/2+1) spectra (at s = 1 or unsampled it is the
 * multiply, M = N, writing the two half spectra), then the same C2R.
 * Then one pass clamps the images at 0 (psf_detector_clamp; the separable
 * path does it as it writes them). Sampling without a kernel is one
 * sampling kernel. The same images as the
 * CPU's to float rounding (tests/cpu/test_detector_fold.c checks the fold
 * against cpu/detector.c's stage). Plans are made once per batch count and
 * kept (as gpu/plan_cache.h does). */
#ifndef PSFSIM_GPU_DETECTOR_H
#define PSFSIM_GPU_DETECTOR_H

#include <stddef.h>

#include <cuda_runtime.h>
#include <cufft.h>

#include "gpu/cuda_check.h"
#include "gpu/detector_sep.h"

/* C linkage: the backend (C++) and tests/gpu (C) call it. */
#ifdef __cplusplus
extern "C" {
#endif

#include "backend/backend.h"

/* The default of gpu_detector.separable: 1, the separable path
 * (gpu/detector_sep.h: no cuFFT transform of the images) wherever it
 * applies; 0, the cuFFT paths below always. */
#define GPU_DETECTOR_SEPARABLE 1

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

/* The default of gpu_detector.packed: 1, the packed-pair path (one C2C of
 * ceil(n/2) pairs instead of the R2C of n); 0, the R2C path. 0: a packed
 * image's transform rounds with its partner's values, so its bits depended
 * on the batch it was in (issue 26: an image is its job's alone); packing
 * saved 2% of the stage's cuFFT paths (bench/RESULTS.md, runs 22-23).
 * bench/gpu_micro.cu part 4 still times both. */
#define GPU_DETECTOR_PACKED 0

typedef struct {
    long long batch; /* images; 0 = empty */
    int packed;      /* fwd is the C2C of ceil(batch / 2) pairs, else the R2C of batch */
    cufftHandle fwd, c2r;
    unsigned long long used;
} gpu_detector_plan;

typedef struct {
    int active;   /* the problem has a stage (psf_detector_active) */
    int convolve; /* the FFT pass runs */
    int sample;   /* the detector image is written (else the grid image) */
    int fold;     /* convolve, sample and s > 1: the fold (c2r is M x M) */
    int npix, s, out_npix;
    psf_detector det;  /* the problem's stage (its sampling: psf_detector_sample_at) */
    cufftComplex *otf; /* device [N (N/2+1)]: psf_detector_fold_otf when fold, else _otf */
    float *phase;      /* device [2 N]: the fold's offset phase (psf_detector_fold_phase);
                          NULL without a fold or for even M (o = 0) */
    float *out[2];     /* device [C M^2] each when sampled: the detector images */
    gpu_detector_plan plans[GPU_DETECTOR_PLANS];
    unsigned long long tick;
    cudaStream_t stream;
    int fold_unroll;            /* 1: the fold kernel unrolled for s = 2, 4; the bench sets 0 */
    int multiply_per, fold_per; /* images a thread of the multiply, the fold kernel
                                   takes: GPU_DETECTOR_MULTIPLY_PER, 1; the bench sets others */
    int steps;     /* 0: the whole stage; else only its first steps (1: R2C or the pairs' C2C,
                      2: and the multiply or the fold), for bench/gpu_micro.cu's breakdown:
                      the images are then not the stage's */
    int packed;    /* 1: the packed-pair path for n >= 2 (GPU_DETECTOR_PACKED); the bench
                      sets 0 to compare (set before gpu_detector_packs is asked) */
    int separable; /* 1: gpu_detector_apply takes the separable path (sep made;
                      GPU_DETECTOR_SEPARABLE); the bench and tests set 0 to compare */
    int fuse;      /* 1 (the default): gpu_detector_fuses may say yes; the bench sets 0 */
    gpu_detector_sep sep; /* its tables, when the problem allows it */
} gpu_detector;

/* Device bytes the stage takes at capacity C (images per sub-batch):
 * the table, the fold's phase table, the two detector-image buffers,
 * cuFFT's work areas (the R2C's N x N or the pairs' C2C, and the C2R's,
 * N x N or M x M) estimated as one grid image pair per image (8 N^2 C),
 * and the grid images the caller's two grid buffers hold past C for the
 * packed path (gpu_detector_grid_images). 0 without a stage. */
size_t gpu_detector_bytes(const psf_problem *problem, long long capacity);

/* Grid images (N^2 floats) a grid buffer passed to gpu_detector_apply
 * must hold at capacity C: C, or C + 1 when the packed path may meet an
 * odd count n = C >= 3 (its last pair's imaginary half). */
long long gpu_detector_grid_images(const psf_problem *problem, long long capacity);

/* 1 when gpu_detector_apply of n images takes the grid as packed pairs
 * (convolving, not separable, d->packed, n >= 2): the caller writes the
 * images with gpu_psf_intensity_pairs; else as n images of N^2 floats. */
int gpu_detector_packs(const gpu_detector *d, int n);

/* Make the stage for problem at capacity C on stream (a zeroed d without
 * a stage). Returns 0, or -1 with chk's message. */
int gpu_detector_create(gpu_detector *d, const psf_problem *problem, int capacity,
                        cudaStream_t stream, gpu_check *chk);
void gpu_detector_destroy(gpu_detector *d);

/* The stage for n <= C grid images in grid (device, n N^2 floats, or
 * packed (gpu_detector_packs) ceil(n/2) complex N^2, the imaginary half of
 * an odd n's last pair zeroed here; gpu_detector_grid_images; cudaMalloc's
 * alignment; overwritten: by the convolved images when not sampled, else
 * scratch: the fold's spectra, or the pairs' C2C in place), with spec
 * (device, >= n N (N/2+1) complex) as the spectrum, or the packed path's
 * detector spectra, or the separable path's row-convolved images, enqueued
 * on the stream; *result: the images run()
 * returns, out[q] (sampled) or grid. Returns 0, or -1 with chk's
 * message. */
int gpu_detector_apply(gpu_detector *d, float *grid, int n, cufftComplex *spec, int q,
                       float **result, gpu_check *chk);

/* 1 when the caller may fuse the intensity with the stage's first pass
 * (the separable path writing the detector image, d->fuse): instead of
 * the intensity kernel and gpu_detector_apply, a sub-batch whose images
 * are all in one pass (no record accumulates) takes
 * gpu_detector_rows_from_fields and then gpu_detector_finish. */
int gpu_detector_fuses(const gpu_detector *d);

/* The intensities of a pass (gpu_psf_intensity's field, scale, images,
 * nimages; centred: gpu_psf_intensity_centred's layout) through the
 * stage's first pass into rows (device, a grid buffer: each record's
 * image e.image there), on the stream. Returns 0, or -1 with chk's
 * message. */
int gpu_detector_rows_from_fields(gpu_detector *d, const cufftComplex *field, const float *scale,
                                  const gpu_pass_image *images, int nimages, int centred,
                                  float *rows, gpu_check *chk);

/* The rest of the stage for n images whose rows gpu_detector_rows_from_fields
 * wrote: *result the detector images (out[q]). Returns 0, or -1 with
 * chk's message. */
int gpu_detector_finish(gpu_detector *d, const float *rows, int n, int q, float **result,
                        gpu_check *chk);

#ifdef __cplusplus
}
#endif

#endif
