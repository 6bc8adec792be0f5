#include "run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "interrupt.h"
#include "limits.h"
#include "log.h"
#include "run_state.h"

/* Host memory one batch of images may take (two batches are in flight). */
#define BATCH_BYTES (512.0 * 1024 * 1024)

static int batch_size(const psf_backend_ops *ops, int npix, long long nimages)
{
    double per = (double)npix * npix * sizeof(float);
    long long b = (long long)(BATCH_BYTES / per);
    if (b > ops->preferred_batch) b = ops->preferred_batch;
    if (b > nimages) b = nimages;
    return b < 1 ? 1 : (int)b;
}

static int alloc_slots(run_state *r, char *err, size_t errlen)
{
    size_t per = image_set_storage(&r->set), b = (size_t)r->batch;
    for (int s = 0; s < WRITER_SLOTS; ++s) {
        run_slot *sl = &r->slots[s];
        sl->jobs = calloc(b, sizeof *sl->jobs);
        sl->infos = calloc(b, sizeof *sl->infos);
        sl->storage = calloc(b * per, sizeof *sl->storage);
        sl->results = calloc(b, sizeof *sl->results);
        sl->timings = calloc(b, sizeof *sl->timings);
        sl->writes = calloc(b, sizeof *sl->writes);
        if (!sl->jobs || !sl->infos || !sl->storage || !sl->results || !sl->timings ||
            !sl->writes) {
            snprintf(err, errlen, "cannot allocate the job list of a batch of %d images", r->batch);
            return -1;
        }
    }
    return 0;
}

/* auto chose the GPU for a set big enough to repay it: create the GPU in a
 * thread while the CPU computes the first batches (app/gpu_warmup.h). */
static int start_warm(run_state *r, char *err, size_t errlen)
{
    psf_set_desc desc;
    image_set_desc(&r->set, r->batch, &desc);
    size_t floats = (size_t)r->batch * r->set.samp.npix * r->set.samp.npix;
    if (gpu_warmup_start(&r->warm, r->decision.ops, &desc, floats) != 0) return -1;
    if (run_open_backend(r, &psf_backend_cpu, err, errlen) != 0) {
        gpu_warmup_discard(&r->warm);
        run_close_backend(r);
        return -1;
    }
    r->warming = 1;
    log_info("starting the GPU in the background; the CPU computes the first images");
    return 0;
}

/* Start the chosen backend. A forced GPU that cannot start is a usage error
 * (exit 2, nothing written); with auto the CPU takes over. */
static int start_backend(run_state *r, char *err, size_t errlen, int *status)
{
    r->batch = batch_size(r->decision.ops, r->set.samp.npix, r->todo);
    *status = 3;
    if (alloc_slots(r, err, errlen) != 0) return -1;
    if (r->decision.ops != &psf_backend_cpu && r->cfg.backend == BACKEND_AUTO &&
        r->todo > 2 * RUN_WARM_BATCH && start_warm(r, err, errlen) == 0) {
        *status = 0;
        return 0;
    }
    if (run_open_backend(r, r->decision.ops, err, errlen) == 0) {
        *status = 0;
        return 0;
    }
    run_close_backend(r);
    if (r->decision.ops == &psf_backend_cpu) return -1;
    if (r->cfg.backend == BACKEND_GPU) {
        *status = 2;
        return -1;
    }
    char why[RUN_ERRLEN];
    snprintf(why, sizeof why, "%s", err);
    log_warn("%s; computing the images on the CPU", why);
    snprintf(r->decision.reason, sizeof r->decision.reason, "backend cpu: fallback after: %.200s",
             why);
    if (run_open_backend(r, &psf_backend_cpu, err, errlen) != 0) return -1;
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
    if (config_fingerprint(o->config_path, r->hash, err, errlen) != 0) return -1;
    if (image_set_init(&r->set, &r->cfg, err, errlen) != 0) return -1;
    if (o->resume) {
        if (resume_load(&r->cfg, r->dir, r->set.nimages, r->hash, &r->resume, err, errlen) != 0)
            return -1;
    } else if (outputs_check(&r->cfg, r->dir, o->force, err, errlen) != 0) {
        return -1;
    }
    r->todo = r->set.nimages - r->resume.ndone;
    if (limits_check(&r->set, r->dir, o, r->todo, err, errlen) != 0) return -1;
    if (backend_select(r->cfg.backend, &r->set, o->jobs, &r->decision, err, errlen) != 0)
        return -1;
    log_info("%lld image(s) of %dx%d (pupil %d samples, Q = %.4g) into %s", r->set.nimages,
             r->set.samp.npix, r->set.samp.npix, r->set.samp.pupil_samples, r->set.samp.padding,
             r->dir);
    if (o->resume) log_info("resuming: %lld image(s) done earlier", r->resume.ndone);
    log_info("%s", r->decision.reason);
    return 0;
}

