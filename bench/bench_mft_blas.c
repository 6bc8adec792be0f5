/* SPDX-License-Identifier: BSD-3-Clause */
/* Issue 17's A/B of the CPU MFT (cpu/mft.h: E = Wy P Wx^T, then |E|^2):
 * psfsim's hand-written products (cpu_mft_accumulate) against two
 * cblas_cgemm calls (OpenBLAS or any CBLAS) plus the same |E|^2 pass, on
 * the same pupil box (a circular pupil of n samples, a phase on it) and
 * matrix W[k][j] = exp(-2 pi i j (k - M/2) a). Best of 15, ms per image;
 * the largest |difference| of the two images over their peak is printed
 * with them. Threads: the hand kernel's own, the BLAS's as it is set up
 * (OPENBLAS_NUM_THREADS).
 * Prints CSV rows: pipeline,n,M,threads,ms,max_rel_diff
 * Usage: psfsim_bench_mft_blas THREADS n:M [n:M ...] */
#include <cblas.h>
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_time.h"
#include "cpu/mft.h"

/* One n:M case; returns 0 or -1. */
static int run_case(int n, int m, int threads)
{
    int j0 = -(n / 2);
    double a = 0.5 / n; /* 2 pixels per lambda/D */
    char err[256];
    cpu_mft_table t;
    if (cpu_mft_table_build(&t, a, m, j0, n, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    size_t box = (size_t)n * n, plane = (size_t)m * m;
    float complex *pupil = calloc(box, sizeof *pupil), *w = malloc((size_t)m * n * sizeof *w);
    float complex *tmp = malloc((size_t)n * m * sizeof *tmp), *e = malloc(plane * sizeof *e);
    float *img_hand = calloc(plane, sizeof *img_hand), *img_blas = calloc(plane, sizeof *img_blas);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            double y = (i + j0 + 0.5) / (0.5 * n), x = (j + j0 + 0.5) / (0.5 * n);
            double r2 = x * x + y * y;
            if (r2 <= 1.0)
                pupil[(size_t)i * n + j] = cexpf((float complex)(2.0 * M_PI * I * 0.3 * r2));
        }
    for (int k = 0; k < m; ++k) /* W[k][j], row-major M x n, the phase as the table's */
        for (int j = 0; j < n; ++j) {
            double ph = (double)(j + j0) * (k - m / 2) * a;
            ph -= floor(ph);
            w[(size_t)k * n + j] = (float complex)cexp(-2.0 * M_PI * I * ph);
        }
    cpu_mft_work work = {0};
    double best_hand = 1e30, best_blas = 1e30;
    const float complex one = 1.0f, zero = 0.0f;
    for (int r = 0; r < 15; ++r) {
        memset(img_hand, 0, plane * sizeof *img_hand);
        double t0 = now_s();
        if (cpu_mft_accumulate(&t, (const float *)pupil, n, n, j0, j0, 1.0f, threads, &work,
                               img_hand, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return -1;
        }
        best_hand = fmin(best_hand, now_s() - t0);
        memset(img_blas, 0, plane * sizeof *img_blas);
        t0 = now_s();
        /* T = P Wx^T (n x M), E = Wy T (M x M) */
        cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m, n, &one, pupil, n, w, n, &zero,
                    tmp, m);
        cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, m, n, &one, w, n, tmp, m, &zero,
                    e, m);
        for (size_t i = 0; i < plane; ++i)
            img_blas[i] += crealf(e[i]) * crealf(e[i]) + cimagf(e[i]) * cimagf(e[i]);
        best_blas = fmin(best_blas, now_s() - t0);
    }
    double d = 0.0, peak = 0.0;
    for (size_t i = 0; i < plane; ++i) {
        d = fmax(d, fabs((double)img_hand[i] - img_blas[i]));
        peak = fmax(peak, img_hand[i]);
    }
    printf("mft_hand,%d,%d,%d,%.3f,%.2e\n", n, m, threads, best_hand * 1e3, d / peak);
    printf("mft_cblas_cgemm,%d,%d,%d,%.3f,%.2e\n", n, m, threads, best_blas * 1e3, d / peak);
    fflush(stdout);
    cpu_mft_work_free(&work);
    cpu_mft_table_free(&t);
    free(pupil);
    free(w);
    free(tmp);
    free(e);
    free(img_hand);
    free(img_blas);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s THREADS n:M [n:M ...]\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[1]), rc = 0;
    for (int i = 2; i < argc; ++i) {
        int n, m;
        if (sscanf(argv[i], "%d:%d", &n, &m) != 2 || n < 1 || m < 1) return 2;
        rc |= run_case(n, m, threads);
    }
    return rc ? 1 : 0;
}
