/* SPDX-License-Identifier: BSD-3-Clause */
/* What a psfsim_set holds (lib/psfsim.h), shared by the library's files:
 * open.c (open, close, the library's lock and message sink), query.c,
 * lanes.c (the backends), compute.c and header.c. Not installed. */
#ifndef PSFSIM_LIB_SET_PRIV_H
#define PSFSIM_LIB_SET_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "lib/engine/engine.h"
#include "lib/engine/lanes.h"
#include "lib/psfsim.h"

#define LIB_ERRLEN 1024
#define LIB_MAX_LANES GPU_LIST_MAX
/* psfsim_options.threads at most (the command's --jobs bound) */
#define LIB_MAX_THREADS 1024

/* One computing device: the engine's lane (lib/engine/lanes.h: its
 * backend, made at the first compute), and its batch's jobs. */
typedef struct {
    engine_lane eng;   /* ops: the backend now (after a GPU failure: the CPU) */
    psf_job *jobs;     /* [batch] */
    image_info *infos; /* [batch] */
    double *storage;   /* [batch * image_set_storage] */
    float *scratch;    /* [batch * M * M] from ops->alloc_images: the GPU's and the u16
                        * path's floats (compute.c's batch_buffer), or a levels run's levels */
    double *measures;  /* [batch * PSF_MEASURES]: a levels run's measures (backend/levels.h) */
} lib_lane;

/* Images a CPU thread computes in one slot of a batch at least (lib/lanes.c,
 * cpu_batch; lib/compute.c, lane_slots): the threads that finish a slot
 * first wait for its last image, half an image each on average, so 4 a
 * thread left 16 threads an eighth of their time idle, 16 a thirty-second
 * (issue 27). */
#define LIB_CPU_SLOT_IMAGES 16

struct psfsim_set {
    engine e;    /* the set opened (lib/engine/engine.h): config, image set, decision */
    int threads; /* psfsim_options.threads */
    int batch;   /* images per run() call */
    /* psfsim_compute_u16 by run_levels (issue 17): 0 never (PSFSIM_LEVELS=off,
     * or a set image_set_levels_stretch refuses), 1 on GPU lanes, 2 on every
     * lane (PSFSIM_LEVELS=on: the CPU's too, for tests). Set by lib_lanes_start. */
    int levels_lanes;
    engine_lanes el; /* what the lanes are made for (lib_lanes_start) */
    lib_lane lanes[LIB_MAX_LANES];
    int nlanes;            /* lanes started (0 until the first compute) */
    double *query_storage; /* image_set_storage doubles for the queries */
    psfsim_progress_fn progress;
    void *progress_user;
    atomic_int cancel;     /* psfsim_cancel: the next batch boundary stops */
    atomic_flag busy;      /* a call is using the set (lib_enter): the lanes, the backends'
                              FFT plans and buffers, query_storage are one call's at a time */
    struct vjp_cache *vjp; /* the gradients' models kept (lib/vjp_cache.c), or NULL */
    void *vjp_gpu;         /* lib/vjp_gpu.c's kept state (the GPU's gradients), or NULL */
};

/* Free a set's gradient models (lib/vjp_cache.c); NULL is harmless. */
void vjp_cache_free(struct vjp_cache *c);

/* The library's lock: held for what is process-wide (the FFT planner,
 * the GPU module, the probe), never while computing. */
void lib_lock(void);
void lib_unlock(void);

/* Route the logger to the message handler (status.c): every entry point
 * that may log calls it first, so that the library never prints. */
void lib_messages_init(void);

/* snprintf into err (NULL or errlen 0: nothing); returns status. */
int lib_fail(char *err, size_t errlen, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Take set s for the call named what ("psfsim_compute"): PSFSIM_OK (then
 * lib_leave(s) when it returns), or PSFSIM_ERR_BUSY with err when another
 * call holds it; a second call is refused, not queued, so that a progress
 * callback computing on its own set fails rather than deadlocks. */
int lib_enter(psfsim_set *s, const char *what, char *err, size_t errlen);
void lib_leave(psfsim_set *s);

/* [first, first + count) inside [0, K): PSFSIM_OK or PSFSIM_ERR_RANGE. */
int lib_check_range(const psfsim_set *s, long long first, long long count, char *err,
                    size_t errlen);

/* The set's CPU threads: psfsim_options.threads, 0 one per CPU (lanes.c). */
int lib_cpu_threads(const psfsim_set *s);

/* Start the lanes if they are not (lanes.c): the backend of the decision
 * on each of its devices, the CPU when an "auto" GPU cannot start.
 * PSFSIM_OK, or PSFSIM_ERR_BACKEND / _COMPUTE / _MEMORY with err. */
int lib_lanes_start(psfsim_set *s, char *err, size_t errlen);

/* Lane ln's GPU failed with why: say so, and put the CPU in its place
 * (under the lock). PSFSIM_OK or an error with err. */
int lib_lane_fall_back(psfsim_set *s, lib_lane *ln, const char *why, char *err, size_t errlen);

/* The float buffer of lane ln's batch (made once). PSFSIM_OK or
 * PSFSIM_ERR_MEMORY. */
int lib_lane_scratch(psfsim_set *s, lib_lane *ln, char *err, size_t errlen);

/* Free what the GPU's gradients keep on s (lib/vjp_gpu.c; psfsim_close). */
void vjp_gpu_close(psfsim_set *s);

/* Stop every lane and free its buffers. */
void lib_lanes_stop(psfsim_set *s);

/* Whether bytes > 0 at p are in memory already (a buffer written before:
 * mincore(2) finds its first and last pages resident; lib/resident.c).
 * Streaming images past the cache (psf_job.stream) then saves the read
 * for ownership of each line (a 1,000-image 256^2 set, one thread, 2-core
 * machine: 108 -> 98 us per image); into fresh pages, which the kernel
 * zeroes through the cache as they fault in, it costs (139 -> 171 us). */
int lib_resident(const void *p, size_t bytes);

#endif
