/* SPDX-License-Identifier: BSD-3-Clause */
/* A pool of writer threads that encode and write images (PNG, FITS) while
 * the backend computes the next batch (docs/design.md, "Data flow": writers on
 * threads). Jobs are grouped in slots (one per batch buffer): the caller
 * reuses a slot's images only after writer_pool_wait_slot, so memory stays
 * bounded by the slots whatever the set size. */
#ifndef PSFSIM_WRITER_POOL_H
#define PSFSIM_WRITER_POOL_H

#include <stddef.h>

#include "app/set/image_set.h"
#include "app/output/outputs.h"
#include "app/output/timing.h"

#define WRITER_SLOTS 2 /* batch buffers per computing device (run_lane) */
#define WRITER_ERRLEN 512

/* One image to write, and where its outcome goes (owned by the caller,
 * valid until the slot is waited for). */
typedef struct {
    long long k;
    const float *img; /* N*N, row-major */
    const image_info *info;
    image_result *res;    /* res->png/fits filled on success */
    image_timing *timing; /* png_us, fits_us filled */
    int status;           /* 0 written, -1 failed (message in err) */
    char err[WRITER_ERRLEN];
    /* N*N or NULL: once written, img's PNG stretch levels (output.png's
     * bits and stretch) for output.hdf5's uint16 images, made here on the
     * writer threads. */
    unsigned short *levels;
    /* 1: levels came from the backend (run_levels) and img is NULL: the
     * PNG is written from them, nothing is stretched here. */
    int levels_made;
    /* detector.write = "both": the oversampled image (outputs.h), else .img NULL. */
    image_over over;
} write_job;

typedef struct writer_pool writer_pool;

/* Start nthreads (>= 1) writers for set s into the directory dirfd (dir:
 * its name for messages), with nslots (>= 1) slots (WRITER_SLOTS per
 * computing device). NULL on failure. */
writer_pool *writer_pool_create(int nthreads, int nslots, const image_set *s, int dirfd,
                                const char *dir);

/* Queue a job in slot (0 .. nslots-1). The job must stay valid until
 * the slot is waited for. Never blocks (slots bound the queue). */
void writer_pool_submit(writer_pool *p, int slot, write_job *job);

/* Queue jobs[0 .. n) in slot, as writer_pool_submit each. When none has
 * anything for a writer (no PNG, no FITS file per image, no levels: an
 * HDF5-only set) they are done here and now, status 0 (or "stopped" after
 * writer_pool_stop), and 1 is returned (the slot is done: no wait), else 0: a hand-off to a thread
 * per image cost more host time than the image's compute on a GPU (bench/RESULTS.md, run 9). */
int writer_pool_submit_batch(writer_pool *p, int slot, write_job *jobs, int n);

/* Wait until every job of slot is done; returns the summed busy time
 * (microseconds) the writers spent on them. */
double writer_pool_wait_slot(writer_pool *p, int slot);

/* After the current jobs, take no more: later submissions are marked failed
 * with "stopped". Used on SIGINT and after a write error. */
void writer_pool_stop(writer_pool *p);

/* Finish every queued job, join the threads, free. */
void writer_pool_destroy(writer_pool *p);

#endif
