/* SPDX-License-Identifier: BSD-3-Clause */
/* The lanes of a run: planning them, their slots, starting and closing
 * their backends (app/run/run_lanes.h). */
#include "app/run/run_lanes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/log.h"
#include "app/set/measure.h"
#include "backend/levels.h"
#include "app/set/set_detector.h"
#include "app/dataset/hdf5_writer.h"

/* Lane ln's slots' image buffers, from its backend. 0, or -1 with err. */
static int alloc_images(run_state *r, run_lane *ln, char *err, size_t errlen)
{
    int side = set_detector_backend_npix(&r->e.set);
    size_t plane = (size_t)side * side;
    for (int s = ln->first_slot; s < ln->first_slot + WRITER_SLOTS; ++s) {
        r->slots[s].images = ln->eng.ops->alloc_images(ln->eng.backend, (size_t)r->batch * plane);
        if (!r->slots[s].images) {
            snprintf(err, errlen, "%s: cannot allocate a batch of %d %dx%d images",
                     ln->eng.ops->name, r->batch, side, side);
            return -1;
        }
    }
    return 0;
}

int run_open_lane(run_state *r, run_lane *ln, const psf_backend_ops *ops, char *err, size_t errlen)
{
    if (engine_lane_open(&r->el, &ln->eng, ops, err, errlen) != 0) return -1;
    return alloc_images(r, ln, err, errlen);
}

void run_free_images(run_state *r, run_lane *ln)
{
    for (int s = ln->first_slot; s < ln->first_slot + WRITER_SLOTS; ++s) {
        if (r->slots[s].images) ln->eng.ops->free_images(ln->eng.backend, r->slots[s].images);
        r->slots[s].images = NULL;
    }
}

void run_close_lane(run_state *r, run_lane *ln)
{
    run_free_images(r, ln);
    engine_lane_close(&r->el, &ln->eng);
}

int run_alloc_images(run_state *r, run_lane *ln, char *err, size_t errlen)
{
    return alloc_images(r, ln, err, errlen);
}

/* Whether (and for which lanes) the images leave the backends as levels:
 * a set image_set_levels_out accepts, and PSFSIM_LEVELS: "off" never (the
 * floats and the writers' stretch, as before issue 17), "on" every lane,
 * the CPU's too (tests: the levels path without a GPU), else (unset) the
 * GPU lanes (engine_levels_lanes). The CPU keeps the floats by default: its
 * writers stretch an image while it computes the next batch, on threads of
 * their own. */
static void decide_levels(run_state *r)
{
    r->levels_lanes = engine_levels_lanes(image_set_levels_out(&r->e.set, &r->levels));
    if (r->levels_lanes == 0) memset(&r->levels, 0, sizeof r->levels);
}

static int alloc_slots(run_state *r, char *err, size_t errlen)
{
    decide_levels(r);
    size_t per = image_set_storage(&r->e.set), b = (size_t)r->batch;
    for (int s = 0; s < r->nlanes * WRITER_SLOTS; ++s) {
        run_slot *sl = &r->slots[s];
        sl->jobs = calloc(b, sizeof *sl->jobs);
        sl->infos = calloc(b, sizeof *sl->infos);
        sl->storage = calloc(b * per, sizeof *sl->storage);
        sl->results = calloc(b, sizeof *sl->results);
        sl->timings = calloc(b, sizeof *sl->timings);
        sl->writes = calloc(b, sizeof *sl->writes);
        sl->labels = malloc(b * manifest_label_bytes(&r->e.set));
        sl->scans = calloc(b, sizeof *sl->scans);
        int levels = r->e.cfg.hdf5_enabled && r->e.cfg.hdf5_dtype == HDF5_UINT16;
        size_t plane = (size_t)r->e.set.samp.npix * (size_t)r->e.set.samp.npix;
        if (levels) sl->levels = malloc(b * plane * sizeof *sl->levels);
        int both = set_detector_backend_npix(&r->e.set) != r->e.set.samp.npix;
        if (both) sl->det_images = malloc(b * plane * sizeof *sl->det_images);
        if (both) sl->over_infos = calloc(b, sizeof *sl->over_infos);
        int measures = r->levels.bits != 0;
        if (measures) sl->measures = malloc(b * PSF_MEASURES * sizeof *sl->measures);
        if (!sl->jobs || !sl->infos || !sl->storage || !sl->results || !sl->timings ||
            !sl->writes || !sl->labels || !sl->scans || (levels && !sl->levels) ||
            (measures && !sl->measures) || (both && (!sl->det_images || !sl->over_infos))) {
            snprintf(err, errlen, "cannot allocate the job list of a batch of %d images", r->batch);
            return -1;
        }
    }
    return 0;
}

