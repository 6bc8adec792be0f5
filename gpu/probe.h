/* SPDX-License-Identifier: BSD-3-Clause */
/* GPU figures for the latency probe (docs/design.md, "Backend choice"), measured
 * by gpu/probe.cu and handed to psfsim through the module's table
 * (backend/gpu_abi.h: gpu_basics, probe_basics). A plain C header:
 * nothing outside gpu/ sees CUDA. */
#ifndef PSFSIM_GPU_PROBE_H
#define PSFSIM_GPU_PROBE_H

#include <stddef.h>

#include "backend/gpu_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Measure device 0 (gpu_module_ops.probe_basics's contract). Returns 0, or
 * -1 with err (no device, no driver, CUDA error). */
int gpu_probe_basics(gpu_basics *out, char *err, size_t errlen);

/* cuFFT's version as loaded (cufftGetVersion) and as built (CUFFT_VERSION),
 * and the CUDA runtime's (gpu_module_ops.versions's contract). Initialises
 * no device: works without a driver. */
void gpu_library_versions(gpu_versions *out);

#ifdef __cplusplus
}
#endif

#endif
