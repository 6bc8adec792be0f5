/* SPDX-License-Identifier: BSD-3-Clause */
/* The lanes of an open set (lib/engine/engine.h), written once for the
 * psfsim command (app/run/run_lanes.c, run_sink.c) and the library
 * (lib/lanes.c, compute.c): a lane is a computing device and its backend;
 * the engine makes and ends every backend (the only caller of a backend's
 * create and destroy), starts the lanes of a decision (one per GPU listed,
 * those that cannot start named and left out; a forced GPU that cannot
 * start is an error, "auto" goes on with the CPU), puts the CPU in a
 * failed GPU lane's place, and decides which lanes hand their images over
 * as levels (PSFSIM_LEVELS). The clients keep their buffers (the
 * command's slots, the library's job arrays and scratch), the command its
 * background GPU start (lib/engine/warmup.h). */
#ifndef PSFSIM_ENGINE_LANES_H
#define PSFSIM_ENGINE_LANES_H

#include <pthread.h>
#include <stddef.h>

#include "backend/backend.h"
#include "lib/engine/engine.h"

/* A computing device and its backend. */
typedef struct {
    const psf_backend_ops *ops; /* the backend now (after a GPU failure: the CPU) */
    psf_backend *backend;       /* NULL: not started */
    int device;                 /* psf_backend_options.device: a GPU lane's CUDA device */
} engine_lane;

/* What a set's lanes are made for. */
typedef struct {
    engine *e;             /* the open set (its decision's reason notes a fall-back) */
    int batch;             /* images per run() call */
    psf_levels_out levels; /* psf_problem.levels: bits 0 for none */
    int threads;           /* psf_backend_options.threads (0: the backend's default) */
    /* Held around every create and destroy when not NULL (the library's
     * lock: FFTW's planner and a GPU context's start are not for two
     * threads at once). */
    void (*lock)(void);
    void (*unlock)(void);
} engine_lanes;

/* The problem and options lane ln's backend is made for: L->batch images
 * per call of L->e's set, L->levels, on ln->device; messages to the
 * logger's sink. No cache directory (engine_lane_open adds it). */
void engine_lane_desc(const engine_lanes *L, const engine_lane *ln, psf_problem *problem,
                      psf_backend_options *options);

/* Make ops's backend for problem and options into *backend (under L's
 * lock): the one place a backend is created (the background start's
 * thread comes here too). 0, or -1 with err and *backend NULL. */
int engine_backend_create(const engine_lanes *L, const psf_backend_ops *ops,
                          const psf_problem *problem, const psf_backend_options *options,
                          psf_backend **backend, char *err, size_t errlen);

/* End backend b of ops (under L's lock); NULL: nothing. */
void engine_backend_destroy(const engine_lanes *L, const psf_backend_ops *ops, psf_backend *b);

/* Lane ln's backend: ops's, for engine_lane_desc with the probe's cache
 * directory. 0, or -1 with err (ln->backend NULL). */
int engine_lane_open(const engine_lanes *L, engine_lane *ln, const psf_backend_ops *ops, char *err,
                     size_t errlen);

/* End lane ln's backend (its buffers from alloc_images freed first by its
 * client); ln->ops kept, ln->backend NULL. */
void engine_lane_close(const engine_lanes *L, engine_lane *ln);

/* A GPU of several that did not start, said once: "GPU d: WHY; the other
 * GPUs take its images" (the command's side-by-side start and
 * engine_lanes_open_gpus). */
void engine_gpu_left_out(int device, const char *why);

/* Start GPU lanes lanes[0..n) (their device set), one after the other,
 * with the decision's backend; a lane that does not start is named ("GPU
 * d: WHY; the other GPUs take its images", when n > 1) and left out: the
 * lanes started are moved to the front. Returns their number; with 0, err
 * holds the first failure. */
int engine_lanes_open_gpus(const engine_lanes *L, engine_lane *const *lanes, int n, char *err,
                           size_t errlen);

/* No GPU lane started, why the first failure: with backend "gpu" -1 and
 * err "backend gpu: no NVIDIA GPU on this machine (WHY)" (or "the GPU
 * cannot be used" when there is one); with "auto" 0 after the warning
 * "WHY; computing the images on the CPU" and the decision's reason
 * "backend cpu: fallback after: WHY" (then the client starts a CPU lane). */
int engine_gpus_failed(engine *e, const char *why, char *err, size_t errlen);

/* A GPU lane's failure in the middle of a set. */
typedef struct {
    const char *name; /* "" or "GPU d: ", naming the lane in messages */
    const char *why;  /* the failure */
    int others;       /* GPU lanes still alive after this one (several lanes) */
    /* Free the client's buffers of the lane (after what reads them is
     * done) before its backend ends: 0, or -1 with err (then no CPU). */
    int (*release)(void *user, engine_lane *ln, char *err, size_t errlen);
    void *user;
    pthread_mutex_t *mu; /* held around the reason and the CPU's create, when not NULL */
} engine_fall_back;

/* Lane ln's GPU failed (f->why): warn "NAMEWHY; computing the remaining
 * images on the CPU" (or, while others are alive, "NAMEWHY; its batch is
 * computed on the CPU, the other GPUs take the rest"), release the lane's
 * buffers, end its backend, note "backend cpu: fallback after: NAMEWHY" in
 * the decision and put the CPU's backend in its place. 0, or -1 with err. */
int engine_lane_fall_back(const engine_lanes *L, engine_lane *ln, const engine_fall_back *f,
                          char *err, size_t errlen);

/* Which lanes hand their images over as levels (psf_backend_ops.run_levels,
 * issue 17) for a set that takes them (takes: its client's test,
 * image_set_levels_out for the command's files, image_set_levels_stretch
 * for the library's psfsim_compute_u16): PSFSIM_LEVELS "off" 0 (none),
 * "on" 2 (every lane, the CPU's too: the levels path tested without a
 * GPU), else 1 (the GPU lanes); 0 when the set does not take them. */
int engine_levels_lanes(int takes);

/* Whether lane ln hands its images over as levels under engine_levels_lanes's
 * answer lanes (and its backend can). */
int engine_lane_on_levels(const engine_lane *ln, int lanes);

#endif
