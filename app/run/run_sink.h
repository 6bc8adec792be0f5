/* SPDX-License-Identifier: BSD-3-Clause */
/* The command's sink of the engine's batch loop (run_sink.c; the loop is
 * lib/engine/batch.h's engine_run): batches computed into one slot while
 * the writer threads encode the previous slot (docs/design.md, "Data
 * flow"); run.c calls it once the lanes and the files are started. */
#ifndef PSFSIM_RUN_SINK_H
#define PSFSIM_RUN_SINK_H

#include <stddef.h>

#include "app/run/run_state.h"

/* Compute and write every image still to do, in batches, overlapping the
 * backend with the writer threads. Returns 0, or -1 with err (a run-time
 * failure); stops early, returning 0, when interrupted (r->interrupted). */
int run_images(run_state *r, char *err, size_t errlen);

#endif
