/* SPDX-License-Identifier: BSD-3-Clause */
/* A run of the CUDA backend (gpu/run.cu): psf_backend_ops.run and
 * run_levels, by the single-image graph or by sub-batches. */
#ifndef PSFSIM_GPU_RUN_H
#define PSFSIM_GPU_RUN_H

#include <stddef.h>

#include "gpu/backend_state.h"

/* Free the single-image path's CUDA graph, if any. */
void graph_release(psf_backend *b);

/* psf_backend_ops.run (backend/backend.h). */
int gpu_run(psf_backend *b, const psf_job *jobs, int njobs, float *images, char *err,
            size_t errlen);

/* psf_backend_ops.run_levels (backend/backend.h). */
int gpu_run_levels(psf_backend *b, const psf_job *jobs, int njobs, unsigned short *levels,
                   double *measures, char *err, size_t errlen);
/* psf_backend_ops.run_measured: the floats and their measures. */
int gpu_run_measured(psf_backend *b, const psf_job *jobs, int njobs, float *images,
                     double *measures, char *err, size_t errlen);

#endif
