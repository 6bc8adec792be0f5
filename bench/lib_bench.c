/* SPDX-License-Identifier: BSD-3-Clause */
/* The library's own time for a whole set (bench/python_bench.py compares
 * psfsim.compute with it), through lib/psfsim.h as a C caller would:
 *
 *   psfsim_lib_bench CONFIG [BACKEND [THREADS]]
 *
 * THREADS: psfsim_options.threads (default 0: one per CPU).
 *
 * lib_cold    in one fresh process: open, a fresh buffer, compute every
 *             image with metrics, the parameters table, close: what
 *             psfsim.compute(CONFIG) does
 * lib_open    its open alone; lib_first_compute its compute alone (the
 *             backend's start and the fresh buffer's first touch included)
 * lib_start_1_image  a second open's first compute of one image: the
 *             backend's start
 * lib_fresh   the set open and its backend started: compute into a fresh
 *             buffer (its pages first touched by the compute)
 * lib_touched the same into a buffer already written once
 *
 * A fresh buffer is made as NumPy makes an array's (malloc, then
 * madvise(MADV_HUGEPAGE) over its whole pages for 4 MiB or more: numpy's
 * alloc.c), so the page faults are the same as an np.empty's. Prints the
 * CSV rows of python_bench.py: what,backend,images,seconds,us_per_psf,psf_per_s. */
#include <psfsim.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void row(const char *what, const char *backend, long long n, double s)
{
    printf("%s,%s,%lld,%.4f,%.2f,%.0f\n", what, backend, n, s, 1e6 * s / (double)n, (double)n / s);
    fflush(stdout);
}

/* floats as NumPy allocates an array of them (see the top). */
static float *fresh(size_t n)
{
    size_t bytes = n * sizeof(float);
    char *p = malloc(bytes);
#ifdef MADV_HUGEPAGE
    if (p && bytes >= ((size_t)4 << 20)) {
        uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
        (void)madvise((void *)a, (uintptr_t)p + bytes - a, MADV_HUGEPAGE);
    }
#endif
    return (float *)p;
}

typedef struct {
    psfsim_set *set;
    psfsim_info info;
    size_t n; /* floats of the whole set */
    psfsim_metrics *metrics;
    psfsim_params *params;
    char err[1024];
} bench;

static int threads; /* psfsim_options.threads */

static int open_set(bench *b, const char *path, const char *backend)
{
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = backend;
    o.threads = threads;
    int rc = psfsim_open_file(path, &o, &b->set, b->err, sizeof b->err);
    if (rc == PSFSIM_OK) rc = psfsim_describe(b->set, &b->info, b->err, sizeof b->err);
    if (rc != PSFSIM_OK) return rc;
    b->n = (size_t)b->info.count * (size_t)b->info.npix * (size_t)b->info.npix;
    if (!b->metrics) b->metrics = malloc((size_t)b->info.count * sizeof *b->metrics);
    if (!b->params) b->params = malloc((size_t)b->info.count * sizeof *b->params);
    return b->metrics && b->params ? PSFSIM_OK : PSFSIM_ERR_MEMORY;
}

static int compute(bench *b, float *images)
{
    return psfsim_compute(b->set, 0, b->info.count, images, b->n, b->metrics, b->err,
                          sizeof b->err);
}

/* open + fresh buffer + compute + parameters + close, as psfsim.compute. */
static int cold(bench *b, const char *path, const char *backend)
{
    double t0 = now();
    int rc = open_set(b, path, backend);
    double t1 = now();
    float *images = rc == PSFSIM_OK ? fresh(b->n) : NULL;
    if (rc == PSFSIM_OK) rc = images ? compute(b, images) : PSFSIM_ERR_MEMORY;
    double t2 = now();
    if (rc == PSFSIM_OK)
        rc = psfsim_params_get(b->set, 0, b->info.count, b->params, b->err, sizeof b->err);
    psfsim_close(b->set);
    b->set = NULL;
    double t3 = now();
    free(images);
    if (rc != PSFSIM_OK) return rc;
    const char *be = b->metrics[0].backend;
    row("lib_cold", be, b->info.count, t3 - t0);
    row("lib_open", be, b->info.count, t1 - t0);
    row("lib_first_compute", be, b->info.count, t2 - t1);
    return PSFSIM_OK;
}

/* The backend started (one image), then a fresh buffer and a touched one. */
static int warm(bench *b, const char *path, const char *backend)
{
    int rc = open_set(b, path, backend);
    float *images = rc == PSFSIM_OK ? fresh(b->n) : NULL;
    if (rc == PSFSIM_OK && !images) rc = PSFSIM_ERR_MEMORY;
    double ts = now();
    if (rc == PSFSIM_OK)
        rc = psfsim_compute(b->set, 0, 1, images, b->n, NULL, b->err, sizeof b->err);
    if (rc == PSFSIM_OK) row("lib_start_1_image", backend ? backend : "config", 1, now() - ts);
    free(images);
    images = rc == PSFSIM_OK ? fresh(b->n) : NULL;
    double t0 = now();
    if (rc == PSFSIM_OK) rc = images ? compute(b, images) : PSFSIM_ERR_MEMORY;
    double t1 = now();
    if (rc == PSFSIM_OK) rc = compute(b, images);
    double t2 = now();
    if (rc == PSFSIM_OK) {
        row("lib_fresh", b->metrics[0].backend, b->info.count, t1 - t0);
        row("lib_touched", b->metrics[0].backend, b->info.count, t2 - t1);
    }
    free(images);
    psfsim_close(b->set);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s CONFIG [auto|cpu|gpu [THREADS]]\n", argv[0]);
        return 2;
    }
    threads = argc > 3 ? atoi(argv[3]) : 0;
    bench b = {0};
    const char *backend = argc > 2 ? argv[2] : NULL;
    int rc = cold(&b, argv[1], backend);
    if (rc == PSFSIM_OK) rc = warm(&b, argv[1], backend);
    free(b.metrics);
    free(b.params);
    if (rc != PSFSIM_OK)
        fprintf(stderr, "psfsim_lib_bench: %s (%s)\n", b.err, psfsim_status_name(rc));
    return rc == PSFSIM_OK ? 0 : 1;
}
