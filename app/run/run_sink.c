/* SPDX-License-Identifier: BSD-3-Clause */
/* The command's sink of the batch loop (lib/engine/batch.h, engine_run):
 * batches computed by the backend into one slot while the writer threads
 * encode the previous slot (docs/design.md, "Data flow"). */
#include "app/run/run_sink.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/base/clock.h"
#include "app/base/interrupt.h"
#include "app/base/log.h"
#include "app/base/host_pool.h"
#include "app/set/measure.h"
#include "app/set/set_detector.h"
#include "app/output/outputs.h"
#include "app/run/run_check.h"
#include "app/run/run_lanes.h"
#include "app/run/run_state.h"
#include "app/run/run_dataset.h"
#include "backend/levels.h"
#include "lib/engine/batch.h"

/* Remove the files of a written image (res's names in the output directory). */
static void forget_image(run_state *r, const image_result *res)
{
    if (res->png[0]) unlinkat(r->out.fd, res->png, 0);
    if (res->fits[0]) unlinkat(r->out.fd, res->fits, 0);
}

/* Log slot sl's written images (r->mu held): manifest and timing rows,
 * flushed, so the manifest lists exactly the images whose files are in
 * place. Returns -1 with err when one of them failed. */
static int log_slot(run_state *r, run_slot *sl, char *err, size_t errlen)
{
    int rc = 0, added = 0;
    for (int i = 0; i < sl->count; ++i) {
        const write_job *w = &sl->writes[i];
        if (w->status != 0) { /* "stopped": not written, after a failure or a signal */
            if (strcmp(w->err, "stopped") != 0) {
                if (rc == 0) snprintf(err, errlen, "%s", w->err);
                rc = -1;
            }
            continue;
        }
        if (r->cube_open) { /* the cube's planes: FITS writing, on this thread */
            double tc = clock_us();
            int bad = cube_writer_add(&r->cube, &r->e.set, w->info, w->res, w->img, err, errlen);
            w->timing->fits_us += clock_us() - tc;
            if (bad) {
                rc = -1;
                continue;
            }
        }
        const char *labels = sl->labels + (size_t)i * manifest_label_bytes(&r->e.set);
        if (manifest_add(&r->manifest, &r->e.set, w->k, w->info, w->res, labels, err, errlen) !=
            0) {
            rc = -1;
            continue;
        }
        timing_add(&r->timing, w->k, w->res->backend, w->timing);
        r->png_us += w->timing->png_us;
        r->fits_us += w->timing->fits_us;
        r->written++;
        added++;
    }
    char ferr[RUN_ERRLEN];
    if (set_dir_gone(&r->out)) { /* the directory went, the journals with it: retire_writes */
        progress_update(&r->bar, r->written);
        return rc;
    }
    if (manifest_flush(&r->manifest, ferr, sizeof ferr) != 0) {
        /* The rows did not reach the manifest (a full disk): their images
         * go too, so the manifest still lists exactly the images present. */
        for (int i = 0; i < sl->count; ++i)
            if (sl->writes[i].status == 0) forget_image(r, sl->writes[i].res);
        r->written -= added;
        if (rc == 0) snprintf(err, errlen, "%s", ferr);
        rc = -1;
    } else if (timing_flush(&r->timing, ferr, sizeof ferr) != 0) {
        if (rc == 0) snprintf(err, errlen, "%s", ferr);
        rc = -1;
    }
    progress_update(&r->bar, r->written);
    return rc;
}

/* Wait for slot s's writes, then log them (in completion order: with
 * several lanes the journals are sorted at the end, app/run/set_files.c), and
 * give them to NAME.h5's writer: held 1, from the slot's memory (the lane
 * computes its next batch into its other slot meanwhile), else copied.
 * Only the slot's own lane, or the main thread after the lanes, retires a
 * slot. */
