/* SPDX-License-Identifier: BSD-3-Clause */
/* The psfsim command's job: config -> image set -> backend -> files. */
#ifndef PSFSIM_RUN_H
#define PSFSIM_RUN_H

#include "app/run/cli.h"
#include "app/run/mpi_run.h"

/* Run the job o describes. Returns the exit status: 0 every image written,
 * 2 usage or config error, or the set in use by another run (nothing
 * written), 3 run-time failure (the manifest lists the images written),
 * 130 interrupted. Messages go through
 * the logger. w: the MPI world (app/run/mpi_run.h); NULL, or one of a single
 * process, for a plain run. With more than one rank every rank calls this
 * and computes its block of the set; rank 0 creates and finally sorts the
 * manifest and the timing log, and returns 3 when any rank failed. */
int psfsim_run(const cli_options *o, const mpi_world *w);

#endif
