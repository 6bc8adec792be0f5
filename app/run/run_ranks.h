/* SPDX-License-Identifier: BSD-3-Clause */
/* The run's steps across MPI ranks (README, "Many hosts: MPI"): agreeing
 * to go on, splitting the set into the ranks' blocks, rank 0 creating the
 * journals the others append to, and the end (the ranks' figures gathered
 * on rank 0, which sums them up and sorts the journals).
 *
 * Why two MPI files: app/run/mpi_run.c is the MPI world itself (MPI's start
 * and end, the few collectives, the split rule; the only file that calls
 * MPI, a stub without it) and knows nothing of a run; this file is what a
 * psfsim run does with that world (run_state, the journals, the report).
 * Every function but run_ranks_agree is for an MPI run only (r->mpi set). */
#ifndef PSFSIM_RUN_RANKS_H
#define PSFSIM_RUN_RANKS_H

#include <stddef.h>

#include "app/run/run_state.h"

/* Every rank learns the worst status (and rank 0's) so that all go on or
 * none does; a rank logs its own error unless rank 0 failed too (then rank
 * 0's message, the same for a config error, says it once). err: this
 * rank's message. A failed collective makes the status 3. A plain run
 * (r->mpi NULL): logs err when *status != 0. */
void run_ranks_agree(run_state *r, int *status, const char *err);

/* This rank's block of the images to compute (mpi_split) as the index
 * range [r->k_begin, r->k_end) that the image loop walks, skipping images
 * done earlier; r->todo its count. Rank 0's view of which images are done
 * is broadcast, so the blocks of all ranks are disjoint and cover the set
 * whatever each rank read. 0, or -1 with err (an MPI failure). */
int run_ranks_split(run_state *r, char *err, size_t errlen);

/* Rank 0 creates the directory and the journals before any rank writes
 * (set_files_create), and broadcasts its result; then the others append to
 * them (set_files_attach). When rank 0 failed the others return -1 with
 * "rank 0 could not create the output files" (rank 0 says why). 0, or -1
 * with err. */
int run_ranks_open_journals(run_state *r, char *err, size_t errlen);

/* The end of an MPI run. Each rank flushes and closes its journals; an
 * interrupted rank (SIGTERM: mpirun stops the job because a rank died, or
 * was stopped itself) stops there, without another collective, the
 * journals true but unsorted (--resume sorts them). Otherwise every rank's
 * status and figures go to rank 0, which appends the run summary, sorts
 * the manifest and the timing log, names each failed rank's index range,
 * and makes the status 3 when any rank failed. *status: this rank's status, updated;
 * err: this rank's error message ("" if none); *total: rank 0, the images
 * written by all ranks (the others: their own). */
void run_ranks_finish(run_state *r, int *status, const char *err, long long *total);

#endif
