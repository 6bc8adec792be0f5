/* SPDX-License-Identifier: BSD-3-Clause */
/* A run of the CUDA backend: every pupil first, then either one image
 * whose fields fit one pass, by a captured CUDA graph of that pass (FFT
 * sets), or sub-batches of whole images, each one or more passes
 * (gpu/pass.h) into one of two device image buffers, through the detector
 * stage or the levels, whose copy to the host runs on the copy stream while
 * the next sub-batch computes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <cufft.h>

extern "C" {
#include "backend/backend.h"
}

#include "gpu/backend_state.h"
#include "gpu/batch.h"
#include "gpu/cuda_check.h"
#include "gpu/detector.h"
#include "gpu/levels.h"
#include "gpu/pass.h"
#include "gpu/plan_cache.h"
#include "gpu/run.h"
#include "gpu/set_data.h"

void graph_release(psf_backend *b)
{
    if (b->graph_exec) cudaGraphExecDestroy(b->graph_exec);
    if (b->graph) cudaGraphDestroy(b->graph);
    b->graph_exec = NULL;
    b->graph = NULL;
    b->graph_nfields = 0;
}

/* Images jobs[0 .. njobs-1] into dimg[q] (njobs <= C), in passes of at
 * most C fields; a job whose fields straddle passes is accumulated. */
static int subbatch_compute(psf_backend *b, const psf_job *jobs, int njobs, int q)
{
    int cap = b->capacity;
    for (int j = 0; j < njobs; ++j) {
        const psf_job *job = &jobs[j];
        /* A job that fits a pass is not split over two: passes of like jobs
         * then repeat one layout, each slot keeps its pupil (the open-sample
         * kernel), and a job's intensities add up in the CPU's order. */
        if (job->ncomp <= cap && b->pass.nfields + job->ncomp > cap && pass_flush(b, q)) return -1;
        if (b->mft && tables_for_job(b, job, q)) return -1;
        if (job->ncomp == 0) { /* an image with no light: zeros */
            if (pass_add(b, job, 0, 0, j)) return -1;
        }
        for (int c = 0; c < job->ncomp;) {
            int take =
                job->ncomp - c < cap - b->pass.nfields ? job->ncomp - c : cap - b->pass.nfields;
            if (pass_add(b, job, c, take, j)) return -1;
            c += take;
            if ((b->pass.nfields == cap || b->pass.nimages == cap) && pass_flush(b, q)) return -1;
        }
        if (b->pass.nimages == cap && pass_flush(b, q)) return -1;
    }
    return pass_flush(b, q);
}

/* 1 when jobs[0 .. njobs-1] (njobs <= C) may fuse their intensities into
 * the detector stage (gpu_detector_fuses): FFT sets whose fields fit one
 * pass of C, so subbatch_compute makes one pass and no image accumulates
 * over two. */
static int subbatch_fuses(const psf_backend *b, const psf_job *jobs, int njobs)
{
    if (b->mft || !gpu_detector_fuses(&b->det)) return 0;
    /* Images of one component each: a sub-batch (at most C images) is one
     * pass whatever its size. An image of several components would fuse in
     * a small sub-batch and not in a full one, and the two paths round
     * differently, so it never fuses: an image's bits are its job's alone,
     * whatever the batch (issue 26; python/tests/test_repro.py). */
    for (int j = 0; j < njobs; ++j)
        if (jobs[j].ncomp > 1) return 0;
    return njobs <= b->capacity;
}

/* Sub-batch size for a run of njobs: at most C, and at least two sub-batches
 * when there are two images, so that copy and compute overlap; sizes evened
 * out so that a run needs at most two FFT plans. */
static int subbatch_size(const psf_backend *b, int njobs)
{
    if (njobs <= 1) return 1;
    int s = (njobs + 1) / 2 < b->capacity ? (njobs + 1) / 2 : b->capacity;
    int nsub = (njobs + s - 1) / s;
    return (njobs + nsub - 1) / nsub;
}

/* Sub-batch q's n images (src) to the caller at image j0 on the copy
 * stream: the floats into images, or (levels run) their levels, and their
 * measures into the pinned staging (b->lev.host_meas at image j0).
 * images and levels may be host or device memory (the library's device
 * outputs, psfsim_compute_device): cudaMemcpyDefault tells them apart. */
