/* SPDX-License-Identifier: BSD-3-Clause */
/* The run's lanes (app/run/run_state.h, run_lane): how many, on which devices,
 * their batch buffers and their backends, from the start (the warm-up GPU,
 * several GPUs side by side, the CPU fallback) to the close. */
#ifndef PSFSIM_RUN_LANES_H
#define PSFSIM_RUN_LANES_H

#include <stddef.h>

#include "app/run/run_state.h"

/* Start the backend r->e.decision chose: the batch size, the lanes (one per
 * GPU the decision names, one per MPI rank, one for the CPU; the
 * PSFSIM_TEST_LANES CPU lanes of tests/e2e/e2e_lanes.sh), their slots and
 * backends; with auto and one GPU the GPU is created in the background
 * while the CPU starts (r->warming). *status: 0 started; 2 a forced GPU
 * that cannot start (usage error, nothing written); 3 another failure.
 * Returns 0, or -1 with err (*status 2 or 3). With auto a GPU that cannot
 * start leaves the set to the CPU (0, a warning, r->e.decision.reason says
 * so). */
int run_start_backend(run_state *r, char *err, size_t errlen, int *status);

/* Lane ln's backend for r->batch images per call on ln->eng.device
 * (engine_lane_open) and its slots' image buffers. 0, or -1 with err. */
int run_open_lane(run_state *r, run_lane *ln, const psf_backend_ops *ops, char *err, size_t errlen);

/* Free lane ln's slots' image buffers (its backend stays). */
void run_free_images(run_state *r, run_lane *ln);

/* Free lane ln's image buffers and backend (either may be missing). */
void run_close_lane(run_state *r, run_lane *ln);

/* Lane ln's slots' image buffers from its backend, after the engine put
 * the CPU in its place (engine_lane_fall_back). 0, or -1 with err. */
int run_alloc_images(run_state *r, run_lane *ln, char *err, size_t errlen);

/* Close every lane, then free every slot's job lists: the end of a run
 * (r->slots may be partly allocated or not at all). */
void run_free_lanes(run_state *r);

#endif
