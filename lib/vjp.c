/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim_vjp and psfsim_compute_inputs (lib/psfsim.h, API version 4) and
 * psfsim_vjp_device (5): the arguments checked (lib/vjp_args.c), then the
 * GPU's gradients (lib/vjp_gpu.c) or the images through the double model
 * (lib/vjp_image.c), spread over the set's CPU threads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/select/gpu.h"
#include "backend/fork_join.h"
#include "lib/vjp_priv.h"

/* One call: the images [first, first + count) in nt fixed blocks, each
 * worker thread with its model (its own pupils, plans and buffers, kept
 * on the set: lib/vjp_cache.c) and its own maps' gradients, summed at the
 * end. */
typedef struct {
    psfsim_set *set;
    const vjp_args *a;
    long long first, count;
    const double *cotangent;
    double *images;
    size_t mm;
    size_t map, tmap; /* the OPD and aperture maps' values (0: no such gradient) */
    pthread_mutex_t mu;
    int rc;          /* the first failure, under mu */
    atomic_int stop; /* a worker failed: the others stop after their image */
    char err[LIB_ERRLEN];
} vjp_work;

typedef struct {
    vjp_work *w;
    vjp_args a;        /* the call's, its maps' gradients this worker's */
    vjp_model **model; /* its slot of the set's kept models (lib/vjp_cache.c) */
    long long i0, i1;  /* its images: rows [i0, i1) of the call, a fixed block */
    double *maps;      /* [map + tmap] this worker's OPD-map, then transmission, gradients */
} vjp_worker;