/* Create the directory, the journals and the writers. Failures here are
 * run-time failures (exit 3), but no image has been written yet. */
static int start(run_state *r, char *err, size_t errlen)
{
    if (outputs_make_dir(r->dir, err, errlen) != 0) return -1;
    resume_clean_temps(r->dir, r->cfg.name);
    char path[CFG_PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s_manifest.csv", r->dir, r->cfg.name);
    if (manifest_open(&r->manifest, path, r->hash, r->resume.manifest_rows, r->resume.nmanifest,
                      err, errlen) != 0)
        return -1;
    r->manifest_open = 1;
    snprintf(path, sizeof path, "%s/%s_timing.csv", r->dir, r->cfg.name);
    if (timing_open(&r->timing, path, r->resume.timing_rows, r->resume.ntiming, err, errlen) != 0)
        return -1;
    r->timing_open = 1;
    if (r->cfg.fits_enabled && r->cfg.fits_cube) {
        if (cube_writer_open(&r->cube, &r->set, r->dir, err, errlen) != 0) return -1;
        r->cube_open = 1;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    r->nwriters = r->opt->jobs > 0 ? r->opt->jobs : n > 0 ? (int)n : 1;
    if (r->nwriters > r->todo) r->nwriters = r->todo > 0 ? (int)r->todo : 1; /* no idle threads */
    r->writers = writer_pool_create(r->nwriters, &r->set, r->dir);
    if (!r->writers) {
        snprintf(err, errlen, "cannot start the writer threads");
        return -1;
    }
    progress_start(&r->bar, r->todo, !r->opt->quiet);
    return 0;
}

/* Stage totals and their share of the wall time: what bounds the run. */
static void summary(run_state *r, double wall)
{
    timing_writer *t = &r->timing;
    char note[128];
    timing_summary(t, "config_load_us", r->t_config - r->t_start, NULL);
    timing_summary(t, "backend_create_us", r->t_create - r->t_config, NULL);
    timing_summary(t, "backend", NAN, r->decision.reason);
    timing_summary(t, "predicted_cpu_us", r->decision.cpu_us, NULL);
    timing_summary(t, "predicted_gpu_us", r->decision.gpu_us, NULL);
    timing_summary(t, "probe", NAN, r->decision.probe);
    timing_summary(t, "images", (double)r->written, "images written by this run");
    snprintf(note, sizeof note, "%.1f%% of the wall time", 100 * r->compute_us / wall);
    timing_summary(t, "compute_us", r->compute_us, note);
    snprintf(note, sizeof note, "%.1f%% of the wall time", 100 * r->metrics_us / wall);
    timing_summary(t, "metrics_us", r->metrics_us, note);
    snprintf(note, sizeof note, "summed over %d writer thread(s): %.1f%% of their time",
             r->nwriters, 100 * r->png_us / (wall * r->nwriters));
    timing_summary(t, "png_encode_write_us", r->png_us, note);
    snprintf(note, sizeof note, "summed over %d writer thread(s): %.1f%% of their time",
             r->nwriters, 100 * r->fits_us / (wall * r->nwriters));
    timing_summary(t, "fits_encode_write_us", r->fits_us, note);
    snprintf(note, sizeof note, "%.1f%% of the wall time: the compute loop waited for writers",
             100 * r->wait_us / wall);
    timing_summary(t, "wait_for_writers_us", r->wait_us, note);
    timing_summary(t, "wall_us", wall, r->wait_us > r->compute_us ? "bound by writing"
                                                                  : "bound by compute");
}

/* The cube appears only complete; then the manifest names it. */
static int close_cube(run_state *r, int complete, char *err, size_t errlen)
{
    if (!r->cube_open) return 0;
    r->cube_open = 0;
    if (!complete) {
        cube_writer_abort(&r->cube);
        return 0;
    }
    char name[sizeof r->cube.name];
    snprintf(name, sizeof name, "%s", r->cube.name);
    if (cube_writer_commit(&r->cube, err, errlen) != 0) return -1;
    char path[CFG_PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s_manifest.csv", r->dir, r->cfg.name);
    return manifest_set_fits(path, name, err, errlen);
}

/* Close the journals: the manifest lists exactly the images written. */
static int close_logs(run_state *r, int complete, char *err, size_t errlen)
{
    int rc = 0;
    if (r->timing_open) {
        summary(r, clock_us() - r->t_start);
        rc |= timing_close(&r->timing, err, errlen);
        r->timing_open = 0;
    }
    if (r->manifest_open) {
        rc |= manifest_close(&r->manifest, err, errlen);
        r->manifest_open = 0;
        if (rc == 0) rc |= close_cube(r, complete, err, errlen);
        if (rc == 0 && r->resume.ndone > 0) { /* one sorted set, as an uninterrupted run */
            char path[CFG_PATH_MAX + 300];
            snprintf(path, sizeof path, "%s/%s_manifest.csv", r->dir, r->cfg.name);
            rc |= journal_sort(path, err, errlen);
            snprintf(path, sizeof path, "%s/%s_timing.csv", r->dir, r->cfg.name);
            rc |= journal_sort(path, err, errlen);
        }
    }
    return rc ? -1 : 0;
}

static void cleanup(run_state *r)
{
    char err[RUN_ERRLEN];
    if (r->writers) writer_pool_destroy(r->writers);
    if (r->warming) gpu_warmup_discard(&r->warm);
    if (r->cube_open) cube_writer_abort(&r->cube);
    if (r->timing_open) timing_close(&r->timing, err, sizeof err);
    if (r->manifest_open) manifest_close(&r->manifest, err, sizeof err);
    run_close_backend(r);
    for (int s = 0; s < WRITER_SLOTS; ++s) {
        run_slot *sl = &r->slots[s];
        free(sl->jobs);
        free(sl->infos);
        free(sl->storage);
        free(sl->results);
        free(sl->timings);
        free(sl->writes);
    }
    resume_free(&r->resume);
    image_set_free(&r->set);
    config_free(&r->cfg);
}

static void report(const run_state *r, int status)
{
    if (r->interrupted)
        log_error("interrupted: %lld of %lld image(s) written; rerun with --resume to finish",
                 r->written + r->resume.ndone, r->set.nimages);
    else if (status == 0)
        log_info("%lld image(s) written to %s in %.3f s", r->written, r->dir,
                 (clock_us() - r->t_start) * 1e-6);
    else if (status == 3 && r->manifest_open + r->written > 0)
        log_error("%lld of %lld image(s) written; %s/%s_manifest.csv lists them",
                  r->written + r->resume.ndone, r->set.nimages, r->dir, r->cfg.name);
}

int psfsim_run(const cli_options *o)
{
    run_state r;
    memset(&r, 0, sizeof r);
    r.opt = o;
    r.t_start = clock_us();
    interrupt_install();
    char err[RUN_ERRLEN] = "";
    int status = 0;
    int prepared = prepare(&r, err, sizeof err);
    r.t_config = clock_us();
    if (prepared != 0) {
        log_error("%s", err);
        status = 2;
    } else if (start_backend(&r, err, sizeof err, &status) != 0) {
        log_error("%s", err);
    } else if ((r.t_create = clock_us(), start(&r, err, sizeof err)) != 0 ||
               run_images(&r, err, sizeof err) != 0) {
        log_error("%s", err);
        status = 3;
    }
    progress_end(&r.bar, r.written);
    char cerr[RUN_ERRLEN];
    int complete = status == 0 && !r.interrupted && r.written + r.resume.ndone == r.set.nimages;
    if (close_logs(&r, complete, cerr, sizeof cerr) != 0) {
        log_error("%s", cerr);
        status = 3;
    }
    report(&r, status);
    if (r.interrupted && status == 0) status = 130;
    cleanup(&r);
    return status;
}
