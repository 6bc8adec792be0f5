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

/* A batch taken into a slot: its first image k0 and n images (0: the
 * queue was empty), or rc a job's code with err. */
typedef struct {
    lane_run *r;
    int slot, cap, n, rc;
    long long k0;
    pthread_t thread;
    int started;
    char err[BATCH_ERRLEN];
} taken_batch;

/* The next batch's jobs from the queue into t->slot, t->cap at most. */
static void take(taken_batch *t)
{
    engine_queue *q = t->r->q;
    const engine_sink *sk = t->r->sink;
    t->n = t->rc = 0;
    t->err[0] = '\0';
    pthread_mutex_lock(q->mu);
    t->k0 = q->next;
    while (t->n < t->cap && q->next < q->end) {
        long long k = q->next++;
        if (q->skip && q->skip[k]) continue;
        if (t->n == 0) t->k0 = k;
        t->rc = sk->job(sk->user, t->r->l, t->slot, t->n, k, t->err, sizeof t->err);
        if (t->rc != 0) break;
        t->n++;
    }
    pthread_mutex_unlock(q->mu);
}

static void *take_main(void *arg)
{
    take(arg);
    return NULL;
}

/* Before slot s takes a batch: sink->next (its cap), then whether the
 * lanes stop. 1 to go on, 0 to stop, or -1 with *rc and err. */
static int prepare(lane_run *r, taken_batch *t, int s, int *rc, char *err, size_t errlen)
{
    const engine_sink *sk = r->sink;
    *t = (taken_batch){.r = r, .slot = s};
    if (sk->next && (*rc = sk->next(sk->user, r->l, s, &t->cap, err, errlen)) != 0) return -1;
    return !atomic_load(&r->q->failed) && !(sk->stop && sk->stop(sk->user));
}

/* Whether q has no index left to hand out. */
static int queue_empty(engine_queue *q)
{
    pthread_mutex_lock(q->mu);
    int empty = q->next >= q->end;
    pthread_mutex_unlock(q->mu);
    return empty;
}

/* Slot s's next batch taken: on a thread of its own when ahead (and one
 * starts), else here (joined by take_join). */
static void take_start(taken_batch *t, int ahead)
{
    t->started = ahead && pthread_create(&t->thread, NULL, take_main, t) == 0;
    if (!t->started) take(t);
}

/* Slot s's next batch: prepare, then take_start (on a thread of its own
 * when on_thread and the queue is not empty). prepare's result. */
static int take_next(lane_run *r, taken_batch *t, int s, int on_thread, int *rc, char *err,
                     size_t errlen)
{
    int go = prepare(r, t, s, rc, err, errlen);
    if (go > 0) take_start(t, on_thread && !queue_empty(r->q)); /* none to take: no thread */
    return go;
}

static int take_join(taken_batch *t, char *err, size_t errlen)
{
    if (t->started) pthread_join(t->thread, NULL);
    t->started = 0;
    if (t->rc != 0) snprintf(err, errlen, "%s", t->err);
    return t->rc;
}

/* Lane r's loop: 0 when the queue is empty, the lanes stopped or the sink
 * stopped the lane; else the failure's code with err. A lane whose sink
 * says ahead (two slots) takes its next batch, the sink's jobs, on a
 * thread of its own while this one runs: a CPU lane's threads would
 * otherwise wait for them (1-2 us an image against 16 threads' 18 us).
 * Its other slot is made free (sink->next) before the batch in hand
 * runs, and a stop seen then drops that batch: a stop still takes effect
 * at the next batch boundary. */
static int lane_loop(lane_run *r, char *err, size_t errlen)
{
    const engine_sink *sk = r->sink;
    int nslots = sk->slots ? sk->slots(sk->user, r->l) : 1;
    int ahead = nslots == 2 && sk->ahead && sk->ahead(sk->user, r->l);
    engine_batch_hooks h = {.buffer = sink_buffer, .fall_back = sink_fall_back, .user = r};
    taken_batch t[2];
    int rc = 0, go = take_next(r, &t[0], 0, 0, &rc, err, errlen);
    if (go <= 0) return go < 0 ? rc : 0;
    for (int s = 0, n = (s + 1) % nslots;; s = n, n = (s + 1) % nslots) {
        if ((rc = take_join(&t[s], err, errlen)) != 0) return rc;
        if (t[s].n == 0) return 0;
        if (ahead && (go = take_next(r, &t[n], n, 1, &rc, err, errlen)) <= 0)
            return go < 0 ? rc : 0;
        r->slot = s;
        r->k0 = t[s].k0;
        if (sk->taken) sk->taken(sk->user, r->l, s, r->k0, t[s].n);
        engine_batch b = {.jobs = NULL, .n = t[s].n};
        double run_us = 0, t0 = clock_us();
        rc = engine_lane_run_or_fall_back(r->ln, &b, &h, &run_us, err, errlen);
        double us = clock_us() - t0;
        int stop = 0; /* done's 1: the lane stops, no failure */
        if (rc == 0 &&
            (rc = sk->done(sk->user, r->l, s, r->k0, t[s].n, run_us, us, err, errlen)) == 1)
            rc = 0, stop = 1;
        if ((rc != 0 || stop) && ahead) (void)take_join(&t[n], NULL, 0); /* its batch dropped */
        if (rc != 0 || stop) return rc;
        if (!ahead && (go = take_next(r, &t[n], n, 0, &rc, err, errlen)) <= 0)
            return go < 0 ? rc : 0;
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
