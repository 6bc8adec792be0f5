/* SPDX-License-Identifier: BSD-3-Clause */
/* The backends of a set (lib/set_priv.h): one lane per device the
 * decision names, started at the first compute, as the command's lanes
 * (app/run/run_lanes.c) but without the background start and the writers:
 * the same batch size (backend_batch), problem (image_set_problem) and
 * cache directory, the same fall-back to the CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/log.h"
#include "app/select/probe_cache.h"
#include "app/set/measure.h"
#include "backend/levels.h"
#include "lib/set_priv.h"

/* Make lane ln's backend ops (under the lock: FFTW's planner and a GPU
 * context's start are not for two threads at once). */
static int open_lane(psfsim_set *s, lib_lane *ln, const psf_backend_ops *ops, char *err,
                     size_t errlen)
{
    psf_problem problem;
    image_set_problem(&s->e.set, s->batch, &problem);
    if (s->levels_lanes) image_set_levels_stretch(&s->e.set, &problem.levels);
    psf_backend_options options = {
        .threads = s->threads, .device = ln->device, .warn = log_warn_text}; /* to the sink */
    char cache[4096];
    lib_lock();
    options.cache_dir = probe_cache_dir_made(cache, sizeof cache);
    int rc = ops->create(&problem, &options, &ln->backend, err, errlen);
    lib_unlock();
    if (rc != 0) {
        ln->backend = NULL;
        return -1;
    }
    ln->ops = ops;
    return 0;
}

static void close_lane(lib_lane *ln)
{
    if (ln->scratch) ln->ops->free_images(ln->backend, ln->scratch);
    ln->scratch = NULL;
    if (ln->backend) {
        lib_lock();
        ln->ops->destroy(ln->backend);
        lib_unlock();
    }
    ln->backend = NULL;
}

static int alloc_jobs(psfsim_set *s, lib_lane *ln)
{
    size_t b = (size_t)s->batch, per = image_set_storage(&s->e.set);
    ln->jobs = calloc(b, sizeof *ln->jobs);
    ln->infos = calloc(b, sizeof *ln->infos);
    ln->storage = calloc(b * per + 1, sizeof *ln->storage);
    ln->measures = calloc(b * PSF_MEASURES, sizeof *ln->measures);
    return ln->jobs && ln->infos && ln->storage && ln->measures ? 0 : -1;
}

/* The GPU lanes, one per device; those that cannot start are named and
 * left out. Returns the number started. */
static int open_gpu_lanes(psfsim_set *s, char *err, size_t errlen)
{
    const backend_decision *d = &s->e.decision;
    int kept = 0;
    for (int i = 0; i < d->ndevices && i < LIB_MAX_LANES; ++i) {
        lib_lane *ln = &s->lanes[kept];
        ln->device = d->devices[i];
        char why[LIB_ERRLEN];
        if (open_lane(s, ln, d->ops, why, sizeof why) != 0) {
            if (d->ndevices > 1)
                log_warn("GPU %d: %s; the other GPUs take its images", ln->device, why);
            if (kept == 0) snprintf(err, errlen, "%s", why);
            continue;
        }
        kept++;
    }
    return kept;
}

/* No GPU lane started: "gpu" asked for is an error (the command's exit
 * 2), with "auto" the CPU computes the set. */
static int gpu_failed(psfsim_set *s, char *err, size_t errlen)
{
    char why[LIB_ERRLEN];
    snprintf(why, sizeof why, "%s", err);
    if (s->e.cfg.backend == BACKEND_GPU) {
        machine_key key;
        machine_key_read(&key);
        return lib_fail(
            err, errlen, PSFSIM_ERR_BACKEND, "backend gpu: %s (%.900s)",
            key.gpu_present ? "the GPU cannot be used" : "no NVIDIA GPU on this machine", why);
    }
    log_warn("%s; computing the images on the CPU", why);
    snprintf(s->e.decision.reason, sizeof s->e.decision.reason,
             "backend cpu: fallback after: %.200s", why);
    s->lanes[0].device = 0;
    if (open_lane(s, &s->lanes[0], &psf_backend_cpu, err, errlen) != 0) return PSFSIM_ERR_COMPUTE;
    s->nlanes = 1;
    return PSFSIM_OK;
}

/* Which lanes take psfsim_compute_u16's images as levels (set_priv.h):
 * PSFSIM_LEVELS as for the command (app/run/run_lanes.c). */
static int levels_lanes(const psfsim_set *s)
{
    psf_levels_out lo;
    const char *env = getenv("PSFSIM_LEVELS");
    if ((env && strcmp(env, "off") == 0) || !image_set_levels_stretch(&s->e.set, &lo)) return 0;
    return env && strcmp(env, "on") == 0 ? 2 : 1;
}

int lib_lanes_start(psfsim_set *s, char *err, size_t errlen)
{
    if (s->nlanes > 0) return PSFSIM_OK;
    const psf_backend_ops *ops = s->e.decision.ops;
    int gpu = ops != &psf_backend_cpu;
    s->batch = backend_batch(ops, s->e.set.samp.npix, s->e.set.nimages);
    s->levels_lanes = levels_lanes(s);
    int want = gpu ? s->e.decision.ndevices : 1;
    for (int l = 0; l < want && l < LIB_MAX_LANES; ++l)
        if (alloc_jobs(s, &s->lanes[l]) != 0) {
            lib_lanes_stop(s);
            return lib_fail(err, errlen, PSFSIM_ERR_MEMORY,
                            "cannot allocate the job list of a batch of %d images", s->batch);
        }
    if (!gpu) {
        if (open_lane(s, &s->lanes[0], ops, err, errlen) != 0) {
            lib_lanes_stop(s);
            return PSFSIM_ERR_COMPUTE;
        }
        s->nlanes = 1;
        return PSFSIM_OK;
    }
    err[0] = '\0';
    s->nlanes = open_gpu_lanes(s, err, errlen);
    int rc = s->nlanes > 0 ? PSFSIM_OK : gpu_failed(s, err, errlen);
    if (rc != PSFSIM_OK) lib_lanes_stop(s);
    return rc;
}

int lib_lane_fall_back(psfsim_set *s, lib_lane *ln, const char *why, char *err, size_t errlen)
{
    log_warn("%s; computing the remaining images on the CPU", why);
    close_lane(ln);
    snprintf(s->e.decision.reason, sizeof s->e.decision.reason,
             "backend cpu: fallback after: %.200s", why);
    return open_lane(s, ln, &psf_backend_cpu, err, errlen) == 0 ? PSFSIM_OK : PSFSIM_ERR_COMPUTE;
}

int lib_lane_scratch(psfsim_set *s, lib_lane *ln, char *err, size_t errlen)
{
    if (ln->scratch) return PSFSIM_OK;
    size_t plane = (size_t)s->e.set.samp.npix * s->e.set.samp.npix;
    ln->scratch = ln->ops->alloc_images(ln->backend, (size_t)s->batch * plane);
    if (ln->scratch) return PSFSIM_OK;
    return lib_fail(err, errlen, PSFSIM_ERR_MEMORY,
                    "%s: cannot allocate a batch of %d %dx%d images", ln->ops->name, s->batch,
                    s->e.set.samp.npix, s->e.set.samp.npix);
}

void lib_lanes_stop(psfsim_set *s)
{
    for (int l = 0; l < LIB_MAX_LANES; ++l) {
        lib_lane *ln = &s->lanes[l];
        close_lane(ln);
        free(ln->jobs);
        free(ln->infos);
        free(ln->storage);
        free(ln->measures);
        memset(ln, 0, sizeof *ln);
    }
    s->nlanes = 0;
}
