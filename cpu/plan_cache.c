/* SPDX-License-Identifier: BSD-3-Clause */
#include "cpu/plan_cache.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static int threads_ok;

/* fftwf_init_threads must run once per process before any threaded plan. */
static void init_threads(void)
{
    threads_ok = fftwf_init_threads();
}

/* The process's wisdom set aside while psfsim plans (cpu_fft_planner_enter,
 * _leave): FFTW_ESTIMATE takes a measured plan from the wisdom in memory
 * when it has one for the problem (its planner uses wisdom of any more
 * patient mode), so wisdom that a caller of the library measured, or
 * imported, would change psfsim's images. Planning is serialised by
 * psfsim's callers (FFTW's planner is not thread-safe). */
static char *aside;

void cpu_fft_planner_enter(void)
{
    aside = fftwf_export_wisdom_to_string();
    fftwf_forget_wisdom();
}

void cpu_fft_planner_leave(void)
{
    fftwf_forget_wisdom();
    if (aside) fftwf_import_wisdom_from_string(aside);
    free(aside);
    aside = NULL;
}

/* The N x N plan, or the pruned transform's three (cpu_fft_plan). */
typedef enum { PLAN_FULL, PLAN_ROWS, PLAN_TRANSPOSE, PLAN_ALL_ROWS, PLAN_BLOCK } plan_kind;

static fftwf_plan plan_one(const cpu_fft_plan *p, plan_kind kind, unsigned flags)
{
    int n = p->npix;
    ptrdiff_t n2 = 2 * (ptrdiff_t)n, b = p->band, gap = (ptrdiff_t)(n - b) * n2; /* floats */
    float *ri = (float *)p->in, *ro = (float *)p->out;
    if (kind == PLAN_FULL) return fftwf_plan_dft_2d(n, n, p->in, p->out, FFTW_FORWARD, flags);
    if (kind == PLAN_ROWS) { /* in's 2 x B band rows (the second N - B rows on) -> out's */
        fftwf_iodim64 dft = {.n = n, .is = 2, .os = 2};
        fftwf_iodim64 rows[2] = {{.n = 2, .is = gap, .os = gap}, {.n = b, .is = n2, .os = n2}};
        return fftwf_plan_guru64_split_dft(1, &dft, 2, rows, ri, ri + 1, ro, ro + 1, flags);
    }
    if (kind == PLAN_TRANSPOSE) { /* out's band rows -> in's band columns (rank 0: a copy) */
        fftwf_iodim64 t[3] = {{.n = 2, .is = gap, .os = 2 * (n - b)},
                              {.n = b, .is = n2, .os = 2},
                              {.n = n, .is = 2, .os = n2}};
        return fftwf_plan_guru64_split_dft(0, NULL, 3, t, ro, ro + 1, ri, ri + 1, flags);
    }
    if (kind == PLAN_BLOCK) /* block_in must keep its zeros: the input preserved */
        return fftwf_plan_many_dft(1, &n, CPU_FFT_BLOCK_ROWS, p->block_in, NULL, 1, n, p->block_out,
                                   NULL, 1, n, FFTW_FORWARD, flags | FFTW_PRESERVE_INPUT);
    return fftwf_plan_many_dft(1, &n, n, p->in, NULL, 1, n, p->out, NULL, 1, n, FFTW_FORWARD,
                               flags);
}

/* Estimated (FFTW_ESTIMATE: chosen by FFTW's operation count, never by
 * timing) in a planner without wisdom, so that the plan, and so every
 * image's bits, depend on the transform's shape alone, not on the machine's
 * load, the set's size or what planned before. */
static fftwf_plan make_plan(const cpu_fft_plan *p, plan_kind kind)
{
    if (threads_ok) fftwf_plan_with_nthreads(p->threads);
    cpu_fft_planner_enter();
    fftwf_plan plan = plan_one(p, kind, FFTW_ESTIMATE);
    cpu_fft_planner_leave();
    return plan;
}

