/* SPDX-License-Identifier: BSD-3-Clause */
/* The run's steps across MPI ranks (app/run/run_ranks.h), on the MPI world of
 * app/run/mpi_run.h. */
#include "app/run/run_ranks.h"

#include <stdio.h>
#include <stdlib.h>

#include "app/base/clock.h"
#include "app/base/log.h"
#include "app/run/run_report.h"
#include "app/run/set_files.h"

void run_ranks_agree(run_state *r, int *status, const char *err)
{
    int mine = *status, s0 = *status;
    char merr[RUN_ERRLEN] = "";
    if (r->mpi && (mpi_bcast(r->mpi, &s0, sizeof s0, merr, sizeof merr) != 0 ||
                   mpi_max_int(r->mpi, status, merr, sizeof merr) != 0)) {
        log_error("rank %d: %s", r->mpi->rank, merr);
        *status = 3;
    }
    if (mine == 0 || !err[0]) return;
    if (!r->mpi || r->mpi->rank == 0)
        log_error("%s", err);
    else if (s0 == 0)
        log_error("rank %d: %s", r->mpi->rank, err);
}

int run_ranks_split(run_state *r, char *err, size_t errlen)
{
    long long n = r->e.set.nimages;
    unsigned char *done = r->resume.done;
    if (done) {
        if (mpi_bcast(r->mpi, done, (size_t)n, err, errlen) != 0) return -1;
        r->resume.ndone = 0;
        for (long long k = 0; k < n; ++k)
            r->resume.ndone += done[k] != 0;
    }
    long long first, count, pos = 0;
    mpi_split(n - r->resume.ndone, r->mpi->size, r->mpi->rank, &first, &count);
    r->k_begin = r->k_end = 0;
    r->todo = count;
    for (long long k = 0; count > 0 && k < n; ++k) {
        if (done && done[k]) continue;
        if (pos == first) r->k_begin = k;
        if (pos == first + count - 1) {
            r->k_end = k + 1;
            break;
        }
        pos++;
    }
    if (count > 0)
        log_info("rank %d of %d (host %s, local rank %d): images %lld-%lld (%lld to compute); %s",
                 r->mpi->rank, r->mpi->size, r->mpi->host, r->mpi->local_rank, r->k_begin,
                 r->k_end - 1, count, r->e.decision.reason);
    else
        log_info("rank %d of %d: no image to compute", r->mpi->rank, r->mpi->size);
    return 0;
}

int run_ranks_open_journals(run_state *r, char *err, size_t errlen)
{
    int rc = run_is_root(r) ? set_files_create(r, err, errlen) : 0;
    int rc0 = rc;
    char merr[RUN_ERRLEN];
    if (mpi_bcast(r->mpi, &rc0, sizeof rc0, merr, sizeof merr) != 0) {
        snprintf(err, errlen, "%s", merr);
        return -1;
    }
    if (rc0 != 0 && !run_is_root(r)) {
        snprintf(err, errlen, "rank 0 could not create the output files");
        return -1;
    }
    if (!run_is_root(r)) rc = set_files_attach(r, err, errlen);
    return rc;
}

void run_ranks_finish(run_state *r, int *status, const char *err, long long *total)
{
    char e[RUN_ERRLEN] = "";
    *total = r->written;
    int jrc = 0;
    if (!run_is_root(r) || r->interrupted)
        jrc = set_files_close_journals(r, e, sizeof e);
    else
        jrc = set_files_flush(r, e, sizeof e);
    if (jrc != 0) {
        log_error("rank %d: %s", r->mpi->rank, e);
        if (*status == 0) *status = 3;
    }
    if (r->interrupted) return;
    double wall = clock_us() - r->t_start;
    int n = r->mpi->size;
    rank_report me, *all = run_is_root(r) ? calloc((size_t)n, sizeof *all) : NULL;
    run_report_fill(r, *status, jrc ? e : err, wall, &me);
    char merr[RUN_ERRLEN];
    if (mpi_gather(r->mpi, &me, sizeof me, all ? (void *)all : (void *)&me, merr, sizeof merr) !=
        0) {
        log_error("rank %d: %s", r->mpi->rank, merr);
        *status = 3;
    } else if (run_is_root(r) && all) {
        int failed = 0;
        for (int i = 1; i < n; ++i)
            *total += all[i].written;
        for (int i = 0; i < n; ++i) {
            if (all[i].status == 0) continue;
            failed = 1;
            if (all[i].todo > 0)
                log_error("rank %d (images %lld-%lld) failed: %s; rerun with --resume", i,
                          all[i].k_begin, all[i].k_end - 1, all[i].err);
            else
                log_error("rank %d failed: %s", i, all[i].err);
        }
        if (r->timing_open) run_summary(r, wall, all, n);
        jrc = set_files_close_journals(r, e, sizeof e);
        if (jrc == 0) jrc = set_files_sort(r, e, sizeof e);
        if (set_dir_gone(&r->out)) /* run_report says so */
            atomic_store(&r->dir_gone, 1);
        else if (jrc != 0)
            log_error("%s", e);
        if (failed || jrc != 0 || atomic_load(&r->dir_gone)) *status = 3;
    } else if (run_is_root(r)) {
        log_error("cannot allocate the ranks' reports");
        *status = 3;
    }
    free(all);
}
