/* SPDX-License-Identifier: BSD-3-Clause */
/* The matrix Fourier transform on the GPU (the twin of cpu/mft.h; Soummer,
 * Pueyo, Sivaramakrishnan and Vanderbei 2007, Optics Express 15, 15935,
 * eq. 1-3): with the pupil P sampled on the G x G grid at x_j = (j - G/2) dx
 * (row-major, natural order: gpu_pupil_set.natural) and the image at
 * theta_k = (k - M/2) p,
 *
 *   E = Wy P Wx^T,   W[k][j] = exp(-2 pi i (j - G/2) (k - M/2) a),  a = dx p / lambda,
 *
 * the same matrix for rows and columns (the grid is square). cuBLAS is
 * column-major: a row-major R x C array is the column-major C x R matrix
 * of its transpose, so with W stored column-major (M x G, element (k, j) at
 * j M + k) the two products are E^T = W P^T W^T, i.e.
 *
 *   T = W Pc      (M x G; Pc = P^T is the row-major pupil read column-major)
 *   Ec = T W^T    (M x M; Ec = E^T, which is E row-major: image row r at r M)
 *
 * each one batched GEMM over a pass's fields (cublasCgemmBatched: the
 * fields of a broadband pass use different W). The image is then
 * scale |E|^2 with the axis at (M/2, M/2), no shift (gpu_psf_intensity_centred). */
#ifndef PSFSIM_GPU_MFT_GPU_H
#define PSFSIM_GPU_MFT_GPU_H

#include <stddef.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

#include "gpu/cuda_check.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One transform matrix, built on the device for one a and kept while its
 * component key (pupil pitch, wavelength, output pixel) recurs. */
typedef struct {
    double a;     /* cycles per (pupil sample x image pixel): dx p / lambda */
    int npix;     /* M */
    int grid;     /* G */
    cuComplex *w; /* device [G * M]: W[k][j] at j * M + k (column-major M x G); NULL = empty */
    unsigned long long used;  /* last use (least recently used is replaced first) */
    unsigned long long job;   /* the job whose components last asked for it */
    unsigned long long epoch; /* the pass that last referenced it */
} gpu_mft_table;

/* Bytes one table of (M, G) takes. */
size_t gpu_mft_table_bytes(int npix, int grid);

/* Allocate t->w and enqueue the kernel that fills it on stream: the phase
 * (j - G/2)(k - M/2) a is formed from the exact integer product and reduced
 * to [0, 1) turn in double before the double sin and cos, then stored as
 * float: cpu_mft_table_build's values. Returns 0, or -1 with chk's message
 * (bad argument, allocation, launch); t is then empty. */
int gpu_mft_table_build(gpu_mft_table *t, double a, int npix, int grid, cudaStream_t stream,
                        gpu_check *chk);
/* gpu_mft_table_build with the image axis at centre2 / 2 (2 (M/2): psfsim's
 * grid; M - 1: between pixels, psf_problem.half_pixel): the phase
 * (j - G/2)(2k - centre2) a/2, cpu_mft_table_build_centred's values. */
int gpu_mft_table_build_centred(gpu_mft_table *t, double a, int npix, int centre2, int grid,
                                cudaStream_t stream, gpu_check *chk);
void gpu_mft_table_free(gpu_mft_table *t);

/* For f = 0 .. nfields - 1: t[f] = w[f] p[f] (M x G) and e[f] = t[f] w[f]^T
 * (M x M), column-major as above; w, p, t, e are device arrays of nfields
 * device pointers. Runs on the handle's stream. Returns 0, or -1 with
 * chk's message. */
int gpu_mft_apply(cublasHandle_t h, int npix, int grid, const cuComplex *const *w,
                  const cuComplex *const *p, cuComplex *const *t, cuComplex *const *e, int nfields,
                  gpu_check *chk);

/* Load the table kernel now (see gpu_pupil_load_kernels). Returns 0, or -1
 * with chk's message. */
int gpu_mft_load_kernels(gpu_check *chk);

#ifdef __cplusplus
}
#endif

#endif
