/* SPDX-License-Identifier: BSD-3-Clause */
/* The lanes of an open set (lib/engine/lanes.h). */
#include "lib/engine/lanes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/log.h"
#include "app/select/probe_cache.h"

#define ENGINE_ERRLEN 1024

void engine_lane_desc(const engine_lanes *L, const engine_lane *ln, psf_problem *problem,
                      psf_backend_options *options)
{
    image_set_problem(&L->e->set, L->batch, problem);
    problem->levels = L->levels;
    memset(options, 0, sizeof *options);
    options->threads = L->threads;
    options->device = ln->device;
    options->warn = log_warn_text; /* to the logger's sink */
}

int engine_backend_create(const engine_lanes *L, const psf_backend_ops *ops,
                          const psf_problem *problem, const psf_backend_options *options,
                          psf_backend **backend, char *err, size_t errlen)
{
    if (L->lock) L->lock();
    int rc = ops->create(problem, options, backend, err, errlen);
    if (L->unlock) L->unlock();
    if (rc == 0) return 0;
    *backend = NULL;
    return -1;
}

void engine_backend_destroy(const engine_lanes *L, const psf_backend_ops *ops, psf_backend *b)
{
    if (!b) return;
    if (L->lock) L->lock();
    ops->destroy(b);
    if (L->unlock) L->unlock();
}

int engine_lane_open(const engine_lanes *L, engine_lane *ln, const psf_backend_ops *ops, char *err,
                     size_t errlen)
{
    psf_problem problem;
    psf_backend_options options;
    engine_lane_desc(L, ln, &problem, &options);
    char cache[4096];
    if (L->lock) L->lock(); /* the cache directory is made once */
    options.cache_dir = probe_cache_dir_made(cache, sizeof cache);
    if (L->unlock) L->unlock();
    if (engine_backend_create(L, ops, &problem, &options, &ln->backend, err, errlen) != 0)
        return -1;
    ln->ops = ops;
    return 0;
}

void engine_lane_close(const engine_lanes *L, engine_lane *ln)
{
    if (ln->backend) engine_backend_destroy(L, ln->ops, ln->backend);
    ln->backend = NULL;
}

void engine_gpu_left_out(int device, const char *why)
{
    log_warn("GPU %d: %s; the other GPUs take its images", device, why);
}

int engine_lanes_open_gpus(const engine_lanes *L, engine_lane *const *lanes, int n, char *err,
                           size_t errlen)
{
    int kept = 0;
    for (int i = 0; i < n; ++i) {
        engine_lane lane = {.device = lanes[i]->device};
        char why[ENGINE_ERRLEN];
        if (engine_lane_open(L, &lane, L->e->decision.ops, why, sizeof why) != 0) {
            if (n > 1) engine_gpu_left_out(lane.device, why);
            if (kept == 0) snprintf(err, errlen, "%s", why);
            continue;
        }
        *lanes[kept++] = lane;
    }
    return kept;
}

int engine_gpus_failed(engine *e, const char *why, char *err, size_t errlen)
{
    if (e->cfg.backend == BACKEND_GPU) { /* say plainly when there is no GPU at all */
        backend_gpu_unusable(why, err, errlen);
        return -1;
    }
    log_warn("%s; computing the images on the CPU", why);
    snprintf(e->decision.reason, sizeof e->decision.reason, "backend cpu: fallback after: %.200s",
             why);
    return 0;
}

int engine_lane_fall_back(const engine_lanes *L, engine_lane *ln, const engine_fall_back *f,
                          char *err, size_t errlen)
{
    if (f->others > 0)
        log_warn("%s%s; its batch is computed on the CPU, the other GPUs take the rest", f->name,
                 f->why);
    else
        log_warn("%s%s; computing the remaining images on the CPU", f->name, f->why);
    if (f->release && f->release(f->user, ln, err, errlen) != 0) return -1;
    engine_lane_close(L, ln);
    if (f->mu) pthread_mutex_lock(f->mu);
    snprintf(L->e->decision.reason, sizeof L->e->decision.reason,
             "backend cpu: fallback after: %.16s%.200s", f->name, f->why);
    int rc = engine_lane_open(L, ln, &psf_backend_cpu, err, errlen);
    if (f->mu) pthread_mutex_unlock(f->mu);
    return rc;
}

int engine_levels_lanes(int takes)
{
    const char *env = getenv("PSFSIM_LEVELS");
    if ((env && strcmp(env, "off") == 0) || !takes) return 0;
    return env && strcmp(env, "on") == 0 ? 2 : 1;
}

int engine_lane_on_levels(const engine_lane *ln, int lanes)
{
    int cpu = ln->ops == &psf_backend_cpu;
    return (lanes == 2 || (lanes == 1 && !cpu)) && ln->ops->run_levels;
}