static void *worker_run(void *arg)
{
    vjp_worker *k = arg;
    vjp_work *w = k->w;
    char err[LIB_ERRLEN];
    int rc = *k->model ? PSFSIM_OK : vjp_model_create(w->set, &k->a, k->model, err, sizeof err);
    for (long long i = k->i0; rc == PSFSIM_OK && i < k->i1 && !atomic_load(&w->stop); ++i)
        rc = vjp_model_image(*k->model, &k->a, &w->mu, w->first + i, i,
                             w->cotangent ? w->cotangent + (size_t)i * w->mm : NULL,
                             w->images ? w->images + (size_t)i * w->mm : NULL, err, sizeof err);
    if (rc != PSFSIM_OK) {
        atomic_store(&w->stop, 1);
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
    long long n = lib_cpu_threads(set);
    n = n < count ? n : count;
    n = n < VJP_MAX_THREADS ? n : VJP_MAX_THREADS;
    return n > 1 ? (int)n : 1;
}

/* Run nt workers (psf_fork_join: the first on this thread), then sum
 * their OPD gradients in worker order into the call's. */
static void run_workers(vjp_work *w, vjp_worker *k, int nt)
{
    psf_fork_join(worker_run, k, sizeof k[0], nt);
    for (size_t q = 0; q < w->map + w->tmap; ++q) {
        double sum = 0.0;
        for (int t = 0; t < nt; ++t)
            sum += k[t].maps[q];
        if (q < w->map)
            w->a->gr.opd_map[q] = sum;
        else
            w->a->gr.transmission[q - w->map] = sum;
    }
}

/* The images [first, first + count) through the model, spread over
 * threads: images (or NULL) gets them; with cotangent the gradients of
 * a->gr too. The maps' gradients are each thread's sums over its block of
 * images, then the threads' in order: the same bits for the same thread
 * count, their last bits another for another. */
static int run_cpu(psfsim_set *set, long long first, long long count, const vjp_args *a,
                   const double *cotangent, double *images, char *err, size_t errlen)
{
    int rc;
    const image_set *s = &set->e.set;
    vjp_work w = {.set = set,
                  .a = a,
                  .first = first,
                  .count = count,
                  .cotangent = cotangent,
                  .images = images,
                  .mm = (size_t)s->samp.npix * s->samp.npix,
                  .map = a->gr.opd_map ? (size_t)s->opd_rows * s->opd_cols : 0,
                  .tmap =
                      a->gr.transmission ? (size_t)s->aperture.map_rows * s->aperture.map_cols : 0};
    int nt = thread_count(set, count);
    size_t per = w.map + w.tmap;
    vjp_model **models;
    if ((rc = vjp_cache_models(set, a, &models, err, errlen)) != PSFSIM_OK) return rc;
    vjp_worker *k = calloc((size_t)nt, sizeof *k);
    double *maps = calloc((size_t)nt * (per ? per : 1), sizeof *maps);
    if (!k || !maps) {
        free(k);
        free(maps);
        return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory for %d threads", nt);
    }
    pthread_mutex_init(&w.mu, NULL);
    for (int t = 0; t < nt; ++t) {
        k[t] = (vjp_worker){.w = &w,
                            .a = *a,
                            .model = &models[t],
                            .i0 = count * t / nt,
                            .i1 = count * (t + 1) / nt,
                            .maps = maps + (size_t)t * per};
        k[t].a.gr.opd_map = w.map ? k[t].maps : NULL;
        k[t].a.gr.transmission = w.tmap ? k[t].maps + w.map : NULL;
    }
    run_workers(&w, k, nt);
    pthread_mutex_destroy(&w.mu);
    free(k);
    free(maps);
    return w.rc == PSFSIM_OK ? PSFSIM_OK : lib_fail(err, errlen, w.rc, "%s", w.err);
}

static int run(psfsim_set *set, long long first, long long count, const vjp_args *a,
               const double *cotangent, double *images, char *err, size_t errlen)
{
    int rc = lib_check_range(set, first, count, err, errlen);
    if (rc != PSFSIM_OK || count == 0) return rc;
    int done = 0;
    rc = vjp_gpu_run(set, first, count, a, cotangent, images, NULL, &done, err, errlen);
    if (done) return rc;
    return run_cpu(set, first, count, a, cotangent, images, err, errlen);
}

/* A public call's start: the call's arguments into *a (allocated) and the
 * set taken for the call (lib_enter, as name). PSFSIM_OK, or an error with
 * nothing held. Its end: finish. */
static int begin(psfsim_set *set, const psfsim_inputs *inputs, psfsim_gradients *grads,
                 const char *name, vjp_args **a, char *err, size_t errlen)
{
    lib_messages_init();
    *a = malloc(sizeof **a);
    if (!*a) return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
    int rc = vjp_args_get(set, inputs, grads, *a, err, errlen);
    if (rc == PSFSIM_OK) rc = lib_enter(set, name, err, errlen);
    if (rc != PSFSIM_OK) {
        free(*a);
        *a = NULL;
    }
    return rc;
}

static int finish(psfsim_set *set, vjp_args *a, int rc)
{
    lib_leave(set);
    free(a);
    return rc;
}

int psfsim_compute_inputs(psfsim_set *set, long long first, long long count,
                          const psfsim_inputs *inputs, double *images, char *err, size_t errlen)
{
    if (!set || (!images && count > 0))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set or no images given");
    vjp_args *a;
    int rc = begin(set, inputs, NULL, "psfsim_compute_inputs", &a, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    return finish(set, a, run(set, first, count, a, NULL, images, err, errlen));
}

int psfsim_vjp(psfsim_set *set, long long first, long long count, const psfsim_inputs *inputs,
               const double *cotangent, double *images, psfsim_gradients *grads, char *err,
               size_t errlen)
{
    if (!set || !grads || (!cotangent && count > 0))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set, cotangent or grads given");
    vjp_args *a;
    int rc = begin(set, inputs, grads, "psfsim_vjp", &a, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    return finish(set, a, run(set, first, count, a, cotangent, images, err, errlen));
}

/* psfsim_vjp_device's arrays through the host (a call the GPU's gradients
 * do not take): the cotangents copied down and widened to double, the
 * CPU's path, the images narrowed to the call's dtype and copied up. */
static int run_staged(psfsim_set *set, long long first, long long count, const vjp_args *a,
                      const gpu_memory_ops *mem, const vjp_device_io *dev, char *err, size_t errlen)
{
    size_t n = (size_t)count * (size_t)set->e.set.samp.npix * (size_t)set->e.set.samp.npix;
    int wide = dev->dtype == 1;
    double *cot = malloc(n * sizeof *cot);
    double *img = dev->images ? malloc(n * sizeof *img) : NULL;
    float *f = wide ? NULL : malloc(n * sizeof *f); /* a float call's arrays as they travel */
    int rc = PSFSIM_OK;
    char why[LIB_ERRLEN];
    if (!cot || (dev->images && !img) || (!wide && !f))
        rc = lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory for %lld images", count);
    else if (mem->copy(dev->device, wide ? (void *)cot : (void *)f, dev->cotangent,
                       n * (wide ? sizeof(double) : sizeof(float)), why, sizeof why) != 0)
        rc = lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
    for (size_t i = 0; rc == PSFSIM_OK && !wide && i < n; ++i)
        cot[i] = (double)f[i];
    if (rc == PSFSIM_OK) rc = run_cpu(set, first, count, a, cot, img, err, errlen);
    if (rc == PSFSIM_OK && img) {
        for (size_t i = 0; !wide && i < n; ++i)
            f[i] = (float)img[i];
        if (mem->copy(dev->device, dev->images, wide ? (void *)img : (void *)f,
                      n * (wide ? sizeof(double) : sizeof(float)), why, sizeof why) != 0)
            rc = lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
    }
    free(cot);
    free(img);
    free(f);
    return rc;
}

/* Where p is: PSFSIM_OK with *device when CUDA device memory, else
 * PSFSIM_ERR_ARGUMENT (host memory) or PSFSIM_ERR_BACKEND (CUDA not
 * usable) naming what. */
static int on_device(const gpu_memory_ops *mem, const void *p, const char *what, int *device,
                     char *err, size_t errlen)
{
    int kind = 0;
    char why[LIB_ERRLEN];
    if (mem->pointer(p, &kind, device, why, sizeof why) != 0)
        return lib_fail(err, errlen, PSFSIM_ERR_BACKEND, "%s", why);
    if (kind != 1)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "psfsim_vjp_device: the %s is not CUDA device memory (%s host memory: "
                        "psfsim_vjp takes host arrays)",
                        what, kind == 2 ? "pinned" : "pageable");
    return PSFSIM_OK;
}

/* psfsim_vjp_device's arrays checked and the caller's stream waited for. */
static int device_args(const void *cotangent, int dtype, void *images, void *stream,
                       const gpu_memory_ops **mem, vjp_device_io *dev, char *err, size_t errlen)
{
    if (dtype != PSFSIM_FLOAT32 && dtype != PSFSIM_FLOAT64)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "psfsim_vjp_device: dtype %d: PSFSIM_FLOAT32 (0) or PSFSIM_FLOAT64 (2)",
                        dtype);
    *mem = gpu_module_memory();
    if (!*mem)
        return lib_fail(err, errlen, PSFSIM_ERR_BACKEND,
                        "psfsim_vjp_device needs the GPU module: %s", gpu_module_error());
    int dc = -1, di = -1;
    int rc = on_device(*mem, cotangent, "cotangent", &dc, err, errlen);
    if (rc == PSFSIM_OK && images) rc = on_device(*mem, images, "images array", &di, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    if (images && di != dc)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "psfsim_vjp_device: the cotangent is on CUDA device %d, the images "
                        "array on %d (one device for both)",
                        dc, di);
    char why[LIB_ERRLEN];
    if ((*mem)->wait_stream(dc, stream, why, sizeof why) != 0)
        return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
    *dev = (vjp_device_io){dc, dtype == PSFSIM_FLOAT64 ? 1 : 0, cotangent, images, 0, 0.0, NULL};
    return PSFSIM_OK;
}

int psfsim_vjp_device(psfsim_set *set, long long first, long long count,
                      const psfsim_inputs *inputs, const void *cotangent, int cot_dtype,
                      void *images, psfsim_gradients *grads, void *stream, char *err, size_t errlen)
{
    if (!set || !grads || (!cotangent && count > 0))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set, cotangent or grads given");
    vjp_args *a;
    int rc = begin(set, inputs, grads, "psfsim_vjp_device", &a, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    rc = lib_check_range(set, first, count, err, errlen);
    const gpu_memory_ops *mem = NULL;
    vjp_device_io dev;
    if (rc == PSFSIM_OK && count > 0)
        rc = device_args(cotangent, cot_dtype, images, stream, &mem, &dev, err, errlen);
    if (rc == PSFSIM_OK && count > 0) {
        int done = 0;
        rc = vjp_gpu_run(set, first, count, a, NULL, NULL, &dev, &done, err, errlen);
        if (!done) rc = run_staged(set, first, count, a, mem, &dev, err, errlen);
    }
    return finish(set, a, rc);
}

/* vjp_device_run's and vjp_device_steps' one path: dev (its device and
 * dtype set here: the set's first GPU, double), the call taken for the
 * set as a public call's. */
static int device_call(psfsim_set *set, long long first, long long count,
                       const psfsim_inputs *inputs, psfsim_gradients *grads, vjp_device_io dev,
                       int *done, char *err, size_t errlen)
{
    *done = 0;
    vjp_args *a;
    int rc = begin(set, inputs, grads, "psfsim_retrieve", &a, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    rc = lib_check_range(set, first, count, err, errlen);
    const backend_decision *d = &set->e.decision;
    dev.device = d->ndevices > 0 ? d->devices[0] : 0;
    dev.dtype = 1;
    if (rc == PSFSIM_OK && dev.steps > a->terms.nterms)
        rc = lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "%d steps of %d input terms", dev.steps,
                      a->terms.nterms);
    int one_chunk = dev.steps == 0 || count * (dev.steps + 1) <= vjp_gpu_chunk_images(set);
    if (rc == PSFSIM_OK && count > 0 && one_chunk)
        rc = vjp_gpu_run(set, first, count, a, NULL, NULL, &dev, done, err, errlen);
    return finish(set, a, rc);
}

int vjp_device_run(psfsim_set *set, long long first, long long count, const psfsim_inputs *inputs,
                   const double *cotangent, double *images, psfsim_gradients *grads, int *done,
                   char *err, size_t errlen)
{
    vjp_device_io dev = {0, 1, cotangent, images, 0, 0.0, NULL};
    return device_call(set, first, count, inputs, grads, dev, done, err, errlen);
}

int vjp_device_evaluate(psfsim_set *set, long long count, const psfsim_inputs *inputs,
                        const vjp_fit_io *fit, double *images, psfsim_gradients *grads, int *done,
                        char *err, size_t errlen)
{
    vjp_device_io dev = {0, 1, NULL, images, 0, 0.0, fit};
    return device_call(set, 0, count, inputs, grads, dev, done, err, errlen);
}

int vjp_device_steps(psfsim_set *set, long long count, const psfsim_inputs *inputs, int steps,
                     double step, double *images, int *done, char *err, size_t errlen)
{
    *done = 0;
    if (steps < 1) return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "%d steps (1 or more)", steps);
    vjp_device_io dev = {0, 1, NULL, images, steps, step, NULL};
    return device_call(set, 0, count, inputs, NULL, dev, done, err, errlen);
}
