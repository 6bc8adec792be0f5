/* SPDX-License-Identifier: BSD-3-Clause */
/* The backends of a set (lib/set_priv.h): the engine's lanes
 * (lib/engine/lanes.h), one per device the decision names, started at the
 * first compute, with the library's job arrays and scratch; its lock held
 * around every backend's create and destroy (FFTW's planner is not
 * thread-safe). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/log.h"
#include "app/set/measure.h"
#include "backend/cpu_count.h"
#include "backend/levels.h"
#include "lib/set_priv.h"

static void close_lane(psfsim_set *s, lib_lane *ln)
{
    if (ln->scratch) ln->eng.ops->free_images(ln->eng.backend, ln->scratch);
    ln->scratch = NULL;
    engine_lane_close(&s->el, &ln->eng);
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

/* Lanes per GPU (each a thread with its own backend and streams on the
 * device): PSFSIM_GPU_LANES (1..4, bench/), else GPU_LANES_DEFAULT for a
 * set of more than one batch of images of at most GPU_LANES_MAX_NPIX
 * (memory: each lane holds a batch's device buffers), else 1. With two,
 * one lane's host work (its jobs, the passes' tables) runs while the
 * other's kernels do: 10,000 PSFs of 256^2 into a torch tensor, 355,000
 * -> 639,000/s on the H200 (three lanes: 579,000/s; bench/RESULTS.md,
 * run 44). */
#define GPU_LANES_DEFAULT 2
#define GPU_LANES_MAX_NPIX 1024
static int lanes_per_gpu(const psfsim_set *s)
{
    const char *env = getenv("PSFSIM_GPU_LANES");
    int n = env && *env ? atoi(env)
            : s->e.set.nimages > s->batch && s->e.set.samp.npix <= GPU_LANES_MAX_NPIX
                ? GPU_LANES_DEFAULT
                : 1;
    return n < 1 ? 1 : n > 4 ? 4 : n;
}

/* The GPU lanes: one per device (engine_lanes_open_gpus, which says a
 * device that does not start), then per more lanes per GPU one more each,
 * quietly left out when it does not start (its memory). Returns the
 * number started. */
static int open_gpu_lanes(psfsim_set *s, int per_gpu, char *err, size_t errlen)
{
    const backend_decision *d = &s->e.decision;
    engine_lane *lanes[LIB_MAX_LANES];
    int n = d->ndevices < LIB_MAX_LANES ? d->ndevices : LIB_MAX_LANES;
    for (int i = 0; i < n; ++i) {
        s->lanes[i].eng.device = d->devices[i];
        lanes[i] = &s->lanes[i].eng;
    }
    int kept = engine_lanes_open_gpus(&s->el, lanes, n, err, errlen), primaries = kept;
    for (int i = primaries; i < primaries * per_gpu && kept < LIB_MAX_LANES; ++i) {
        engine_lane *ln = &s->lanes[kept].eng;
        char why[LIB_ERRLEN];
        ln->device = s->lanes[i % primaries].eng.device;
        if (engine_lane_open(&s->el, ln, d->ops, why, sizeof why) == 0) ++kept;
    }
    return kept;
}

/* No GPU lane started: "gpu" asked for is an error (the command's exit
 * 2), with "auto" the CPU computes the set (engine_gpus_failed). */
static int gpu_failed(psfsim_set *s, char *err, size_t errlen)
{
    char why[LIB_ERRLEN];
    snprintf(why, sizeof why, "%s", err);
    if (engine_gpus_failed(&s->e, why, err, errlen) != 0) return PSFSIM_ERR_BACKEND;
    s->lanes[0].eng.device = 0;
    if (engine_lane_open(&s->el, &s->lanes[0].eng, &psf_backend_cpu, err, errlen) != 0)
        return PSFSIM_ERR_COMPUTE;
    s->nlanes = 1;
    return PSFSIM_OK;
}

/* Images per CPU thread in a CPU set's batch at least: two slots of
 * LIB_CPU_SLOT_IMAGES (lib/compute.c: one slot's jobs are made while the
 * other computes). */
#define LIB_CPU_IMAGES_PER_THREAD (2 * LIB_CPU_SLOT_IMAGES)

int lib_cpu_threads(const psfsim_set *s)
{
    int n = s->threads > 0 ? s->threads : psf_cpu_count();
    return n > 0 ? n : 1;
}

/* The batch of a CPU set: backend_batch's (the CPU's preferred 64 images)
 * or LIB_CPU_IMAGES_PER_THREAD per thread (psfsim_options.threads, 0:
 * one per CPU) when that is more, at most BACKEND_BATCH_BYTES of images
 * and the set's images. */
