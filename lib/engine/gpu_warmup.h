/* SPDX-License-Identifier: BSD-3-Clause */
/* Hiding the GPU's start: creating the CUDA backend costs 0.3-0.5 s (the
 * driver, the context, cuFFT's kernels; gpu/NOTES.md), during which the
 * writer threads would sit idle. When auto picks the GPU, psfsim creates it
 * in a background thread while the CPU backend computes the first batches,
 * then switches to the GPU (docs/design.md, "Performance method": overlap). */
#ifndef PSFSIM_ENGINE_GPU_WARMUP_H
#define PSFSIM_ENGINE_GPU_WARMUP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "backend/backend.h"
#include "lib/engine/lanes.h"

#define WARMUP_SLOTS 2

typedef struct {
    const engine_lanes *lanes; /* the set's lanes: its backend made by the engine */
    const psf_backend_ops *ops;
    psf_problem problem;
    psf_backend_options options;
    size_t image_floats; /* per slot buffer */
    pthread_t thread;
    int started;
    atomic_int done; /* the thread has finished (ok or not) */
    int rc;          /* 0: backend and images ready */
    psf_backend *backend;
    float *images[WARMUP_SLOTS];
    char err[512];
} gpu_warmup;

/* Start creating ops's backend for problem and options
 * (engine_backend_create for lanes L) and its WARMUP_SLOTS image buffers
 * of image_floats floats in a thread. L must stay valid. Returns 0, or -1 when no thread could be
 * started (then create it inline). */
int gpu_warmup_start(gpu_warmup *w, const engine_lanes *L, const psf_backend_ops *ops,
                     const psf_problem *problem, const psf_backend_options *options,
                     size_t image_floats);

/* 1 once the thread is done (never blocks). */
int gpu_warmup_ready(gpu_warmup *w);

/* Wait for the thread. Returns w->rc; on failure the message is in w->err
 * and nothing is left allocated. */
int gpu_warmup_join(gpu_warmup *w);

/* Release a backend that was made but not taken (run over, or interrupted). */
void gpu_warmup_discard(gpu_warmup *w);

#endif