static int retire_writes(run_state *r, int s, int held, char *err, size_t errlen)
{
    run_slot *sl = &r->slots[s];
    double t0 = clock_us();
    double busy = writer_pool_wait_slot(r->writers, s);
    double waited = clock_us() - t0;
    pthread_mutex_lock(&r->mu);
    r->write_busy_us += busy;
    r->wait_us += waited;
    int rc = log_slot(r, sl, err, errlen);
    pthread_mutex_unlock(&r->mu);
    if (rc == 0) rc = run_dataset_add(r, s, held, err, errlen); /* once in the manifest */
    if (set_dir_gone(&r->out)) { /* it took the set with it: stop (run_report says so) */
        atomic_store(&r->dir_gone, 1);
        if (rc == 0 && r->mpi)
            snprintf(err, errlen, "the output directory %s was removed during the run", r->dir);
        else if (rc == 0)
            err[0] = '\0';
        rc = -1;
    }
    sl->count = 0;
    return rc;
}

/* Retire slot s (retire_writes, copying for NAME.h5) and wait until
 * NAME.h5's writer is done with its memory too: then it may be reused. */
static int retire(run_state *r, int s, char *err, size_t errlen)
{
    int rc = r->slots[s].count ? retire_writes(r, s, 0, err, errlen) : 0;
    run_dataset_wait(r, s);
    return rc;
}

/* Retire slots [first, first + n): 0, or -1 with the first error. */
static int retire_range(run_state *r, int first, int n, char *err, size_t errlen)
{
    int rc = 0;
    for (int s = first; s < first + n; ++s) {
        char e[RUN_ERRLEN] = "";
        if (retire(r, s, e, sizeof e) != 0 && rc == 0) {
            snprintf(err, errlen, "%s", e);
            rc = -1;
        }
    }
    return rc;
}

/* psf_job.done of the command's jobs: keep the backend's scan (run_scan). */
static void keep_scan(void *ctx, float *image, const psf_image_scan *scan)
{
    (void)image;
    run_scan *rs = ctx;
    if (scan) rs->scan = *scan;
    rs->have = scan != NULL;
}

/* engine_sink.job: job i of lane l's slot q is image k (the queue's
 * next image still to do, below r->k_end: this process's range). */
static int slot_job(void *user, int l, int q, int i, long long k, char *err, size_t errlen)
{
    run_state *r = user;
    run_slot *sl = &r->slots[r->lanes[l].first_slot + q];
    size_t per = image_set_storage(&r->e.set);
    if (image_set_job(&r->e.set, k, sl->storage + (size_t)i * per, &sl->jobs[i], &sl->infos[i], err,
                      errlen) != 0)
        return -1;
    sl->scans[i].have = 0;
    sl->jobs[i].done = keep_scan;
    sl->jobs[i].done_ctx = &sl->scans[i];
    return 0;
}

/* "" for a one-lane run, else "GPU 1: ", naming the lane in messages. */
static const char *lane_name(const run_state *r, const run_lane *ln, char *buf, size_t len)
{
    buf[0] = '\0';
    if (r->nlanes > 1) snprintf(buf, len, "GPU %d: ", ln->eng.device);
    return buf;
}

/* The lane whose GPU failed, for release. */
typedef struct {
    run_state *r;
    run_lane *ln;
} failed_lane;

/* engine_fall_back.release: the writers done with the lane's slots, their
 * GPU buffers freed before its backend goes. */
static int release(void *user, engine_lane *eng, char *err, size_t errlen)
{
    (void)eng;
    failed_lane *f = user;
    if (retire_range(f->r, f->ln->first_slot, WRITER_SLOTS, err, errlen) != 0) return -1;
    run_free_images(f->r, f->ln);
    return 0;
}

/* Lane ln's GPU failed: say so once and go on with the CPU (docs/design.md,
 * engine_lane_fall_back). With several lanes the CPU backend is made under
 * r->mu (FFTW's planner is not thread-safe), and the lane stops after this
 * batch while another GPU lane is alive (ln->retiring). */
static int fall_back_to_cpu(run_state *r, run_lane *ln, const char *why, char *err, size_t errlen)
{
    char name[32];
    lane_name(r, ln, name, sizeof name);
    int others = atomic_fetch_sub(&r->gpus_alive, 1) - 1;
    failed_lane fl = {r, ln};
    engine_fall_back f = {.name = name,
                          .why = why,
                          .others = r->nlanes > 1 ? others : 0,
                          .release = release,
                          .user = &fl,
                          .mu = &r->mu};
    int rc = engine_lane_fall_back(&r->el, &ln->eng, &f, err, errlen);
    if (rc == 0) rc = run_alloc_images(r, ln, err, errlen);
    ln->retiring = r->nlanes > 1 && others > 0;
    return rc;
}

