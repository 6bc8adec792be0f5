/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA backend: the table psf_gpu_module_entry hands out
 * (backend/gpu_abi.h), the twin of cpu/backend.c. Per set (create):
 * the device (options->device), the memory estimate, streams, events,
 * every buffer for the largest batch, the maps and Zernike modes on the
 * device. Per pitch (first use in run): the pupil, built on the device
 * (gpu/pupil.h). Per run: the jobs are split into sub-batches of whole
 * images; each sub-batch is one or more passes, their tables packed on the
 * host (gpu/batch.h), each pass one pupil-field kernel, one batched
 * out-of-place cuFFT (gpu/plan_cache.h) or, for an MFT set, two batched
 * cuBLAS products (gpu/mft.h), and one fused intensity kernel
 * (gpu/intensity.h), on the compute stream into one of two device image
 * buffers, whose copy to the host runs on the copy stream while the next
 * sub-batch computes. A single-image FFT run replays a CUDA graph of its
 * pass instead. With a detector stage (psf_detector) each sub-batch's
 * images pass through gpu/detector.h before their copy.
 *
 * The single-image plan (lean; an FFT set whose batch is one image from
 * N = 4096, or any FFT set from N = 32768, where the buffers of a batch no
 * longer fit beside each other): one complex grid, transformed in place, and
 * one image buffer, 12 N^2 bytes besides cuFFT's work area, instead of the
 * field, its transform and two image buffers (24 N^2) and a pupil build
 * over five more grids. Each field is written into the zeroed grid at its
 * open samples (gpu_pupil_field_open, so no pupil keeps an index over the
 * grid), transformed in place, and its intensity added into the image; a
 * pupil is built in the two buffers (gpu_pupil_build_in) before the passes.
 * One image at a time: its copy to the host ends before the next is made.
 *
 * The field buffer keeps its zeros: the FFT is out of place and the MFT's
 * products only read it, so once a slot holds a field of pupil p, the next
 * field of p there needs only its open samples written
 * (gpu_pupil_field_open); a slot that held another pupil, or whose state is
 * unknown (after create, after a failure), is rewritten whole
 * (gpu_pupil_field). At N = 4096 that is 18% of the samples instead of all.
 *
 * Every entry point selects the set's device first (cudaSetDevice), so
 * backends on several devices can be driven from any threads of one process.
 *
 * Every CUDA/cuFFT/cuBLAS call is checked (gpu/cuda_check.h); any failure
 * returns -1 with a message, and the app computes the remaining images on
 * the CPU.
 *
 * This file holds the ops table, create, destroy and the host buffers; the
 * rest, by concept, with the state they share (gpu/backend_state.h):
 * gpu/memory_plan.h (the sizes, the memory need, the capacity C),
 * gpu/set_data.h (the maps, modes and pupils on the device), gpu/pass.h
 * (one pass of fields) and gpu/run.h (a run: the single-image graph and the
 * sub-batches). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

extern "C" {
#include "backend/backend.h"
#include "backend/detector.h"
}
#include "backend/gpu_abi.h"

#include "gpu/adjoint.h"
#include "gpu/backend_state.h"
#include "gpu/batch.h"
#include "gpu/cuda_check.h"
#include "gpu/device_memory.h"
#include "gpu/detector.h"
#include "gpu/intensity.h"
#include "gpu/levels.h"
#include "gpu/memory_plan.h"
#include "gpu/mft.h"
#include "gpu/pass.h"
#include "gpu/plan_cache.h"
#include "gpu/probe.h"
#include "gpu/pupil.h"
#include "gpu/run.h"
#include "gpu/set_data.h"

