/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage's separable path on the GPU (gpu/detector.h uses it
 * when it can): the stage without any cuFFT transform of the images. The
 * transfer function is tx(u) ty(v) times the IPC kernel's
 * (backend/detector.h, psf_detector_axis_tables), so the stage is
 *  - pass A, one kernel: each pair of grid rows as one complex row, its
 *    length-N DFT, times tx (real and even, so the two rows stay apart:
 *    Numerical Recipes, 3rd ed., 12.3), the inverse DFT, written (only
 *    the sampled columns i s + o when the detector image is written);
 *  - pass B, one kernel: each pair of those columns likewise with ty, then
 *    only the sampled rows kept, s^2 (psf_detector_sample), and the IPC
 *    kernel as the 3 x 3 circular stencil it is on the detector grid
 *    (its transfer function's shift theorem: detector pixel offsets), on a
 *    tile of columns with one column of halo each side.
 * Both DFTs are done in shared memory and registers by each thread block
 * (Stockham autosort, radix 16 with one first stage of radix 2, 4 or 8:
 * Govindaraju et al., "High performance discrete Fourier transforms on
 * graphics processors", SC 2008): four memory passes of the images in all
 * (read and write, twice) where the cuFFT path has a forward and an
 * inverse transform and a multiply; fused with the intensity
 * (gpu_detector_sep_rows_from_fields), pass A reads the field spectra
 * instead of the grid images, which are then never written. The same linear map as the CPU's
 * stage, to float rounding. For npix a power of two, 16 .. 1024, when the
 * stage convolves and writes the detector image (any s) or s = 1; not
 * for WebbPSF's block sums (psf_detector_bins: output.orientation "poppy"
 * at s > 1, which the fold takes), whose even blocks are centred between
 * the columns these passes keep. */
#ifndef PSFSIM_GPU_DETECTOR_SEP_H
#define PSFSIM_GPU_DETECTOR_SEP_H

#include <stddef.h>

#include <cuda_runtime.h>
#include <cufft.h>

#include "gpu/cuda_check.h"
#include "gpu/intensity.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "backend/backend.h"

/* The separable path's tables and shape for one problem. */
typedef struct {
    int npix;         /* N */
    int s_shift;      /* log2 s (s divides N: a power of two) */
    int off;          /* psf_detector_sample_offset when sampled, else 0 */
    int mcols, mrows; /* columns and rows of the images written: M x M sampled, N x N at s = 1 */
    int ipc;          /* 1: pass B applies the IPC stencil */
    float ipc_kernel[9];
    float2 *tw;           /* device [N]: e^{-2 pi i m / N}, computed in double */
    float *tx, *ty;       /* device [N] each: psf_detector_axis_tables, ty times s^2 when sampled */
    int pairs_a, pairs_b; /* row pairs a block of pass A, column pairs of pass B */
    size_t smem_a, smem_b; /* their shared memory, bytes */
    int steps;             /* 0: both passes; 1: pass A only (bench/gpu_micro.cu's breakdown) */
} gpu_detector_sep;

/* 1 when problem's stage can take the separable path (above). */
int gpu_detector_sep_supports(const psf_problem *problem);

/* The tables of problem (gpu_detector_sep_supports) on the device; a zeroed
 * g on failure. Returns 0, or -1 with chk's message. */
int gpu_detector_sep_create(gpu_detector_sep *g, const psf_problem *problem, gpu_check *chk);
void gpu_detector_sep_destroy(gpu_detector_sep *g);

/* The stage for n grid images (device, n N^2 floats, row-major) into out
 * (device, n mrows mcols floats), with scratch (device, >= n N mcols
 * floats: pass A's images), on stream. grid is not written; out may not be
 * scratch. Returns 0, or -1 with chk's message. */
int gpu_detector_sep_apply(const gpu_detector_sep *g, const float *grid, int n, float *scratch,
                           float *out, cudaStream_t stream, gpu_check *chk);

/* Pass A alone, fused with the intensity (gpu/detector.h's
 * gpu_detector_rows_from_fields): the rows of each record's image made
 * from a pass's fields as gpu_psf_intensity (centred 0) or
 * gpu_psf_intensity_centred (1) would make them (field, scale, images
 * and nimages as theirs; no record may accumulate), convolved and
 * written into rows (device, N x mcols floats at image e.image of each
 * record e) without the intensities going to device memory. Returns 0,
 * or -1 with chk's message. */
int gpu_detector_sep_rows_from_fields(const gpu_detector_sep *g, const cufftComplex *field,
                                      const float *scale, const gpu_pass_image *images, int nimages,
                                      int centred, float *rows, cudaStream_t stream,
                                      gpu_check *chk);

/* Pass B alone: n images of pass A's rows (device, n N mcols floats) into
 * out (device, n mrows mcols floats, not rows). Returns 0, or -1 with
 * chk's message. */
int gpu_detector_sep_columns(const gpu_detector_sep *g, const float *rows, int n, float *out,
                             cudaStream_t stream, gpu_check *chk);

#ifdef __cplusplus
}
#endif

#endif
