/* SPDX-License-Identifier: BSD-3-Clause */
/* The image loop (run_loop.c): batches computed by the backend into one
 * slot while the writer threads encode the previous slot (docs/design.md,
 * "Data flow"); run.c calls it once the lanes and the files are started. */
#ifndef PSFSIM_RUN_LOOP_H
#define PSFSIM_RUN_LOOP_H

#include <stddef.h>

#include "app/run/run_state.h"

/* Compute and write every image still to do, in batches, overlapping the
 * backend with the writer threads. Returns 0, or -1 with err (a run-time
 * failure); stops early, returning 0, when interrupted (r->interrupted). */
int run_images(run_state *r, char *err, size_t errlen);

#endif