static void gpu_destroy(psf_backend *b)
{
    if (!b) return;
    if (b->device_set) cudaSetDevice(b->device); /* whatever thread calls: this device's */
    /* Nothing queued may outlive the memory it uses. */
    if (b->compute) cudaStreamSynchronize(b->compute);
    if (b->copy) cudaStreamSynchronize(b->copy);
    graph_release(b);
    gpu_detector_destroy(&b->det);
    gpu_levels_destroy(&b->lev);
    if (b->plans_ready) gpu_plan_cache_destroy(&b->plans);
    if (b->lean_plan_held) cufftDestroy(b->lean_plan);
    for (int i = 0; i < b->npupils; ++i)
        gpu_pupil_free(&b->pupils[i]);
    for (int i = 0; i < GPU_MFT_TABLES; ++i)
        gpu_mft_table_free(&b->tables[i]);
    if (b->blas) cublasDestroy(b->blas);
    cudaFree(b->d_pupils);
    cudaFree(b->d_modes);
    cudaFree(b->d_seg_modes);
    cudaFree(b->d_amp_map);
    cudaFree(b->d_opd_map);
    if (b->lean) { /* aliases of field and dimg[0] */
        b->spec = NULL;
        b->dimg[1] = NULL;
    }
    cudaFree(b->field);
    cudaFree(b->spec);
    cudaFree(b->mft_t);
    for (int q = 0; q < 2; ++q) {
        cudaFree(b->dimg[q]);
        cudaFree(b->dstage[q]);
        cudaFreeHost(b->stage[q]);
        if (b->ev_done[q]) cudaEventDestroy(b->ev_done[q]);
        if (b->ev_copied[q]) cudaEventDestroy(b->ev_copied[q]);
        if (b->ev_staged[q]) cudaEventDestroy(b->ev_staged[q]);
    }
    if (b->compute) cudaStreamDestroy(b->compute);
    if (b->copy) cudaStreamDestroy(b->copy);
    while (b->buffers) { /* buffers the caller did not give back */
        host_buf *h = b->buffers;
        b->buffers = h->next;
        if (h->pinned)
            cudaFreeHost(h->ptr);
        else
            free(h->ptr);
        free(h);
    }
    gpu_pass_free(&b->pass);
    free(b->slot_pupil);
    free(b);
    /* A failed call leaves its error as the thread's last error, which the
     * next launch check (cudaGetLastError) would report as its own. */
    (void)cudaGetLastError();
}

