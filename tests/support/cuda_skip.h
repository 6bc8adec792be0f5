/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU tests' first step: without a CUDA device they skip (exit 77,
 * ctest's SKIP_RETURN_CODE), saying why. Only for tests built with CUDA. */
#ifndef PSFSIM_TEST_CUDA_SKIP_H
#define PSFSIM_TEST_CUDA_SKIP_H

#include <cuda_runtime.h>
#include <stdio.h>

/* 0 when CUDA sees a device; else 77, with the reason printed. */
static inline int cuda_device_or_skip(void)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && count > 0) return 0;
    printf("skipped: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none");
    return 77;
}

#endif