/* PSFSIM_TEST_LANES=n (2..RUN_MAX_LANES): a CPU run computes with n CPU
 * lanes sharing the queue, as n GPUs would, so that the multi-device path
 * is tested on machines without GPUs (tests/e2e/e2e_lanes.sh). 1 otherwise. */
static int test_cpu_lanes(void)
{
    const char *s = getenv("PSFSIM_TEST_LANES");
    int n = s ? atoi(s) : 1;
    return n >= 2 && n <= RUN_MAX_LANES ? n : 1;
}

/* The lanes: one per GPU the decision names (one per MPI rank: the rank's
 * GPU by local rank), one for the CPU. */
static void plan_lanes(run_state *r)
{
    const backend_decision *d = &r->e.decision;
    int gpu = d->ops != &psf_backend_cpu;
    r->nlanes = gpu && !r->mpi && d->ndevices > 1 ? d->ndevices : gpu ? 1 : test_cpu_lanes();
    long long batches = (r->todo + r->batch - 1) / r->batch; /* no lane without a batch */
    if (r->nlanes > batches) r->nlanes = batches > 0 ? (int)batches : 1;
    for (int l = 0; l < r->nlanes; ++l) {
        r->lanes[l].first_slot = l * WRITER_SLOTS;
        r->lanes[l].eng.device = !gpu ? l : r->nlanes > 1 ? d->devices[l] : d->devices[0];
    }
    if (gpu && r->mpi && d->ndevices > 0) /* a rank's GPU: by local rank */
        r->lanes[0].eng.device = d->devices[r->mpi->local_rank % d->ndevices];
    atomic_init(&r->gpus_alive, gpu ? r->nlanes : 0);
    atomic_init(&r->queue.failed, 0);
}

/* auto chose one GPU for a set big enough to repay it: create the GPU in a
 * thread while the CPU computes the first batches (lib/engine/gpu_warmup.h). */
static int start_warm(run_state *r, char *err, size_t errlen)
{
    psf_problem pb;
    psf_backend_options opt;
    engine_lane_desc(&r->el, &r->lanes[0].eng, &pb, &opt);
    size_t side = (size_t)set_detector_backend_npix(&r->e.set),
           floats = (size_t)r->batch * side * side;
    if (gpu_warmup_start(&r->warm, &r->el, r->e.decision.ops, &pb, &opt, floats) != 0) return -1;
    if (run_open_lane(r, &r->lanes[0], &psf_backend_cpu, err, errlen) != 0) {
        gpu_warmup_discard(&r->warm);
        run_close_lane(r, &r->lanes[0]);
        return -1;
    }
    atomic_store(&r->gpus_alive, 0); /* until it is adopted */
    r->warming = 1;
    log_info("starting the GPU in the background; the CPU computes the first images");
    return 0;
}

/* Several GPUs: create their backends side by side (a context each, 0.3-
 * 0.5 s), keep those that start; one that does not is named and left out.
 * 0, or -1 with the first failure in err when none starts. */
static int open_gpu_lanes(run_state *r, char *err, size_t errlen)
{
    gpu_warmup *w = calloc(RUN_MAX_LANES, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "cannot allocate the GPUs' start-up state");
        return -1;
    }
    size_t side = (size_t)set_detector_backend_npix(&r->e.set),
           floats = (size_t)r->batch * side * side;
    int n = r->nlanes, kept = 0;
    for (int l = 0; l < n; ++l) {
        psf_problem pb;
        psf_backend_options opt;
        engine_lane_desc(&r->el, &r->lanes[l].eng, &pb, &opt);
        if (gpu_warmup_start(&w[l], &r->el, r->e.decision.ops, &pb, &opt, floats) != 0)
            w[l].rc = -1;
    }
    for (int l = 0; l < n; ++l) {
        int dev = r->lanes[l].eng.device;
        if (w[l].started ? gpu_warmup_join(&w[l]) != 0 : 1) {
            if (!kept && !err[0])
                snprintf(err, errlen, "%s", w[l].started ? w[l].err : "no thread");
            engine_gpu_left_out(dev, w[l].started ? w[l].err : "cannot start a thread");
            continue;
        }
        run_lane *ln = &r->lanes[kept];
        *ln = (run_lane){.eng = {.ops = w[l].ops, .backend = w[l].backend, .device = dev},
                         .first_slot = kept * WRITER_SLOTS};
        for (int s = 0; s < WRITER_SLOTS; ++s)
            r->slots[ln->first_slot + s].images = w[l].images[s];
        kept++;
    }
    free(w);
    r->nlanes = kept > 0 ? kept : 1;
    atomic_store(&r->gpus_alive, kept);
    return kept > 0 ? 0 : -1;
}

