#include "run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_select.h"
#include "clock.h"
#include "image_set.h"
#include "log.h"
#include "manifest.h"
#include "optics/metrics.h"
#include "outputs.h"
#include "probe_cache.h"
#include "timing.h"

#define ERRLEN 1024
/* Host memory one batch of images may take. */
#define BATCH_BYTES (1024.0 * 1024 * 1024)

/* Everything one run holds, so cleanup is one function. */
typedef struct {
    const cli_options *opt;
    psf_config cfg;
    image_set set;
    const char *dir;
    backend_decision decision;
    const psf_backend_ops *ops; /* the backend running now (after a fallback: the CPU) */
    psf_backend *backend;
    manifest_writer manifest;
    timing_writer timing;
    int manifest_open, timing_open;
    int batch;
    psf_job *jobs;
    image_info *infos;
    double *storage;
    float *images;
    double t_start, t_config, t_create;
    long long written;
} run_state;

static int batch_size(const psf_backend_ops *ops, int npix, long long nimages)
{
    double per = (double)npix * npix * sizeof(float);
    long long b = (long long)(BATCH_BYTES / per);
    if (b > ops->preferred_batch) b = ops->preferred_batch;
    if (b > nimages) b = nimages;
    return b < 1 ? 1 : (int)b;
}

/* The backend and its image buffer, for a batch of r->batch images. */
static int open_backend(run_state *r, const psf_backend_ops *ops, char *err, size_t errlen)
{
    psf_set_desc desc;
    image_set_desc(&r->set, r->batch, &desc);
    char wisdom[4200];
    desc.fftw_wisdom = probe_cache_wisdom(wisdom, sizeof wisdom);
    if (ops->create(&desc, &r->backend, err, errlen) != 0) return -1;
    r->ops = ops;
    size_t plane = (size_t)r->set.samp.npix * r->set.samp.npix;
    r->images = ops->alloc_images(r->backend, (size_t)r->batch * plane);
    if (r->images) return 0;
    snprintf(err, errlen, "%s: cannot allocate a batch of %d %dx%d images", ops->name, r->batch,
             r->set.samp.npix, r->set.samp.npix);
    return -1;
}

static void close_backend(run_state *r)
{
    if (r->images) r->ops->free_images(r->backend, r->images);
    if (r->backend) r->ops->destroy(r->backend);
    r->images = NULL;
    r->backend = NULL;
}

/* The GPU failed: say so once and go on with the CPU (design.md). */
static int fall_back_to_cpu(run_state *r, const char *why, char *err, size_t errlen)
{
    log_warn("%s; computing the remaining images on the CPU", why);
    close_backend(r);
    snprintf(r->decision.reason, sizeof r->decision.reason, "backend cpu: fallback after: %.200s",
             why);
    return open_backend(r, &psf_backend_cpu, err, errlen);
}

static int alloc_batch(run_state *r, char *err, size_t errlen)
{
    size_t per = image_set_storage(&r->set);
    r->jobs = calloc((size_t)r->batch, sizeof *r->jobs);
    r->infos = calloc((size_t)r->batch, sizeof *r->infos);
    r->storage = calloc((size_t)r->batch * per, sizeof *r->storage);
    if (r->jobs && r->infos && r->storage) return 0;
    snprintf(err, errlen, "cannot allocate the job list of a batch of %d images", r->batch);
    return -1;
}

/* Start the chosen backend. A forced GPU that cannot start is a usage error
 * (exit 2, nothing written); with auto the CPU takes over. */
static int start_backend(run_state *r, char *err, size_t errlen, int *status)
{
    r->batch = batch_size(r->decision.ops, r->set.samp.npix, r->set.nimages);
    *status = 3;
    if (alloc_batch(r, err, errlen) != 0) return -1;
    if (open_backend(r, r->decision.ops, err, errlen) == 0) {
        *status = 0;
        return 0;
    }
    close_backend(r);
    if (r->decision.ops == &psf_backend_cpu) return -1;
    if (r->cfg.backend == BACKEND_GPU) {
        *status = 2;
        return -1;
    }
    char why[ERRLEN];
    snprintf(why, sizeof why, "%s", err);
    if (fall_back_to_cpu(r, why, err, errlen) != 0) return -1;
    *status = 0;
    return 0;
}

/* Load, validate and plan: everything that can fail before a file is written. */
static int prepare(run_state *r, char *err, size_t errlen)
{
    const cli_options *o = r->opt;
    if (config_load(o->config_path, &r->cfg, err, errlen) != 0) return -1;
    if (o->backend_given) r->cfg.backend = o->backend;
    r->dir = o->output_dir ? o->output_dir : r->cfg.output_dir;
    if (image_set_init(&r->set, &r->cfg, err, errlen) != 0) return -1;
    if (outputs_check(&r->cfg, r->dir, o->force, err, errlen) != 0) return -1;
    if (backend_select(r->cfg.backend, &r->set, &r->decision, err, errlen) != 0) return -1;
    log_info("%lld image(s) of %dx%d (pupil %d samples, Q = %.4g) into %s", r->set.nimages,
             r->set.samp.npix, r->set.samp.npix, r->set.samp.pupil_samples, r->set.samp.padding,
             r->dir);
    log_info("%s", r->decision.reason);
    return 0;
}

/* Create the directory and the open log files. Failures here are run-time
 * failures (exit 3), but nothing has been written yet. */
