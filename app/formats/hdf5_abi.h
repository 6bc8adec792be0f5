/* SPDX-License-Identifier: BSD-3-Clause */
/* The HDF5 module's interface: libpsfsim-hdf5.so (app/formats/hdf5_io.c with
 * hdf5_layout.c and hdf5_chunks.c, linked with libhdf5 and zlib) exports one
 * table, psf_hdf5_module_entry, of the functions hdf5_io.h declares; psfsim
 * itself does not link libhdf5. app/formats/hdf5_module.c defines
 * hdf5_io.h's functions: each loads the module on first use
 * (module_loader.h; the path may be given by $PSFSIM_HDF5_MODULE) and calls
 * through the table. Each entry has the contract of the hdf5_io.h function
 * of the same name (h5set_ prefix dropped). */
#ifndef PSFSIM_HDF5_MODULE_H
#define PSFSIM_HDF5_MODULE_H

#include <stddef.h>

#include "app/formats/h5set.h"

#define HDF5_MODULE_NAME "libpsfsim-hdf5.so"
#define HDF5_MODULE_ENTRY "psf_hdf5_module_entry"
/* Raised whenever the table or a struct of hdf5_io.h changes, so a stale
 * module is refused. */
#define HDF5_MODULE_ABI 4
/* The temp file beside NAME.h5 (printf format of the base name). */
#define H5SET_TEMP_FORMAT ".%s.part"

typedef struct {
    int abi;     /* HDF5_MODULE_ABI */
    size_t size; /* sizeof(hdf5_module_ops) */
    h5set *(*open)(const h5set_params *p, h5set_mode mode, h5set_info *info, char *err,
                   size_t errlen);
    const unsigned char *(*written)(const h5set *s);
    int (*chunk_images)(const h5set *s);
    int (*write)(h5set *s, long long first, int count, const h5set_rows *rows, char *err,
                 size_t errlen);
    int (*close)(h5set *s, h5set_close_mode mode, char *err, size_t errlen);
    int (*thread_safe)(void);
    void (*library_version)(char *out, size_t outlen);
    int (*check_complete)(const h5set_params *p, char *why, size_t whylen);
} hdf5_module_ops;

/* Defined by the module only (app/formats/hdf5_io.c). */
extern const hdf5_module_ops psf_hdf5_module_entry;

/* Load the HDF5 module now if it is not loaded yet (once per process;
 * thread-safe). Returns 0, or -1 with a one-line reason in err: "cannot
 * load HDF5 support: no libpsfsim-hdf5.so in ...", or "... PATH is of
 * another psfsim version" for a stale module. A caller may call it early
 * to fail before any work is done. */
int hdf5_module_load(char *err, size_t errlen);

#endif
