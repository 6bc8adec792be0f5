/* SPDX-License-Identifier: BSD-3-Clause */
/* What the detector stage's R2C store callback (gpu/detector_callback.cu)
 * reads through its caller-info pointer: the transfer function's table
 * (device, nspec = N (N/2+1) complex, psf_detector_otf's layout) and
 * nspec, one copy in device memory per stage. */
#ifndef PSFSIM_GPU_DETECTOR_CALLBACK_H
#define PSFSIM_GPU_DETECTOR_CALLBACK_H

#include <cufft.h>

/* The callback's symbol in the embedded LTO-IR (cufftXtSetJITCallback's name). */
#define GPU_DETECTOR_CB_SYMBOL "psf_detector_otf_store"

typedef struct {
    const cufftComplex *otf;
    unsigned long long nspec;
} gpu_detector_cb_info;

#endif
