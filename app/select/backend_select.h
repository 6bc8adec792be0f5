/* SPDX-License-Identifier: BSD-3-Clause */
/* Which backend computes an image set: the user's --backend / config
 * choice, or for "auto" the faster one (docs/design.md, "Backend choice"). */
#ifndef PSFSIM_BACKEND_SELECT_H
#define PSFSIM_BACKEND_SELECT_H

#include <stddef.h>

#include "backend/backend.h"
#include "app/config/config.h"
#include "app/select/gpu_list.h"
#include "app/set/image_set.h"

typedef struct {
    const psf_backend_ops *ops; /* the backend to use */
    char reason[256];           /* why, for -v and the timing log */
    double cpu_us, gpu_us;      /* auto: predicted wall times (NaN otherwise) */
    char probe[256];            /* auto: where the probe's figures came from */
    int ndevices;               /* GPU: the devices to share the set (--gpus resolved) */
    int devices[GPU_LIST_MAX];
} backend_decision;

/* Decide for set s. "gpu" without a GPU backend built in is an error (-1
 * with the reason in err: exit 2); "auto" always succeeds: without an
 * NVIDIA GPU (no /proc/driver/nvidia, no /dev/nvidia0) it picks the CPU
 * without touching CUDA; else it predicts both backends' wall time from the
 * probe's figures (cached, or measured now and cached) and picks the lower;
 * writers: the writer threads the run will use (0 = one per CPU).
 * With cached figures that favour the CPU, CUDA is never initialised.
 * gpus: the --gpus list, resolved into d->devices against the devices
 * visible: the probe's count for auto (no CUDA call), cudaGetDeviceCount
 * for "gpu" (a device that is not there, or no device at all: -1 with
 * err, exit 2, so that a library set asked for the GPU fails when it is
 * opened, not at its first compute). The prediction
 * counts every listed GPU at its probed speed (cost_model.h). */
int backend_select(backend_choice choice, const image_set *s, int writers, const gpu_list *gpus,
                   backend_decision *d, char *err, size_t errlen);

/* err = "backend gpu: no NVIDIA GPU on this machine (WHY)", or "the GPU
 * cannot be used (WHY)" where the machine shows an NVIDIA GPU
 * (/proc/driver/nvidia, /dev/nvidia0) that CUDA cannot use: the one
 * wording for a GPU asked for and not had, at the decision or at a
 * device's start. */
void backend_gpu_unusable(const char *why, char *err, size_t errlen);

/* Host memory one batch of images may take (the psfsim command keeps two
 * batches in flight; app/run/set_limits.c counts with the same figure). */
#define BACKEND_BATCH_BYTES (512.0 * 1024 * 1024)

/* Images per run() call for backend ops on a set of nimages npix x npix
 * images: its preferred_batch, fewer when BACKEND_BATCH_BYTES would be
 * passed or the set is smaller; at least 1. */
int backend_batch(const psf_backend_ops *ops, int npix, long long nimages);

#endif
