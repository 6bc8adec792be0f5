/* SPDX-License-Identifier: BSD-3-Clause */
/* The psfsim run (app/run/run.h), its steps in order: prepare (config, set,
 * checks, backend choice; with MPI agree and split, app/run/run_ranks.c),
 * start the backend (app/run/run_lanes.c), create the set's files
 * (app/run/set_files.c) and the writers, run the image loop (app/run/run_sink.c),
 * close the files, report (app/run/run_report.c), clean up. */
#include "app/run/run.h"
#include "backend/cpu_count.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/base/clock.h"
#include "app/base/interrupt.h"
#include "app/base/log.h"
#include "app/output/fits_header.h"
#include "app/formats/fits.h"
#include "app/formats/h5set.h"
#include "app/run/run_lanes.h"
#include "app/run/run_sink.h"
#include "app/run/run_ranks.h"
#include "app/run/run_report.h"
#include "app/run/run_state.h"
#include "app/run/set_files.h"
#include "app/run/set_limits.h"

/* An existing output directory is opened, and the set's lock taken when
 * its lock file is there, before anything of the set is read: a set in use
 * by another run is refused (exit 2) untouched. Else the lock is taken in
 * start() (set_files_create), where a failure to make the lock file is a
 * run-time one; here only --resume fails on a directory it cannot open. */
/* The command that reproduces the images, for the FITS HISTORY: psfsim
 * -c CONFIG (bytes outside printable ASCII as '?'). The options that change
 * no image beyond the backends' tolerance (-o, -j, --backend, --gpus,
 * --force, --resume, -q, -v) are left out, so that the files do not depend
 * on them (e2e_lanes, e2e_resume and e2e_gpu_fallback compare them byte for
 * byte); the BACKEND card says who computed each image. */
static void run_command_line(const run_settings *o, char *out, size_t outlen)
{
    snprintf(out, outlen, "psfsim -c %s", o->config_path ? o->config_path : "");
    for (char *p = out; *p; ++p)
        if (*p < 32 || *p > 126) *p = '?';
}

static int lock_early(run_state *r, char *err, size_t errlen)
{
    int there = set_dir_open(&r->out, 0, err, errlen);
    if (there != 0) return there < 0 && r->opt.resume ? -1 : 0;
    char lerr[RUN_ERRLEN];
    int rc = set_dir_lock(&r->out, r->e.cfg.name, 0, lerr, sizeof lerr);
    r->locked_early = rc == 0;
    if (rc != SET_DIR_BUSY) return 0;
    snprintf(err, errlen, "%s", lerr);
    return -1;
}

/* The command's own steps of opening the set (engine_open_args.step), in
 * the order of its checks: after the config is loaded, the output
 * directory and MPI's refusals; after the fingerprint, the modules its
 * files need; after the image set, its command line, FITS header and
 * warnings, the directory's lock, --resume or the outputs' check, the
 * limits. 0, or -1 with err. */
static int prepare_step(void *user, engine *e, engine_at at, char *err, size_t errlen)
{
    run_state *r = user;
    const run_settings *o = &r->opt;
    if (at == ENGINE_AT_LOADED) {
        r->dir = o->output_dir ? o->output_dir : e->cfg.output_dir;
        set_dir_init(&r->out, r->dir);
        if (r->mpi && e->cfg.fits_enabled && e->cfg.fits_cube) {
            snprintf(err, errlen,
                     "%s: output.fits.cube: one cube file cannot be written by %d MPI ranks; run "
                     "this set as one process",
                     o->config_path, r->mpi->size);
            return -1;
        }
        if (r->mpi && e->cfg.hdf5_enabled) {
            snprintf(err, errlen,
                     "%s: output.hdf5: one HDF5 file cannot be written by %d MPI ranks; run this "
                     "set as one process",
                     o->config_path, r->mpi->size);
            return -1;
        }
        return 0;
    }
    if (at == ENGINE_AT_HASHED) {
        /* FITS output needs the FITS module: a psfsim without it says so before
         * any work (exit 2, nothing written), not after the first image. */
        char ferr[RUN_ERRLEN];
        if (e->cfg.fits_enabled && fits_module_load(ferr, sizeof ferr) != 0) {
            snprintf(err, errlen, "%s: output.fits: %.900s", o->config_path, ferr);
            return -1;
        }
        if (e->cfg.hdf5_enabled && hdf5_module_load(ferr, sizeof ferr) != 0) {
            snprintf(err, errlen, "%s: output.hdf5: %.900s", o->config_path, ferr);
            return -1;
        }
        return 0;
    }
    run_command_line(o, e->set.command, sizeof e->set.command);
    if (fits_header_check(&e->set, err, errlen) != 0) return -1;
    set_checks_warn(&e->set, &r->notes);
    for (int i = 0; i < r->notes.n && run_is_root(r); ++i)
        log_warn("%s", r->notes.text[i]);
    if (run_is_root(r) && lock_early(r, err, errlen) != 0) return -1;
    if (o->resume) {
        if (resume_load(&e->cfg, r->out.fd, r->dir, e->set.nimages, e->hash, &r->resume, err,
                        errlen) != 0)
            return -1;
        if (resume_whole_cube(&r->resume, &e->cfg))
            log_warn("resuming: %s_cube.fits is written whole: every image is computed again",
                     e->cfg.name);
    } else if (run_is_root(r) && outputs_check(&e->cfg, r->dir, o->force, err, errlen) != 0) {
        return -1;
    } else if (o->force && r->out.fd >= 0 &&
               set_members_load(&r->earlier, r->out.fd, &e->cfg, e->set.nimages) != 0) {
        snprintf(err, errlen, "out of memory reading the set %s replaces", r->dir);
        return -1;
    }
    r->todo = e->set.nimages - r->resume.ndone;
    r->k_begin = 0;
    r->k_end = e->set.nimages;
    limits_options lo = {.writers = o->jobs, .force = o->force};
    return limits_check(&e->set, r->dir, &lo, r->todo, err, errlen);
}

