/* SPDX-License-Identifier: BSD-3-Clause */
/* The module's device memory for the library's device outputs: the
 * gpu_memory_ops of backend/gpu_abi.h. */
#ifndef PSFSIM_GPU_DEVICE_MEMORY_H
#define PSFSIM_GPU_DEVICE_MEMORY_H

extern "C" {
#include "backend/gpu_abi.h"
}

extern const gpu_memory_ops gpu_device_memory;

#endif
