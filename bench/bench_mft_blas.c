/* SPDX-License-Identifier: BSD-3-Clause */
/* Issue 17's A/B of the CPU MFT (cpu/mft.h: E = Wy P Wx^T, then |E|^2), in
 * one run on the same pupil box (a circular pupil of n samples, a phase on
 * it) and matrix W[k][j] = exp(-2 pi i j (k - M/2) a):
 *  - psfsim: cpu_mft_accumulate, now single-threaded cgemm calls on
 *    psfsim's own THREADS threads (blocks of 48 output rows);
 *  - hand: the former hand-written product (bench/mft_hand.c), THREADS
 *    threads;
 *  - cgemm: two bare cblas_cgemm calls on the whole matrices with
 *    OpenBLAS's own THREADS threads (openblas_set_num_threads), plus the
 *    same |E|^2 pass: what letting OpenBLAS thread one image would give.
 * Best of REPEATS, ms per image. Each row gives the largest |difference|
 * from the hand-written image over its peak, and (psfsim) whether its bytes
 * equal psfsim's own one-thread image.
 * Prints CSV rows: pipeline,n,M,threads,ms,max_rel_diff_vs_hand,same_bytes_as_1_thread
 * Usage: psfsim_bench_mft_blas THREADS [REPEATS=15] n:M [n:M ...] */
#include <cblas.h>
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_time.h"
#include "bench/mft_hand.h"
#include "cpu/mft.h"

/* One case's inputs and images. */
typedef struct {
    int n, m, j0;
    double a;
    float complex *pupil, *w, *tmp, *e;
    float *img[4]; /* psfsim, hand, cgemm, psfsim on one thread */
} bench_case;

static int case_init(bench_case *c, int n, int m)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    c->m = m;
    c->j0 = -(n / 2);
    c->a = 0.5 / n; /* 2 pixels per lambda/D */
    size_t box = (size_t)n * n, plane = (size_t)m * m;
    c->pupil = calloc(box, sizeof *c->pupil);
    c->w = malloc((size_t)m * n * sizeof *c->w);
    c->tmp = malloc((size_t)n * m * sizeof *c->tmp);
    c->e = malloc(plane * sizeof *c->e);
    for (int i = 0; i < 4; ++i)
        c->img[i] = calloc(plane, sizeof *c->img[i]);
    if (!c->pupil || !c->w || !c->tmp || !c->e || !c->img[0] || !c->img[1] || !c->img[2] ||
        !c->img[3])
        return -1;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            double y = (i + c->j0 + 0.5) / (0.5 * n), x = (j + c->j0 + 0.5) / (0.5 * n);
            double r2 = x * x + y * y;
            if (r2 <= 1.0)
                c->pupil[(size_t)i * n + j] = cexpf((float complex)(2.0 * M_PI * I * 0.3 * r2));
        }
    for (int k = 0; k < m; ++k) /* W[k][j], row-major M x n, the phase as the table's */
        for (int j = 0; j < n; ++j) {
            double ph = (double)(j + c->j0) * (k - m / 2) * c->a;
            ph -= floor(ph);
            c->w[(size_t)k * n + j] = (float complex)cexp(-2.0 * M_PI * I * ph);
        }
    return 0;
}

static void case_free(bench_case *c)
{
    free(c->pupil);
    free(c->w);
    free(c->tmp);
    free(c->e);
    for (int i = 0; i < 4; ++i)
        free(c->img[i]);
}

/* The bare cgemm pipeline on OpenBLAS's threads: T = P Wx^T (n x M),
 * E = Wy T (M x M), img = |E|^2. */
static void bare_cgemm(bench_case *c, int threads)
{
    const float complex one = 1.0f, zero = 0.0f;
    int n = c->n, m = c->m;
    openblas_set_num_threads(threads);
    cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m, n, &one, c->pupil, n, c->w, n, &zero,
                c->tmp, m);
    cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, m, n, &one, c->w, n, c->tmp, m, &zero,
                c->e, m);
    openblas_set_num_threads(1); /* as psfsim has it */
    for (size_t i = 0; i < (size_t)m * m; ++i)
        c->img[2][i] = crealf(c->e[i]) * crealf(c->e[i]) + cimagf(c->e[i]) * cimagf(c->e[i]);
}

