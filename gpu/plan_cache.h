/* SPDX-License-Identifier: BSD-3-Clause */
/* Batched cuFFT plans for one grid size N, made once per batch count and
 * kept in the backend instance (the twin of cpu/plan_cache.h: "plan once,
 * execute many"). All plans of a cache run on one stream and share one work
 * area that the cache owns (cufftSetAutoAllocation off), so plans for
 * several batch counts cost one workspace, sized by the largest.
 *
 * Plans are made with cufftCreate + cufftMakePlanMany64, so a batch of
 * N x N transforms may hold more than 2^31 elements. */
#ifndef PSFSIM_GPU_PLAN_CACHE_H
#define PSFSIM_GPU_PLAN_CACHE_H

#include <stddef.h>

#include <cuda_runtime.h>
#include <cufft.h>

#include "gpu/cuda_check.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Distinct batch counts kept; a run() uses at most two (its full passes and
 * a remainder), the single-image path one more. */
#define GPU_PLAN_CACHE_SIZE 8

typedef struct {
    long long batch; /* 0 = empty slot */
    cufftHandle plan;
    size_t work_bytes;       /* work area this plan needs */
    unsigned long long used; /* last use, for least-recently-used eviction */
} gpu_plan;

typedef struct {
    int npix;            /* N */
    cudaStream_t stream; /* every plan executes here */
    gpu_plan plans[GPU_PLAN_CACHE_SIZE];
    void *work; /* device work area shared by all plans */
    size_t work_bytes;
    unsigned long long tick;
    unsigned generation; /* bumped whenever the work area moves or a plan is destroyed:
                            CUDA graphs that captured a plan must be re-made */
} gpu_plan_cache;

/* Empty cache for N x N in-place forward C2C transforms (cufftComplex,
 * row-major, image k at k*N*N) on stream. No CUDA call. */
void gpu_plan_cache_init(gpu_plan_cache *pc, int npix, cudaStream_t stream);

/* Work-area bytes a batch of `batch` transforms would need
 * (cufftGetSizeMany64 on a scratch handle), for the memory estimate before
 * anything is allocated. Returns 0, or -1 with chk's message. */
int gpu_plan_estimate(gpu_check *chk, int npix, long long batch, size_t *work_bytes);

/* Allocate the shared work area now (bytes), so that the plans made later
 * fit it. Returns 0, or -1 with chk's message. */
int gpu_plan_cache_reserve(gpu_plan_cache *pc, gpu_check *chk, size_t bytes);

/* The plan for `batch` transforms: cached, or made now (evicting the least
 * recently used plan when the cache is full; growing the work area, after
 * the stream drains, when the new plan needs more). Returns 0 with *plan,
 * or -1 with chk's message (cuFFT cannot plan this size, no memory). */
int gpu_plan_cache_get(gpu_plan_cache *pc, gpu_check *chk, long long batch, cufftHandle *plan);

/* A plan for `batch` transforms made outside any cache (cufftCreate,
 * cufftSetAutoAllocation off, cufftMakePlanMany64): *work_bytes is the
 * work area it needs, exactly, before any buffer is allocated. Returns 0
 * with *plan (the caller's: cufftDestroy, or gpu_plan_cache_adopt), or -1
 * with chk's message. */
int gpu_plan_make(gpu_check *chk, int npix, long long batch, cufftHandle *plan, size_t *work_bytes);

/* Keep plan (from gpu_plan_make for pc's N: `batch` transforms needing
 * work_bytes) in the cache, on its stream and work area (grown when it
 * needs more), as gpu_plan_cache_get would have made it. The cache owns
 * plan from the call on, also when it fails (then it is destroyed).
 * Returns 0, or -1 with chk's message. */
int gpu_plan_cache_adopt(gpu_plan_cache *pc, gpu_check *chk, cufftHandle plan, long long batch,
                         size_t work_bytes);

/* Destroy every plan and the work area (waits for the stream first). */
void gpu_plan_cache_destroy(gpu_plan_cache *pc);

#ifdef __cplusplus
}
#endif

#endif