static int start(run_state *r, char *err, size_t errlen)
{
    if (outputs_make_dir(r->dir, err, errlen) != 0) return -1;
    char path[CFG_PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s_manifest.csv", r->dir, r->cfg.name);
    if (manifest_open(&r->manifest, path, err, errlen) != 0) return -1;
    r->manifest_open = 1;
    snprintf(path, sizeof path, "%s/%s_timing.csv", r->dir, r->cfg.name);
    if (timing_open(&r->timing, path, err, errlen) != 0) return -1;
    r->timing_open = 1;
    return 0;
}

/* Metrics, files, manifest and timing rows of image k of the batch. */
static int finish_image(run_state *r, int i, double compute_us, char *err, size_t errlen)
{
    int npix = r->set.samp.npix;
    const float *img = r->images + (size_t)i * npix * npix;
    const image_info *info = &r->infos[i];
    long long k = info->params.index;
    image_timing t = {.compute_us = compute_us};
    double t0 = clock_us();
    image_result res = {.backend = r->ops->name};
    psf_peak pk = metrics_peak(img, npix);
    res.strehl = pk.value / info->ref_peak;
    res.axial_intensity = img[(size_t)(npix / 2) * npix + npix / 2] / info->ref_peak;
    t.metrics_us = clock_us() - t0;
    if (outputs_write_image(&r->set, r->dir, k, info, img, &res, &t.png_us, &t.fits_us, err,
                            errlen) != 0)
        return -1;
    if (manifest_add(&r->manifest, &r->set, k, info, &res, err, errlen) != 0) return -1;
    timing_add(&r->timing, k, res.backend, &t);
    r->written++;
    log_debug("image %lld: Strehl %.6g", k, res.strehl);
    return 0;
}

static int run_batches(run_state *r, char *err, size_t errlen)
{
    size_t per = image_set_storage(&r->set);
    for (long long k0 = 0; k0 < r->set.nimages; k0 += r->batch) {
        int nb = (int)(r->set.nimages - k0 < r->batch ? r->set.nimages - k0 : r->batch);
        for (int i = 0; i < nb; ++i)
            if (image_set_job(&r->set, k0 + i, r->storage + (size_t)i * per, &r->jobs[i],
                              &r->infos[i], err, errlen) != 0)
                return -1;
        double t0 = clock_us();
        if (r->ops->run(r->backend, r->jobs, nb, r->images, err, errlen) != 0) {
            if (r->ops == &psf_backend_cpu) return -1;
            char why[ERRLEN];
            snprintf(why, sizeof why, "%s", err);
            if (fall_back_to_cpu(r, why, err, errlen) != 0) return -1;
            t0 = clock_us();
            if (r->ops->run(r->backend, r->jobs, nb, r->images, err, errlen) != 0) return -1;
        }
        double per_image = (clock_us() - t0) / nb;
        for (int i = 0; i < nb; ++i)
            if (finish_image(r, i, per_image, err, errlen) != 0) return -1;
    }
    return 0;
}

/* Close the logs: the manifest lists exactly the images written. */
static int close_logs(run_state *r, char *err, size_t errlen)
{
    int rc = 0;
    if (r->timing_open) {
        timing_summary(&r->timing, "config_load_us", r->t_config - r->t_start, NULL);
        timing_summary(&r->timing, "backend_create_us", r->t_create - r->t_config, NULL);
        timing_summary(&r->timing, "backend", NAN, r->decision.reason);
        timing_summary(&r->timing, "predicted_cpu_us", r->decision.cpu_us, NULL);
        timing_summary(&r->timing, "predicted_gpu_us", r->decision.gpu_us, NULL);
        timing_summary(&r->timing, "probe", NAN, r->decision.probe);
        timing_summary(&r->timing, "images", (double)r->written, "images written");
        timing_summary(&r->timing, "wall_us", clock_us() - r->t_start, NULL);
        rc |= timing_close(&r->timing, err, errlen);
        r->timing_open = 0;
    }
    if (r->manifest_open) {
        rc |= manifest_close(&r->manifest, err, errlen);
        r->manifest_open = 0;
    }
    return rc ? -1 : 0;
}

static void cleanup(run_state *r)
{
    if (r->timing_open) atomic_abort(&r->timing.af);
    if (r->manifest_open) atomic_abort(&r->manifest.af);
    close_backend(r);
    free(r->jobs);
    free(r->infos);
    free(r->storage);
    image_set_free(&r->set);
    config_free(&r->cfg);
}

int psfsim_run(const cli_options *o)
{
    run_state r;
    memset(&r, 0, sizeof r);
    r.opt = o;
    r.t_start = clock_us();
    char err[ERRLEN] = "";
    int status = 0;
    int prepared = prepare(&r, err, sizeof err);
    r.t_config = clock_us();
    if (prepared != 0) {
        log_error("%s", err);
        status = 2;
    } else if (start_backend(&r, err, sizeof err, &status) != 0) {
        log_error("%s", err);
    } else if ((r.t_create = clock_us(), start(&r, err, sizeof err)) != 0 ||
               run_batches(&r, err, sizeof err) != 0) {
        log_error("%s", err);
        status = 3;
    }
    char cerr[ERRLEN];
    if (close_logs(&r, cerr, sizeof cerr) != 0) {
        log_error("%s", cerr);
        status = 3;
    }
    if (status == 0)
        log_info("%lld image(s) written to %s in %.3f s", r.written, r.dir,
                 (clock_us() - r.t_start) * 1e-6);
    else if (status == 3 && r.written > 0)
        log_error("%lld of %lld image(s) written; %s/%s_manifest.csv lists them", r.written,
                  r.set.nimages, r.dir, r.cfg.name);
    cleanup(&r);
    return status;
}