static int cpu_batch(const psfsim_set *s, int batch)
{
    long long want = LIB_CPU_IMAGES_PER_THREAD * (long long)lib_cpu_threads(s);
    double plane = (double)s->e.set.samp.npix * s->e.set.samp.npix * sizeof(float);
    long long fit = (long long)(BACKEND_BATCH_BYTES / plane);
    if (want > fit) want = fit;
    if (want > s->e.set.nimages) want = s->e.set.nimages;
    return want > batch ? (int)want : batch;
}

int lib_lanes_start(psfsim_set *s, char *err, size_t errlen)
{
    if (s->nlanes > 0) return PSFSIM_OK;
    const psf_backend_ops *ops = s->e.decision.ops;
    int gpu = ops != &psf_backend_cpu;
    s->batch = backend_batch(ops, s->e.set.samp.npix, s->e.set.nimages);
    if (!gpu) s->batch = cpu_batch(s, s->batch);
    /* psfsim_compute_u16's levels: the set's stretch, as the command's */
    psf_levels_out levels;
    s->levels_lanes = engine_levels_lanes(image_set_levels_stretch(&s->e.set, &levels));
    if (!s->levels_lanes) memset(&levels, 0, sizeof levels);
    s->el = (engine_lanes){.e = &s->e,
                           .batch = s->batch,
                           .levels = levels,
                           .threads = s->threads,
                           .lock = lib_lock,
                           .unlock = lib_unlock};
    int per_gpu = gpu ? lanes_per_gpu(s) : 1;
    int want = gpu ? s->e.decision.ndevices * per_gpu : 1;
    for (int l = 0; l < want && l < LIB_MAX_LANES; ++l)
        if (alloc_jobs(s, &s->lanes[l]) != 0) {
            lib_lanes_stop(s);
            return lib_fail(err, errlen, PSFSIM_ERR_MEMORY,
                            "cannot allocate the job list of a batch of %d images", s->batch);
        }
    if (!gpu) {
        if (engine_lane_open(&s->el, &s->lanes[0].eng, ops, err, errlen) != 0) {
            lib_lanes_stop(s);
            return PSFSIM_ERR_COMPUTE;
        }
        s->nlanes = 1;
        return PSFSIM_OK;
    }
    err[0] = '\0';
    s->nlanes = open_gpu_lanes(s, per_gpu, err, errlen);
    int rc = s->nlanes > 0 ? PSFSIM_OK : gpu_failed(s, err, errlen);
    if (rc != PSFSIM_OK) lib_lanes_stop(s);
    return rc;
}

/* engine_fall_back.release: the lane's scratch goes before its backend. */
static int release(void *user, engine_lane *eng, char *err, size_t errlen)
{
    (void)eng;
    (void)err;
    (void)errlen;
    lib_lane *ln = user;
    if (ln->scratch) ln->eng.ops->free_images(ln->eng.backend, ln->scratch);
    ln->scratch = NULL;
    return 0;
}

int lib_lane_fall_back(psfsim_set *s, lib_lane *ln, const char *why, char *err, size_t errlen)
{
    engine_fall_back f = {.name = "", .why = why, .release = release, .user = ln};
    return engine_lane_fall_back(&s->el, &ln->eng, &f, err, errlen) == 0 ? PSFSIM_OK
                                                                         : PSFSIM_ERR_COMPUTE;
}

int lib_lane_scratch(psfsim_set *s, lib_lane *ln, char *err, size_t errlen)
{
    if (ln->scratch) return PSFSIM_OK;
    size_t plane = (size_t)s->e.set.samp.npix * s->e.set.samp.npix;
    ln->scratch = ln->eng.ops->alloc_images(ln->eng.backend, (size_t)s->batch * plane);
    if (ln->scratch) return PSFSIM_OK;
    return lib_fail(err, errlen, PSFSIM_ERR_MEMORY,
                    "%s: cannot allocate a batch of %d %dx%d images", ln->eng.ops->name, s->batch,
                    s->e.set.samp.npix, s->e.set.samp.npix);
}

void lib_lanes_stop(psfsim_set *s)
{
    for (int l = 0; l < LIB_MAX_LANES; ++l) {
        lib_lane *ln = &s->lanes[l];
        close_lane(s, ln);
        free(ln->jobs);
        free(ln->infos);
        free(ln->storage);
        free(ln->measures);
        memset(ln, 0, sizeof *ln);
    }
    s->nlanes = 0;
}
