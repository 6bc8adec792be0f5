/* SPDX-License-Identifier: BSD-3-Clause */
/* The run's report (app/run/run_report.h). */
#include "app/run/run_report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <fftw3.h>

#include "app/base/clock.h"
#include "app/base/log.h"
#include "app/output/outputs.h"
#include "app/select/gpu.h"

void run_report_fill(const run_state *r, int status, const char *err, double wall, rank_report *p)
{
    memset(p, 0, sizeof *p);
    p->status = status;
    p->nwriters = r->nwriters > 0 ? r->nwriters : 1;
    p->local_rank = r->mpi ? r->mpi->local_rank : 0;
    p->device = r->lanes[0].eng.device;
    p->k_begin = r->k_begin;
    p->k_end = r->k_end;
    p->todo = r->todo;
    p->written = r->written;
    p->wall_us = wall;
    p->compute_us = r->compute_us;
    p->metrics_us = r->metrics_us;
    p->png_us = r->png_us;
    p->fits_us = r->fits_us;
    p->wait_us = r->wait_us;
    snprintf(p->host, sizeof p->host, "%s", r->mpi ? r->mpi->host : "");
    snprintf(p->reason, sizeof p->reason, "%.191s", r->e.decision.reason);
    snprintf(p->err, sizeof p->err, "%s", status && err[0] ? err : status ? "see its log" : "");
}

/* Several lanes (GPUs): each one's share of the images and its compute
 * time, in the timing log and with -v (a slower or busier GPU takes fewer). */
static void lane_summary(run_state *r)
{
    if (r->nlanes < 2) return;
    long long all = 0;
    for (int l = 0; l < r->nlanes; ++l)
        all += r->lanes[l].images;
    for (int l = 0; l < r->nlanes; ++l) {
        const run_lane *ln = &r->lanes[l];
        char name[32], note[160];
        snprintf(name, sizeof name, "lane_%d", l);
        snprintf(note, sizeof note, "%s %d: %lld image(s), %.1f%% of this run's, compute %.0f us",
                 ln->eng.ops == &psf_backend_cpu ? "cpu lane" : "GPU", ln->eng.device, ln->images,
                 all ? 100.0 * ln->images / all : 0.0, ln->compute_us);
        timing_summary(&r->timing, name, (double)ln->images, note);
        log_info("%s", note);
    }
}

