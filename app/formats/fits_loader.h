/* SPDX-License-Identifier: BSD-3-Clause */
/* The FITS loader's table for psfsim's own writers of the module's bytes
 * (fits_loader.c, fits_cube.c): the rest of psfsim calls fits.h. */
#ifndef PSFSIM_FITS_LOADER_H
#define PSFSIM_FITS_LOADER_H

#include <stddef.h>

#include "app/formats/fits_abi.h"

/* The module's table, loading it if need be (fits_module_load); NULL with
 * "VERB PATH: REASON" in err (errlen bytes) when it cannot be loaded
 * (verb: "cannot write", ...). */
const fits_module_ops *fits_module_for(const char *verb, const char *path, char *err,
                                       size_t errlen);

#endif