static int gpu_create(const psf_problem *set, const psf_backend_options *options, psf_backend **out,
                      char *err, size_t errlen)
{
    *out = NULL;
    int device = options ? options->device : 0;
    psf_backend *b = (psf_backend *)calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "gpu: out of host memory");
        return -1;
    }
    gpu_check_init(&b->chk, device, err, errlen);
    b->set = *set;
    if (b->set.max_batch < 1) b->set.max_batch = 1;
    b->device = device;
    b->mft = set->mft != 0;
    b->npix = set->npix;
    b->plane = (size_t)set->npix * (size_t)(set->npix > 0 ? set->npix : 0);
    b->grid = b->mft ? set->pupil_npix : set->npix;
    b->half_pixel = b->mft && set->half_pixel ? 1 : 0;
    b->pplane = (size_t)b->grid * (size_t)(b->grid > 0 ? b->grid : 0);
    b->nterms = set->modes.nterms > 0 ? set->modes.nterms : 0;
    b->ncoeff = psf_coeff_count(set) > 0 ? psf_coeff_count(set) : 0;
    b->lean = shape_of(&b->set).lean;
    b->all_basis = 1;
    b->pass_epoch = 1; /* tables start at epoch 0: in no pass */
    int ndev = 0;
    size_t work = 0;
    /* No device, no driver: say so plainly, it is the common case. */
    if (gpu_check_inject(&b->chk, "cudaGetDeviceCount", __FILE__, __LINE__)) goto fail;
    {
        cudaError_t e = cudaGetDeviceCount(&ndev);
        if (e != cudaSuccess || ndev < 1) {
            char why[128];
            gpu_no_device_reason(e, why, sizeof why);
            snprintf(err, errlen, "no CUDA device: %s", why);
            goto fail;
        }
    }
    if (device < 0 || device >= ndev) {
        snprintf(err, errlen, "gpu: CUDA device %d asked for, but %d device%s visible (0..%d)",
                 device, ndev, ndev == 1 ? " is" : "s are", ndev - 1);
        goto fail;
    }
    /* Everything below (context, memory, streams, plans, cuBLAS) is this device's. */
    if (GPU_CUDA(&b->chk, cudaSetDevice(b->device))) goto fail;
    b->device_set = 1;
    if (set->npix < 1 || set->npix > GPU_PUPIL_MAX_NPIX) {
        snprintf(err, errlen,
                 "gpu: grid %dx%d outside 1..%d per side (open samples are numbered "
                 "in 32 bits)",
                 set->npix, set->npix, GPU_PUPIL_MAX_NPIX);
        goto fail;
    }
    if (b->mft && (b->grid < 1 || b->grid > GPU_PUPIL_MAX_NPIX)) {
        snprintf(err, errlen, "gpu: MFT pupil grid %dx%d outside 1..%d per side", b->grid, b->grid,
                 GPU_PUPIL_MAX_NPIX);
        goto fail;
    }
    if (aperture_check(&set->aperture, err, errlen) != 0) goto fail;
    /* Load the kernels now (lazy module loading would put it on the first run). */
    if (gpu_pupil_load_kernels(&b->chk) || gpu_psf_load_kernels(&b->chk) ||
        (b->mft && gpu_mft_load_kernels(&b->chk)))
        goto fail;
    if (choose_capacity(b, &work, err, errlen) != 0) goto fail;
    if (GPU_CUDA(&b->chk, cudaStreamCreateWithFlags(&b->compute, cudaStreamNonBlocking)) ||
        GPU_CUDA(&b->chk, cudaStreamCreateWithFlags(&b->copy, cudaStreamNonBlocking)))
        goto fail;
    for (int q = 0; q < 2; ++q)
        if (GPU_CUDA(&b->chk, cudaEventCreateWithFlags(&b->ev_done[q], cudaEventDisableTiming)) ||
            GPU_CUDA(&b->chk, cudaEventCreateWithFlags(&b->ev_copied[q], cudaEventDisableTiming)) ||
            GPU_CUDA(&b->chk, cudaEventCreateWithFlags(&b->ev_staged[q], cudaEventDisableTiming)))
            goto fail;
    {
        size_t cap = (size_t)b->capacity;
        b->stage_bytes = gpu_pass_layout_for(b->capacity, b->capacity, b->ncoeff, b->mft).bytes;
        /* The single-image plan transforms the field in place. */
        if (GPU_CUDA(&b->chk, cudaMalloc(&b->field, cap * b->pplane * sizeof(cufftComplex))) ||
            (!b->lean &&
             GPU_CUDA(&b->chk, cudaMalloc(&b->spec, cap * b->plane * sizeof(cufftComplex)))))
            goto fail;
        if (b->lean) b->spec = b->field;
        if (b->mft && GPU_CUDA(&b->chk, cudaMalloc(&b->mft_t, cap * (size_t)b->npix * b->grid *
                                                                  sizeof(cufftComplex))))
            goto fail;
        /* One image more for the detector's packed pairs at an odd C. */
        size_t grid_images = (size_t)gpu_detector_grid_images(set, b->capacity);
        for (int q = 0; q < 2; ++q)
            if (((!b->lean || q == 0) &&
                 GPU_CUDA(&b->chk,
                          cudaMalloc(&b->dimg[q], grid_images * b->plane * sizeof(float)))) ||
                GPU_CUDA(&b->chk, cudaMalloc(&b->dstage[q], b->stage_bytes)) ||
                GPU_CUDA(&b->chk,
                         cudaHostAlloc(&b->stage[q], b->stage_bytes, cudaHostAllocDefault)))
                goto fail;
        if (b->lean) b->dimg[1] = b->dimg[0]; /* one image at a time (run_batched) */
        if (GPU_CUDA(&b->chk, cudaMalloc(&b->d_pupils, PSF_MAX_COMPONENTS * sizeof(gpu_pupil))))
            goto fail;
        b->slot_pupil = (int *)malloc(cap * sizeof *b->slot_pupil);
        if (gpu_pass_init(&b->pass, b->capacity, b->ncoeff, b->mft) != 0 || !b->slot_pupil) {
            snprintf(err, errlen, "gpu: out of host memory");
            goto fail;
        }
        slots_forget(b); /* cudaMalloc'd: contents unknown */
    }
    if (upload_set(b) != 0) goto fail;
    b->out_plane = (size_t)psf_detector_out_npix(set) * (size_t)psf_detector_out_npix(set);
    if (gpu_detector_create(&b->det, set, b->capacity, b->compute, &b->chk) != 0) goto fail;
    if (gpu_levels_create(&b->lev, set, b->capacity, b->lean ? 1 : 2, &b->chk) != 0) goto fail;
    if (b->mft) {
        /* cuBLAS on the compute stream, full single precision: DEFAULT_MATH
         * uses no reduced-precision (TF32) tensor cores, which the
         * comparison with the CPU's float products would notice. */
        if (GPU_CUBLAS(&b->chk, cublasCreate(&b->blas))) {
            b->blas = NULL;
            goto fail;
        }
        if (GPU_CUBLAS(&b->chk, cublasSetStream(b->blas, b->compute)) ||
            GPU_CUBLAS(&b->chk, cublasSetMathMode(b->blas, CUBLAS_DEFAULT_MATH)))
            goto fail;
    } else {
        gpu_plan_cache_init(&b->plans, b->npix, b->compute);
        b->plans_ready = 1;
        if (gpu_plan_cache_reserve(&b->plans, &b->chk, work) != 0) goto fail;
        /* The single-image plan's one transform, made by check_lean: the
         * cache owns it from here, whatever the call returns. */
        b->lean_plan_held = 0;
        if (b->lean && gpu_plan_cache_adopt(&b->plans, &b->chk, b->lean_plan, 1, work) != 0)
            goto fail;
    }
    b->chk.err = NULL; /* no message buffer between calls */
    *out = b;
    return 0;