static int subbatch_copy(psf_backend *b, const float *src, int j0, int n, int q, float *images,
                         unsigned short *levels, int measured)
{
    if (!levels)
        return GPU_CUDA(&b->chk, cudaMemcpyAsync(images + (size_t)j0 * b->out_plane, src,
                                                 (size_t)n * b->out_plane * sizeof(float),
                                                 cudaMemcpyDefault, b->copy)) ||
                       (measured &&
                        GPU_CUDA(&b->chk,
                                 cudaMemcpyAsync(b->lev.host_meas + (size_t)j0 * PSF_MEASURES,
                                                 b->lev.meas[q],
                                                 (size_t)n * PSF_MEASURES * sizeof(double),
                                                 cudaMemcpyDeviceToHost, b->copy)))
                   ? -1
                   : 0;
    return GPU_CUDA(&b->chk, cudaMemcpyAsync(levels + (size_t)j0 * b->plane, b->lev.lev[q],
                                             (size_t)n * b->plane * sizeof(unsigned short),
                                             cudaMemcpyDefault, b->copy)) ||
                   GPU_CUDA(&b->chk, cudaMemcpyAsync(b->lev.host_meas + (size_t)j0 * PSF_MEASURES,
                                                     b->lev.meas[q],
                                                     (size_t)n * PSF_MEASURES * sizeof(double),
                                                     cudaMemcpyDeviceToHost, b->copy))
               ? -1
               : 0;
}

/* The batched path: sub-batches computed on the compute stream, copied on
 * the copy stream while the next computes; with levels (a levels run,
 * images NULL) each sub-batch's levels and measures are made on the
 * device (gpu/levels.h) and copied instead of its floats; with images and
 * measures (run_measured), its floats and their measures. */
static int run_batched(psf_backend *b, const psf_job *jobs, int njobs, float *images,
                       unsigned short *levels, double *measures)
{
    int per = subbatch_size(b, njobs), measured = !levels && measures;
    if (measures && (size_t)njobs > b->lev.host_meas_jobs) {
        snprintf(b->chk.err, b->chk.errlen, "gpu: %d images in one call, past max_batch %zu", njobs,
                 b->lev.host_meas_jobs);
        return -1;
    }
    for (int j0 = 0, k = 0; j0 < njobs; j0 += per, ++k) {
        int n = njobs - j0 < per ? njobs - j0 : per, q = b->lean ? 0 : k & 1;
        /* dimg[q] still holds the images of the sub-batch before last until
         * their copy is done (the single-image plan: the one before, q = 0). */
        if (b->copy_pending[q] &&
            GPU_CUDA(&b->chk, cudaStreamWaitEvent(b->compute, b->ev_copied[q], 0)))
            return -1;
        float *src;
        int fused = b->fuse_rows = subbatch_fuses(b, jobs + j0, n);
        b->pack_pairs = !fused && gpu_detector_packs(&b->det, n);
        int rc = subbatch_compute(b, jobs + j0, n, q);
        b->pack_pairs = b->fuse_rows = 0;
        if (rc ||
            (fused ? gpu_detector_finish(&b->det, b->dimg[q], n, q, &src, &b->chk)
                   : gpu_detector_apply(&b->det, b->dimg[q], n, b->spec, q, &src, &b->chk)) ||
            (levels && gpu_levels_apply(&b->lev, src, n, q, b->compute, &b->chk)) ||
            (measured && gpu_levels_measure(&b->lev, src, n, q, b->compute, &b->chk)))
            return -1;
        if (GPU_CUDA(&b->chk, cudaEventRecord(b->ev_done[q], b->compute)) ||
            GPU_CUDA(&b->chk, cudaStreamWaitEvent(b->copy, b->ev_done[q], 0)) ||
            subbatch_copy(b, src, j0, n, q, images, levels, measured) ||
            GPU_CUDA(&b->chk, cudaEventRecord(b->ev_copied[q], b->copy)))
            return -1;
        b->copy_pending[q] = 1;
    }
    if (GPU_CUDA(&b->chk, cudaStreamSynchronize(b->copy))) return -1;
    if (measures) /* the measures came to the pinned staging (gpu/levels.h) */
        memcpy(measures, b->lev.host_meas, (size_t)njobs * PSF_MEASURES * sizeof(double));
    return 0;
}

/* Capture one pass of nfields fields for one image from stage[0] into
 * dimg[0] as a CUDA graph (the H2D copy of the tables, the pupil kernel,
 * cuFFT, the intensity kernel): one launch instead of four or five. */
