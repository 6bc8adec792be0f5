/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/output/writer_pool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/clock.h"
#include "app/formats/fits.h"
#include "app/formats/png_io.h"
#include "app/set/set_detector.h"

typedef struct node {
    write_job *job;
    int slot;
    struct node *next;
} node;

struct writer_pool {
    const image_set *set;
    int dirfd;
    const char *dir;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    node *head, *tail;
    int nslots;
    int *pending;    /* [nslots] jobs of each slot not finished */
    double *busy_us; /* [nslots] */
    int stopping, closing;
    int nthreads;
    pthread_t *threads;
    pthread_mutex_t fits_mu; /* cfitsio without reentrancy support: one writer at a time */
    int fits_serial;
    int files;           /* per-image files (PNG, FITS not in a cube): work for the threads */
    psf_config over_cfg; /* detector.write = "both": the OVERSAMP HDU's set */
    image_set over_set;
};

static node *take(writer_pool *p)
{
    pthread_mutex_lock(&p->mu);
    while (!p->head && !p->closing)
        pthread_cond_wait(&p->work, &p->mu);
    node *n = p->head;
    if (n) {
        p->head = n->next;
        if (!p->head) p->tail = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    return n;
}

static void write_one(writer_pool *p, write_job *j)
{
    double png_us = 0, fits_us = 0;
    if (j->levels_made) { /* a levels set: PNG (or nothing) from the backend's levels */
        j->status = outputs_write_levels(p->set, p->dirfd, p->dir, j->k, j->levels, j->res, &png_us,
                                         j->err, sizeof j->err);
        j->timing->png_us = png_us;
        j->timing->fits_us = 0.0;
        return;
    }
    if (p->fits_serial) pthread_mutex_lock(&p->fits_mu);
    j->status = outputs_write_images(p->set, &p->over_set, p->dirfd, p->dir, j->k, j->info, j->img,
                                     j->over.img ? &j->over : NULL, j->res, &png_us, &fits_us,
                                     j->err, sizeof j->err);
    if (p->fits_serial) pthread_mutex_unlock(&p->fits_mu);
    const psf_config *cfg = p->set->cfg;
    if (j->status == 0 && j->levels)
        psf_png_stretch_levels(j->img, p->set->samp.npix, cfg->png_bits, cfg->png_stretch,
                               cfg->png_dynamic_range, j->levels);
    j->timing->png_us = png_us;
    j->timing->fits_us = fits_us;
}

static void *writer_main(void *arg)
{
    writer_pool *p = arg;
    node *n;
    while ((n = take(p))) {
        double t0 = clock_us();
        int stopped;
        pthread_mutex_lock(&p->mu);
        stopped = p->stopping;
        pthread_mutex_unlock(&p->mu);
        if (stopped) {
            n->job->status = -1;
            snprintf(n->job->err, sizeof n->job->err, "stopped");
        } else {
            write_one(p, n->job);
        }
        pthread_mutex_lock(&p->mu);
        p->busy_us[n->slot] += clock_us() - t0;
        if (--p->pending[n->slot] == 0) pthread_cond_broadcast(&p->done);
        pthread_mutex_unlock(&p->mu);
        free(n);
    }
    return NULL;
}

writer_pool *writer_pool_create(int nthreads, int nslots, const image_set *s, int dirfd,
                                const char *dir)
{
    writer_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->nslots = nslots;
    p->set = s;
    p->dirfd = dirfd;
    p->dir = dir;
    p->fits_serial = s->cfg->fits_enabled && !psf_fits_thread_safe();
    p->files = s->cfg->png_enabled || (s->cfg->fits_enabled && !s->cfg->fits_cube);
    if (set_detector_backend_npix(s) != s->samp.npix)
        set_detector_oversampled_view(s, &p->over_cfg, &p->over_set);
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->fits_mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = calloc((size_t)nthreads, sizeof *p->threads);
    p->pending = calloc((size_t)nslots, sizeof *p->pending);
    p->busy_us = calloc((size_t)nslots, sizeof *p->busy_us);
    if (!p->threads || !p->pending || !p->busy_us) {
        writer_pool_destroy(p);
        return NULL;
    }
    for (int i = 0; i < nthreads; ++i) {
        if (pthread_create(&p->threads[i], NULL, writer_main, p) != 0) break;
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        writer_pool_destroy(p);
        return NULL;
    }
    return p;
}

void writer_pool_submit(writer_pool *p, int slot, write_job *job)
{
    node *n = malloc(sizeof *n);
    if (!n) { /* out of memory: write it here and now */
        write_one(p, job);
        return;
    }
    n->job = job;
    n->slot = slot;
    n->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = n;
    else
        p->head = n;
    p->tail = n;
    p->pending[slot]++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
}

int writer_pool_submit_batch(writer_pool *p, int slot, write_job *jobs, int n)
{
    int work = p->files;
    for (int i = 0; i < n && !work; ++i)
        work = jobs[i].levels != NULL && !jobs[i].levels_made;
    if (work) {
        for (int i = 0; i < n; ++i)
            writer_pool_submit(p, slot, &jobs[i]);
        return 0;
    }
    pthread_mutex_lock(&p->mu);
    int stopped = p->stopping;
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < n; ++i) { /* what write_one does with no file to write */
        jobs[i].status = stopped ? -1 : 0;
        if (stopped) snprintf(jobs[i].err, sizeof jobs[i].err, "stopped");
        jobs[i].timing->png_us = jobs[i].timing->fits_us = 0.0;
    }
    return 1;
}

double writer_pool_wait_slot(writer_pool *p, int slot)
{
    pthread_mutex_lock(&p->mu);
    while (p->pending[slot] > 0)
        pthread_cond_wait(&p->done, &p->mu);
    double busy = p->busy_us[slot];
    p->busy_us[slot] = 0;
    pthread_mutex_unlock(&p->mu);
    return busy;
}

void writer_pool_stop(writer_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_mutex_unlock(&p->mu);
}

void writer_pool_destroy(writer_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->closing = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; ++i)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    free(p->pending);
    free(p->busy_us);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->fits_mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p);
}
