/* SPDX-License-Identifier: BSD-3-Clause */
/* The matrix Fourier transform (cpu/mft.h; Soummer et al. 2007, Optics
 * Express 15, 15935): two complex matrix products in plain C. Both have the
 * form C[q][k] = sum_l A(q, l) B[l][k], so one kernel serves both: a tile of
 * 4 output rows x 32 columns accumulated over l in local arrays (which the
 * compiler keeps in vector registers), reading per l one contiguous
 * 32-float piece of B (B stored in panels of 32 columns, streamed in order)
 * and four scalars of A (from four sequential streams). The loops are
 * blocked so that the panels being reused stay in the L2 cache. Zero pupil
 * samples and rows are skipped through index lists. */
#include "cpu/mft.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/fork_join.h"

/* The kernels are compiled for AVX-512, AVX2 + FMA and the baseline, and
 * the loader picks the best the CPU has (GCC's function multiversioning:
 * psfsim is built for the baseline x86-64, SSE2 only). Multiply-adds may be
 * fused there (the ISO C mode psfsim builds in turns contraction off).
 * Elsewhere: one version. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 && defined(__x86_64__)
#define MFT_CLONES                                                                                 \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"),                   \
                   optimize("fp-contract=fast")))
#else
#define MFT_CLONES
#endif

#define MFT_RB 4  /* output rows per tile */
#define MFT_KT 32 /* output columns per tile: 4 x 32 x 2 floats = 16 AVX-512 registers */
#define MFT_ALIGN 64
#define MFT_MAX_THREADS 64
/* Complex multiply-adds of one transform from which it is split over
 * threads: ~4 ms on one core, against ~50 us to start and join them. */
#define MFT_THREAD_MIN_WORK (2.0 * 1024 * 1024 * 16)

static size_t round_up(size_t n, size_t m)
{
    return (n + m - 1) / m * m;
}

/* Floats per row of the transposed table: nj rounded up to 16 (64 bytes),
 * plus 16 when that is a multiple of 256 (1 KB), so that the four rows a
 * tile reads do not share cache sets. */
static size_t transposed_stride(int nj)
{
    size_t s = round_up((size_t)(nj > 0 ? nj : 0), 16);
    return s % 256 == 0 ? s + 16 : s;
}

/* 64-byte aligned floats, zeroed. */
static float *alloc_floats(size_t n)
{
    size_t bytes = round_up((n ? n : 1) * sizeof(float), MFT_ALIGN);
    float *p = aligned_alloc(MFT_ALIGN, bytes);
    if (p) memset(p, 0, bytes);
    return p;
}

static size_t panel_floats(int npix, int nj)
{
    return round_up((size_t)(npix > 0 ? npix : 0), MFT_KT) * (size_t)(nj > 0 ? nj : 0);
}

static size_t transposed_floats(int npix, int nj)
{
    return round_up((size_t)(npix > 0 ? npix : 0), MFT_RB) * transposed_stride(nj);
}

size_t cpu_mft_table_bytes(int npix, int nj)
{
    return 2 * (panel_floats(npix, nj) + transposed_floats(npix, nj)) * sizeof(float);
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
    t->p_re = alloc_floats(panel_floats(npix, nj));
    t->p_im = alloc_floats(panel_floats(npix, nj));
    t->t_re = alloc_floats(transposed_floats(npix, nj));
    t->t_im = alloc_floats(transposed_floats(npix, nj));
    if (!t->p_re || !t->p_im || !t->t_re || !t->t_im) {
        cpu_mft_table_free(t);
        snprintf(err, errlen, "cpu: cannot allocate the %d x %d MFT matrix", nj, npix);
        return -1;
    }
    t->a = a;
    t->npix = npix;
    t->centre2 = centre2;
    t->j0 = j0;
    t->nj = nj;
    t->tstride = (int)transposed_stride(nj);
    const double two_pi = 2.0 * M_PI;
    for (int j = 0; j < nj; ++j) {
        long long jj = (long long)j0 + j;
        for (int k = 0; k < npix; ++k) {
            /* The integer product is exact; reduce to one turn before sin/cos.
             * (2X)(a/2) is X a to the bit: scaling by 2 is exact. */
            double turns = (double)(jj * (2LL * k - centre2)) * (0.5 * a);
            turns -= floor(turns);
            float re = (float)cos(two_pi * turns), im = (float)-sin(two_pi * turns);
            size_t pi = ((size_t)(k / MFT_KT) * nj + j) * MFT_KT + k % MFT_KT;
            size_t ti = (size_t)k * t->tstride + j;
            t->p_re[pi] = t->t_re[ti] = re;
            t->p_im[pi] = t->t_im[ti] = im;
        }
    }
    return 0;
}

