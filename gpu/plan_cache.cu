/* SPDX-License-Identifier: BSD-3-Clause */
#include "gpu/plan_cache.h"

#include <string.h>

/* 2-D N x N transforms, contiguous (inembed/onembed NULL: the basic layout),
 * one after another in memory. */
static void plan_dims(int npix, long long n[2])
{
    n[0] = npix;
    n[1] = npix;
}

void gpu_plan_cache_init(gpu_plan_cache *pc, int npix, cudaStream_t stream)
{
    memset(pc, 0, sizeof *pc);
    pc->npix = npix;
    pc->stream = stream;
}

int gpu_plan_estimate(gpu_check *chk, int npix, long long batch, size_t *work_bytes)
{
    cufftHandle h;
    if (GPU_CUFFT(chk, cufftCreate(&h))) return -1;
    long long n[2];
    plan_dims(npix, n);
    int rc = GPU_CUFFT(
        chk, cufftGetSizeMany64(h, 2, n, NULL, 1, 0, NULL, 1, 0, CUFFT_C2C, batch, work_bytes));
    cufftDestroy(h);
    return rc;
}

/* Point every plan at the current work area. */
static int set_work_areas(gpu_plan_cache *pc, gpu_check *chk)
{
    for (int i = 0; i < GPU_PLAN_CACHE_SIZE; ++i)
        if (pc->plans[i].batch && pc->plans[i].work_bytes &&
            GPU_CUFFT(chk, cufftSetWorkArea(pc->plans[i].plan, pc->work)))
            return -1;
    return 0;
}

int gpu_plan_cache_reserve(gpu_plan_cache *pc, gpu_check *chk, size_t bytes)
{
    if (bytes <= pc->work_bytes) return 0;
    /* The old area may be in use by queued transforms. */
    if (pc->work && GPU_CUDA(chk, cudaStreamSynchronize(pc->stream))) return -1;
    cudaFree(pc->work);
    pc->work = NULL;
    pc->work_bytes = 0;
    pc->generation++;
    if (GPU_CUDA(chk, cudaMalloc(&pc->work, bytes))) {
        pc->work = NULL;
        return -1;
    }
    pc->work_bytes = bytes;
    return set_work_areas(pc, chk);
}

static void plan_free(gpu_plan *p)
{
    if (p->batch) cufftDestroy(p->plan);
    memset(p, 0, sizeof *p);
}

int gpu_plan_make(gpu_check *chk, int npix, long long batch, cufftHandle *plan, size_t *work_bytes)
{
    cufftHandle h;
    if (GPU_CUFFT(chk, cufftCreate(&h))) return -1;
    long long n[2];
    plan_dims(npix, n);
    *work_bytes = 0;
    if (GPU_CUFFT(chk, cufftSetAutoAllocation(h, 0)) ||
        GPU_CUFFT(chk, cufftMakePlanMany64(h, 2, n, NULL, 1, 0, NULL, 1, 0, CUFFT_C2C, batch,
                                           work_bytes))) {
        cufftDestroy(h);
        return -1;
    }
    *plan = h;
    return 0;
}

/* An empty slot: a free one, or the least recently used plan's, destroyed
 * after its queued work. Returns 0 with *out, or -1 with chk's message. */
static int slot_take(gpu_plan_cache *pc, gpu_check *chk, gpu_plan **out)
{
    gpu_plan *slot = NULL;
    for (int i = 0; i < GPU_PLAN_CACHE_SIZE; ++i) {
        gpu_plan *p = &pc->plans[i];
        if (!slot || (slot->batch && (!p->batch || p->used < slot->used))) slot = p;
    }
    if (slot->batch) { /* evict the least recently used plan, after its queued work */
        if (GPU_CUDA(chk, cudaStreamSynchronize(pc->stream))) return -1;
        plan_free(slot);
        pc->generation++;
    }
    *out = slot;
    return 0;
}

/* Plan h (gpu_plan_make) into the empty slot, on the cache's stream and
 * work area (grown when h needs more). On failure h is destroyed. */
static int slot_fill(gpu_plan_cache *pc, gpu_check *chk, gpu_plan *slot, cufftHandle h,
                     long long batch, size_t work)
{
    if (GPU_CUFFT(chk, cufftSetStream(h, pc->stream))) {
        cufftDestroy(h);
        return -1;
    }
    slot->batch = batch;
    slot->plan = h;
    slot->work_bytes = work;
    slot->used = ++pc->tick;
    /* Growing re-points every plan, this one included; else point this one. */
    if (work > pc->work_bytes) {
        if (gpu_plan_cache_reserve(pc, chk, work) != 0) {
            plan_free(slot);
            return -1;
        }
    } else if (work && GPU_CUFFT(chk, cufftSetWorkArea(h, pc->work))) {
        plan_free(slot);
        return -1;
    }
    return 0;
}

int gpu_plan_cache_get(gpu_plan_cache *pc, gpu_check *chk, long long batch, cufftHandle *plan)
{
    for (int i = 0; i < GPU_PLAN_CACHE_SIZE; ++i) {
        gpu_plan *p = &pc->plans[i];
        if (p->batch == batch) {
            p->used = ++pc->tick;
            *plan = p->plan;
            return 0;
        }
    }
    gpu_plan *slot;
    cufftHandle h;
    size_t work = 0;
    if (slot_take(pc, chk, &slot) || gpu_plan_make(chk, pc->npix, batch, &h, &work) ||
        slot_fill(pc, chk, slot, h, batch, work))
        return -1;
    *plan = h;
    return 0;
}

int gpu_plan_cache_adopt(gpu_plan_cache *pc, gpu_check *chk, cufftHandle plan, long long batch,
                         size_t work_bytes)
{
    gpu_plan *slot;
    if (slot_take(pc, chk, &slot)) {
        cufftDestroy(plan);
        return -1;
    }
    return slot_fill(pc, chk, slot, plan, batch, work_bytes);
}

void gpu_plan_cache_destroy(gpu_plan_cache *pc)
{
    if (pc->stream) cudaStreamSynchronize(pc->stream);
    for (int i = 0; i < GPU_PLAN_CACHE_SIZE; ++i)
        plan_free(&pc->plans[i]);
    cudaFree(pc->work);
    pc->work = NULL;
    pc->work_bytes = 0;
}
