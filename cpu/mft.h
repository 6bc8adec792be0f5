/* SPDX-License-Identifier: BSD-3-Clause */
/* The matrix Fourier transform (MFT) of a sampled pupil onto a focal-plane
 * grid of any size and pixel (Soummer, Pueyo, Sivaramakrishnan and
 * Vanderbei 2007, "Fast computation of Lyot-style coronagraph propagation",
 * Optics Express 15, 15935, eq. 1-3): with the pupil P sampled at
 * x_j = j dx (j counted from the axis sample) and the image at
 * theta_k = (k - M/2) p,
 *
 *   E = Wy P Wx^T,   W[k][j] = exp(-2 pi i x_j theta_k / lambda)
 *                            = exp(-2 pi i j (k - M/2) a),  a = dx p / lambda,
 *
 * two complex matrix products of cost R C M + R M^2 for an R x C pupil box
 * and an M x M image, against an FFT's N^2 log N. With M dx p = lambda (and
 * the box inside the grid) it is the DFT the FFT path computes, sample for
 * sample. The sign is the forward DFT's (docs/design.md, "Propagation"). */
#ifndef PSFSIM_CPU_MFT_H
#define PSFSIM_CPU_MFT_H

#include <stddef.h>

/* The twiddle factors for one (a, M, range of pupil offsets): computed once
 * per set and component and reused for every image (they do not depend on
 * the aberrations). Both products use the same matrix W[j][k] =
 * exp(-2 pi i j (k - M/2) a), j = j0 .. j0 + nj - 1 (the rows' and the
 * columns' offsets), stored twice in the layouts the kernels stream:
 * panels of 32 image columns for step 1 and transposed for step 2. */
typedef struct {
    double a;           /* cycles per (pupil sample x image pixel): dx p / lambda */
    int npix;           /* M */
    int centre2;        /* twice the axis's pixel index: 2 (M/2), or M - 1 (half_pixel) */
    int j0, nj;         /* pupil offsets covered: j = j0 .. j0 + nj - 1 (axis j = 0) */
    int tstride;        /* floats per row of the transposed copy (>= nj, padded) */
    float *p_re, *p_im; /* panels [ceil(M/32)][nj][32]: W[j][k] at
                           ((k / 32) nj + j - j0) 32 + k % 32; 0 for k >= M */
    float *t_re, *t_im; /* transposed [M rounded up to 4][tstride]: W[j][k] at
                           k tstride + j - j0; 0 for k >= M */
} cpu_mft_table;

/* Fill t for a (> 0, finite), M = npix >= 1 and offsets j0 .. j0 + nj - 1
 * (nj >= 1). The phase j (k - M/2) a is formed from the exact integer
 * product j (k - M/2) and reduced to [0, 1) turn in double before the
 * double sincos, so large arguments lose nothing; stored as float.
 * Returns 0, or -1 with err (allocation, bad argument). */
int cpu_mft_table_build(cpu_mft_table *t, double a, int npix, int j0, int nj, char *err,
                        size_t errlen);
/* cpu_mft_table_build with the image axis at (centre2 / 2) instead of M/2:
 * W[j][k] = exp(-2 pi i j (2k - centre2) a / 2), centre2 = 2 (M/2) for
 * psfsim's grid (the same doubles as cpu_mft_table_build: the product is
 * twice as large and a / 2 is exact) or M - 1 for a grid centred between
 * pixels (psf_problem.half_pixel, even M). Errors as cpu_mft_table_build. */
int cpu_mft_table_build_centred(cpu_mft_table *t, double a, int npix, int centre2, int j0, int nj,
                                char *err, size_t errlen);
void cpu_mft_table_free(cpu_mft_table *t);
/* Bytes the table of (npix, nj) takes. */
size_t cpu_mft_table_bytes(int npix, int nj);

/* Scratch of one transform: the pupil box in planar form, padded to whole
 * blocks of 4 rows, the lists of its non-zero columns and rows, and the
 * intermediate T = P Wx^T in panels of 32 columns. Grows on demand; one per
 * backend (not shared between threads). */
typedef struct {
    size_t cap_p, cap_t, cap_idx; /* elements held by p_*, t_*, idx */
    float *p_re, *p_im;           /* [rows rounded up to 4][cols] */
    float *t_re, *t_im;           /* [ceil(M/32)][rows rounded up to 4][32] */
    int *idx;                     /* [blocks * cols] non-zero columns per block of 4 rows,
                                     then [rows] the non-zero rows */
} cpu_mft_work;

void cpu_mft_work_free(cpu_mft_work *w);

/* image[M * M] (row-major, M = t->npix, axis at (M/2, M/2)) +=
 * scale |E|^2 with E = Wy P Wx^T: pupil is the rows x cols box (row-major,
 * interleaved re, im floats: rows * cols * 2), its first row at offset
 * row_off and first column at col_off from the axis sample, both ranges
 * inside the table's (row_off >= t->j0, row_off + rows <= t->j0 + t->nj,
 * the same for columns). Pupil samples that are zero are skipped. Up to
 * threads threads (POSIX) share a large transform (from ~3e7 complex
 * multiply-adds); the result is the same for any number. Returns 0, or -1
 * with err (a range outside the table, allocation). */
int cpu_mft_accumulate(const cpu_mft_table *t, const float *pupil, int rows, int cols, int row_off,
                       int col_off, float scale, int threads, cpu_mft_work *w, float *image,
                       char *err, size_t errlen);

#endif
