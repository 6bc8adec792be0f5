/* SPDX-License-Identifier: BSD-3-Clause */
/* What one psfsim run holds (app/run/run.c prepares and closes it, app/run/run_lanes.c
 * starts its lanes, app/run/run_sink.c is its sink of the engine's batch loop), so
 * cleanup is one function. */
#ifndef PSFSIM_RUN_STATE_H
#define PSFSIM_RUN_STATE_H

#include <pthread.h>
#include <stdatomic.h>

#include "app/select/backend_select.h"
#include "app/output/cube_writer.h"
#include "lib/engine/gpu_warmup.h"
#include "app/dataset/hdf5_writer.h"
#include "app/base/host_pool.h"
#include "app/set/image_set.h"
#include "app/set/set_checks.h"
#include "app/output/manifest.h"
#include "app/run/mpi_run.h"
#include "app/base/progress.h"
#include "app/output/resume.h"
#include "app/output/set_dir.h"
#include "app/output/set_members.h"
#include "app/output/timing.h"
#include "app/output/writer_pool.h"
#include "lib/engine/batch.h"
#include "lib/engine/engine.h"
#include "lib/engine/lanes.h"

#define RUN_ERRLEN 1024
/* Host memory one batch of images may take (two batches are in flight);
 * app/run/set_limits.c counts memory with the same figure (backend_batch). */
#define RUN_BATCH_BYTES BACKEND_BATCH_BYTES
/* Images per CPU batch while the GPU starts: small, to switch soon. */
#define RUN_WARM_BATCH 32
/* Computing devices one process drives (every GPU of a host; gpu_list.h). */
#define RUN_MAX_LANES GPU_LIST_MAX

/* An image's scan as the backend took it while writing the image (its
 * psf_job.done hook): the measure needs no pass of its own over it. */
typedef struct {
    psf_image_scan scan;
    int have; /* 0: the backend took none (GPU, detector stage, MFT): measure reads */
} run_scan;

/* One batch buffer and what its images need until they are written. */
typedef struct {
    float *images;     /* batch * N * N, from the backend (pinned for the GPU); N =
                          set_detector_backend_npix (detector.write = "both": the grid) */
    float *det_images; /* "both": batch * M * M, the detector images made from them; else NULL */
    image_info *over_infos; /* "both": batch, the oversampled images' infos; else NULL */
    psf_job *jobs;
    unsigned short *levels; /* batch * N * N: output.hdf5's uint16 stretch levels, else NULL */
    double *measures;       /* levels sets (run_state.levels): batch * PSF_MEASURES, else NULL */
    int on_levels; /* the batch came as levels (run_levels, into images' memory) and measures */
    image_info *infos;
    double *storage; /* image_set_storage doubles per image */
    image_result *results;
    image_timing *timings;
    write_job *writes;
    char *labels;    /* batch * manifest_label_bytes: each image's manifest label cells */
    run_scan *scans; /* batch: the backend's scan of each image (psf_job.done), if it took one */
    int count;       /* images in the batch now (0 = free) */
} run_slot;

/* The run's settings, copied once from the command line (app/run/run.c):
 * what the run's steps read of it. */
typedef struct {
    const char *config_path; /* -c FILE */
    const char *output_dir;  /* -o DIR, NULL = the config's output.dir */
    backend_choice backend;  /* --backend, when backend_given */
    int backend_given;
    int force;     /* --force: replace an existing image set */
    int resume;    /* --resume: compute only the images an earlier run did not finish */
    int quiet;     /* -q: no progress line */
    int jobs;      /* -j: writer threads, 0 = one per CPU */
    gpu_list gpus; /* --gpus */
} run_settings;

typedef struct run_state run_state;

/* One computing device (a lane): its backend and its WRITER_SLOTS batch
 * buffers (r->slots[first_slot ..]). A one-device run has one lane, run
 * by the main thread; with several GPUs each lane has a thread, and all
 * take their batches from one queue (r->queue), so a slower device takes
 * fewer (issue 7). */
typedef struct {
    engine_lane eng;  /* its device and backend (lib/engine/lanes.h; ops: the backend
                         running now, after a fallback the CPU) */
    int first_slot;   /* its slots: r->slots[first_slot .. first_slot + WRITER_SLOTS) */
    int retiring;     /* a GPU lane that failed: it finishes its batch and stops
                         while another GPU lane is alive */
    long long images; /* images it computed */
    double compute_us;
    int rc; /* its loop's result (engine_sink.end): 0, or -1 with err */
    char err[RUN_ERRLEN];
} run_lane;

struct run_state {
    run_settings opt;
    const mpi_world *mpi; /* an MPI run of more than one rank (app/run/mpi_run.h), else NULL */
    engine e;             /* the set opened: config, image set, fingerprint, decision */
    set_notes notes;      /* the set's warnings (app/set/set_checks.h): logged, and timing rows */
    const char *dir;      /* the output directory as given (messages) */
    set_dir out;          /* that directory, opened once: every file goes through out.fd */
    int locked_early;     /* prepare() took the set's lock (its lock file was there) */
    set_members earlier;  /* --force: the files of the set it replaces (app/output/set_members.h) */
    int refused;          /* start() found the set in use (or, when the directory or its lock
                             file was made meanwhile, already written): exit 2 */
    atomic_int dir_gone;  /* the output directory was removed under the run (set_dir_gone):
                             the set is lost, exit 3 (run_report says so) */
    resume_state resume;
    int batch;
    /* The levels output (image_set_levels_out), bits 0 for none; which
     * lanes use it (levels_lanes): 1 the GPU's, 2 every lane, the CPU's
     * too (PSFSIM_LEVELS=on, tests), 0 none (PSFSIM_LEVELS=off). */
    psf_levels_out levels;
    int levels_lanes;
    engine_lanes el; /* what the lanes' backends are made for (run_start_backend) */
    run_lane lanes[RUN_MAX_LANES];
    int nlanes;
    run_slot slots[RUN_MAX_LANES * WRITER_SLOTS];
    pthread_mutex_t mu;    /* with several lanes: the queue, the journals, the totals */
    engine_queue queue;    /* the image indices the lanes take (engine_run; its failed:
                              a lane failed, the others stop) */
    atomic_int gpus_alive; /* GPU lanes not failed */
    gpu_warmup warm;       /* the GPU being created while the CPU starts the set */
    int warming;
    writer_pool *writers;
    int nwriters;
    host_pool *host; /* the per-image host work's helper threads (app/base/host_pool.h) */
    manifest_writer manifest;
    timing_writer timing;
    int manifest_open, timing_open;
    cube_writer cube; /* output.fits.cube */
    int cube_open;
    hdf5_writer *h5; /* output.hdf5's NAME.h5 (app/run/run_dataset.h), NULL when not open */
    int h5_kept;     /* --resume found NAME.h5 complete: it is kept as it is */
    progress bar;
    long long todo;           /* images this run computes (all, or the missing ones; with
                                 MPI, this rank's block of them) */
    long long k_begin, k_end; /* the image indices this process covers, [k_begin, k_end):
                                 the whole set, or this rank's block (mpi_split) */
    long long written;        /* of those, written so far */
    int interrupted;          /* the signal that stopped the run, or 0 */
    /* stage totals, microseconds */
    double t_start, t_config, t_create;
    double compute_us, metrics_us, png_us, fits_us, write_busy_us, wait_us;
};

/* 1 for a plain run and for MPI's rank 0: the process that checks the
 * output directory, creates the journals and reports the set. */
static inline int run_is_root(const run_state *r)
{
    return !r->mpi || r->mpi->rank == 0;
}

#endif
