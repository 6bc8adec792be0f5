/* SPDX-License-Identifier: BSD-3-Clause */
#include "lib/engine/gpu_warmup.h"

#include <stdio.h>
#include <string.h>

static void release(gpu_warmup *w)
{
    for (int s = 0; s < WARMUP_SLOTS; ++s) {
        if (w->images[s]) w->ops->free_images(w->backend, w->images[s]);
        w->images[s] = NULL;
    }
    engine_backend_destroy(w->lanes, w->ops, w->backend);
    w->backend = NULL;
}

static void *warm_main(void *arg)
{
    gpu_warmup *w = arg;
    w->rc = engine_backend_create(w->lanes, w->ops, &w->problem, &w->options, &w->backend, w->err,
                                  sizeof w->err);
    for (int s = 0; w->rc == 0 && s < WARMUP_SLOTS; ++s) {
        w->images[s] = w->ops->alloc_images(w->backend, w->image_floats);
        if (!w->images[s]) {
            snprintf(w->err, sizeof w->err, "%s: cannot allocate the image buffers", w->ops->name);
            w->rc = -1;
        }
    }
    if (w->rc != 0) release(w);
    atomic_store(&w->done, 1);
    return NULL;
}

int gpu_warmup_start(gpu_warmup *w, const engine_lanes *L, const psf_backend_ops *ops,
                     const psf_problem *problem, const psf_backend_options *options,
                     size_t image_floats)
{
    memset(w, 0, sizeof *w);
    w->lanes = L;
    w->ops = ops;
    w->problem = *problem;
    w->options = *options;
    w->image_floats = image_floats;
    atomic_init(&w->done, 0);
    if (pthread_create(&w->thread, NULL, warm_main, w) != 0) return -1;
    w->started = 1;
    return 0;
}

int gpu_warmup_ready(gpu_warmup *w)
{
    return w->started && atomic_load(&w->done);
}

int gpu_warmup_join(gpu_warmup *w)
{
    if (!w->started) return -1;
    pthread_join(w->thread, NULL);
    w->started = 0;
    return w->rc;
}

void gpu_warmup_discard(gpu_warmup *w)
{
    if (w->started) gpu_warmup_join(w);
    if (w->rc == 0) release(w);
}
