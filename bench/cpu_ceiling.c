/* SPDX-License-Identifier: BSD-3-Clause */
/* The host's own ceiling for issue 27's CPU scaling target (>= 0.60 of 16x
 * the one-thread rate): work that shares nothing between threads, run on
 * T threads at once, each with its own buffers, so that what it loses at T
 * threads against T x one thread is the host's (the cores' all-core clock,
 * their shared caches and memory), not a program's. Two kinds:
 *   clock: a dependent chain of 65536 double multiply-adds an item, in
 *          registers (no memory at all: only the clock moves it);
 *   fft:   FFTW's single-precision out-of-place 256 x 256 c2c transform
 *          (FFTW_MEASURE once, the other threads' plans from its wisdom, as
 *          psfsim's CPU plans take measured wisdom) and |.|^2 of its output
 *          into a float image, as one psfsim image's core.
 * Each thread runs the same count; the row's time is the slowest thread's.
 * Rows (CSV): kind,threads,seconds,us_per_item_per_thread,efficiency
 * where efficiency = rate(T) / (T x rate(1)), rate(1) the one-thread row's
 * of the same round. Several rounds, interleaved (1, then each T, again),
 * because a one-thread time moves between rounds on a shared host.
 * Usage: psfsim_cpu_ceiling [THREADS,...] [ROUNDS] [N]  (defaults 1,8,16 3 256)
 * Read with bench/cpu_scaling.py's rows of the same call. */
#include <fftw3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_time.h"

typedef struct {
    int kind; /* 0 clock, 1 fft */
    int n;    /* FFT side */
    long count;
    fftwf_plan plan;
    fftwf_complex *in, *out;
    float *image;
    double sink; /* keeps the chain's result alive */
    double seconds;
} worker;

static void run_clock(worker *w)
{
    double a = 1.0, b = 1.0 + 1e-9, c = 1e-12;
    for (long i = 0; i < w->count * 65536; ++i)
        a = a * b + c;
    w->sink = a;
}

static void run_fft(worker *w)
{
    size_t n2 = (size_t)w->n * w->n;
    for (long i = 0; i < w->count; ++i) {
        fftwf_execute_dft(w->plan, w->in, w->out);
        for (size_t k = 0; k < n2; ++k)
            w->image[k] = w->out[k][0] * w->out[k][0] + w->out[k][1] * w->out[k][1];
    }
    w->sink = w->image[n2 / 2];
}

static void *work(void *arg)
{
    worker *w = arg;
    double t0 = now_s();
    if (w->kind == 0)
        run_clock(w);
    else
        run_fft(w);
    w->seconds = now_s() - t0;
    return NULL;
}

/* The slowest thread's seconds for T threads, each running count items. */
static double round_of(worker *ws, int threads)
{
    pthread_t th[256];
    int started[256] = {0};
    for (int t = 1; t < threads; ++t)
        started[t] = pthread_create(&th[t], NULL, work, &ws[t]) == 0;
    work(&ws[0]);
    double slowest = ws[0].seconds;
    for (int t = 1; t < threads; ++t) {
        if (started[t])
            pthread_join(th[t], NULL);
        else
            work(&ws[t]);
        if (ws[t].seconds > slowest) slowest = ws[t].seconds;
    }
    return slowest;
}

/* Buffers and a plan per worker (FFTW's planner is not thread-safe: made
 * here, on one thread); the input a pupil-like disc of half the side. */
static int setup(worker *ws, int threads, int n, long count)
{
    size_t n2 = (size_t)n * n;
    for (int t = 0; t < threads; ++t) {
        worker *w = &ws[t];
        *w = (worker){.n = n, .count = count};
        w->in = fftwf_malloc(n2 * sizeof *w->in);
        w->out = fftwf_malloc(n2 * sizeof *w->out);
        w->image = fftwf_malloc(n2 * sizeof *w->image);
        if (!w->in || !w->out || !w->image) return -1;
        w->plan = fftwf_plan_dft_2d(n, n, w->in, w->out, FFTW_FORWARD, FFTW_MEASURE);
        if (!w->plan) return -1;
        for (int y = 0; y < n; ++y)
            for (int x = 0; x < n; ++x) {
                double r2 = (double)(x - n / 2) * (x - n / 2) + (double)(y - n / 2) * (y - n / 2);
                w->in[(size_t)y * n + x][0] = r2 <= (double)n * n / 16 ? 1.0f : 0.0f;
                w->in[(size_t)y * n + x][1] = 0.0f;
            }
    }
    return 0;
}

int main(int argc, char **argv)
{
    int list[32], nlist = 0;
    char spec[256];
    snprintf(spec, sizeof spec, "%s", argc > 1 ? argv[1] : "1,8,16");
    for (char *s = strtok(spec, ","); s && nlist < 32; s = strtok(NULL, ","))
        if (atoi(s) >= 1 && atoi(s) <= 256) list[nlist++] = atoi(s);
    int rounds = argc > 2 ? atoi(argv[2]) : 3, n = argc > 3 ? atoi(argv[3]) : 256;
    if (nlist == 0 || rounds < 1 || n < 8) return 2;
    int most = 1;
    for (int i = 0; i < nlist; ++i)
        if (list[i] > most) most = list[i];
    static worker ws[256];
    long count = 400; /* some 0.1 s a round on one thread at 256^2 */
    if (setup(ws, most, n, count) != 0) {
        fprintf(stderr, "cpu_ceiling: out of memory or no plan\n");
        return 1;
    }
    printf("kind,threads,seconds,us_per_item_per_thread,efficiency\n");
    for (int r = 0; r < rounds; ++r)
        for (int kind = 0; kind < 2; ++kind) {
            double one = 0;
            for (int t = 0; t < most; ++t)
                ws[t].kind = kind;
            round_of(ws, 1); /* warm: pages, plan, clock */
            for (int i = 0; i < nlist; ++i) {
                double s = round_of(ws, list[i]);
                if (list[i] == 1) one = s;
                double eff = one > 0 ? one / s : 0; /* same count a thread */
                printf("%s,%d,%.4f,%.2f,%.3f\n", kind ? "fft" : "clock", list[i], s,
                       1e6 * s / count, eff);
                fflush(stdout);
            }
        }
    for (int t = 0; t < most; ++t) {
        fftwf_destroy_plan(ws[t].plan);
        fftwf_free(ws[t].in);
        fftwf_free(ws[t].out);
        fftwf_free(ws[t].image);
    }
    return 0;
}
