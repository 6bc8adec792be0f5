/* SPDX-License-Identifier: BSD-3-Clause */
/* The matrix Fourier transform (cpu/mft.h; Soummer et al. 2007, Optics
 * Express 15, 15935): two complex matrix products through CBLAS's cgemm
 * (OpenBLAS: issue 17 measured it within 7% of the former hand-written
 * product on one thread and 1.2-4.6x faster on 16), then |E|^2.
 *
 * Threads: psfsim splits each product itself into blocks of output rows,
 * one single-threaded cgemm per block, on its own POSIX threads; OpenBLAS's
 * threads are set to one for the process (openblas_set_num_threads(1),
 * once). So lanes that each run a transform do not oversubscribe the cores
 * with OpenBLAS's pool (whose concurrent use from several threads the
 * OpenBLAS FAQ advises against), and every output element is computed by
 * the same single-threaded kernel whatever the split (MFT_UNIT_ROWS): the
 * same bytes for any number of threads. */
#include "cpu/mft.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MFT_ALIGN 64
#define MFT_MAX_THREADS 64
/* Output rows per unit of the split: parts start on multiples of it. An
 * OpenBLAS kernel's rounding can depend on where a row falls in its call's
 * groups of rows (OpenBLAS 0.3.21, measured: the AVX2 Haswell and Zen
 * kernels group them by 6), so parts start where the groups of one call
 * over all rows would: 24, a multiple of 6 and 8, gives the same bytes for
 * any split with every x86-64 kernel OpenBLAS 0.3.21 runs here
 * (OPENBLAS_CORETYPE; rows only: cutting the columns changes bits, even at
 * multiples of 48, so the parts are bands of whole rows). */
#define MFT_UNIT_ROWS 24
/* Complex multiply-adds of one transform from which it is split over
 * threads: ~4 ms on one core, against ~50 us to start and join them. */
#define MFT_THREAD_MIN_WORK (2.0 * 1024 * 1024 * 16)

static size_t round_up(size_t n, size_t m)
{
    return (n + m - 1) / m * m;
}

/* 64-byte aligned floats, zeroed. */
static float *alloc_floats(size_t n)
{
    size_t bytes = round_up((n ? n : 1) * sizeof(float), MFT_ALIGN);
    float *p = aligned_alloc(MFT_ALIGN, bytes);
    if (p) memset(p, 0, bytes);
    return p;
}

static size_t table_floats(int npix, int nj)
{
    return 2 * (size_t)(npix > 0 ? npix : 0) * (size_t)(nj > 0 ? nj : 0);
}

size_t cpu_mft_table_bytes(int npix, int nj)
{
    return table_floats(npix, nj) * sizeof(float);
}

int cpu_mft_table_build(cpu_mft_table *t, double a, int npix, int j0, int nj, char *err,
                        size_t errlen)
{
    return cpu_mft_table_build_centred(t, a, npix, 2 * (npix / 2), j0, nj, err, errlen);
}

int cpu_mft_table_build_centred(cpu_mft_table *t, double a, int npix, int centre2, int j0, int nj,
                                char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (!(a > 0.0) || !isfinite(a) || npix < 1 || nj < 1) {
        snprintf(err, errlen, "cpu: MFT table: bad arguments (a = %g, M = %d, rows = %d)", a, npix,
                 nj);
        return -1;
    }
    t->w = alloc_floats(table_floats(npix, nj));
    if (!t->w) {
        snprintf(err, errlen, "cpu: cannot allocate the %d x %d MFT matrix", nj, npix);
        return -1;
    }
    t->a = a;
    t->npix = npix;
    t->centre2 = centre2;
    t->j0 = j0;
    t->nj = nj;
    const double two_pi = 2.0 * M_PI;
    for (int j = 0; j < nj; ++j) {
        long long jj = (long long)j0 + j;
        for (int k = 0; k < npix; ++k) {
            /* The integer product is exact; reduce to one turn before sin/cos.
             * (2X)(a/2) is X a to the bit: scaling by 2 is exact. */
            double turns = (double)(jj * (2LL * k - centre2)) * (0.5 * a);
            turns -= floor(turns);
            size_t i = 2 * ((size_t)k * (size_t)nj + (size_t)j);
            t->w[i] = (float)cos(two_pi * turns);
            t->w[i + 1] = (float)-sin(two_pi * turns);
        }
    }
    return 0;
}

void cpu_mft_table_free(cpu_mft_table *t)
{
    free(t->w);
    memset(t, 0, sizeof *t);
}

void cpu_mft_work_free(cpu_mft_work *w)
{
    free(w->t);
    free(w->e);
    memset(w, 0, sizeof *w);
}

/* At least n floats in *p (contents lost when it grows). */
static int grow(float **p, size_t *cap, size_t n)
{
    if (n <= *cap) return 0;
    free(*p);
    *p = alloc_floats(n);
    *cap = *p ? n : 0;
    return *p ? 0 : -1;
}

/* One transform's shared, read-only description; the parts write disjoint
 * rows of T (step 1) or of E and the image (step 2). */
typedef struct {
    const float *pupil, *wx, *wy; /* the box; W's columns for its columns and rows */
    int rows, cols, m, ldw;       /* ldw: complex values per row of W^T (nj) */
    float *t, *e, *image;
    float scale;
} mft_ctx;