void run_summary(run_state *r, double wall, const rank_report *rep, int n)
{
    timing_writer *t = &r->timing;
    rank_report sum = rep[0];
    double walls = rep[0].wall_us, writer_time = rep[0].wall_us * rep[0].nwriters;
    for (int i = 1; i < n; ++i) /* the run lasts until its slowest rank is done */
        if (rep[i].wall_us > wall) wall = rep[i].wall_us;
    for (int i = 1; i < n; ++i) {
        sum.written += rep[i].written;
        sum.todo += rep[i].todo;
        sum.compute_us += rep[i].compute_us;
        sum.metrics_us += rep[i].metrics_us;
        sum.png_us += rep[i].png_us;
        sum.fits_us += rep[i].fits_us;
        sum.wait_us += rep[i].wait_us;
        sum.nwriters += rep[i].nwriters;
        walls += rep[i].wall_us;
        writer_time += rep[i].wall_us * rep[i].nwriters;
    }
    if (n == 1) walls = writer_time = 0; /* the plain run's notes, as always */
    char note[512], of[64];
    of[0] = '\0'; /* (an empty format is a clang -Wformat-zero-length error) */
    if (n > 1) snprintf(of, sizeof of, "summed over %d MPI ranks: ", n);
    if (n == 1 && r->nlanes > 1) snprintf(of, sizeof of, "summed over %d GPUs: ", r->nlanes);
    timing_summary(t, "config_load_us", r->t_config - r->t_start, NULL);
    timing_summary(t, "backend_select_us", r->e.select_us, "part of config_load_us");
    timing_summary(t, "backend_create_us", r->t_create - r->t_config, NULL);
    timing_summary(t, "backend", NAN, r->e.decision.reason);
    timing_summary(t, "predicted_cpu_us", r->e.decision.cpu_us, NULL);
    timing_summary(t, "predicted_gpu_us", r->e.decision.gpu_us, NULL);
    timing_summary(t, "probe", NAN, r->e.decision.probe);
    if (r->e.set.opd_map) timing_summary(t, "opd_map_units", NAN, r->e.set.opd_units.what);
    for (int i = 0; i < r->notes.n; ++i) /* the set's warnings, as logged */
        timing_summary(t, "warning", NAN, r->notes.text[i]);
    char cufft[128]; /* the FFT libraries: FFTW always, cuFFT when the GPU module was loaded */
    timing_summary(t, "fftw_version", NAN, fftwf_version);
    timing_summary(t, "cufft_version", NAN,
                   gpu_module_cufft(0, cufft, sizeof cufft) ? cufft : "not loaded");
    snprintf(note, sizeof note, "images written by this run%s", n > 1 ? ", all ranks" : "");
    timing_summary(t, "images", (double)sum.written, note);
    double base = n > 1 ? walls : wall * r->nlanes; /* lanes: each has the wall time */
    snprintf(note, sizeof note, "%s%.1f%% of the wall time", of, 100 * sum.compute_us / base);
    timing_summary(t, "compute_us", sum.compute_us, note);
    snprintf(note, sizeof note, "%s%.1f%% of the wall time", of, 100 * sum.metrics_us / base);
    timing_summary(t, "metrics_us", sum.metrics_us, note);
    double wbase = n > 1 ? writer_time : wall * r->nwriters;
    snprintf(note, sizeof note, "summed over %d writer thread(s)%s: %.1f%% of their time",
             sum.nwriters, n > 1 ? " of all ranks" : "", 100 * sum.png_us / wbase);
    timing_summary(t, "png_encode_write_us", sum.png_us, note);
    snprintf(note, sizeof note, "summed over %d writer thread(s)%s: %.1f%% of their time",
             sum.nwriters, n > 1 ? " of all ranks" : "", 100 * sum.fits_us / wbase);
    timing_summary(t, "fits_encode_write_us", sum.fits_us, note);
    snprintf(note, sizeof note, "%s%.1f%% of the wall time: the compute loop waited for writers",
             of, 100 * sum.wait_us / base);
    timing_summary(t, "wait_for_writers_us", sum.wait_us, note);
    /* Writing bounds the run when the compute loop waited for the writers a
     * tenth of the time or more (they were the slower stage). */
    timing_summary(t, "wall_us", wall,
                   sum.wait_us >= 0.1 * wall * r->nlanes ? "bound by writing" : "bound by compute");
    lane_summary(r);
    if (n == 1) return;
    char lib[128];
    long long u = mpi_split_unit(sum.todo, n);
    snprintf(note, sizeof note,
             "%s; blocks of whole %lld-image units, U = min(%d, ceil(T/K)) (README, Many hosts: "
             "MPI)",
             mpi_library(lib, sizeof lib) ? lib : "MPI", u > 0 ? u : 1, MPI_SPLIT_UNIT);
    timing_summary(t, "mpi_ranks", (double)n, note);
    for (int i = 0; i < n; ++i) { /* rank_R: its wall time, block, host and backend */
        char name[32], block[64];
        const rank_report *p = &rep[i];
        snprintf(name, sizeof name, "rank_%d", i);
        if (p->todo > 0)
            snprintf(block, sizeof block, "images %lld-%lld", p->k_begin, p->k_end - 1);
        else
            snprintf(block, sizeof block, "no images");
        snprintf(note, sizeof note,
                 "%s, %lld written, host %s, local rank %d (GPU %d if used), %.150s%s%.120s", block,
                 p->written, p->host, p->local_rank, p->device, p->reason,
                 p->status ? "; failed: " : "", p->status ? p->err : "");
        timing_summary(t, name, p->wall_us, note);
    }
}

void run_report(const run_state *r, int status, long long written)
{
    char who[96] = "", path[SET_PATH_MAX];
    if (r->mpi && r->todo > 0)
        snprintf(who, sizeof who, "rank %d (images %lld-%lld): ", r->mpi->rank, r->k_begin,
                 r->k_end - 1);
    else if (r->mpi)
        snprintf(who, sizeof who, "rank %d: ", r->mpi->rank);
    if (atomic_load(&r->dir_gone) && run_is_root(r))
        log_error("the output directory %s was removed during the run; %lld image(s) were lost",
                  r->dir, written + r->resume.ndone);
    else if (r->interrupted && r->mpi)
        log_error("%sinterrupted: %lld of its %lld image(s) written; rerun with --resume to "
                  "finish",
                  who, written, r->todo);
    else if (r->interrupted && r->e.cfg.fits_enabled && r->e.cfg.fits_cube)
        log_error("interrupted: the FITS cube is incomplete and was not written; rerun with "
                  "--resume to compute the set again");
    else if (r->interrupted)
        log_error("interrupted: %lld of %lld image(s) written; rerun with --resume to finish",
                  written + r->resume.ndone, r->e.set.nimages);
    else if (!run_is_root(r))
        return; /* rank 0 reports the set */
    else if (status == 0)
        log_info("%lld image(s) written to %s in %.3f s", written, r->dir,
                 (clock_us() - r->t_start) * 1e-6);
    else if (status == 3 && (r->manifest.j.lost || r->timing.j.lost))
        log_error("files of the set were removed from %s during the run (its manifest or timing "
                  "log among them): the set is incomplete and nothing lists its images; rerun "
                  "with --force to make it again",
                  r->dir);
    else if (status == 3 && r->manifest_open + written > 0)
        log_error("%lld of %lld image(s) written; %s lists them", written + r->resume.ndone,
                  r->e.set.nimages,
                  outputs_set_file(r->dir, r->e.cfg.name, SET_MANIFEST, path, sizeof path));
}
