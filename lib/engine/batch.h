/* SPDX-License-Identifier: BSD-3-Clause */
/* The batch loop (issue 25), for the psfsim command (app/run/run_sink.c)
 * and the library (lib/compute.c): engine_run takes batches of image
 * indices from one queue on every lane (lane 0 on the caller's thread,
 * the others on their own), runs each on its lane's backend and hands the
 * finished batch to the client's sink (the command's writers, the
 * caller's buffer); a lane's failure stops the others. The one place the
 * backends' run() and run_levels() are called, with the GPU-failure policy
 * written once: a GPU lane whose batch fails gives way to the CPU (its
 * client's fall_back, engine_lane_fall_back underneath) and the batch is
 * computed again; a CPU's failure is final. The clients keep their
 * buffers and what they make of a finished batch. */
#ifndef PSFSIM_ENGINE_BATCH_H
#define PSFSIM_ENGINE_BATCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "backend/backend.h"
#include "lib/engine/lanes.h"

/* A batch and where the lane's backend puts it. */
typedef struct {
    psf_job *jobs;          /* [n] */
    int n;                  /* images, >= 1 */
    float *images;          /* run(): n * N * N floats (N: the backend's image side) */
    unsigned short *levels; /* run_levels(): n * N * N grey levels (on_levels) */
    double *measures;       /* run_levels(), run_measured(): n * PSF_MEASURES
                               (backend/levels.h) */
    int on_levels;          /* 1: run_levels (engine_lane_on_levels), else run */
    int measured;           /* 1 (not on_levels): run_measured, the floats and their
                               measures (a backend that has it) */
} engine_batch;

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

/* The image indices [next, end) the lanes take their batches from. */
typedef struct {
    pthread_mutex_t *mu;       /* held while a batch is taken (the sink's job runs under it) */
    long long next, end;       /* the next index handed out; the end */
    const unsigned char *skip; /* [end] or NULL: index k is not handed out when skip[k]
                                  (--resume: done before) */
    atomic_int failed;         /* a lane failed: the others stop at their next batch */
} engine_queue;

/* A client's sink: where lane l's batches go and what is made of them.
 * l: the lane's index in engine_run's lanes; q: its slot, 0 .. slots(l)
 * - 1 in turn. Every hook but job, buffer and done may be NULL. */
typedef struct {
    int (*slots)(void *user, int l); /* lane l's slots (NULL: 1) */
    /* Before lane l takes a batch into slot q: the slot made free (the
     * command: the writers done with it; the GPU started in the
     * background taken), *cap (set to 0 by the engine) the images it
     * takes at most. 0, or the client's code with err (the lane fails). */
    int (*next)(void *user, int l, int q, int *cap, char *err, size_t errlen);
    /* Whether the lanes stop before their next batch (a signal, a cancel). */
    int (*stop)(void *user);
    /* Job i of lane l's batch in slot q is image k (under the queue's
     * lock). 0, or the client's code with err (the lane fails). */
    int (*job)(void *user, int l, int q, int i, long long k, char *err, size_t errlen);
    /* The batch taken (k0 its first image, n images), before its run. */
    void (*taken)(void *user, int l, int q, long long k0, int n);
    /* engine_batch_hooks.buffer (b's jobs too) and .fall_back for the
     * batch of lane l's slot q at k0. */
    int (*buffer)(void *user, int l, int q, long long k0, engine_batch *b, char *err,
                  size_t errlen);
    int (*fall_back)(void *user, int l, int q, const char *why, char *err, size_t errlen);
    /* The finished batch handed to the sink (check, measure, hand on):
     * run_us the run's time that succeeded, us the whole
     * engine_lane_run_or_fall_back's. 0 the lane goes on, 1 it stops
     * (no failure), else the client's code with err (the lane fails). */
    int (*done)(void *user, int l, int q, long long k0, int n, double run_us, double us, char *err,
                size_t errlen);
    /* Lane l's loop ended: rc 0, or its failure (a hook's code, or
     * ENGINE_RUN_FAILED) with err; the queue's failed is set before. */
    void (*end)(void *user, int l, int rc, const char *err);
    /* Whether lane l (two slots) takes each next batch on a thread of
     * its own while the batch before runs (NULL: never): for a CPU lane,
     * whose backend's threads would otherwise wait for the jobs. Then job
     * runs on that thread at the same time as taken, buffer, fall_back,
     * done and the run of the other slot (the client keeps their data
     * apart: per slot, or locked), and next of that slot runs before the
     * other's run. A batch taken ahead is dropped, its images neither
     * run nor handed to done, when the lane stops or fails first (a stop,
     * the queue's failed, next's or done's code, done's 1): not for a
     * client that must account for every image it took. */
    int (*ahead)(void *user, int l);
    /* No thread could start for lane l (l >= 1): the others take its images. */
    void (*no_thread)(void *user, int l);
    void *user;
} engine_sink;

/* The batch loop: lanes[0 .. n) (n >= 1, at most GPU_LIST_MAX) take
 * batches from q until it is empty, a lane fails, or sink->stop; each
 * batch's jobs made by sink->job, run (engine_lane_run_or_fall_back with
 * sink->buffer and sink->fall_back) and handed to sink->done (but a batch
 * taken ahead and dropped: sink->ahead). Lane 0 runs
 * on this thread; returns when every lane's loop has ended (their results:
 * sink->end). */
void engine_run(engine_lane *const *lanes, int n, engine_queue *q, const engine_sink *sink);

#endif