/* Load, validate and plan: everything that can fail before a file is written
 * (the engine's opening, lib/engine/engine.h, with the command's steps).
 * With MPI every rank does this (its own backend choice); only rank 0 checks
 * the output directory for an earlier set. */
static int prepare(run_state *r, char *err, size_t errlen)
{
    const run_settings *o = &r->opt;
    engine_open_args args = {.path = o->config_path,
                             .backend_given = o->backend_given,
                             .backend = o->backend,
                             .gpus = &o->gpus,
                             .writers = o->jobs,
                             .count_files = 1,
                             .check_open = 1,
                             .step = prepare_step,
                             .user = r};
    if (engine_open(&r->e, &args, err, errlen) != ENGINE_OK) return -1;
    if (run_is_root(r)) {
        if (r->e.set.mft && r->e.set.pixel_rad > 0)
            log_info("%lld image(s) of %dx%d by MFT (pupil %d samples, pixel %.4g arcsec) into %s",
                     r->e.set.nimages, r->e.set.samp.npix, r->e.set.samp.npix,
                     r->e.set.samp.pupil_samples, r->e.cfg.out_pixel_scale_arcsec, r->dir);
        else if (r->e.set.mft && r->e.set.pixel_um > 0)
            log_info("%lld image(s) of %dx%d by MFT (pupil %d samples, pixel %.4g um) into %s",
                     r->e.set.nimages, r->e.set.samp.npix, r->e.set.samp.npix,
                     r->e.set.samp.pupil_samples, r->e.set.pixel_um, r->dir);
        else if (r->e.set.mft)
            log_info("%lld image(s) of %dx%d by MFT (pupil %d samples, pixel %.4g lambda/D) into "
                     "%s",
                     r->e.set.nimages, r->e.set.samp.npix, r->e.set.samp.npix,
                     r->e.set.samp.pupil_samples, r->e.set.pixel_ld, r->dir);
        else
            log_info("%lld image(s) of %dx%d (pupil %d samples, Q = %.4g) into %s",
                     r->e.set.nimages, r->e.set.samp.npix, r->e.set.samp.npix,
                     r->e.set.samp.pupil_samples, r->e.set.samp.padding, r->dir);
        if (o->resume) log_info("resuming: %lld image(s) done earlier", r->resume.ndone);
    }
    if (!r->mpi) log_info("%s", r->e.decision.reason);
    return 0;
}

/* Create the directory, the journals (with MPI: app/run/run_ranks.h), the cube
 * and the writers. Failures here are run-time failures (exit 3), but no
 * image has been written yet. */
static int start(run_state *r, char *err, size_t errlen)
{
    int rc = r->mpi ? run_ranks_open_journals(r, err, errlen) : set_files_create(r, err, errlen);
    if (rc != 0 || set_files_open_cube(r, err, errlen) != 0) return -1;
    long n = psf_cpu_count();
    if (r->mpi && n > 0) n = n / r->mpi->local_size > 0 ? n / r->mpi->local_size : 1;
    r->nwriters = r->opt.jobs > 0 ? r->opt.jobs : n > 0 ? (int)n : 1;
    if (r->nwriters > r->todo) r->nwriters = r->todo > 0 ? (int)r->todo : 1; /* no idle threads */
    r->writers =
        writer_pool_create(r->nwriters, r->nlanes * WRITER_SLOTS, &r->e.set, r->out.fd, r->dir);
    if (!r->writers) {
        snprintf(err, errlen, "cannot start the writer threads");
        return -1;
    }
    /* helpers for the per-image host work: a core each, up to 16 parts a batch
     * (none left: the work is done on the lane's thread, as before) */
    r->host = host_pool_create((r->nwriters < 16 ? r->nwriters : 16) - 1);
    progress_start(&r->bar, r->todo, !r->opt.quiet);
    return 0;
}

/* Run the image loop on the started backend and writers. Returns the
 * status: 0, 2 (the set in use: start() refused it untouched) or 3 (the
 * error logged). A signal after the last image was
 * handed to the writers stopped nothing: the set is complete, not
 * interrupted (exit 0, no --resume hint). With MPI the other ranks may be
 * gone: left as interrupted. err: this rank's error, "" if none. */
