/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim_vjp and psfsim_compute_inputs (lib/psfsim.h, API version 4): the
 * arguments checked (lib/vjp_args.c), then the images through the double
 * model (lib/vjp_image.c), spread over the set's CPU threads. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_count.h"
#include "lib/vjp_priv.h"

/* Most threads a call spreads its images over. */
#define VJP_MAX_THREADS 64

/* One call: the images [first, first + count) handed out in order, each
 * worker thread with its model (its own pupils, plans and buffers) and its
 * own OPD-map gradient, summed at the end. */
typedef struct {
    psfsim_set *set;
    const vjp_args *a;
    long long first, count, next; /* next: under mu */
    const double *cotangent;
    double *images;
    size_t mm, map; /* M M; the OPD map's values (0: no map gradient) */
    pthread_mutex_t mu;
    int rc; /* the first failure, under mu */
    char err[LIB_ERRLEN];
} vjp_work;

typedef struct {
    vjp_work *w;
    vjp_args a;  /* the call's, its OPD gradient this worker's */
    double *opd; /* [map] this worker's OPD-map gradient */
    pthread_t thread;
    int started;
} vjp_worker;

static void *worker_run(void *arg)
{
    vjp_worker *k = arg;
    vjp_work *w = k->w;
    char err[LIB_ERRLEN];
    vjp_model *v = NULL;
    int rc = vjp_model_create(w->set, &k->a, &w->mu, &v, err, sizeof err);
    while (rc == PSFSIM_OK) {
        pthread_mutex_lock(&w->mu);
        long long i = w->rc == PSFSIM_OK && w->next < w->count ? w->next++ : -1;
        pthread_mutex_unlock(&w->mu);
        if (i < 0) break;
        rc = vjp_model_image(v, &k->a, w->first + i, i,
                             w->cotangent ? w->cotangent + (size_t)i * w->mm : NULL,
                             w->images ? w->images + (size_t)i * w->mm : NULL, err, sizeof err);
    }
    vjp_model_free(v);
    if (rc != PSFSIM_OK) {
        pthread_mutex_lock(&w->mu);
        if (w->rc == PSFSIM_OK) {
            w->rc = rc;
            snprintf(w->err, sizeof w->err, "%s", err);
        }
        pthread_mutex_unlock(&w->mu);
    }
    return NULL;
}

/* Threads for count images: the set's psfsim_options.threads (0: one per
 * CPU), at most one per image and VJP_MAX_THREADS. */
static int thread_count(const psfsim_set *set, long long count)
{
    long long n = set->threads > 0 ? set->threads : psf_cpu_count();
    n = n < count ? n : count;
    n = n < VJP_MAX_THREADS ? n : VJP_MAX_THREADS;
    return n > 1 ? (int)n : 1;
}

/* Start nt workers (the first on this thread, last), join them, sum
 * their OPD gradients in worker order into the call's. */
static void run_workers(vjp_work *w, vjp_worker *k, int nt)
{
    for (int t = 1; t < nt; ++t)
        k[t].started = pthread_create(&k[t].thread, NULL, worker_run, &k[t]) == 0;
    worker_run(&k[0]);
    for (int t = 1; t < nt; ++t) {
        if (k[t].started)
            pthread_join(k[t].thread, NULL);
        else
            worker_run(&k[t]);
    }
    for (size_t q = 0; q < w->map; ++q) {
        double sum = 0.0;
        for (int t = 0; t < nt; ++t)
            sum += k[t].opd[q];
        w->a->gr.opd_map[q] = sum;
    }
}

/* The images [first, first + count) through the model, spread over
 * threads: images (or NULL) gets them; with cotangent the gradients of
 * a->gr too. The OPD map's gradient is each thread's sum over its images,
 * then the threads' in order: its last bits depend on the thread count. */
static int run(psfsim_set *set, long long first, long long count, const vjp_args *a,
               const double *cotangent, double *images, char *err, size_t errlen)
{
    int rc = lib_check_range(set, first, count, err, errlen);
    if (rc != PSFSIM_OK || count == 0) return rc;
    const image_set *s = &set->e.set;
    vjp_work w = {.set = set,
                  .a = a,
                  .first = first,
                  .count = count,
                  .cotangent = cotangent,
                  .images = images,
                  .mm = (size_t)s->samp.npix * s->samp.npix,
                  .map = a->gr.opd_map ? (size_t)s->opd_rows * s->opd_cols : 0};
    int nt = thread_count(set, count);
    vjp_worker *k = calloc((size_t)nt, sizeof *k);
    double *opd = calloc((size_t)nt * (w.map ? w.map : 1), sizeof *opd);
    if (!k || !opd) {
        free(k);
        free(opd);
        return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory for %d threads", nt);
    }
    pthread_mutex_init(&w.mu, NULL);
    for (int t = 0; t < nt; ++t) {
        k[t] = (vjp_worker){.w = &w, .a = *a, .opd = opd + (size_t)t * w.map};
        k[t].a.gr.opd_map = w.map ? k[t].opd : NULL;
    }
    run_workers(&w, k, nt);
    pthread_mutex_destroy(&w.mu);
    free(k);
    free(opd);
    return w.rc == PSFSIM_OK ? PSFSIM_OK : lib_fail(err, errlen, w.rc, "%s", w.err);
}

int psfsim_compute_inputs(psfsim_set *set, long long first, long long count,
                          const psfsim_inputs *inputs, double *images, char *err, size_t errlen)
{
    if (!set || (!images && count > 0))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set or no images given");
    lib_messages_init();
    vjp_args *a = malloc(sizeof *a);
    if (!a) return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
    int rc = vjp_args_get(set, inputs, NULL, a, err, errlen);
    if (rc == PSFSIM_OK) rc = lib_enter(set, "psfsim_compute_inputs", err, errlen);
    if (rc == PSFSIM_OK) {
        rc = run(set, first, count, a, NULL, images, err, errlen);
        lib_leave(set);
    }
    free(a);
    return rc;
}

int psfsim_vjp(psfsim_set *set, long long first, long long count, const psfsim_inputs *inputs,
               const double *cotangent, double *images, psfsim_gradients *grads, char *err,
               size_t errlen)
{
    if (!set || !grads || (!cotangent && count > 0))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set, cotangent or grads given");
    lib_messages_init();
    vjp_args *a = malloc(sizeof *a);
    if (!a) return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
    int rc = vjp_args_get(set, inputs, grads, a, err, errlen);
    if (rc == PSFSIM_OK) rc = lib_enter(set, "psfsim_vjp", err, errlen);
    if (rc == PSFSIM_OK) {
        rc = run(set, first, count, a, cotangent, images, err, errlen);
        lib_leave(set);
    }
    free(a);
    return rc;
}
