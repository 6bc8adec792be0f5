#include "gpu_module.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "log.h"

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

/* Candidate paths, in order; returns how many were written. */
static int candidates(char (*paths)[PATH_MAX + 64], int max)
{
    int n = 0;
    const char *env = getenv("PSFSIM_GPU_MODULE");
    if (env && *env && n < max) snprintf(paths[n++], sizeof paths[0], "%.*s", PATH_MAX, env);
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return n;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return n;
    *slash = '\0';
    static const char *const rel[] = {"", "/..", "/../lib/psfsim"};
    for (size_t i = 0; i < sizeof rel / sizeof *rel && n < max; ++i)
        snprintf(paths[n++], sizeof paths[0], "%.*s%s/" MODULE_NAME, PATH_MAX - 40, exe, rel[i]);
    return n;
}

static int find(char *out, size_t outlen)
{
    char paths[4][PATH_MAX + 64];
    int n = candidates(paths, 4);
    struct stat st;
    for (int i = 0; i < n; ++i)
        if (stat(paths[i], &st) == 0 && S_ISREG(st.st_mode)) {
            snprintf(out, outlen, "%.*s", (int)outlen - 1, paths[i]);
            return 0;
        }
    return -1;
}

static void load(void)
{
    char path[PATH_MAX + 64];
    if (find(path, sizeof path) != 0) {
        snprintf(g_module.error, sizeof g_module.error,
                 "psfsim was built without the CUDA backend (no " MODULE_NAME ")");
        return;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(g_module.error, sizeof g_module.error, "cannot load the CUDA backend: %s",
                 dlerror());
        return;
    }
    /* POSIX: function pointers from dlsym go through a data pointer. */
    void *b = dlsym(h, "psf_backend_gpu"), *p = dlsym(h, "gpu_probe_basics");
    if (!b || !p) {
        snprintf(g_module.error, sizeof g_module.error, "%.400s: not a psfsim GPU module", path);
        dlclose(h);
        return;
    }
    g_module.handle = h;
    memcpy(&g_module.backend, &b, sizeof b);
    memcpy(&g_module.probe, &p, sizeof p);
}

static const gpu_module *module(void)
{
    pthread_once(&g_once, load);
    return &g_module;
}

int gpu_module_present(void)
{
    char path[PATH_MAX + 64];
    return find(path, sizeof path) == 0;
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