static int graph_make(psf_backend *b, int nfields, int dense, size_t max_open)
{
    graph_release(b);
    cufftHandle plan;
    /* Plan first: planning allocates, which a capturing stream forbids. */
    if (gpu_plan_cache_get(&b->plans, &b->chk, nfields, &plan)) return -1;
    gpu_pass_layout l = gpu_pass_layout_for(nfields, 1, b->ncoeff, 0);
    /* Relaxed: a thread of the caller's program in CUDA's default (global)
     * mode is refused "potentially unsafe" calls (cudaMalloc, a synchronous
     * copy: cudaErrorStreamCaptureUnsupported) while any capture begun in
     * another mode runs; PyTorch's thread was, while psfsim.Stream's thread
     * started a set (H200, bench/stream_bench.py). This capture makes no
     * such call itself (the plan is made first). */
    if (GPU_CUDA(&b->chk, cudaStreamBeginCapture(b->compute, cudaStreamCaptureModeRelaxed)))
        return -1;
    int rc = GPU_CUDA(&b->chk, cudaMemcpyAsync(b->dstage[0], b->stage[0], l.bytes,
                                               cudaMemcpyHostToDevice, b->compute));
    if (rc == 0) rc = pass_enqueue(b, 0, &l, nfields, 1, b->dimg[0], dense, max_open);
    cudaGraph_t g = NULL;
    if (rc != 0) { /* leave the stream usable */
        cudaStreamEndCapture(b->compute, &g);
        if (g) cudaGraphDestroy(g);
        return -1;
    }
    if (GPU_CUDA(&b->chk, cudaStreamEndCapture(b->compute, &g))) {
        cudaStreamCaptureStatus st;
        if (cudaStreamIsCapturing(b->compute, &st) == cudaSuccess &&
            st != cudaStreamCaptureStatusNone)
            cudaStreamEndCapture(b->compute, &g); /* the checked call was skipped */
        if (g) cudaGraphDestroy(g);
        return -1;
    }
    b->graph = g;
    if (GPU_CUDA(&b->chk, cudaGraphInstantiate(&b->graph_exec, g, 0))) {
        b->graph_exec = NULL;
        graph_release(b);
        return -1;
    }
    b->graph_nfields = nfields;
    b->graph_all_basis = b->all_basis;
    b->graph_dense = dense;
    b->graph_max_open = max_open;
    b->graph_generation = b->plans.generation;
    return 0;
}

/* One image whose fields fit one pass (FFT sets): replay the graph, copy,
 * wait. The graph is re-made when the pass's shape changes, e.g. from the
 * whole-grid field kernel (first image) to the open-sample one (the next). */
static int run_single(psf_backend *b, const psf_job *job, float *image)
{
    if (pass_add(b, job, 0, job->ncomp, 0)) return -1;
    int nfields = b->pass.nfields;
    size_t max_open;
    int dense = pass_dense(b, &max_open);
    gpu_pass_pack(&b->pass, b->stage[0]);
    if ((!b->graph_exec || b->graph_nfields != nfields || b->graph_all_basis != b->all_basis ||
         b->graph_generation != b->plans.generation || b->graph_dense != dense ||
         (!dense && b->graph_max_open != max_open)) &&
        graph_make(b, nfields, dense, max_open))
        return -1;
    float *src;
    int rc = GPU_CUDA(&b->chk, cudaGraphLaunch(b->graph_exec, b->compute)) ||
                     gpu_detector_apply(&b->det, b->dimg[0], 1, b->spec, 0, &src, &b->chk) ||
                     GPU_CUDA(&b->chk, cudaMemcpyAsync(image, src, b->out_plane * sizeof(float),
                                                       cudaMemcpyDefault, b->compute)) ||
                     GPU_CUDA(&b->chk, cudaStreamSynchronize(b->compute))
                 ? -1
                 : 0;
    if (rc == 0) pass_done(b);
    gpu_pass_clear(&b->pass);
    return rc;
}

/* Check a job's components as the CPU does (cpu_run_one_mft), so both
 * backends refuse the same jobs. */