fail:
    b->chk.err = NULL;
    gpu_destroy(b);
    return -1;
}

/* Pinned memory, so the copies run at full speed and asynchronously; plain
 * memory when pinned memory runs out (copies then wait for the host). */
static float *gpu_alloc_images(psf_backend *b, size_t nfloats)
{
    host_buf *h = (host_buf *)calloc(1, sizeof *h);
    if (!h) return NULL;
    char err[256];
    b->chk.err = err;
    b->chk.errlen = sizeof err;
    void *p = NULL;
    if (GPU_CUDA(&b->chk, cudaSetDevice(b->device)) == 0 &&
        GPU_CUDA(&b->chk, cudaHostAlloc(&p, nfloats * sizeof(float), cudaHostAllocDefault)) == 0) {
        h->pinned = 1;
    } else {
        (void)cudaGetLastError(); /* absorbed: not the next call's error */
        p = malloc(nfloats * sizeof(float));
    }
    b->chk.err = NULL;
    if (!p) {
        free(h);
        return NULL;
    }
    h->ptr = (float *)p;
    h->next = b->buffers;
    b->buffers = h;
    return h->ptr;
}

static void gpu_free_images(psf_backend *b, float *images)
{
    if (cudaSetDevice(b->device) != cudaSuccess) (void)cudaGetLastError();
    for (host_buf **pp = &b->buffers; *pp; pp = &(*pp)->next) {
        host_buf *h = *pp;
        if (h->ptr != images) continue;
        *pp = h->next;
        if (h->pinned)
            cudaFreeHost(h->ptr);
        else
            free(h->ptr);
        free(h);
        return;
    }
}

static int gpu_device_count(char *err, size_t errlen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        char why[128];
        gpu_no_device_reason(e, why, sizeof why);
        snprintf(err, errlen, "no CUDA device: %s", why);
        return -1;
    }
    return n;
}

/* Filled field by field, so that the table stays right if backend/backend.h
 * reorders or adds members. */
static psf_backend_ops make_ops(void)
{
    psf_backend_ops o;
    memset(&o, 0, sizeof o);
    o.name = "gpu";
    o.create = gpu_create;
    o.run = gpu_run;
    o.destroy = gpu_destroy;
    o.alloc_images = gpu_alloc_images;
    o.free_images = gpu_free_images;
    o.preferred_batch = PSF_GPU_PREFERRED_BATCH; /* gpu_abi.h: the cost model uses it too */
    o.device_count = gpu_device_count;
    o.memory_need = gpu_memory_need;
    o.run_levels = gpu_run_levels;
    o.run_measured = gpu_run_measured;
    return o;
}

static const psf_backend_ops gpu_ops = make_ops();

/* The module's one exported symbol (the rest is built hidden). */
extern "C" GPU_MODULE_EXPORT const gpu_module_ops psf_gpu_module_entry = {
    GPU_MODULE_ABI,       sizeof(gpu_module_ops), &gpu_ops,      gpu_probe_basics,
    gpu_library_versions, &gpu_device_memory,     &gpu_vjp_table};