void cpu_mft_table_free(cpu_mft_table *t)
{
    free(t->p_re);
    free(t->p_im);
    free(t->t_re);
    free(t->t_im);
    memset(t, 0, sizeof *t);
}

void cpu_mft_work_free(cpu_mft_work *w)
{
    free(w->p_re);
    free(w->p_im);
    free(w->t_re);
    free(w->t_im);
    free(w->idx);
    memset(w, 0, sizeof *w);
}

/* Two planes of at least n floats (contents lost when they grow). */
static int grow_pair(float **a, float **b, size_t *cap, size_t n)
{
    if (n <= *cap) return 0;
    free(*a);
    free(*b);
    *a = alloc_floats(n);
    *b = alloc_floats(n);
    *cap = *a && *b ? n : 0;
    return *cap ? 0 : -1;
}

static int work_reserve(cpu_mft_work *w, int rows, int cols, int npix)
{
    size_t rp = round_up((size_t)rows, MFT_RB);
    if (grow_pair(&w->p_re, &w->p_im, &w->cap_p, rp * (size_t)cols) ||
        grow_pair(&w->t_re, &w->t_im, &w->cap_t, rp * round_up((size_t)npix, MFT_KT)))
        return -1;
    size_t nidx = rp / MFT_RB * (size_t)cols + (size_t)rows;
    if (nidx > w->cap_idx) {
        free(w->idx);
        w->idx = malloc(nidx * sizeof *w->idx);
        w->cap_idx = w->idx ? nidx : 0;
        if (!w->idx) return -1;
    }
    return 0;
}

/* C[q][k] = sum over l in idx[0..nl-1] of A(q, l) B[l][k], q < 4, k < 32,
 * with A(q, l) = (ar + i ai)[l a_l + q a_q], B[l] = (br + i bi) + l b_l
 * (32 readable floats each) and C[q] = (cr + i ci) + q c_q. */
MFT_CLONES static void tile(int nl, const int *idx, const float *ar, const float *ai, size_t a_l,
                            size_t a_q, const float *br, const float *bi, size_t b_l,
                            float *restrict cr, float *restrict ci, size_t c_q)
{
    float accr[MFT_RB][MFT_KT], acci[MFT_RB][MFT_KT];
    memset(accr, 0, sizeof accr);
    memset(acci, 0, sizeof acci);
    for (int t = 0; t < nl; ++t) {
        size_t l = (size_t)idx[t];
        const float *restrict xr = br + l * b_l, *restrict xi = bi + l * b_l;
        for (int q = 0; q < MFT_RB; ++q) {
            const float a = ar[l * a_l + q * a_q], b = ai[l * a_l + q * a_q];
            for (int k = 0; k < MFT_KT; ++k) { /* two fused multiply-adds each */
                float re = accr[q][k] + a * xr[k], im = acci[q][k] + a * xi[k];
                accr[q][k] = re - b * xi[k];
                acci[q][k] = im + b * xr[k];
            }
        }
    }
    for (int q = 0; q < MFT_RB; ++q)
        for (int k = 0; k < MFT_KT; ++k) {
            cr[q * c_q + k] = accr[q][k];
            ci[q * c_q + k] = acci[q][k];
        }
}

/* img[k] += scale (er[k]^2 + ei[k]^2), k < m. */
MFT_CLONES static void add_power(int m, float scale, const float *restrict er,
                                 const float *restrict ei, float *restrict img)
{
    for (int k = 0; k < m; ++k)
        img[k] += scale * (er[k] * er[k] + ei[k] * ei[k]);
}

