/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU loader: gpu.h's functions through the GPU module (gpu/, its
 * table backend/gpu_abi.h), loaded on first use. */
#include "app/select/gpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "app/base/log.h"
#include "app/base/module_loader.h"

#ifndef PSFSIM_CUDA_TOOLKIT
#define PSFSIM_CUDA_TOOLKIT "none"
#endif

MODULE_TABLE_CHECK(gpu_module_ops);

static const module_spec g_spec = {GPU_MODULE_NAME, "PSFSIM_GPU_MODULE", GPU_MODULE_ENTRY,
                                   GPU_MODULE_ABI, sizeof(gpu_module_ops)};

/* A loaded library is process-wide by nature: its table is kept here, set
 * once under pthread_once; error holds why it could not be. */
typedef struct {
    const gpu_module_ops *ops;
    char error[512];
    char path[MODULE_PATH_MAX]; /* the file loaded or tried; "" when none was found */
} gpu_module;

static gpu_module g_module;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static atomic_int g_tried; /* 1 once load has run (so module() no longer loads) */

static void load(void)
{
    static module_opened mod; /* load runs once */
    module_open(&g_spec, &mod);
    snprintf(g_module.path, sizeof g_module.path, "%s", mod.path);
    if (mod.status == MODULE_NOT_FOUND && !gpu_module_built())
        snprintf(g_module.error, sizeof g_module.error,
                 "psfsim was built without the CUDA backend");
    else if (mod.status == MODULE_NOT_FOUND)
        snprintf(g_module.error, sizeof g_module.error,
                 "the CUDA backend's module is missing: %.450s", mod.why);
    else if (mod.status == MODULE_NO_ENTRY)
        snprintf(g_module.error, sizeof g_module.error, "%.400s: not a psfsim GPU module",
                 mod.path);
    else if (!mod.table) /* MODULE_LOAD_FAILED, MODULE_STALE */
        snprintf(g_module.error, sizeof g_module.error, "cannot load the CUDA backend: %.450s",
                 mod.why);
    g_module.ops = mod.table;
}

static void load_once(void)
{
    load();
    atomic_store(&g_tried, 1);
}

static const gpu_module *module(void)
{
    pthread_once(&g_once, load_once);
    return &g_module;
}

int gpu_module_present(void)
{
    char path[MODULE_PATH_MAX];
    return module_find(g_spec.file, g_spec.env, path, sizeof path) == 0;
}

const psf_backend_ops *psf_backend_gpu(void)
{
    const gpu_module *m = module();
    if (!m->ops) {
        log_debug("%s", m->error);
        return NULL;
    }
    return m->ops->backend;
}

const gpu_memory_ops *gpu_module_memory(void)
{
    const gpu_module *m = module();
    return m->ops ? m->ops->memory : NULL;
}

const gpu_vjp_ops *gpu_module_vjp(void)
{
    const gpu_module *m = module();
    return m->ops ? m->ops->vjp : NULL;
}

int gpu_module_probe(gpu_basics *out, char *err, size_t errlen)
{
    const gpu_module *m = module();
    if (!m->ops) {
        snprintf(err, errlen, "%s", m->error);
        return -1;
    }
    return m->ops->probe_basics(out, err, errlen);
}

const char *gpu_module_toolkit(void)
{
    return PSFSIM_CUDA_TOOLKIT;
}

int gpu_module_built(void)
{
    return strcmp(PSFSIM_CUDA_TOOLKIT, "none") != 0;
}

const char *gpu_module_error(void)
{
    const gpu_module *m = module();
    return m->ops ? "" : m->error;
}

void gpu_module_describe(char *summary, size_t slen, char *detail, size_t dlen)
{
    if (!gpu_module_built() && !gpu_module_present()) {
        snprintf(summary, slen, "no GPU backend");
        snprintf(detail, dlen, "%s", "");
        return;
    }
    const gpu_module *m = module();
    if (m->ops) {
        snprintf(summary, slen, "GPU: CUDA, cuFFT");
        snprintf(detail, dlen, "GPU module: %s (loaded, its table checked; no device checked)",
                 m->path);
    } else {
        snprintf(summary, slen, "%s",
                 m->path[0] ? "the GPU module cannot be used"
                            : "the GPU module, " GPU_MODULE_NAME ", is missing");
        snprintf(detail, dlen, "GPU module: %s", m->error);
    }
}

const char *gpu_module_cufft(int load_it, char *buf, size_t len)
{
    if (!load_it && !atomic_load(&g_tried)) return NULL;
    const gpu_module *m = module();
    if (!m->ops) return NULL;
    gpu_versions v;
    m->ops->versions(&v);
    int b = v.cufft_built;
    if (v.cufft < 0)
        snprintf(buf, len, "unknown: cufftGetVersion failed (built with %d.%d.%d)", b / 1000,
                 b % 1000 / 100, b % 100);
    else
        snprintf(buf, len, "%d.%d.%d (built with %d.%d.%d, CUDA runtime %d.%d)", v.cufft / 1000,
                 v.cufft % 1000 / 100, v.cufft % 100, b / 1000, b % 1000 / 100, b % 100,
                 v.cudart / 1000, v.cudart % 1000 / 10);
    return buf;
}
