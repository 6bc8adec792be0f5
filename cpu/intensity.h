/* SPDX-License-Identifier: BSD-3-Clause */
/* The last step of an FFT image on the CPU: |.|^2, scale and the fftshift,
 * accumulated over a job's components into the centred intensity image
 * (the twin of gpu/intensity.h). The MFT's output is centred already; its
 * |.|^2 is fused into the second product (add_power in cpu/mft.c). */
#ifndef PSFSIM_CPU_INTENSITY_H
#define PSFSIM_CPU_INTENSITY_H

#include <fftw3.h>

#include "backend/backend.h"

/* image[N * N] (row-major, optical axis at (N/2, N/2)) += scale |out|^2
 * with out (N * N, row-major, the forward FFT's output, zero frequency at
 * index 0) shifted so that frequency (u, v) lands on pixel
 * ((u + N/2) mod N, (v + N/2) mod N). Accumulates in float, component
 * after component (the GPU's order too). */
void cpu_intensity_accumulate(const fftwf_complex *out, int npix, float scale, float *image);

/* The same, or with first != 0 stored into image rather than added (the
 * same values as adding to zeros, without a pass clearing image first). */
void cpu_intensity_write(const fftwf_complex *out, int npix, float scale, int first, float *image);

/* How a component's intensity goes into the image. */
typedef struct {
    float scale;          /* the image gets scale |out|^2 */
    int first;            /* 1: stored (the image's first component), 0: added */
    int stream;           /* 1: stored past the cache (non-temporal; the image is not
                             read again soon): cpu_intensity_fence after the image */
    psf_image_scan *scan; /* NULL, or the values written folded into it (its peak
                             and range: start from {-INFINITY, 1}) */
} cpu_intensity_op;

/* cpu_intensity_write as op says, for output rows u0 .. u0 + nrows - 1
 * alone, held in rows[nrows * N] (row u at (u - u0) N): for a transform
 * that hands its output over a block of rows at a time (cpu/band_image.h),
 * so that each block's |.|^2 is taken while the block is in L1. On x86-64
 * with N % 8 == 0 and a 16-byte aligned image, SSE (the values and scan
 * the same as the scalar loops', which serve elsewhere; stream then
 * applies). */
void cpu_intensity_rows(const fftwf_complex *rows, int npix, int u0, int nrows,
                        const cpu_intensity_op *op, float *image);

/* After an image's streamed rows (op.stream): the stores ordered before
 * any later one, so that another thread reading the image sees them. */
void cpu_intensity_fence(void);

#endif