static double max_rel_diff(const float *x, const float *ref, size_t n)
{
    double d = 0.0, peak = 0.0;
    for (size_t i = 0; i < n; ++i) {
        d = fmax(d, fabs((double)x[i] - ref[i]));
        peak = fmax(peak, ref[i]);
    }
    return d / peak;
}

/* One n:M case; returns 0 or -1. */
static int run_case(int n, int m, int threads, int repeats)
{
    char err[256];
    bench_case c;
    cpu_mft_table t = {0};
    hand_mft_table ht = {0};
    cpu_mft_work work = {0};
    hand_mft_work hwork = {0};
    int rc = case_init(&c, n, m);
    if (rc == 0) rc = cpu_mft_table_build(&t, c.a, m, c.j0, n, err, sizeof err);
    if (rc == 0 && hand_mft_table_from(&ht, &t) != 0) {
        snprintf(err, sizeof err, "cannot allocate the hand-written table");
        rc = -1;
    }
    size_t plane = (size_t)m * m;
    double best[3] = {1e30, 1e30, 1e30};
    for (int r = 0; rc == 0 && r < repeats; ++r) {
        memset(c.img[0], 0, plane * sizeof(float));
        double t0 = now_s();
        rc = cpu_mft_accumulate(&t, (const float *)c.pupil, n, n, c.j0, c.j0, 1.0f, threads, &work,
                                c.img[0], err, sizeof err);
        best[0] = fmin(best[0], now_s() - t0);
        memset(c.img[1], 0, plane * sizeof(float));
        t0 = now_s();
        if (rc == 0)
            rc = hand_mft_accumulate(&ht, (const float *)c.pupil, n, n, c.j0, c.j0, 1.0f, threads,
                                     &hwork, c.img[1], err, sizeof err);
        best[1] = fmin(best[1], now_s() - t0);
        t0 = now_s();
        bare_cgemm(&c, threads);
        best[2] = fmin(best[2], now_s() - t0);
    }
    if (rc == 0)
        rc = cpu_mft_accumulate(&t, (const float *)c.pupil, n, n, c.j0, c.j0, 1.0f, 1, &work,
                                c.img[3], err, sizeof err);
    if (rc == 0) {
        int same = memcmp(c.img[0], c.img[3], plane * sizeof(float)) == 0;
        printf("mft_psfsim_cgemm,%d,%d,%d,%.3f,%.2e,%s\n", n, m, threads, best[0] * 1e3,
               max_rel_diff(c.img[0], c.img[1], plane), same ? "yes" : "NO");
        printf("mft_hand,%d,%d,%d,%.3f,0,\n", n, m, threads, best[1] * 1e3);
        printf("mft_bare_cgemm,%d,%d,%d,%.3f,%.2e,\n", n, m, threads, best[2] * 1e3,
               max_rel_diff(c.img[2], c.img[1], plane));
        fflush(stdout);
    } else {
        fprintf(stderr, "%d:%d: %s\n", n, m, err);
    }
    cpu_mft_work_free(&work);
    hand_mft_work_free(&hwork);
    cpu_mft_table_free(&t);
    hand_mft_table_free(&ht);
    case_free(&c);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s THREADS [REPEATS] n:M [n:M ...]\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[1]), repeats = 15, first = 2, rc = 0;
    if (!strchr(argv[2], ':')) {
        repeats = atoi(argv[2]);
        first = 3;
    }
    if (threads < 1 || repeats < 1) return 2;
    printf("pipeline,n,M,threads,ms,max_rel_diff_vs_hand,same_bytes_as_1_thread\n");
    for (int i = first; i < argc; ++i) {
        int n, m;
        if (sscanf(argv[i], "%d:%d", &n, &m) != 2 || n < 1 || m < 1) return 2;
        rc |= run_case(n, m, threads, repeats) != 0;
    }
    return rc ? 1 : 0;
}
