/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim's optional parts live in modules that it loads (dlopen) only when
 * a run needs them, so that a run that does not never maps their
 * libraries: libpsfsim-gpu.so (CUDA, cuFFT; app/select/gpu_loader.c),
 * libpsfsim-fits.so (cfitsio, which pulls in libcurl and some 25 more
 * libraries; app/formats/fits_loader.c), libpsfsim-hdf5.so (libhdf5;
 * app/formats/hdf5_loader.c) and libpsfsim-plot.so (cairo, the --probe
 * plot; app/select/plot_loader.c). Each costs 1-5 ms of process start-up when
 * linked, more than a whole 64x64 PSF (issue 4). docs/design.md, "Modules",
 * gives the pattern each follows.
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
    MODULE_STALE = -4,       /* its table is of another version or size (module_open) */
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

/* module_open: the one way a loader opens its module (app/formats/fits_loader.c,
 * app/formats/hdf5_loader.c, app/select/plot_loader.c, app/select/gpu_loader.c).
 * A module exports one symbol, a table (its ABI header: fits_abi.h, hdf5_abi.h,
 * plot_abi.h, backend/gpu_abi.h) that starts with the version it was built
 * for and its own size; a table of another version or size is refused, never
 * misread. MODULE_TABLE_CHECK(type) in a loader holds its table to that head. */
typedef struct {
    int abi;     /* the table's version (X_MODULE_ABI) */
    size_t size; /* sizeof the table */
} module_table_head;

#define MODULE_TABLE_CHECK(type)                                                                   \
    _Static_assert(offsetof(type, abi) == offsetof(module_table_head, abi) &&                      \
                       offsetof(type, size) == offsetof(module_table_head, size),                  \
                   #type " must start as module_table_head")

/* A module: its file, the variable that may give its path, its entry (the
 * table's symbol) and the version and size of the table psfsim was built with. */
typedef struct {
    const char *file;  /* "libpsfsim-fits.so" */
    const char *env;   /* "PSFSIM_FITS_MODULE" (may be NULL) */
    const char *entry; /* "psf_fits_module_entry" */
    int abi;
    size_t size;
} module_spec;

/* What module_open found. */
typedef struct {
    const void *table;               /* the entry's table, checked; NULL unless MODULE_OK */
    module_status status;            /* MODULE_OK, or why table is NULL */
    char path[MODULE_PATH_MAX];      /* the file loaded or tried; "" when none was found */
    char why[MODULE_PATH_MAX + 128]; /* unless MODULE_OK, one line: module_load's reason,
                                        or for MODULE_STALE "PATH is of another psfsim
                                        version" */
} module_opened;

/* Find, dlopen and check spec's module (module_load for its entry, then the
 * table's head against spec->abi and spec->size) into out. The module is
 * never closed once loaded (a stale one included: nothing of it is called). */
void module_open(const module_spec *spec, module_opened *out);

#endif
