/* SPDX-License-Identifier: BSD-3-Clause */
/* The HDF5 module's ABI: the one table libpsfsim-hdf5.so (app/formats/hdf5/,
 * linked with libhdf5 and zlib) exports as psf_hdf5_module_entry, and the
 * loader (app/formats/hdf5_loader.c) reads: the functions h5set.h declares;
 * psfsim itself does not link libhdf5. Each entry has the contract of the
 * h5set.h function of the same name (h5set_ prefix dropped). Nothing but the
 * module and its loader includes this. */
#ifndef PSFSIM_HDF5_ABI_H
#define PSFSIM_HDF5_ABI_H

#include <stddef.h>

#include "app/formats/h5set.h"

#define HDF5_MODULE_NAME "libpsfsim-hdf5.so"
#define HDF5_MODULE_ENTRY "psf_hdf5_module_entry"
/* Raised whenever the table or a struct of h5set.h changes, so a stale
 * module is refused. */
#define HDF5_MODULE_ABI 4

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

/* Defined by the module only (app/formats/hdf5/hdf5_module.c). */
extern const hdf5_module_ops psf_hdf5_module_entry;

#endif
