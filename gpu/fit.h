/* SPDX-License-Identifier: BSD-3-Clause */
/* The retrieval's evaluations on the device (gpu_vjp_ops.fit_evaluate,
 * fit_fisher; backend/gpu_abi.h): lib/fit's projected loss and Fisher
 * products for images that never leave the GPU, so that an evaluation of
 * a phase retrieval is a few kernels and one small copy back instead of
 * its images' round trip through the host (lib/retrieve_gpu.c). The
 * arithmetic is lib/fit/objective.c's and lib/fit/fisher.c's, in double;
 * the sums are block reductions of a fixed shape, summed in a fixed
 * order: the same bits each call. */
#ifndef PSFSIM_GPU_FIT_H
#define PSFSIM_GPU_FIT_H

#include <stddef.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "gpu/cuda_check.h"

/* Partial sums per image: blocks of each reduction. */
#define GPU_FIT_BLOCKS 64

/* Device and pinned host scratch, grown on need. */
typedef struct {
    double *part; /* device [K][GPU_FIT_BLOCKS][5]: the normal equations' partial sums */
    double *res;  /* device [K][GPU_FIT_BLOCKS + 2]: f, b, the loss's partial sums */
    double *host; /* pinned [K][GPU_FIT_BLOCKS + 2]: res's copy, then [2K] the fixed values */
    double *fix;  /* device [2K]: the fixed flux and background, then the fluxes */
    int cap;      /* K */
    double *sw;   /* device [2][K n]: sqrt(w), sqrt(w) I */
    double *gy;   /* device [P P + 2 K P]: G, then y */
    size_t cap_sw, cap_gy;
} gpu_fit;

/* The loss of nimages images of npix values (gpu_vjp_ops.fit_evaluate's)
 * queued on s, not waited for: its results stay in f until
 * gpu_fit_loss_collect, after s is synchronised (the evaluation queues its
 * backward behind it). 0, or -1 with chk's message. */
int gpu_fit_loss_enqueue(gpu_fit *f, gpu_check *chk, cudaStream_t s, int nimages, size_t npix,
                         const double *data, const double *w, const double *images, int fit,
                         const double *fixed, double *cot);

/* The host's part of gpu_fit_loss_enqueue: fixed [nimages][2] written
 * into the pinned staging its copy reads (a replayed graph's copy too). */
void gpu_fit_stage(gpu_fit *f, int nimages, const double *fixed);

/* out [nimages][3] (f, b, the loss) from the enqueued loss's sums, summed
 * in block order. */
void gpu_fit_loss_collect(const gpu_fit *f, int nimages, double *out);

/* The Fisher products (gpu_vjp_ops.fit_fisher) on stream s with blas
 * (set to s), waited for. 0, or -1 with chk's message. */
int gpu_fit_fisher(gpu_fit *f, gpu_check *chk, cudaStream_t s, cublasHandle_t blas, int nimages,
                   size_t npix, int nparams, const double *w, const double *images, double *plus,
                   const double *flux, double h, double *G, double *y);

void gpu_fit_free(gpu_fit *f);

#endif
