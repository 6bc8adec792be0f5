#include "app/select/gpu_module.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "app/base/log.h"
#include "app/base/module_loader.h"

#ifndef PSFSIM_CUDA_TOOLKIT
#define PSFSIM_CUDA_TOOLKIT "none"
#endif
#define MODULE_NAME "libpsfsim-gpu.so"

/* A loaded library is process-wide by nature: the handle and its entry
 * points are kept here, set once under pthread_once. */
typedef struct {
    void *handle;
    const psf_backend_ops *(*backend)(void);
    int (*probe)(gpu_basics *, char *, size_t);
    char error[512];
} gpu_module;

static gpu_module g_module;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void)
{
    static const char *const symbols[] = {"psf_backend_gpu", "gpu_probe_basics"};
    void *entries[2];
    char path[MODULE_PATH_MAX], why[sizeof g_module.error];
    module_status st;
    void *h = module_load(MODULE_NAME, "PSFSIM_GPU_MODULE", symbols, entries, 2, &st, path,
                          sizeof path, why, sizeof why);
    if (st == MODULE_NOT_FOUND) {
        if (!gpu_module_built())
            snprintf(g_module.error, sizeof g_module.error,
                     "psfsim was built without the CUDA backend");
        else
            snprintf(g_module.error, sizeof g_module.error,
                     "the CUDA backend's module is missing: %.450s", why);
        return;
    }
    if (st == MODULE_LOAD_FAILED) {
        snprintf(g_module.error, sizeof g_module.error, "cannot load the CUDA backend: %.450s",
                 why);
        return;
    }
    if (!h) {
        snprintf(g_module.error, sizeof g_module.error, "%.400s: not a psfsim GPU module", path);
        return;
    }
    g_module.handle = h;
    /* POSIX: function pointers from dlsym go through a data pointer. */
    memcpy(&g_module.backend, &entries[0], sizeof entries[0]);
    memcpy(&g_module.probe, &entries[1], sizeof entries[1]);
}

static const gpu_module *module(void)
{
    pthread_once(&g_once, load);
    return &g_module;
}

int gpu_module_present(void)
{
    char path[MODULE_PATH_MAX];
    return module_find(MODULE_NAME, "PSFSIM_GPU_MODULE", path, sizeof path) == 0;
}

const psf_backend_ops *psf_backend_gpu(void)
{
    const gpu_module *m = module();
    if (!m->handle) {
        log_debug("%s", m->error);
        return NULL;
    }
    return m->backend();
}

int gpu_module_probe(gpu_basics *out, char *err, size_t errlen)
{
    const gpu_module *m = module();
    if (!m->handle) {
        snprintf(err, errlen, "%s", m->error);
        return -1;
    }
    return m->probe(out, err, errlen);
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
    return m->handle ? "" : m->error;
}