static void close_lanes(run_state *r)
{
    for (int l = 0; l < r->nlanes; ++l)
        run_close_lane(r, &r->lanes[l]);
}

void run_free_lanes(run_state *r)
{
    close_lanes(r);
    for (int s = 0; s < RUN_MAX_LANES * WRITER_SLOTS; ++s) {
        run_slot *sl = &r->slots[s];
        free(sl->jobs);
        free(sl->infos);
        free(sl->storage);
        free(sl->results);
        free(sl->timings);
        free(sl->writes);
        free(sl->labels);
        free(sl->scans);
        free(sl->levels);
        free(sl->measures);
        free(sl->det_images);
        free(sl->over_infos);
    }
}

/* One backend per lane, made one after the other (the CPU's planner is
 * not thread-safe). 0, or -1 with err. */
static int open_lanes(run_state *r, const psf_backend_ops *ops, char *err, size_t errlen)
{
    for (int l = 0; l < r->nlanes; ++l)
        if (run_open_lane(r, &r->lanes[l], ops, err, errlen) != 0) return -1;
    return 0;
}

/* A forced GPU that cannot start is a usage error (exit 2, nothing
 * written); with auto the CPU takes over. */
int run_start_backend(run_state *r, char *err, size_t errlen, int *status)
{
    const psf_backend_ops *ops = r->e.decision.ops;
    r->batch = backend_batch(ops, set_detector_backend_npix(&r->e.set), r->todo); /* its images */
    r->batch = hdf5_writer_batch(&r->e.set, r->batch, r->todo); /* NAME.h5 written in place */
    *status = 3;
    plan_lanes(r);
    if (alloc_slots(r, err, errlen) != 0) return -1;
    r->el = (engine_lanes){.e = &r->e, .batch = r->batch, .levels = r->levels};
    int gpu = ops != &psf_backend_cpu;
    if (gpu && r->nlanes == 1 && r->e.cfg.backend == BACKEND_AUTO && r->todo > 2 * RUN_WARM_BATCH &&
        start_warm(r, err, errlen) == 0) {
        *status = 0;
        return 0;
    }
    err[0] = '\0';
    int rc =
        gpu && r->nlanes > 1 ? open_gpu_lanes(r, err, errlen) : open_lanes(r, ops, err, errlen);
    if (rc == 0) {
        if (r->nlanes > 1 && gpu) {
            char list[128];
            int dev[RUN_MAX_LANES];
            for (int l = 0; l < r->nlanes; ++l)
                dev[l] = r->lanes[l].eng.device;
            size_t len = strlen(r->e.decision.reason);
            snprintf(r->e.decision.reason + len, sizeof r->e.decision.reason - len, " on GPUs %s",
                     gpu_list_format(dev, r->nlanes, list, sizeof list));
            log_info("the set is shared by GPUs %s (one queue of %d-image batches)", list,
                     r->batch);
        }
        *status = 0;
        return 0;
    }
    close_lanes(r);
    if (!gpu) return -1;
    char why[RUN_ERRLEN];
    snprintf(why, sizeof why, "%s", err);
    if (engine_gpus_failed(&r->e, why, err, errlen) != 0) {
        *status = 2; /* a forced GPU: usage error */
        return -1;
    }
    r->nlanes = 1;
    r->lanes[0].eng.device = 0;
    atomic_store(&r->gpus_alive, 0);
    if (run_open_lane(r, &r->lanes[0], &psf_backend_cpu, err, errlen) != 0) return -1;
    *status = 0;
    return 0;
}