/* Bytes of one block buffer (CPU_FFT_BLOCK_ROWS rows). */
static size_t block_bytes(const cpu_fft_plan *p)
{
    return (size_t)CPU_FFT_BLOCK_ROWS * (size_t)p->npix * sizeof(fftwf_complex);
}

static int no_plan(const cpu_fft_plan *p, char *err, size_t errlen)
{
    snprintf(err, errlen, "cpu: FFTW could not plan a %dx%d transform", p->npix, p->npix);
    return -1;
}

/* The pruned transform's plans (cpu_fft_plan: rows, transpose, all_rows,
 * and on one thread the blocks with their buffers). Returns 0, or -1 with
 * err. */
static int plan_pruned(cpu_fft_plan *p, char *err, size_t errlen)
{
    p->rows = make_plan(p, PLAN_ROWS);
    p->transpose = p->rows ? make_plan(p, PLAN_TRANSPOSE) : NULL;
    p->all_rows = p->transpose ? make_plan(p, PLAN_ALL_ROWS) : NULL;
    if (!p->all_rows) return no_plan(p, err, errlen);
    if (p->threads == 1) { /* the blocks: on one thread (FFTW's own threads share none) */
        if (cpu_fft_block_alloc(p, &p->block_in, &p->block_out) != 0) {
            snprintf(err, errlen, "cpu: cannot allocate the %dx%d FFT's row blocks", p->npix,
                     p->npix);
            return -1;
        }
        p->block = make_plan(p, PLAN_BLOCK);
        if (!p->block) return no_plan(p, err, errlen);
    }
    return 0;
}

/* The band planned: band when pruning pays (it saves at least a fifth of
 * the row transforms); else from CPU_ROW_COLUMN_MIN_NPIX up N/2, the same
 * rows, transpose and rows over the whole grid (for an odd N all but the
 * middle row and column, which a pupil rarely reaches: it then gets the
 * 2D plan, cpu_fft_plan_add_full); else 0, FFTW's own 2D plan. */
static int plan_band(int npix, int band)
{
    if (band > 0 && 10 * band <= 4 * npix) return band;
    return npix >= CPU_ROW_COLUMN_MIN_NPIX ? npix / 2 : 0;
}

/* cpu_fft_plan_create_band with the band given as planned (0: 2D). */
static int plan_create(cpu_fft_plan *p, int npix, int band, int threads, char *err, size_t errlen)
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
    p->band = band;
    int rc = p->band ? plan_pruned(p, err, errlen) : (p->plan = make_plan(p, PLAN_FULL)) ? 0 : -1;
    if (rc != 0) {
        if (!p->band) no_plan(p, err, errlen);
        cpu_fft_plan_destroy(p);
        return -1;
    }
    memset(p->in, 0, n * sizeof(fftwf_complex));
    memset(p->out, 0, n * sizeof(fftwf_complex));
    if (p->block_in) memset(p->block_in, 0, block_bytes(p));
    return 0;
}

int cpu_fft_plan_create(cpu_fft_plan *p, int npix, int threads, char *err, size_t errlen)
{
    return plan_create(p, npix, 0, threads, err, errlen);
}

int cpu_fft_plan_create_band(cpu_fft_plan *p, int npix, int band, int threads, char *err,
                             size_t errlen)
{
    return plan_create(p, npix, plan_band(npix, band), threads, err, errlen);
}

int cpu_fft_block_alloc(const cpu_fft_plan *p, fftwf_complex **block_in, fftwf_complex **block_out)
{
    *block_in = fftwf_malloc(block_bytes(p));
    *block_out = fftwf_malloc(block_bytes(p));
    if (!*block_in || !*block_out) {
        fftwf_free(*block_in);
        fftwf_free(*block_out);
        *block_in = *block_out = NULL;
        return -1;
    }
    memset(*block_in, 0, block_bytes(p));
    return 0;
}

