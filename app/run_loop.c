/* The image loop: batches computed by the backend into one slot while the
 * writer threads encode the previous slot (design.md, "Data flow"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "interrupt.h"
#include "log.h"
#include "optics/metrics.h"
#include "probe_cache.h"
#include "run_state.h"

int run_open_backend(run_state *r, const psf_backend_ops *ops, char *err, size_t errlen)
{
    psf_set_desc desc;
    image_set_desc(&r->set, r->batch, &desc);
    desc.device = mpi_gpu_device(r->mpi); /* MPI: by local rank; else 0 */
    char wisdom[4200];
    desc.fftw_wisdom = probe_cache_wisdom(wisdom, sizeof wisdom);
    if (ops->create(&desc, &r->backend, err, errlen) != 0) return -1;
    r->ops = ops;
    size_t plane = (size_t)r->set.samp.npix * r->set.samp.npix;
    for (int s = 0; s < WRITER_SLOTS; ++s) {
        r->slots[s].images = ops->alloc_images(r->backend, (size_t)r->batch * plane);
        if (!r->slots[s].images) {
            snprintf(err, errlen, "%s: cannot allocate a batch of %d %dx%d images", ops->name,
                     r->batch, r->set.samp.npix, r->set.samp.npix);
            return -1;
        }
    }
    return 0;
}

void run_close_backend(run_state *r)
{
    for (int s = 0; s < WRITER_SLOTS; ++s) {
        if (r->slots[s].images) r->ops->free_images(r->backend, r->slots[s].images);
        r->slots[s].images = NULL;
    }
    if (r->backend) r->ops->destroy(r->backend);
    r->backend = NULL;
}

/* Remove the files of a written image (res's names in r->dir). */
static void forget_image(run_state *r, const image_result *res)
{
    char path[CFG_PATH_MAX + 600];
    if (res->png[0]) {
        snprintf(path, sizeof path, "%s/%s", r->dir, res->png);
        unlink(path);
    }
    if (res->fits[0]) {
        snprintf(path, sizeof path, "%s/%s", r->dir, res->fits);
        unlink(path);
    }
}

/* Wait for a slot's writes and log them: manifest and timing rows in index
 * order, flushed, so the manifest lists exactly the images whose files are
 * in place. Returns -1 with err when one of them failed. */
static int retire(run_state *r, int s, char *err, size_t errlen)
{
    run_slot *sl = &r->slots[s];
    if (sl->count == 0) return 0;
    double t0 = clock_us();
    r->write_busy_us += writer_pool_wait_slot(r->writers, s);
    r->wait_us += clock_us() - t0;
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
            int bad = cube_writer_add(&r->cube, &r->set, w->info, w->res, w->img, err, errlen);
            w->timing->fits_us += clock_us() - tc;
            if (bad) {
                rc = -1;
                continue;
            }
        }
        if (manifest_add(&r->manifest, &r->set, w->k, w->info, w->res, err, errlen) != 0) {
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
    sl->count = 0;
    progress_update(&r->bar, r->written);
    return rc;
}

static int retire_all(run_state *r, char *err, size_t errlen)
{
    int rc = 0;
    for (int s = 0; s < WRITER_SLOTS; ++s) {
        char e[RUN_ERRLEN] = "";
        if (retire(r, s, e, sizeof e) != 0 && rc == 0) {
            snprintf(err, errlen, "%s", e);
            rc = -1;
        }
    }
    return rc;
}

/* The jobs of the next images still to do, from *next on, below r->k_end
 * (this process's range). Returns how many. */
static int fill_slot(run_state *r, int s, long long *next, char *err, size_t errlen)
{
    run_slot *sl = &r->slots[s];
    size_t per = image_set_storage(&r->set);
    int nb = 0;
    int limit = r->warming ? RUN_WARM_BATCH : r->batch;
    while (nb < limit && *next < r->k_end) {
        long long k = (*next)++;
        if (r->resume.done && r->resume.done[k]) continue;
        if (image_set_job(&r->set, k, sl->storage + (size_t)nb * per, &sl->jobs[nb], &sl->infos[nb],
                          err, errlen) != 0)
            return -1;
        nb++;
    }
    return nb;
}

/* The GPU failed: say so once and go on with the CPU (design.md). The
 * writers must be done with every slot before the GPU's buffers go. */