/* engine_sink.buffer: lane l's slot q's jobs and image memory, as
 * levels and measures on a lane that takes them (a levels set,
 * run_state.levels_lanes), else as floats. */
static int slot_buffer(void *user, int l, int q, long long k0, engine_batch *b, char *err,
                       size_t errlen)
{
    (void)k0;
    (void)err;
    (void)errlen;
    run_state *r = user;
    run_slot *sl = &r->slots[r->lanes[l].first_slot + q];
    sl->on_levels = engine_lane_on_levels(&r->lanes[l].eng, r->levels_lanes);
    b->jobs = sl->jobs;
    b->on_levels = sl->on_levels;
    b->images = sl->images;
    b->levels = (unsigned short *)sl->images;
    b->measures = sl->measures;
    return 0;
}

/* engine_sink.fall_back: fall_back_to_cpu. */
static int slot_fall_back(void *user, int l, int q, const char *why, char *err, size_t errlen)
{
    (void)q;
    run_state *r = user;
    return fall_back_to_cpu(r, &r->lanes[l], why, err, errlen);
}

/* Images [begin, end) of a slot: their metrics and write jobs. */
typedef struct {
    run_state *r;
    run_lane *ln;
    run_slot *sl;
    double compute_share_us;
    atomic_int first_bad; /* the least index of an image with a bad pixel, nb for none */
} measure_ctx;

/* Image i of the batch had a pixel outside [0, FLT_MAX]. */
static void note_bad(measure_ctx *c, int i)
{
    int seen = atomic_load(&c->first_bad);
    while (i < seen && !atomic_compare_exchange_weak(&c->first_bad, &seen, i)) {
    }
}

/* A write job's start for image i of slot sl: its result, timing, labels. */
static void job_start(const measure_ctx *c, int i, image_result *res)
{
    memset(res, 0, sizeof *res);
    res->backend = c->ln->eng.ops->name;
    size_t lb = manifest_label_bytes(&c->r->e.set); /* the row's costliest cells, here */
    manifest_label_text(&c->r->e.set, &c->sl->infos[i], c->sl->labels + (size_t)i * lb, lb);
}

/* measure_part for a batch of levels: the backend's measures, and the
 * levels (already turned for "poppy") where the writers take them. */
static void measure_levels(const measure_ctx *c, int begin, int end)
{
    run_slot *sl = c->sl;
    size_t plane = (size_t)c->r->e.set.samp.npix * c->r->e.set.samp.npix;
    for (int i = begin; i < end; ++i) {
        double t0 = clock_us();
        image_info *info = &sl->infos[i];
        image_result *res = &sl->results[i];
        job_start(c, i, res);
        image_set_measure_levels(&c->r->e.set, info, sl->measures + (size_t)i * PSF_MEASURES,
                                 &res->strehl, &res->axial_intensity);
        sl->timings[i] = (image_timing){.compute_us = c->compute_share_us};
        sl->timings[i].metrics_us = clock_us() - t0;
        sl->writes[i] = (write_job){.k = info->params.index,
                                    .info = info,
                                    .res = res,
                                    .timing = &sl->timings[i],
                                    .levels = (unsigned short *)sl->images + (size_t)i * plane,
                                    .levels_made = 1};
    }
}

