/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA backend lives in a module, libpsfsim-gpu.so, that psfsim loads
 * (dlopen) only when it is about to use the GPU: a run on the CPU never
 * maps cuFFT or the CUDA runtime (5-6 ms of start-up saved on every
 * process; docs/design.md: auto "never starts CUDA when the CPU wins"), and a
 * psfsim built or installed without the module is simply CPU-only.
 * The module is looked for at $PSFSIM_GPU_MODULE, then beside the psfsim
 * executable, one directory up (build trees: tests/, bench/), and in
 * ../lib/psfsim/ (an installed tree): app/base/module_loader.h, shared with the
 * FITS, HDF5 and plot modules. Like theirs, its one entry is a versioned
 * table (backend/gpu_abi.h); a module of another psfsim version is
 * refused ("... is of another psfsim version"), never misread. These are
 * what psfsim calls; app/select/gpu_loader.c implements them. */
#ifndef PSFSIM_GPU_H
#define PSFSIM_GPU_H

#include <stddef.h>

#include "backend/backend.h"
#include "backend/gpu_abi.h"

/* The CUDA backend's table, loading the module on first use (once per
 * process, thread-safe); NULL when it cannot be used (gpu_module_error
 * says why). */
const psf_backend_ops *psf_backend_gpu(void);

/* The module's device memory (gpu_memory_ops: the library's device
 * outputs), loading it on first use; NULL when it cannot be used
 * (gpu_module_error says why). */
const gpu_memory_ops *gpu_module_memory(void);

/* The module's gradients (gpu_vjp_ops, lib/vjp_gpu.c), loading it on first
 * use; NULL when it cannot be used or has none. */
const gpu_vjp_ops *gpu_module_vjp(void);

/* 1 when a module file is present (stat only: nothing is loaded). */
int gpu_module_present(void);

/* Load the module if need be and measure the GPU (gpu_module_ops.probe_basics).
 * Returns 0, or -1 with err (no module, no device...). */
int gpu_module_probe(gpu_basics *out, char *err, size_t errlen);

/* The CUDA toolkit psfsim was built with ("13.0"), or "none": for the
 * probe cache's machine key, known without loading anything. */
const char *gpu_module_toolkit(void);

/* 1 when psfsim was built with the CUDA backend (its module may still be
 * missing from the installation). */
int gpu_module_built(void);

/* Why the module cannot be used ("psfsim was built without the CUDA
 * backend", "the CUDA backend's module is missing: no libpsfsim-gpu.so
 * in ...", a dlopen error, "cannot load the CUDA backend: PATH is of
 * another psfsim version"), loading it if need be; "" when it loaded. */
const char *gpu_module_error(void);

/* What the GPU backend is here, for psfsim --version: the module loaded
 * if need be (dlopen and its table's check; no CUDA call, so no device is
 * looked at). summary (slen bytes) for the version line: "GPU: CUDA,
 * cuFFT" (the module loaded), "the GPU module, libpsfsim-gpu.so, is
 * missing", "the GPU module cannot be used" (a file that is no module, or
 * of another version), "no GPU backend" (built without it, no module
 * found); detail (dlen bytes) a line of its own: "GPU module: PATH
 * (loaded, its table checked; no device checked)" or "GPU module: " and
 * why it is not used; "" when built without it. */
void gpu_module_describe(char *summary, size_t slen, char *detail, size_t dlen);

/* cuFFT's version from the module (gpu_module_ops.versions: the libcufft
 * it loaded, cufftGetVersion, which needs no device), e.g. "12.0.0 (built
 * with 12.0.0, CUDA runtime 13.0)", into buf (len bytes). load_it 0: only
 * when the module is loaded already (a CPU run does not load it for this).
 * Returns buf, or NULL when the module is not loaded or cannot be. */
const char *gpu_module_cufft(int load_it, char *buf, size_t len);

#endif