/* The box in planar form (zero rows padding the last block), the non-zero
 * columns of each block of 4 rows and the non-zero rows. Returns the number
 * of non-zero rows (their list at idx + blocks * cols). */
static int prepare(const float *pupil, int rows, int cols, cpu_mft_work *w, int *counts)
{
    int nblocks = (rows + MFT_RB - 1) / MFT_RB;
    size_t rp = (size_t)nblocks * MFT_RB;
    memset(w->p_re, 0, rp * (size_t)cols * sizeof *w->p_re);
    memset(w->p_im, 0, rp * (size_t)cols * sizeof *w->p_im);
    int *used = w->idx + (size_t)nblocks * cols, nused = 0;
    for (int r = 0; r < rows; ++r) {
        const float *p = pupil + (size_t)r * cols * 2;
        float *pr = w->p_re + (size_t)r * cols, *pi = w->p_im + (size_t)r * cols;
        int any = 0;
        for (int c = 0; c < cols; ++c) {
            pr[c] = p[2 * c];
            pi[c] = p[2 * c + 1];
            any |= pr[c] != 0.0f || pi[c] != 0.0f;
        }
        if (any) used[nused++] = r;
    }
    for (int b = 0; b < nblocks; ++b) {
        int *list = w->idx + (size_t)b * cols, n = 0;
        for (int c = 0; c < cols; ++c) {
            int any = 0;
            for (int q = 0; q < MFT_RB; ++q) {
                size_t i = (size_t)(b * MFT_RB + q) * cols + c;
                any |= w->p_re[i] != 0.0f || w->p_im[i] != 0.0f;
            }
            if (any) list[n++] = c;
        }
        counts[b] = n;
    }
    return nused;
}

/* Tiles of 32 columns per block: the panels a block reuses (nl rows of 32
 * complex floats per tile) take at most about 512 KB of the L2 cache. */
static size_t tiles_per_block(size_t nl)
{
    size_t per_tile = (nl ? nl : 1) * MFT_KT * 2 * sizeof(float);
    size_t n = (512u * 1024u) / per_tile;
    return n ? n : 1;
}

/* One transform's shared, read-only description; the parts write disjoint
 * rows of T (step 1) or of the image (step 2). */
typedef struct {
    const cpu_mft_table *t;
    cpu_mft_work *w;
    const int *counts, *used;
    int cols, nused;
    size_t m, ntiles, rp, cj, rj;
    float scale;
    float *image;
} mft_ctx;

/* Step 1 for the blocks of 4 pupil rows b_lo .. b_hi - 1: T[r][k] = sum_c
 * P[r][c] W[col_off + c][k] (= P Wx^T); per block of tiles the table's
 * panels for the box's columns stay in L2 while the rows of P go by. */
static void step1(const mft_ctx *c, size_t b_lo, size_t b_hi)
{
    const cpu_mft_table *t = c->t;
    cpu_mft_work *w = c->w;
    size_t nj = (size_t)t->nj, tb = tiles_per_block(nj), cols = (size_t)c->cols;
    for (size_t k0 = 0; k0 < c->ntiles; k0 += tb) {
        size_t k1 = k0 + tb < c->ntiles ? k0 + tb : c->ntiles;
        for (size_t b = b_lo; b < b_hi; ++b) {
            size_t r0 = b * MFT_RB;
            for (size_t k = k0; k < k1; ++k) {
                size_t panel = (k * nj + c->cj) * MFT_KT, out = (k * c->rp + r0) * MFT_KT;
                tile(c->counts[b], w->idx + b * cols, w->p_re + r0 * cols, w->p_im + r0 * cols, 1,
                     cols, t->p_re + panel, t->p_im + panel, MFT_KT, w->t_re + out, w->t_im + out,
                     MFT_KT);
            }
        }
    }
}