static void measure_part(void *arg, int begin, int end)
{
    measure_ctx *c = arg;
    run_slot *sl = c->sl;
    int npix = c->r->e.set.samp.npix;
    size_t side = (size_t)set_detector_backend_npix(&c->r->e.set);
    if (sl->on_levels) {
        measure_levels(c, begin, end);
        return;
    }
    psf_config vcfg; /* "both": the oversampled image's set */
    image_set view;
    if (sl->det_images) set_detector_oversampled_view(&c->r->e.set, &vcfg, &view);
    for (int i = begin; i < end; ++i) {
        double t0 = clock_us();
        float *img = sl->images + (size_t)i * side * side;
        image_info *info = &sl->infos[i];
        image_over over = {0};
        if (sl->det_images) { /* "both": the detector image from the grid */
            over = (image_over){.img = img, .info = &sl->over_infos[i]};
            sl->over_infos[i] = *info;
            set_detector_oversampled_info(&c->r->e.set, &sl->over_infos[i]);
            img = sl->det_images + (size_t)i * npix * npix;
            set_detector_split(&c->r->e.set, over.img, img);
            /* Normalised, measured and turned as an "oversampled" run's, for
             * every output (FITS OVERSAMP, HDF5 oversampled). */
            if (!image_set_measure(&view, &sl->over_infos[i], over.img, &over.strehl,
                                   &over.axial_intensity))
                note_bad(c, i); /* the backend's image (the grid) */
        }
        image_result *res = &sl->results[i];
        job_start(c, i, res);
        /* MFT "sum" (divide by the image's sum), then Strehl and axis */
        const run_scan *rs = &sl->scans[i]; /* of the backend's image: not a "both" split */
        const psf_image_scan *scan = rs->have && !sl->det_images ? &rs->scan : NULL;
        if (!image_set_measure_scanned(&c->r->e.set, info, img, scan, &res->strehl,
                                       &res->axial_intensity) &&
            !sl->det_images)
            note_bad(c, i);
        sl->timings[i] = (image_timing){.compute_us = c->compute_share_us};
        sl->timings[i].metrics_us = clock_us() - t0;
        sl->writes[i] = (write_job){.k = info->params.index,
                                    .img = img,
                                    .info = info,
                                    .res = res,
                                    .timing = &sl->timings[i],
                                    .over = over};
        if (sl->levels) sl->writes[i].levels = sl->levels + (size_t)i * npix * npix;
    }
}

/* Metrics of each image of slot s (in parts, side by side), the batch
 * checked in the same pass (run_check.h: a bad image and none of the batch
 * goes on, -1 with err), then handed to the writers: *at_once 1 when they
 * were done at once (no file each). */
static int submit(run_state *r, run_lane *ln, int s, int nb, double compute_share_us, int *at_once,
                  char *err, size_t errlen)
{
    run_slot *sl = &r->slots[s];
    measure_ctx c = {.r = r, .ln = ln, .sl = sl, .compute_share_us = compute_share_us};
    atomic_init(&c.first_bad, nb);
    *at_once = 0;
    /* a levels batch: the backend's counts, before anything is made of it */
    if (sl->on_levels && run_check_images(r, s, nb, nb, err, errlen) != 0) return -1;
    host_pool_run(r->host, nb, measure_part, &c);
    /* the message names the first bad image and its counts (run_check.c) */
    if (!sl->on_levels && run_check_images(r, s, nb, atomic_load(&c.first_bad), err, errlen) != 0)
        return -1;
    double metrics_us = 0;
    for (int i = 0; i < nb; ++i)
        metrics_us += sl->timings[i].metrics_us;
    /* The slot's count is set before its first job can finish. */
    sl->count = nb;
    ln->images += nb;
    pthread_mutex_lock(&r->mu);
    r->metrics_us += metrics_us;
    pthread_mutex_unlock(&r->mu);
    *at_once = writer_pool_submit_batch(r->writers, s, sl->writes, nb);
    return 0;
}

/* The GPU created in the background is ready (one-lane runs): once the
 * writers are done with the CPU's buffers, take it (or, if it failed, stay
 * on the CPU). */
static int adopt_gpu(run_state *r, run_lane *ln, char *err, size_t errlen)
{
    if (retire_range(r, ln->first_slot, WRITER_SLOTS, err, errlen) != 0) return -1;
    r->warming = 0;
    if (gpu_warmup_join(&r->warm) != 0) {
        log_warn("%s; computing the images on the CPU", r->warm.err);
        snprintf(r->e.decision.reason, sizeof r->e.decision.reason,
                 "backend cpu: fallback after: %.200s", r->warm.err);
        return 0;
    }
    run_close_lane(r, ln);
    ln->eng.backend = r->warm.backend;
    ln->eng.ops = r->warm.ops;
    for (int s = 0; s < WRITER_SLOTS; ++s)
        r->slots[ln->first_slot + s].images = r->warm.images[s];
    atomic_store(&r->gpus_alive, 1);
    log_info("the GPU is ready after %lld image(s) on the CPU", r->written);
    return 0;
}

/* engine_sink.slots: a lane's WRITER_SLOTS. */
static int lane_slots(void *user, int l)
{
    (void)user;
    (void)l;
    return WRITER_SLOTS;
}