int cpu_fft_plan_add_full(cpu_fft_plan *p, char *err, size_t errlen)
{
    if (p->plan) return 0;
    p->plan = make_plan(p, PLAN_FULL);
    size_t n = (size_t)p->npix * (size_t)p->npix;
    memset(p->in, 0, n * sizeof(fftwf_complex));
    memset(p->out, 0, n * sizeof(fftwf_complex));
    if (!p->plan) {
        snprintf(err, errlen, "cpu: FFTW could not plan a %dx%d transform", p->npix, p->npix);
        return -1;
    }
    return 0;
}

/* The transpose plan's copy (plan_one, PLAN_TRANSPOSE): in[c N + r] =
 * out[r N + c] for the band rows r < B and r >= N - B, every column c, in
 * blocks of TRANSPOSE_BLOCK columns, so that the block's rows of in stay in
 * cache while the band rows are read along (FFTW's rank-0 copy, cpy2d, was
 * ~15% of a 256^2 set's time, as much as the row transforms). A copy: the
 * same bytes as the plan's. Used below TRANSPOSE_MAX_NPIX only: there a
 * 1,000-image 256^2 set took 9% less on 2 threads and one image the same,
 * while at N = 512 and 1024 one image took 45% more than with FFTW's copy
 * (the block's rows of in alias in L1 at those strides; 2-core machine,
 * psfsim_bench_cpu_single). */
#define TRANSPOSE_BLOCK 16
#define TRANSPOSE_MAX_NPIX 512
static void band_transpose(const fftwf_complex *out, fftwf_complex *in, int n, int b)
{
    for (int c0 = 0; c0 < n; c0 += TRANSPOSE_BLOCK) {
        int c1 = c0 + TRANSPOSE_BLOCK < n ? c0 + TRANSPOSE_BLOCK : n;
        for (int h = 0; h < 2; ++h)
            for (int r = h ? n - b : 0, r1 = h ? n : b; r < r1; ++r) {
                const fftwf_complex *src = out + (size_t)r * n;
                for (int c = c0; c < c1; ++c)
                    memcpy(in + (size_t)c * n + r, src + c, sizeof *in);
            }
    }
}

void cpu_fft_plan_execute_dft(const cpu_fft_plan *p, fftwf_complex *in, fftwf_complex *out,
                              int full)
{
    if (full || !p->band) {
        fftwf_execute_dft(p->plan, in, out);
        return;
    }
    /* The split interface on interleaved arrays (ii = ri + 1, strides in
     * floats: FFTW manual, "Guru Complex DFTs"), so that fftwf_execute_dft
     * stays one call per transform, the one writing the result. */
    int n = p->npix, b = p->band;
    float *ri = (float *)in, *ro = (float *)out;
    fftwf_execute_split_dft(p->rows, ri, ri + 1, ro, ro + 1);
    if (n < TRANSPOSE_MAX_NPIX)
        band_transpose(out, in, n, b);
    else
        fftwf_execute_split_dft(p->transpose, ro, ro + 1, ri, ri + 1);
    fftwf_execute_dft(p->all_rows, in, out);
    for (size_t r = 0; r < (size_t)n; ++r) { /* in's band columns back to zero */
        memset(in + r * n, 0, (size_t)b * sizeof *in);
        memset(in + r * n + (n - b), 0, (size_t)b * sizeof *in);
    }
}

void cpu_fft_plan_execute(const cpu_fft_plan *p)
{
    cpu_fft_plan_execute_dft(p, p->in, p->out, 0);
}

void cpu_fft_plan_destroy(cpu_fft_plan *p)
{
    if (p->plan) fftwf_destroy_plan(p->plan);
    if (p->rows) fftwf_destroy_plan(p->rows);
    if (p->transpose) fftwf_destroy_plan(p->transpose);
    if (p->all_rows) fftwf_destroy_plan(p->all_rows);
    if (p->block) fftwf_destroy_plan(p->block);
    fftwf_free(p->block_in);
    fftwf_free(p->block_out);
    fftwf_free(p->in);
    fftwf_free(p->out);
    memset(p, 0, sizeof *p);
}
