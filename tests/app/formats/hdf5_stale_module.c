/* SPDX-License-Identifier: BSD-3-Clause */
/* A stale HDF5 module for test_hdf5_io: its table has another ABI, so
 * hdf5_loader.c must refuse it. */
#include "app/base/module_loader.h"
#include "app/formats/hdf5_abi.h"

PSFSIM_MODULE_EXPORT const hdf5_module_ops psf_hdf5_module_entry = {
    .abi = HDF5_MODULE_ABI + 1,
    .size = sizeof(hdf5_module_ops),
};
