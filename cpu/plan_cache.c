/* SPDX-License-Identifier: BSD-3-Clause */
#include "cpu/plan_cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cache_file.h"

static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static int threads_ok;

/* fftwf_init_threads must run once per process before any threaded plan. */
static void init_threads(void)
{
    threads_ok = fftwf_init_threads();
}

/* FFTW's wisdom takes a few kB per transform size; a file past this is no
 * wisdom file. */
#define CPU_WISDOM_MAX_BYTES ((size_t)16 << 20)

/* Import dir/CPU_WISDOM_FILE's wisdom, read here and handed to FFTW from
 * memory: FFTW's own reader would wait forever on a FIFO or read /dev/zero
 * to no end. A file that is missing or not wisdom is no wisdom; one that
 * cannot be read safely is said through warn. */
static void import_wisdom(const char *dir, void (*warn)(const char *))
{
    char *text, why[4400];
    size_t len;
    int rc =
        cache_file_read(dir, CPU_WISDOM_FILE, CPU_WISDOM_MAX_BYTES, &text, &len, why, sizeof why);
    if (rc == 0) fftwf_import_wisdom_from_string(text);
    free(text);
    if (rc < 0 && warn) {
        char msg[4500];
        snprintf(msg, sizeof msg, "%s; not used as FFTW wisdom", why);
        warn(msg);
    }
}

/* Replace dir/CPU_WISDOM_FILE by FFTW's wisdom (cache_file_replace: a
 * temp file of a unique name, renamed into place, so a concurrent psfsim
 * never reads half a file and no planted link is written through).
 * Failures are ignored: the wisdom is only a cache. */
static void export_wisdom(const char *dir)
{
    char *text = fftwf_export_wisdom_to_string(), err[4400];
    if (text) cache_file_replace(dir, CPU_WISDOM_FILE, text, strlen(text), err, sizeof err);
    free(text);
}

static fftwf_plan make_plan(cpu_fft_plan *p, int measure, const char *wisdom_dir,
                            void (*warn)(const char *))
{
    int n = p->npix;
    fftwf_plan plan = NULL;
    if (wisdom_dir) {
        import_wisdom(wisdom_dir, warn);
        plan =
            fftwf_plan_dft_2d(n, n, p->in, p->out, FFTW_FORWARD, FFTW_MEASURE | FFTW_WISDOM_ONLY);
    }
    if (plan) {
        p->measured = 1;
        return plan;
    }
    plan = fftwf_plan_dft_2d(n, n, p->in, p->out, FFTW_FORWARD,
                             measure ? FFTW_MEASURE : FFTW_ESTIMATE);
    p->measured = measure && plan;
    if (p->measured && wisdom_dir) export_wisdom(wisdom_dir);
    return plan;
}

int cpu_fft_plan_create(cpu_fft_plan *p, int npix, int threads, int measure, const char *wisdom_dir,
                        void (*warn)(const char *), char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->npix = npix;
    size_t n = (size_t)npix * (size_t)npix;
    p->in = fftwf_malloc(n * sizeof(fftwf_complex));
    p->out = fftwf_malloc(n * sizeof(fftwf_complex));
    if (!p->in || !p->out) {
        snprintf(err, errlen, "cpu: cannot allocate %zu bytes for a %dx%d FFT",
                 2 * n * sizeof(fftwf_complex), npix, npix);
        cpu_fft_plan_destroy(p);
        return -1;
    }
    if (threads > 1) {
        pthread_once(&threads_once, init_threads);
        if (!threads_ok) threads = 1;
    }
    p->threads = threads > 1 ? threads : 1;
    if (threads_ok) fftwf_plan_with_nthreads(p->threads);
    p->plan = make_plan(p, measure, wisdom_dir, warn);
    if (!p->plan) {
        snprintf(err, errlen, "cpu: FFTW could not plan a %dx%d transform", npix, npix);
        cpu_fft_plan_destroy(p);
        return -1;
    }
    memset(p->in, 0, n * sizeof(fftwf_complex)); /* FFTW_MEASURE scribbled on it */
    return 0;
}

void cpu_fft_plan_execute(const cpu_fft_plan *p)
{
    fftwf_execute(p->plan);
}

void cpu_fft_plan_destroy(cpu_fft_plan *p)
{
    if (p->plan) fftwf_destroy_plan(p->plan);
    fftwf_free(p->in);
    fftwf_free(p->out);
    memset(p, 0, sizeof *p);
}
