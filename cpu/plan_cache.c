#include "cpu/plan_cache.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static int threads_ok;

/* fftwf_init_threads must run once per process before any threaded plan. */
static void init_threads(void)
{
    threads_ok = fftwf_init_threads();
}

/* Write FFTW's wisdom to a temp file beside path and rename it into place,
 * so a concurrent psfsim never reads half a file. Failures are ignored: the
 * wisdom is only a cache. */
static void export_wisdom(const char *path)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fftwf_export_wisdom_to_file(f);
    if (fclose(f) != 0 || rename(tmp, path) != 0) unlink(tmp);
}

static fftwf_plan make_plan(cpu_fft_plan *p, int measure, const char *wisdom_path)
{
    int n = p->npix;
    fftwf_plan plan = NULL;
    if (wisdom_path) {
        fftwf_import_wisdom_from_filename(wisdom_path);
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
    if (p->measured && wisdom_path) export_wisdom(wisdom_path);
    return plan;
}

int cpu_fft_plan_create(cpu_fft_plan *p, int npix, int threads, int measure,
                        const char *wisdom_path, char *err, size_t errlen)
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
    p->plan = make_plan(p, measure, wisdom_path);
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
