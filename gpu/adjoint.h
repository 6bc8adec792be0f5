/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradients on the GPU (issue 28; backend/gpu_abi.h, gpu_vjp_ops):
 *
 *   gpu/adjoint.cu      the ops (create, add_pupil, run, destroy): the
 *                       instance, its buffers, the batches of rows, the
 *                       cuBLAS products (W = C B, dL/dc = dW B^T, the OPD
 *                       samples' sum);
 *   gpu/adjoint_fft.cu  the kernels of one batch (the field, the
 *                       intensity, the cotangent's product, dL/dW) and the
 *                       batched double-complex cuFFT plans;
 *   gpu/adjoint_detector.cu  the detector stage (D2Z, T, Z2D, sampling)
 *                       and its transpose;
 *   gpu/fit.cu          a retrieval's loss and Fisher products over the
 *                       images kept on the device (fit_evaluate, fit_fisher).
 *
 * The model and its adjoint are cpu/adjoint.h's (FFT sets), in double. */
#ifndef PSFSIM_GPU_ADJOINT_H
#define PSFSIM_GPU_ADJOINT_H

#include <stddef.h>

#include <cuComplex.h>
#include <cuda_runtime.h>
#include <cufft.h>

extern "C" {
#include "backend/gpu_abi.h"
}

#include "gpu/cuda_check.h"

extern const gpu_vjp_ops gpu_vjp_table;

/* Batch counts of Z2Z plans kept. */
#define GPU_VJP_PLANS 4

/* Batched in-place N x N Z2Z plans on one stream, one per batch count
 * (least recently used evicted). */
typedef struct {
    int n;
    cudaStream_t stream;
    int batch[GPU_VJP_PLANS]; /* 0: empty */
    cufftHandle plan[GPU_VJP_PLANS];
    unsigned long long used[GPU_VJP_PLANS], tick;
    unsigned long long made; /* plans created so far (a graph's key: its plan still there) */
} gpu_vjp_plans;

void gpu_vjp_plans_init(gpu_vjp_plans *pc, int n, cudaStream_t stream);
/* The plan for batch transforms (cufftPlanMany, made on first use). 0, or
 * -1 with chk's message. */
int gpu_vjp_plan(gpu_vjp_plans *pc, gpu_check *chk, int batch, cufftHandle *out);
void gpu_vjp_plans_free(gpu_vjp_plans *pc);

/* The detector stage on the device (gpu/adjoint_detector.cu). */
typedef struct {
    int active, n, m, s, off, sample, bins, convolve;
    cuDoubleComplex *otf;  /* [N][N/2 + 1] T / N^2 */
    cuDoubleComplex *spec; /* [cap][N][N/2 + 1] */
    double *out, *cot;     /* [cap][M][M] the stage's images, the cotangents */
    int cap, plan_batch;   /* plan_batch: the plans' batch count (0: none) */
    cufftHandle d2z, z2d;
} gpu_vjp_det;

/* d for N = n from desc (the transfer function copied). 0 or -1. */
int gpu_vjp_det_set(gpu_vjp_det *d, gpu_check *chk, int n, const gpu_vjp_detector *desc);
/* Buffers and plans for nimages images on stream s. 0 or -1. */
int gpu_vjp_det_reserve(gpu_vjp_det *d, gpu_check *chk, int nimages, cudaStream_t s);
/* d->out = the stage of grid [nimages][N][N] (grid overwritten). */
int gpu_vjp_det_forward(gpu_vjp_det *d, gpu_check *chk, cudaStream_t s, double *grid, int nimages);
/* grid [nimages][N][N] = the stage's transpose of d->cot. */
int gpu_vjp_det_adjoint(gpu_vjp_det *d, gpu_check *chk, cudaStream_t s, double *grid, int nimages);
void gpu_vjp_det_free(gpu_vjp_det *d);

/* One batch of rows on one pupil, on the device (gpu/adjoint_fft.cu). */
typedef struct {
    int n;                   /* N */
    int rows;                /* R */
    size_t nopen;            /* the pupil's samples */
    const unsigned *dest;    /* [nopen] FFT indices */
    const double *amp;       /* [nopen] */
    double *w;               /* [R][nopen] W (waves), then dL/dW */
    cuDoubleComplex *grid;   /* [R][N N] U, E, then B */
    const int *image;        /* [R] each row's image */
    const double *scale;     /* [R] */
    double *images;          /* [nimages][N N] += */
    const double *cotangent; /* [nimages][N N], or NULL */
    /* W's own product for a few rows (GPU_VJP_FEW_ROWS): k_field forms
     * W = C B itself and k_gcoef dL/dc = dW B^T, instead of two cuBLAS
     * DGEMMs whose launch and split-K passes cost more than the work */
    int k;               /* K, the basis rows */
    const double *basis; /* [K][nopen] */
    const double *coef;  /* [R][K]: with it, k_field writes w = C B */
    double *gcoef;       /* [R][K]: gpu_vjp_gcoef's */
} gpu_vjp_batch;

/* Rows of a batch up to which its products are the kernels' own. */
#define GPU_VJP_FEW_ROWS 16

/* grid = U (zeroed, then the samples' A exp(i 2 pi W)), with coef W = C B
 * written first. 0 or -1. */
int gpu_vjp_field(gpu_check *chk, cudaStream_t s, const gpu_vjp_batch *b);
/* images[image[r]][shift q] += scale[r] |grid[r][q]|^2 over r in order
 * (image[] non-decreasing). */
int gpu_vjp_intensity(gpu_check *chk, cudaStream_t s, const gpu_vjp_batch *b);
/* grid[r][q] *= scale[r] cotangent[image[r]][shift q]. */
int gpu_vjp_cotangent(gpu_check *chk, cudaStream_t s, const gpu_vjp_batch *b);
/* w[r][k] = 4 pi Im(grid[r][dest k] conj(U_r[k])), U from w. */
int gpu_vjp_dw(gpu_check *chk, cudaStream_t s, const gpu_vjp_batch *b);
/* gcoef[r][j] = sum over samples s of basis[j][s] w[r][s] (dL/dc = dW
 * B^T), each a block's fixed-order sum. */
int gpu_vjp_gcoef(gpu_check *chk, cudaStream_t s, const gpu_vjp_batch *b);
/* dst[i][p] = src[i][turn ? mm - 1 - p : p] for nimages images of mm
 * values, each array double (*_double 1) or float (0), converted as a
 * cast (device run's cotangents in, images out). 0 or -1. */
int gpu_vjp_convert(gpu_check *chk, cudaStream_t s, void *dst, int dst_double, const void *src,
                    int src_double, int nimages, size_t mm, int turn);

#endif
