/* SPDX-License-Identifier: BSD-3-Clause */
/* A GPU module of another psfsim version: its table's abi is not this
 * psfsim's GPU_MODULE_ABI, so psfsim must refuse it with "... is of
 * another psfsim version" (app/select/gpu_loader.c) instead of calling
 * through it. Its backend would be named "stale", so a psfsim that took
 * the table anyway is seen to. Loaded by tests/app/select/test_gpu_module.c
 * and tests/e2e/e2e_modules.sh ($PSFSIM_STALE_GPU_MODULE). */
#include "backend/gpu_abi.h"

static const psf_backend_ops stale_backend = {.name = "stale", .preferred_batch = 1};

const gpu_module_ops psf_gpu_module_entry = {
    .abi = GPU_MODULE_ABI + 1,
    .size = sizeof(gpu_module_ops),
    .backend = &stale_backend,
};
