/* SPDX-License-Identifier: BSD-3-Clause */
/* The set's data on the CUDA device (gpu/set_data.cu): the maps and
 * Zernike modes uploaded at create, and the pupils, one per pitch, built on
 * first use. */
#ifndef PSFSIM_GPU_SET_DATA_H
#define PSFSIM_GPU_SET_DATA_H

#include "gpu/backend_state.h"

/* The maps and modes on the device, and b->pset. 0, or -1 with b->chk's
 * message. */
int upload_set(psf_backend *b);

/* The index of the pupil for pitch dx_m (m) in b->pupils, built on first
 * use; -1 with b->chk's message. */
int pupil_for(psf_backend *b, double dx_m);

#endif
