/* SPDX-License-Identifier: BSD-3-Clause */
/* One batch on a lane (lib/engine/lanes.h): the one place the backends'
 * run() and run_levels() are called (issue 25), for the psfsim command
 * (app/run/run_loop.c) and the library (lib/compute.c), with the
 * GPU-failure policy written once: a GPU lane whose batch fails gives way
 * to the CPU (its client's fall_back, engine_lane_fall_back underneath)
 * and the batch is computed again; a CPU's failure is final. The clients
 * keep their buffers, their queues and what they make of a finished
 * batch. */
#ifndef PSFSIM_ENGINE_BATCH_H
#define PSFSIM_ENGINE_BATCH_H

#include <stddef.h>

#include "backend/backend.h"
#include "lib/engine/lanes.h"

/* A batch and where the lane's backend puts it. */
typedef struct {
    psf_job *jobs;          /* [n] */
    int n;                  /* images, >= 1 */
    float *images;          /* run(): n * N * N floats (N: the backend's image side) */
    unsigned short *levels; /* run_levels(): n * N * N grey levels (on_levels) */
    double *measures;       /* run_levels(): n * PSF_MEASURES (backend/levels.h) */
    int on_levels;          /* 1: run_levels (engine_lane_on_levels), else run */
} engine_batch;

/* Batch b on lane ln's backend as it is now: run_levels into b->levels
 * and b->measures when b->on_levels, else run into b->images. 0, or -1
 * with the backend's message in err. */
int engine_lane_run(engine_lane *ln, const engine_batch *b, char *err, size_t errlen);

/* The client's part of engine_lane_run_or_fall_back. */
typedef struct {
    /* Before each try: b's buffers and on_levels for ln's backend now (a
     * fall-back changes both: the CPU's buffers, its floats). 0, or the
     * client's non-zero code with err (returned as is). NULL: b as given. */
    int (*buffer)(void *user, engine_lane *ln, engine_batch *b, char *err, size_t errlen);
    /* Lane ln's GPU failed with why: put the CPU in its place (the
     * client's engine_lane_fall_back, with its release hook and its
     * buffers made again). 0, or the client's non-zero code with err. */
    int (*fall_back)(void *user, engine_lane *ln, const char *why, char *err, size_t errlen);
    void *user;
} engine_batch_hooks;

enum {
    ENGINE_RUN_FAILED = -1, /* the backend's run failed (on the CPU, or after a fall-back) */
};

/* Batch b on lane ln (engine_lane_run after h->buffer); when a GPU lane
 * fails, h->fall_back once, then h->buffer and the run again on the CPU.
 * 0 with *run_us (NULL: not given) the microseconds of the run that
 * succeeded (a failed try's time is not counted); ENGINE_RUN_FAILED with
 * the backend's message in err; or a hook's non-zero code with its err. */
int engine_lane_run_or_fall_back(engine_lane *ln, engine_batch *b, const engine_batch_hooks *h,
                                 double *run_us, char *err, size_t errlen);

#endif
