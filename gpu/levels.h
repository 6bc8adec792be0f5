/* SPDX-License-Identifier: BSD-3-Clause */
/* The levels output on the GPU (psf_levels_out, backend/backend.h; issue
 * 17): per sub-batch of n images, two kernels over slices of each image
 * (gpu/levels.cu): the image's measures (reductions: the peak over the
 * non-NaN pixels, the total in double, the NaN / infinite / negative
 * counts; the axis pixel), then its levels with backend/levels.h's
 * formula, the code the CPU backend runs, into a buffer of 2 bytes a pixel
 * that the backend copies to the host instead of the floats. */
#ifndef PSFSIM_GPU_LEVELS_H
#define PSFSIM_GPU_LEVELS_H

#include <stddef.h>

#include <cuda_runtime.h>

extern "C" {
#include "backend/backend.h"
}
#include "backend/levels.h"
#include "gpu/cuda_check.h"

typedef struct {
    int active;   /* problem->levels.bits != 0 */
    int measures; /* gpu_levels_measure may be used (gpu_levels_measure_ready makes its
                     buffers): every problem without a detector stage */
    int capacity; /* C, and the buffers' count (1 or 2), for the measures' buffers */
    int nbuf;
    size_t plane;   /* N^2 */
    size_t axis;    /* index of pixel (N/2, N/2) */
    int rotate_180; /* problem->levels.rotate_180 */
    psf_levels_map map;
    int slices;             /* S: blocks per image (gpu/levels.cu) */
    void *parts;            /* device [C S]: the slices' partial measures (the kernels' own) */
    unsigned short *lev[2]; /* device [C N^2] each: a sub-batch's levels */
    double *meas[2];        /* device [C PSF_MEASURES] each: its measures */
    /* Pinned host [max_batch PSF_MEASURES]: a run's measures land here and
     * are copied to the caller's at its end. A copy into pageable memory
     * waits for the stream (cudaMemcpyAsync stages it), which kept each
     * sub-batch's compute from overlapping the last one's copy. */
    double *host_meas;
    size_t host_meas_jobs; /* its room, in images */
} gpu_levels;

/* Device bytes the levels take at capacity C (images per sub-batch) with
 * nbuf (1 or 2) level and measure buffers, and the partials. 0 without a
 * levels output. */
size_t gpu_levels_bytes(const psf_problem *problem, long long capacity, int nbuf);

/* Make l for problem at capacity C (inactive without a levels output;
 * the measures' buffers without a detector stage), with nbuf buffers: 2, one per sub-batch parity
 * q; 1 for a backend whose sub-batches are all q = 0, one at a time (lev[1] and meas[1] are then
 * aliases of [0]). Returns 0, or -1 with chk's message. */
int gpu_levels_create(gpu_levels *l, const psf_problem *problem, int capacity, int nbuf,
                      gpu_check *chk);
void gpu_levels_destroy(gpu_levels *l);

/* The measures and levels of the n <= C images in img (device, n N^2) into
 * lev[q] and meas[q], enqueued on stream. Returns 0, or -1 with chk's
 * message. */
int gpu_levels_apply(const gpu_levels *l, const float *img, int n, int q, cudaStream_t stream,
                     gpu_check *chk);

/* The measures' buffers made if they are not (a problem without levels
 * makes them at run_measured's first call). Returns 0, or -1 with chk's
 * message (or a problem with a detector stage: l->measures 0). */
int gpu_levels_measure_ready(gpu_levels *l, gpu_check *chk);

/* The measures alone of the n <= C images in img into meas[q] (the float
 * output's, psf_backend_ops.run_measured), enqueued on stream. Returns 0,
 * or -1 with chk's message. */
int gpu_levels_measure(const gpu_levels *l, const float *img, int n, int q, cudaStream_t stream,
                       gpu_check *chk);

#endif
