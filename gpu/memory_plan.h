/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA backend's memory plan (gpu/memory_plan.cu): the sizes a set is
 * computed at, the device memory they need, and the capacity C (fields per
 * pass, images per sub-batch) that create chooses against the free memory. */
#ifndef PSFSIM_GPU_MEMORY_PLAN_H
#define PSFSIM_GPU_MEMORY_PLAN_H

#include <stddef.h>

extern "C" {
#include "backend/backend.h"
}

#include "gpu/backend_state.h"

/* The sizes a problem is computed at, from the problem alone (create
 * keeps them in the backend; memory_need has no backend). */
typedef struct {
    int mft;                /* two matrix products instead of the FFT */
    int lean;               /* the single-image plan (GPU_LEAN_*) */
    int npix;               /* N: the images' size (the FFT's, or the MFT's M) */
    int grid;               /* the pupil grid: N, or the MFT's G */
    int nterms;             /* Zernike modes */
    int ncoeff;             /* coefficients per field (psf_coeff_count) */
    size_t plane;           /* N * N */
    size_t pplane;          /* grid * grid */
    size_t maps;            /* bytes of the aperture and OPD maps on the device */
    const psf_problem *set; /* for the detector stage's bytes (gpu_detector_bytes) */
} gpu_shape;

/* The sizes of set (no CUDA call). */
gpu_shape shape_of(const psf_problem *set);

/* Choose b->capacity (and, on the single-image plan, make its transform's
 * plan); *work: cuFFT's work area in bytes. 0, or -1 with err. */
int choose_capacity(psf_backend *b, size_t *work, char *err, size_t errlen);

/* psf_backend_ops.memory_need (backend/backend.h). */
int gpu_memory_need(const psf_problem *set, const psf_backend_options *options,
                    psf_memory_need *out, char *err, size_t errlen);

#endif
