/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/base/host_pool.h"

#include <pthread.h>
#include <stdlib.h>

#define HOST_POOL_MIN_PART 16 /* items: smaller parts cost more to hand out than to do */

struct host_pool {
    pthread_mutex_t mu, run_mu; /* run_mu: one run at a time (lanes share the pool) */
    pthread_cond_t go, done;
    host_pool_fn fn;
    void *ctx;
    int n, nparts, next, left; /* the run: items, parts, next part to take, parts not done */
    long long generation;
    int closing, nthreads;
    pthread_t *threads;
};

/* Part i of [0, n) in nparts. */
static void part(const host_pool *p, int i, int *begin, int *end)
{
    *begin = (int)((long long)p->n * i / p->nparts);
    *end = (int)((long long)p->n * (i + 1) / p->nparts);
}

/* Take and do parts of the current run until none is left (p->mu held on
 * entry and return). */
static void take_parts(host_pool *p)
{
    while (p->next < p->nparts) {
        int i = p->next++, b, e;
        part(p, i, &b, &e);
        pthread_mutex_unlock(&p->mu);
        p->fn(p->ctx, b, e);
        pthread_mutex_lock(&p->mu);
        if (--p->left == 0) pthread_cond_broadcast(&p->done);
    }
}

static void *helper_main(void *arg)
{
    host_pool *p = arg;
    long long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->closing && p->generation == seen)
            pthread_cond_wait(&p->go, &p->mu);
        if (p->closing) break;
        seen = p->generation;
        take_parts(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

host_pool *host_pool_create(int nthreads)
{
    host_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->run_mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = nthreads > 0 ? calloc((size_t)nthreads, sizeof *p->threads) : NULL;
    for (int i = 0; p->threads && i < nthreads; ++i) {
        if (pthread_create(&p->threads[i], NULL, helper_main, p) != 0) break;
        p->nthreads++;
    }
    return p;
}

void host_pool_run(host_pool *p, int n, host_pool_fn fn, void *ctx)
{
    int nparts = p ? p->nthreads + 1 : 1;
    if (nparts > n / HOST_POOL_MIN_PART) nparts = n / HOST_POOL_MIN_PART;
    if (nparts < 2 || pthread_mutex_trylock(&p->run_mu) != 0) {
        if (n > 0) fn(ctx, 0, n);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->nparts = p->left = nparts;
    p->next = 0;
    p->generation++;
    pthread_cond_broadcast(&p->go);
    take_parts(p);
    while (p->left > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->run_mu);
}

void host_pool_destroy(host_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->closing = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; ++i)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->run_mu);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    free(p);
}
