/* SPDX-License-Identifier: BSD-3-Clause */
/* Persistent threads that share the host's per-image work on a batch
 * (checking its pixels, its metrics, copying its rows for NAME.h5) with the
 * thread that computes: at GPU rates this work, one image at a time on one
 * thread, was the bound of a dataset run (bench/RESULTS.md, run 9). Made
 * once per run; a batch is cut in parts that the threads and the caller
 * take in turn. */
#ifndef PSFSIM_HOST_POOL_H
#define PSFSIM_HOST_POOL_H

typedef struct host_pool host_pool;

/* fn(ctx, begin, end): the work of items [begin, end); parts of one run
 * are disjoint and may run at the same time on different threads. */
typedef void (*host_pool_fn)(void *ctx, int begin, int end);

/* nthreads helper threads (0: none, every run on its caller). NULL when
 * out of memory; fewer helpers when a thread cannot start. */
host_pool *host_pool_create(int nthreads);

/* fn over [0, n), in parts, on the helpers and this thread; returns when
 * every part is done. p NULL, a small n, or the pool busy with another
 * lane's batch: all of it here, on this thread (same result). */
void host_pool_run(host_pool *p, int n, host_pool_fn fn, void *ctx);

/* Join the helpers and free (p may be NULL). */
void host_pool_destroy(host_pool *p);

#endif