static int fall_back_to_cpu(run_state *r, const char *why, char *err, size_t errlen)
{
    log_warn("%s; computing the remaining images on the CPU", why);
    int s_busy = 0;
    for (int s = 0; s < WRITER_SLOTS; ++s)
        s_busy |= r->slots[s].count > 0;
    if (s_busy && retire_all(r, err, errlen) != 0) return -1;
    run_close_backend(r);
    snprintf(r->decision.reason, sizeof r->decision.reason, "backend cpu: fallback after: %.200s",
             why);
    return run_open_backend(r, &psf_backend_cpu, err, errlen);
}

/* Run the backend on slot s's nb jobs, falling back to the CPU once. */
static int compute(run_state *r, int s, int nb, char *err, size_t errlen)
{
    double t0 = clock_us();
    if (r->ops->run(r->backend, r->slots[s].jobs, nb, r->slots[s].images, err, errlen) == 0) {
        r->compute_us += clock_us() - t0;
        return 0;
    }
    if (r->ops == &psf_backend_cpu) return -1;
    char why[RUN_ERRLEN];
    snprintf(why, sizeof why, "%s", err);
    if (fall_back_to_cpu(r, why, err, errlen) != 0) return -1;
    t0 = clock_us();
    if (r->ops->run(r->backend, r->slots[s].jobs, nb, r->slots[s].images, err, errlen) != 0)
        return -1;
    r->compute_us += clock_us() - t0;
    return 0;
}

/* Metrics of each image of slot s, then hand it to the writers. */
static void submit(run_state *r, int s, int nb, double compute_share_us)
{
    run_slot *sl = &r->slots[s];
    int npix = r->set.samp.npix;
    for (int i = 0; i < nb; ++i) {
        double t0 = clock_us();
        float *img = sl->images + (size_t)i * npix * npix;
        image_info *info = &sl->infos[i];
        image_set_finish_image(&r->set, info, img); /* MFT "sum": divide by the image's sum */
        image_result *res = &sl->results[i];
        memset(res, 0, sizeof *res);
        res->backend = r->ops->name;
        res->strehl = metrics_peak(img, npix).value / info->ref_peak;
        res->axial_intensity = img[(size_t)(npix / 2) * npix + npix / 2] / info->ref_peak;
        sl->timings[i] = (image_timing){.compute_us = compute_share_us};
        sl->timings[i].metrics_us = clock_us() - t0;
        r->metrics_us += sl->timings[i].metrics_us;
        sl->writes[i] = (write_job){.k = info->params.index,
                                    .img = img,
                                    .info = info,
                                    .res = res,
                                    .timing = &sl->timings[i]};
        writer_pool_submit(r->writers, s, &sl->writes[i]);
    }
    sl->count = nb;
}

/* The GPU created in the background is ready: once the writers are done
 * with the CPU's buffers, take it (or, if it failed, stay on the CPU). */
static int adopt_gpu(run_state *r, char *err, size_t errlen)
{
    if (retire_all(r, err, errlen) != 0) return -1;
    r->warming = 0;
    if (gpu_warmup_join(&r->warm) != 0) {
        log_warn("%s; computing the images on the CPU", r->warm.err);
        snprintf(r->decision.reason, sizeof r->decision.reason,
                 "backend cpu: fallback after: %.200s", r->warm.err);
        return 0;
    }
    run_close_backend(r);
    r->backend = r->warm.backend;
    r->ops = r->warm.ops;
    for (int s = 0; s < WRITER_SLOTS; ++s)
        r->slots[s].images = r->warm.images[s];
    log_info("the GPU is ready after %lld image(s) on the CPU", r->written);
    return 0;
}

int run_images(run_state *r, char *err, size_t errlen)
{
    long long next = r->k_begin;
    int s = 0, rc = 0;
    for (;;) {
        if (retire(r, s, err, errlen) != 0) {
            rc = -1;
            break;
        }
        if ((r->interrupted = interrupt_pending())) break;
        if (r->warming && gpu_warmup_ready(&r->warm) && adopt_gpu(r, err, errlen) != 0) {
            rc = -1;
            break;
        }
        int nb = fill_slot(r, s, &next, err, errlen);
        if (nb <= 0) {
            rc = nb;
            break;
        }
        double t0 = clock_us();
        if (compute(r, s, nb, err, errlen) != 0) {
            rc = -1;
            break;
        }
        submit(r, s, nb, (clock_us() - t0) / nb);
        s = (s + 1) % WRITER_SLOTS;
    }
    if (rc != 0) writer_pool_stop(r->writers); /* nothing new after a failure */
    char e[RUN_ERRLEN];
    if (retire_all(r, e, sizeof e) != 0 && rc == 0) {
        snprintf(err, errlen, "%s", e);
        rc = -1;
    }
    if (!r->interrupted) r->interrupted = interrupt_pending();
    return rc;
}