static int check_job(psf_backend *b, const psf_job *job, int j)
{
    if (job->ncomp < 0 || job->ncomp > PSF_MAX_COMPONENTS) {
        snprintf(b->chk.err, b->chk.errlen, "gpu: job %d has %d components (0..%d)", j, job->ncomp,
                 PSF_MAX_COMPONENTS);
        return -1;
    }
    for (int c = 0; c < job->ncomp && b->mft; ++c) {
        const psf_component *comp = &job->comp[c];
        if (!(comp->out_pixel_rad > 0.0) || !(comp->wavelength_m > 0.0) || !(comp->dx_m > 0.0) ||
            !isfinite(comp->dx_m * comp->out_pixel_rad / comp->wavelength_m)) {
            snprintf(b->chk.err, b->chk.errlen,
                     "gpu: MFT component %d of job %d without a positive pixel, wavelength and "
                     "pitch",
                     c, j);
            return -1;
        }
    }
    return 0;
}

/* run and run_levels: into images (floats: one FFT image by the graph,
 * else batched), or (levels non-NULL) into levels and measures, always by
 * the batched path. */
static int run_any(psf_backend *b, const psf_job *jobs, int njobs, float *images,
                   unsigned short *levels, double *measures, char *err, size_t errlen)
{
    b->chk.err = err;
    b->chk.errlen = errlen;
    b->npass = 0;
    gpu_pass_clear(&b->pass);
    memset(b->staged_pending, 0, sizeof b->staged_pending);
    memset(b->copy_pending, 0, sizeof b->copy_pending);
    /* This thread may have another device current (backend/backend.h: any thread). */
    int rc = GPU_CUDA(&b->chk, cudaSetDevice(b->device));
    /* Every pupil first: building one waits for the device. */
    for (int j = 0; j < njobs && rc == 0; ++j) {
        rc = check_job(b, &jobs[j], j);
        for (int c = 0; c < jobs[j].ncomp && rc == 0; ++c)
            if (pupil_for(b, jobs[j].comp[c].dx_m) < 0) rc = -1;
    }
    /* One image by the graph, but not with a detector stage: a batch fuses
     * the stage with the intensity (subbatch_fuses), the graph does not, and
     * the two round differently; a single image then takes the batched path,
     * so that it is the same bits as in any batch (issue 26). */
    if (rc == 0 && !levels && !measures && !b->mft && !b->lean && !b->det.active && njobs == 1 &&
        jobs[0].ncomp >= 1 && jobs[0].ncomp <= b->capacity)
        rc = run_single(b, &jobs[0], images);
    else if (rc == 0 && njobs > 0)
        rc = run_batched(b, jobs, njobs, images, levels, measures);
    if (rc != 0) {
        /* No copy may land in images after we return: the caller reuses them. */
        cudaStreamSynchronize(b->compute);
        cudaStreamSynchronize(b->copy);
        slots_forget(b);          /* what the failed pass left in the field buffer is unknown */
        (void)cudaGetLastError(); /* not the next call's error */
    }
    b->chk.err = NULL;
    return rc;
}

int gpu_run(psf_backend *b, const psf_job *jobs, int njobs, float *images, char *err, size_t errlen)
{
    return run_any(b, jobs, njobs, images, NULL, NULL, err, errlen);
}

/* psf_backend_ops.run_levels (backend/backend.h): the batched path with
 * the levels kernel; a single image goes that way too (one sub-batch). */
int gpu_run_levels(psf_backend *b, const psf_job *jobs, int njobs, unsigned short *levels,
                   double *measures, char *err, size_t errlen)
{
    if (!b->lev.active || b->det.active) {
        snprintf(err, errlen, "gpu: no levels output for this set (%s)",
                 !b->lev.active ? "levels.bits 0" : "a detector stage");
        return -1;
    }
    return run_any(b, jobs, njobs, NULL, levels, measures, err, errlen);
}

/* psf_backend_ops.run_measured (backend/backend.h): the batched path with
 * the measures kernels; a single image goes that way too. */
int gpu_run_measured(psf_backend *b, const psf_job *jobs, int njobs, float *images,
                     double *measures, char *err, size_t errlen)
{
    if (!b->lev.measures || b->det.active) {
        snprintf(err, errlen, "gpu: no measures of the floats for a set with a detector stage");
        return -1;
    }
    b->chk.err = err;
    b->chk.errlen = errlen;
    int rc =
        GPU_CUDA(&b->chk, cudaSetDevice(b->device)) || gpu_levels_measure_ready(&b->lev, &b->chk);
    b->chk.err = NULL;
    return rc ? -1 : run_any(b, jobs, njobs, images, NULL, measures, err, errlen);
}
