/* SPDX-License-Identifier: BSD-3-Clause */
/* One batch on a lane (lib/engine/batch.h). */
#include "lib/engine/batch.h"

#include <stdio.h>

#include "app/base/clock.h"
#include "app/select/gpu_list.h"

#define BATCH_ERRLEN 1024

/* Batch b on lane ln's backend as it is now: run_levels into b->levels
 * and b->measures when b->on_levels, else run into b->images. 0, or
 * ENGINE_RUN_FAILED with the backend's message in err. The one call of a
 * backend's run outside the probe; only through engine_lane_run_or_fall_back,
 * so that no caller skips the GPU-failure rule. */
static int engine_lane_run(engine_lane *ln, const engine_batch *b, char *err, size_t errlen)
{
    int rc =
        b->on_levels
            ? ln->ops->run_levels(ln->backend, b->jobs, b->n, b->levels, b->measures, err, errlen)
        : b->measured && ln->ops->run_measured
            ? ln->ops->run_measured(ln->backend, b->jobs, b->n, b->images, b->measures, err, errlen)
            : ln->ops->run(ln->backend, b->jobs, b->n, b->images, err, errlen);
    return rc == 0 ? 0 : ENGINE_RUN_FAILED;
}

/* h->buffer, then the run, timed. */
static int try_run(engine_lane *ln, engine_batch *b, const engine_batch_hooks *h, double *run_us,
                   char *err, size_t errlen)
{
    int rc = h->buffer ? h->buffer(h->user, ln, b, err, errlen) : 0;
    if (rc != 0) return rc;
    double t0 = clock_us();
    if (engine_lane_run(ln, b, err, errlen) != 0) return ENGINE_RUN_FAILED;
    if (run_us) *run_us = clock_us() - t0;
    return 0;
}

int engine_lane_run_or_fall_back(engine_lane *ln, engine_batch *b, const engine_batch_hooks *h,
                                 double *run_us, char *err, size_t errlen)
{
    int rc = try_run(ln, b, h, run_us, err, errlen);
    if (rc != ENGINE_RUN_FAILED || ln->ops == &psf_backend_cpu) return rc;
    char why[BATCH_ERRLEN];
    snprintf(why, sizeof why, "%s", err);
    rc = h->fall_back(h->user, ln, why, err, errlen);
    if (rc != 0) return rc;
    return try_run(ln, b, h, run_us, err, errlen);
}

/* One lane's part of engine_run. */
typedef struct {
    engine_lane *ln;
    int l;
    engine_queue *q;
    const engine_sink *sink;
    int slot;     /* the batch's slot now */
    long long k0; /* its first image */
    pthread_t thread;
    char err[BATCH_ERRLEN];
} lane_run;

static int sink_buffer(void *user, engine_lane *ln, engine_batch *b, char *err, size_t errlen)
{
    (void)ln;
    lane_run *r = user;
    return r->sink->buffer(r->sink->user, r->l, r->slot, r->k0, b, err, errlen);
}

static int sink_fall_back(void *user, engine_lane *ln, const char *why, char *err, size_t errlen)
{
    (void)ln;
    lane_run *r = user;
    return r->sink->fall_back(r->sink->user, r->l, r->slot, why, err, errlen);
}

/* The next batch's jobs from the queue into slot r->slot, cap at most
 * (r->k0: its first image). Returns how many, *rc 0; or *rc a job's code
 * with err. */
static int take(lane_run *r, int cap, int *rc, char *err, size_t errlen)
{
    engine_queue *q = r->q;
    const engine_sink *sk = r->sink;
    int nb = 0;
    *rc = 0;
    pthread_mutex_lock(q->mu);
    r->k0 = q->next;
    while (nb < cap && q->next < q->end) {
        long long k = q->next++;
        if (q->skip && q->skip[k]) continue;
        if (nb == 0) r->k0 = k;
        *rc = sk->job(sk->user, r->l, r->slot, nb, k, err, errlen);
        if (*rc != 0) break;
        nb++;
    }
    pthread_mutex_unlock(q->mu);
    return nb;
}

/* Lane r's loop: 0 when the queue is empty, the lanes stopped or the sink
 * stopped the lane; else the failure's code with err. */
static int lane_loop(lane_run *r, char *err, size_t errlen)
{
    const engine_sink *sk = r->sink;
    int nslots = sk->slots ? sk->slots(sk->user, r->l) : 1;
    engine_batch_hooks h = {.buffer = sink_buffer, .fall_back = sink_fall_back, .user = r};
    for (int s = 0;; s = (s + 1) % nslots) {
        r->slot = s;
        int cap = 0, rc;
        if (sk->next && (rc = sk->next(sk->user, r->l, s, &cap, err, errlen)) != 0) return rc;
        if (atomic_load(&r->q->failed) || (sk->stop && sk->stop(sk->user))) return 0;
        int nb = take(r, cap, &rc, err, errlen);
        if (rc != 0) return rc;
        if (nb == 0) return 0;
        if (sk->taken) sk->taken(sk->user, r->l, s, r->k0, nb);
        engine_batch b = {.jobs = NULL, .n = nb};
        double run_us = 0, t0 = clock_us();
        rc = engine_lane_run_or_fall_back(r->ln, &b, &h, &run_us, err, errlen);
        if (rc != 0) return rc;
        double us = clock_us() - t0;
        rc = sk->done(sk->user, r->l, s, r->k0, nb, run_us, us, err, errlen);
        if (rc == 1) return 0;
        if (rc != 0) return rc;
    }
}

static void *lane_main(void *arg)
{
    lane_run *r = arg;
    r->err[0] = '\0';
    int rc = lane_loop(r, r->err, sizeof r->err);
    if (rc != 0) atomic_store(&r->q->failed, 1);
    if (r->sink->end) r->sink->end(r->sink->user, r->l, rc, r->err);
    return NULL;
}

void engine_run(engine_lane *const *lanes, int n, engine_queue *q, const engine_sink *sink)
{
    lane_run runs[GPU_LIST_MAX];
    int started[GPU_LIST_MAX] = {0};
    if (n > GPU_LIST_MAX) n = GPU_LIST_MAX;
    for (int l = 0; l < n; ++l)
        runs[l] = (lane_run){.ln = lanes[l], .l = l, .q = q, .sink = sink};
    for (int l = 1; l < n; ++l) {
        started[l] = pthread_create(&runs[l].thread, NULL, lane_main, &runs[l]) == 0;
        if (!started[l] && sink->no_thread) sink->no_thread(sink->user, l);
    }
    lane_main(&runs[0]); /* the first lane on this thread */
    for (int l = 1; l < n; ++l)
        if (started[l]) pthread_join(runs[l].thread, NULL);
}
