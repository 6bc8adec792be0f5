/* SPDX-License-Identifier: BSD-3-Clause */
/* The run's report: the timing log's summary rows (their lines shown with
 * -v; README, "Outputs", NAME_timing.csv), one rank's figures for MPI's
 * summary on rank 0, and the line a run ends with. */
#ifndef PSFSIM_RUN_REPORT_H
#define PSFSIM_RUN_REPORT_H

#include "app/run/run_state.h"

/* One rank's figures, gathered on rank 0 at the end of an MPI run (raw
 * bytes: one build on every rank). For a plain run: the process's own. */
typedef struct {
    int status, nwriters, local_rank, device;
    long long k_begin, k_end, todo, written;
    double wall_us, compute_us, metrics_us, png_us, fits_us, wait_us;
    char host[64];
    char reason[192]; /* the rank's backend decision */
    char err[256];    /* its error when status != 0 */
} rank_report;

/* p: r's figures now (wall: its wall time so far, us), with status and,
 * when status != 0, err ("see its log" when err is empty). */
void run_report_fill(const run_state *r, int status, const char *err, double wall, rank_report *p);

/* Append the summary rows to r's timing log: the config and backend
 * times, the decision and probe, the images written, the stage totals
 * (us) with their share of the wall time and what bounds the run; with
 * several lanes each lane's share; with MPI the ranks, the split's unit
 * and each rank's block. rep[0..n): every rank's figures (one for a plain
 * run); the stage totals are their sums, the shares of the ranks' summed
 * wall time. wall: this process's wall time (us); the run's is its
 * slowest rank's. */
void run_summary(run_state *r, double wall, const rank_report *rep, int n);

/* Log how the run ended (status: the exit status so far): the images
 * written (written: by this run; with MPI on rank 0 all ranks'), an
 * interruption with the --resume hint, or after a failure the manifest
 * that lists what was written. With MPI other ranks than 0 report only an
 * interruption. */
void run_report(const run_state *r, int status, long long written);

#endif
