/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage's multiply as a cuFFT store callback of its R2C
 * (gpu/detector.h, gpu_detector.r2c_multiplies): compiled to LTO-IR
 * (gpu/CMakeLists.txt: nvcc -gencode=arch=compute_90,code=lto_90 -rdc=true
 * -fatbin) and embedded, then linked into the R2C's kernels by cuFFT at plan
 * time (cufftXtSetJITCallback; NVIDIA, cuFFT documentation, "LTO callback
 * routines"), so the spectrum is written once, already multiplied: no
 * separate pass over it. The product is otf_multiply_kernel's, in float. */
#include <cufftXt.h>

#include "gpu/detector_callback.h"

/* Element `offset` of the batch's half spectra (image offset / nspec) as
 * the R2C writes it, times the table's element offset % nspec. */
extern "C" __device__ void psf_detector_otf_store(void *out, unsigned long long offset,
                                                  cufftComplex a, void *info, void *shared)
{
    (void)shared;
    const gpu_detector_cb_info *c = (const gpu_detector_cb_info *)info;
    cufftComplex t = c->otf[offset % c->nspec];
    ((cufftComplex *)out)[offset] =
        make_cuFloatComplex(a.x * t.x - a.y * t.y, a.x * t.y + a.y * t.x);
}