/* Step 2 for the blocks of 4 image rows i_lo .. i_hi - 1: E[k1][k2] =
 * sum_r W[row_off + r][k1] T[r][k2] (= Wy T), a 4 x 32 tile at a time, per
 * block of tiles of T kept in L2; then image += scale |E|^2. */
static void step2(const mft_ctx *c, size_t i_lo, size_t i_hi)
{
    const cpu_mft_table *t = c->t;
    const cpu_mft_work *w = c->w;
    size_t ts = (size_t)t->tstride, m = c->m, tb = tiles_per_block(c->rp);
    float er[MFT_RB * MFT_KT], ei[MFT_RB * MFT_KT];
    for (size_t k0 = 0; k0 < c->ntiles; k0 += tb) {
        size_t k1 = k0 + tb < c->ntiles ? k0 + tb : c->ntiles;
        for (size_t i0 = i_lo * MFT_RB; i0 < i_hi * MFT_RB; i0 += MFT_RB) {
            for (size_t k = k0; k < k1; ++k) {
                size_t a = i0 * ts + c->rj, b = k * c->rp * MFT_KT, c0 = k * MFT_KT;
                tile(c->nused, c->used, t->t_re + a, t->t_im + a, 1, ts, w->t_re + b, w->t_im + b,
                     MFT_KT, er, ei, MFT_KT);
                int kt = m - c0 < MFT_KT ? (int)(m - c0) : MFT_KT;
                for (size_t q = 0; q < MFT_RB && i0 + q < m; ++q)
                    add_power(kt, c->scale, er + q * MFT_KT, ei + q * MFT_KT,
                              c->image + (i0 + q) * m + c0);
            }
        }
    }
}

typedef struct {
    const mft_ctx *c;
    int step;
    size_t lo, hi;
} mft_part;

static void *run_part(void *arg)
{
    const mft_part *p = arg;
    if (p->step == 1)
        step1(p->c, p->lo, p->hi);
    else
        step2(p->c, p->lo, p->hi);
    return NULL;
}

/* Run step over units 0 .. n - 1 split into up to threads contiguous parts,
 * the first on this thread; a thread that cannot start runs its part here.
 * Every output element is computed by the same code whatever the split, so
 * the result does not depend on the number of threads. */
static void run_step(const mft_ctx *c, int step, size_t n, int threads)
{
    mft_part parts[MFT_MAX_THREADS];
    size_t np = threads < 1 ? 1 : (size_t)threads;
    if (np > MFT_MAX_THREADS) np = MFT_MAX_THREADS;
    if (np > n) np = n ? n : 1;
    for (size_t i = 0; i < np; ++i)
        parts[i] = (mft_part){.c = c, .step = step, .lo = n * i / np, .hi = n * (i + 1) / np};
    psf_fork_join(run_part, parts, sizeof parts[0], (int)np);
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
    int nblocks = (rows + MFT_RB - 1) / MFT_RB;
    int *counts = malloc((size_t)nblocks * sizeof *counts);
    if (!counts || work_reserve(w, rows, cols, t->npix) != 0) {
        free(counts);
        snprintf(err, errlen, "cpu: cannot allocate the MFT workspace (%d x %d)", rows, t->npix);
        return -1;
    }
    mft_ctx c = {.t = t, .w = w, .counts = counts, .cols = cols, .scale = scale, .image = image};
    c.nused = prepare(pupil, rows, cols, w, counts);
    c.used = w->idx + (size_t)nblocks * cols;
    c.m = (size_t)t->npix;
    c.ntiles = (c.m + MFT_KT - 1) / MFT_KT;
    c.rp = (size_t)nblocks * MFT_RB;
    c.cj = (size_t)(col_off - t->j0);
    c.rj = (size_t)(row_off - t->j0);
    /* Threads only where they pay for their start (~50 us each). */
    double work = (double)rows * cols * c.m + (double)c.m * c.m * rows;
    if (work < MFT_THREAD_MIN_WORK) threads = 1;
    run_step(&c, 1, (size_t)nblocks, threads);
    run_step(&c, 2, (c.m + MFT_RB - 1) / MFT_RB, threads);
    free(counts);
    return 0;
}