/* engine_sink.next: lane l's slot q once the writers are done with it
 * (retired); unless the run stops, the GPU made in the background taken
 * when ready, and the batch's size. */
static int slot_next(void *user, int l, int q, int *cap, char *err, size_t errlen)
{
    run_state *r = user;
    run_lane *ln = &r->lanes[l];
    if (retire(r, ln->first_slot + q, err, errlen) != 0) return -1;
    if (interrupt_pending() || atomic_load(&r->queue.failed)) return 0; /* *cap 0: stop */
    if (r->warming && gpu_warmup_ready(&r->warm) && adopt_gpu(r, ln, err, errlen) != 0) return -1;
    *cap = r->warming ? RUN_WARM_BATCH : r->batch;
    return 0;
}

/* engine_sink.stop: a signal. */
static int run_stop(void *user)
{
    (void)user;
    return interrupt_pending();
}

/* engine_sink.done: lane l's batch in slot q computed: its metrics and
 * check, handed to the writers; the lane stops (1) after this batch when
 * its GPU failed while another GPU lane is alive (run_lane.retiring). */
static int slot_done(void *user, int l, int q, long long k0, int nb, double run_us, double us,
                     char *err, size_t errlen)
{
    (void)k0;
    run_state *r = user;
    run_lane *ln = &r->lanes[l];
    int s = ln->first_slot + q;
    ln->compute_us += run_us;
    double share = us / nb;
    int at_once;
    if (submit(r, ln, s, nb, share, &at_once, err, errlen) != 0) return -1;
    /* Nothing for the writer threads (an HDF5-only set): retire the
     * slot now, NAME.h5's writer taking its images in place while the
     * next batch is computed (bench/RESULTS.md, issue 13). */
    if (at_once && r->h5 && retire_writes(r, s, 1, err, errlen) != 0) return -1;
    return ln->retiring ? 1 : 0;
}

/* engine_sink.end: a lane's loop ended; on failure the writers stop
 * (nothing new after a failure; the other lanes stop at their next batch). */
static void lane_end(void *user, int l, int rc, const char *err)
{
    run_state *r = user;
    run_lane *ln = &r->lanes[l];
    ln->rc = rc == 0 ? 0 : -1;
    snprintf(ln->err, sizeof ln->err, "%s", err);
    if (rc != 0) writer_pool_stop(r->writers);
}

/* engine_sink.no_thread. */
static void lane_no_thread(void *user, int l)
{
    run_state *r = user;
    log_warn("cannot start a thread for GPU %d; the others take its images",
             r->lanes[l].eng.device);
}

int run_images(run_state *r, char *err, size_t errlen)
{
    r->queue.mu = &r->mu;
    r->queue.next = r->k_begin;
    r->queue.end = r->k_end;
    r->queue.skip = r->resume.done;
    engine_lane *lanes[RUN_MAX_LANES];
    for (int l = 0; l < r->nlanes; ++l)
        lanes[l] = &r->lanes[l].eng;
    engine_sink sink = {.slots = lane_slots,
                        .next = slot_next,
                        .stop = run_stop,
                        .job = slot_job,
                        .buffer = slot_buffer,
                        .fall_back = slot_fall_back,
                        .done = slot_done,
                        .end = lane_end,
                        .no_thread = lane_no_thread,
                        .user = r};
    engine_run(lanes, r->nlanes, &r->queue, &sink);
    int rc = r->lanes[0].rc;
    if (rc != 0) snprintf(err, errlen, "%s", r->lanes[0].err);
    for (int l = 1; l < r->nlanes; ++l) {
        if (r->lanes[l].rc != 0 && rc == 0) {
            snprintf(err, errlen, "%s", r->lanes[l].err);
            rc = -1;
        }
    }
    char e[RUN_ERRLEN];
    if (retire_range(r, 0, r->nlanes * WRITER_SLOTS, e, sizeof e) != 0 && rc == 0) {
        snprintf(err, errlen, "%s", e);
        rc = -1;
    }
    r->compute_us = 0;
    for (int l = 0; l < r->nlanes; ++l)
        r->compute_us += r->lanes[l].compute_us;
    if (!r->interrupted) r->interrupted = interrupt_pending();
    return rc;
}
