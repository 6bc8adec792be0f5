/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim's optional parts live in modules that it loads (dlopen) only when
 * a run needs them, so that a run that does not never maps their
 * libraries: libpsfsim-gpu.so (CUDA, cuFFT; app/select/gpu_module.c),
 * libpsfsim-fits.so (cfitsio, which pulls in libcurl and some 25 more
 * libraries; app/formats/fits_module.c) and libpsfsim-plot.so (cairo, the --probe
 * plot; app/select/plot_module.c). Each costs 1-5 ms of process start-up when
 * linked, more than a whole 64x64 PSF (issue 4).
 * A module NAME is looked for at $ENV alone when that is set and not empty
 * (a path the user gave is never silently passed over; read with
 * secure_getenv, so not in a setuid or setgid process), else beside
 * the running executable, one directory up (build trees: tests/, bench/
 * and fuzz/ hold executables that link psfsim_run) and in ../lib/psfsim/
 * (an installed tree: bin/psfsim, lib/psfsim/NAME). Loaded from the shared
 * library libpsfsim.so (lib/psfsim.h) instead of an executable, the
 * candidates are beside that library and in its psfsim/ subdirectory
 * (lib/libpsfsim.so.0, lib/psfsim/NAME), whichever program loaded it. */
#ifndef PSFSIM_MODULE_LOADER_H
#define PSFSIM_MODULE_LOADER_H

#include <limits.h>
#include <stddef.h>

/* Marks a module's entry point (modules are built with hidden visibility). */
#define PSFSIM_MODULE_EXPORT __attribute__((visibility("default")))

/* Longest module path, bytes with the terminating NUL. */
#define MODULE_PATH_MAX (PATH_MAX + 64)

typedef enum {
    MODULE_OK = 0,
    MODULE_NOT_FOUND = -1,   /* no file at any candidate path */
    MODULE_LOAD_FAILED = -2, /* dlopen failed (a library it needs is missing, ...) */
    MODULE_NO_ENTRY = -3,    /* loaded, but an entry point is missing */
} module_status;

/* Find module file name (e.g. "libpsfsim-fits.so") as the header says,
 * env naming the environment variable that may give its path (may be
 * NULL). Only stat(2): nothing is loaded. Returns 0 with the path in path
 * (pathlen bytes, MODULE_PATH_MAX is enough), or -1. */
int module_find(const char *name, const char *env, char *path, size_t pathlen);

/* Find name (module_find), dlopen it (RTLD_NOW | RTLD_LOCAL) and look up
 * nsym symbols (functions or data) into entries[0..nsym-1]. Returns the
 * handle (never closed: the module stays for the process) with *status =
 * MODULE_OK, or NULL with *status and a one-line reason in err: for
 * MODULE_NOT_FOUND where it was looked for ("no libpsfsim-fits.so at
 * $PSFSIM_FITS_MODULE, in /opt/psfsim/bin, /opt/psfsim or
 * /opt/psfsim/lib/psfsim"), for MODULE_LOAD_FAILED dlerror's text, for
 * MODULE_NO_ENTRY "PATH: no SYMBOL". path (pathlen bytes, may be NULL)
 * receives the file's path when one was found. */
void *module_load(const char *name, const char *env, const char *const *symbols, void **entries,
                  int nsym, module_status *status, char *path, size_t pathlen, char *err,
                  size_t errlen);

#endif
