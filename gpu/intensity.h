/* SPDX-License-Identifier: BSD-3-Clause */
/* The fused last step of the GPU pipeline: fftshift + |.|^2 + scale +
 * accumulation over a job's fields, written as the centred intensity image
 * (the twin of cpu/intensity.h); without the shift for the MFT, whose
 * output is centred already (add_power in cpu/mft.c). */
#ifndef PSFSIM_GPU_PSF_KERNELS_H
#define PSFSIM_GPU_PSF_KERNELS_H

#include <cuda_runtime.h>
#include <cufft.h>

#include "gpu/cuda_check.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One output image of an FFT pass: its fields are slots first_field ..
 * first_field + nfields - 1 of the pass. A job whose fields do not all fit
 * one pass is finished over several, the later ones with accumulate = 1. */
typedef struct {
    int image; /* index of the image in the output buffer */
    int first_field;
    int nfields;    /* 0 gives an all-zero image (a job without components) */
    int accumulate; /* 1: add to the image's values; 0: overwrite them */
} gpu_pass_image;

/* For each of the nimages entries e (device array, nimages <= 65535):
 * out[e.image*N*N + r*N + c] (row-major, optical axis at (N/2, N/2)) =
 * (e.accumulate ? itself : 0) + sum_f scale[f] |field_f[u*N + v]|^2 over
 * e's fields f, with u = (r - N/2) mod N, v = (c - N/2) mod N: frequency
 * (u, v) of the forward FFT lands on pixel ((u + N/2) mod N, (v + N/2) mod N),
 * the layout of the CPU backend. field: device, fields x N*N, zero
 * frequency at index 0; scale: device [fields], unit: image per |F|^2.
 * Accumulates in float in field order, as the CPU does. Returns 0, or -1
 * with chk's message (launch error). */
int gpu_psf_intensity(const cufftComplex *field, const float *scale, const gpu_pass_image *images,
                      int nimages, int npix, float *out, cudaStream_t stream, gpu_check *chk);

/* The same for fields already centred (the MFT's E, axis at (N/2, N/2)):
 * out[e.image*N*N + r*N + c] = (e.accumulate ? itself : 0) + sum_f
 * scale[f] |field_f[r*N + c]|^2, no shift (cpu/mft.c's add_power). */
int gpu_psf_intensity_centred(const cufftComplex *field, const float *scale,
                              const gpu_pass_image *images, int nimages, int npix, float *out,
                              cudaStream_t stream, gpu_check *chk);

/* gpu_psf_intensity (centred 0) or gpu_psf_intensity_centred (1) with the
 * images written as packed pairs, the detector stage's packed input
 * (gpu_detector_packs, gpu/detector.h): image e.image's pixel pix at
 * out[2 ((e.image / 2) N*N + pix) + e.image % 2], i.e. the real part of
 * complex N x N image e.image / 2 for even e.image, the imaginary part for
 * odd; the same values. out holds 2 ceil(images / 2) N*N floats. */
int gpu_psf_intensity_pairs(const cufftComplex *field, const float *scale,
                            const gpu_pass_image *images, int nimages, int npix, int centred,
                            float *out, cudaStream_t stream, gpu_check *chk);

/* Load the intensity kernels now (see gpu_pupil_load_kernels). Returns 0,
 * or -1 with chk's message. */
int gpu_psf_load_kernels(gpu_check *chk);

#ifdef __cplusplus
}
#endif

#endif
