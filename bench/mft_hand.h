/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim's former CPU MFT (bench/mft_hand.c): the same transform as
 * cpu/mft.h, E = Wy P Wx^T then image += scale |E|^2 (Soummer et al. 2007,
 * Optics Express 15, 15935, eq. 1-3), by hand-written blocked products;
 * for bench_mft_blas's A/B against cgemm only. */
#ifndef PSFSIM_BENCH_MFT_HAND_H
#define PSFSIM_BENCH_MFT_HAND_H

#include <stddef.h>

#include "cpu/mft.h"

/* cpu_mft_table's matrix W[j][k] stored twice in the layouts the kernels
 * stream: panels of 32 image columns for step 1 and transposed for step 2. */
typedef struct {
    int npix;           /* M */
    int j0, nj;         /* pupil offsets covered: j = j0 .. j0 + nj - 1 */
    int tstride;        /* floats per row of the transposed copy (>= nj, padded) */
    float *p_re, *p_im; /* panels [ceil(M/32)][nj][32]: W[j][k] at
                           ((k / 32) nj + j - j0) 32 + k % 32; 0 for k >= M */
    float *t_re, *t_im; /* transposed [M rounded up to 4][tstride]: W[j][k] at
                           k tstride + j - j0; 0 for k >= M */
} hand_mft_table;

/* t from w's values (the same floats). Returns 0, or -1 (allocation). */
int hand_mft_table_from(hand_mft_table *t, const cpu_mft_table *w);
void hand_mft_table_free(hand_mft_table *t);

/* Scratch of one transform: the pupil box in planar form, padded to whole
 * blocks of 4 rows, the lists of its non-zero columns and rows, and the
 * intermediate T = P Wx^T in panels of 32 columns. Grows on demand. */
typedef struct {
    size_t cap_p, cap_t, cap_idx; /* elements held by p_*, t_*, idx */
    float *p_re, *p_im;           /* [rows rounded up to 4][cols] */
    float *t_re, *t_im;           /* [ceil(M/32)][rows rounded up to 4][32] */
    int *idx;                     /* [blocks * cols] non-zero columns per block of 4 rows,
                                     then [rows] the non-zero rows */
} hand_mft_work;

void hand_mft_work_free(hand_mft_work *w);

/* cpu_mft_accumulate's transform (cpu/mft.h: the same arguments), both ranges
 * inside the table's. Pupil samples that are zero are skipped; up to
 * threads threads share a large transform. Returns 0, or -1 with err. */
int hand_mft_accumulate(const hand_mft_table *t, const float *pupil, int rows, int cols,
                        int row_off, int col_off, float scale, int threads, hand_mft_work *w,
                        float *image, char *err, size_t errlen);

#endif