/* Step 1 for pupil rows r0 .. r1 - 1: T[r][k] = sum_c P[r][c] W[col_off +
 * c][k] (= P Wx^T), rows x M. */
static void step1(const mft_ctx *c, int r0, int r1)
{
    const float one[2] = {1.0f, 0.0f}, zero[2] = {0.0f, 0.0f};
    size_t m = (size_t)c->m;
    cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, c->m, c->cols, one,
                c->pupil + 2 * (size_t)r0 * (size_t)c->cols, c->cols, c->wx, c->ldw, zero,
                c->t + 2 * (size_t)r0 * m, c->m);
}

/* Step 2 for image rows i0 .. i1 - 1: E[k1][k2] = sum_r W[row_off + r][k1]
 * T[r][k2] (= Wy T), then image += scale |E|^2 on those rows. */
static void step2(const mft_ctx *c, int i0, int i1)
{
    const float one[2] = {1.0f, 0.0f}, zero[2] = {0.0f, 0.0f};
    size_t m = (size_t)c->m;
    float *e = c->e + 2 * (size_t)i0 * m;
    cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, i1 - i0, c->m, c->rows, one,
                c->wy + 2 * (size_t)i0 * (size_t)c->ldw, c->ldw, c->t, c->m, zero, e, c->m);
    float *img = c->image + (size_t)i0 * m;
    for (size_t k = 0; k < (size_t)(i1 - i0) * m; ++k)
        img[k] += c->scale * (e[2 * k] * e[2 * k] + e[2 * k + 1] * e[2 * k + 1]);
}

typedef struct {
    const mft_ctx *c;
    int step, lo, hi; /* output rows lo .. hi - 1 */
} mft_part;

static void *run_part(void *arg)
{
    const mft_part *p = arg;
    if (p->hi <= p->lo) return NULL;
    if (p->step == 1)
        step1(p->c, p->lo, p->hi);
    else
        step2(p->c, p->lo, p->hi);
    return NULL;
}

/* Run step over output rows 0 .. n - 1 split into up to threads contiguous
 * parts of whole units (MFT_UNIT_ROWS), the first on this thread; a thread
 * that cannot start runs its part here. */
static void run_step(const mft_ctx *c, int step, int n, int threads)
{
    mft_part parts[MFT_MAX_THREADS];
    pthread_t th[MFT_MAX_THREADS];
    int started[MFT_MAX_THREADS] = {0};
    size_t units = ((size_t)n + MFT_UNIT_ROWS - 1) / MFT_UNIT_ROWS;
    size_t np = threads < 1 ? 1 : (size_t)threads;
    if (np > MFT_MAX_THREADS) np = MFT_MAX_THREADS;
    if (np > units) np = units ? units : 1;
    for (size_t i = 0; i < np; ++i) {
        size_t lo = units * i / np * MFT_UNIT_ROWS, hi = units * (i + 1) / np * MFT_UNIT_ROWS;
        parts[i] = (mft_part){.c = c,
                              .step = step,
                              .lo = (int)(lo < (size_t)n ? lo : (size_t)n),
                              .hi = (int)(hi < (size_t)n ? hi : (size_t)n)};
    }
    for (size_t i = 1; i < np; ++i)
        started[i] = pthread_create(&th[i], NULL, run_part, &parts[i]) == 0;
    run_part(&parts[0]);
    for (size_t i = 1; i < np; ++i) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            run_part(&parts[i]);
    }
}

static void blas_single_thread(void)
{
    openblas_set_num_threads(1);
}

int cpu_mft_accumulate(const cpu_mft_table *t, const float *pupil, int rows, int cols, int row_off,
                       int col_off, float scale, int threads, cpu_mft_work *w, float *image,
                       char *err, size_t errlen)
{
    if (rows <= 0 || cols <= 0) return 0; /* nothing open: nothing to add */
    int end = t->j0 + t->nj;
    if (row_off < t->j0 || row_off + rows > end || col_off < t->j0 || col_off + cols > end) {
        snprintf(err, errlen,
                 "cpu: MFT: pupil box rows %d..%d, columns %d..%d outside the table's %d..%d",
                 row_off, row_off + rows - 1, col_off, col_off + cols - 1, t->j0, end - 1);
        return -1;
    }
    size_t m = (size_t)t->npix;
    if (grow(&w->t, &w->cap_t, 2 * (size_t)rows * m) != 0 || grow(&w->e, &w->cap_e, 2 * m * m)) {
        snprintf(err, errlen, "cpu: cannot allocate the MFT workspace (%d x %d)", rows, t->npix);
        return -1;
    }
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, blas_single_thread);
    mft_ctx c = {.pupil = pupil,
                 .wx = t->w + 2 * (size_t)(col_off - t->j0),
                 .wy = t->w + 2 * (size_t)(row_off - t->j0),
                 .rows = rows,
                 .cols = cols,
                 .m = t->npix,
                 .ldw = t->nj,
                 .t = w->t,
                 .e = w->e,
                 .image = image,
                 .scale = scale};
    /* Threads only where they pay for their start (~50 us each). */
    double work = (double)rows * cols * (double)m + (double)m * (double)m * rows;
    if (work < MFT_THREAD_MIN_WORK) threads = 1;
    run_step(&c, 1, rows, threads);
    run_step(&c, 2, t->npix, threads);
    return 0;
}