static int compute(run_state *r, char *err, size_t errlen)
{
    int status = 0;
    r->t_create = clock_us();
    err[0] = '\0';
    if (start(r, err, errlen) != 0 || run_images(r, err, errlen) != 0) {
        status = r->refused ? 2 : 3;
        if (err[0] && r->mpi)
            log_error("rank %d (images %lld-%lld): %s", r->mpi->rank, r->k_begin, r->k_end - 1,
                      err);
        else if (err[0])
            log_error("%s", err);
    }
    progress_end(&r->bar, r->written);
    if (r->interrupted && !r->mpi && status == 0 && r->written == r->todo) {
        log_warn("signal received after the last image: the set is complete");
        r->interrupted = 0;
    }
    return status;
}

/* A plain run's end (or an MPI run that never started): the timing log's
 * summary, then the set's files closed; the manifest lists exactly the
 * images written. A failure to close makes *status 3 (logged). */
static void close_set(run_state *r, int *status)
{
    int complete =
        *status == 0 && !r->interrupted && r->written + r->resume.ndone == r->e.set.nimages;
    if (r->timing_open) {
        rank_report me;
        double wall = clock_us() - r->t_start;
        run_report_fill(r, 0, "", wall, &me);
        run_summary(r, wall, &me, 1);
    }
    char cerr[RUN_ERRLEN];
    if (set_dir_gone(&r->out)) { /* nothing left to close into: run_report says so */
        atomic_store(&r->dir_gone, 1);
        set_files_abort(r);
    } else if (set_files_close(r, complete, cerr, sizeof cerr) != 0 && !set_dir_gone(&r->out)) {
        log_error("%s", cerr);
        *status = 3;
    }
    if (set_dir_gone(&r->out)) { /* also when it went while the files were closed */
        atomic_store(&r->dir_gone, 1);
        *status = 3;
    }
}

static void init(run_state *r, const cli_options *o, const mpi_world *w)
{
    memset(r, 0, sizeof *r);
    r->opt = (run_settings){.config_path = o->config_path,
                            .output_dir = o->output_dir,
                            .backend = o->backend,
                            .backend_given = o->backend_given,
                            .force = o->force,
                            .resume = o->resume,
                            .quiet = o->quiet,
                            .jobs = o->jobs,
                            .gpus = o->gpus};
    r->mpi = w && w->active && w->size > 1 ? w : NULL;
    r->t_start = clock_us();
    r->nlanes = 1;
    set_dir_init(&r->out, NULL);
    pthread_mutex_init(&r->mu, NULL);
    interrupt_install();
}

static void cleanup(run_state *r)
{
    if (r->writers) writer_pool_destroy(r->writers);
    host_pool_destroy(r->host);
    r->host = NULL;
    if (r->warming) gpu_warmup_discard(&r->warm);
    set_files_abort(r);
    run_free_lanes(r);
    pthread_mutex_destroy(&r->mu);
    resume_free(&r->resume);
    set_members_free(&r->earlier);
    set_dir_close(&r->out);
    engine_close(&r->e);
}

int psfsim_run(const cli_options *o, const mpi_world *w)
{
    run_state r;
    init(&r, o, w);
    char err[RUN_ERRLEN] = "";
    /* Prepare; with MPI all ranks go on, or none, each with its block. */
    int status = prepare(&r, err, sizeof err) != 0 ? 2 : 0;
    r.t_config = clock_us();
    run_ranks_agree(&r, &status, err);
    if (status == 0 && r.mpi && run_ranks_split(&r, err, sizeof err) != 0) {
        log_error("rank %d: %s", r.mpi->rank, err);
        status = 3;
    }
    /* Start the backend: nothing is written unless every rank has its own. */
    if (status == 0) {
        err[0] = '\0';
        run_start_backend(&r, err, sizeof err, &status);
        run_ranks_agree(&r, &status, err);
    }
    /* A signal before the first file is made: stop, nothing written (with
     * MPI the ranks stop in the loop, where they agree). */
    if (status == 0 && !r.mpi && interrupt_pending()) {
        log_error("interrupted before any file was written");
        status = 130;
    }
    /* Run the loop: the files, the writers, the images. */
    int started = status == 0; /* with MPI: every rank, or none */
    if (started) status = compute(&r, err, sizeof err);
    /* Close the set's files (with MPI: rank 0 gathers the ranks' figures). */
    long long written = r.written;
    if (r.mpi && started)
        run_ranks_finish(&r, &status, err, &written);
    else
        close_set(&r, &status);
    /* Report, then clean up. */
    run_report(&r, status, written);
    if (r.interrupted && status == 0) status = 130;
    /* --force replaced the set: what the earlier one wrote and this one did
     * not (more images, another format) must not pass for part of it. */
    if (status == 0 && o->force && run_is_root(&r))
        outputs_remove_stale(&r.e.cfg, r.out.fd, r.dir, &r.earlier, r.e.set.nimages);
    cleanup(&r);
    return status;
}
