/* SPDX-License-Identifier: BSD-3-Clause */
/* FFTW3 single-precision plan for one N x N complex forward transform,
 * made once per image set and executed for every image of it ("plan once,
 * execute many", FFTW manual sec. 4.2). The plans are estimated
 * (FFTW_ESTIMATE) in a planner without wisdom: a function of the
 * transform's shape, threads and the FFTW build and CPU alone, so that an
 * image's bits do not depend on the set's size, the machine's load, a
 * wisdom file or the run (measured plans, chosen by timing, did). */
#ifndef PSFSIM_CPU_FFT_PLAN_H
#define PSFSIM_CPU_FFT_PLAN_H

#include <stddef.h>

#include <fftw3.h>

typedef struct {
    int npix;
    int threads;              /* threads FFTW uses inside one transform */
    fftwf_plan plan;          /* out-of-place in -> out, FFTW_FORWARD, the whole N x N
                                 DFT; NULL while only the pruned plans are needed */
    int band;                 /* B > 0: pruned; in's samples lie in rows and columns
                                 [0, B) and [N - B, N), the rest is zero; 0: not pruned */
    fftwf_plan rows;          /* pruned: the 2 B band rows' DFTs, in -> out (split interface) */
    fftwf_plan transpose;     /* pruned: out's band rows -> in's band columns */
    fftwf_plan all_rows;      /* pruned: the N rows' DFTs, in -> out */
    fftwf_plan block;         /* pruned on one thread: CPU_FFT_BLOCK_ROWS rows' DFTs,
                                 block_in -> block_out (cpu/band_image.h); else NULL */
    fftwf_complex *block_in;  /* [CPU_FFT_BLOCK_ROWS N]: zero but in the band columns */
    fftwf_complex *block_out; /* [CPU_FFT_BLOCK_ROWS N] */
    fftwf_complex *in;        /* N*N, row-major, pupil with the axis at index 0 (pruned:
                                 transposed, see cpu_fft_plan_create_band) */
    fftwf_complex *out;       /* N*N, row-major, zero frequency at index 0 */
} cpu_fft_plan;

/* Grids from this size up whose band does not pay get the row-column
 * transform (cpu_fft_plan_create_band) rather than FFTW's estimated 2D
 * plan, which is 4-5x slower than a measured one there. */
#define CPU_ROW_COLUMN_MIN_NPIX 256

/* Rows of the pruned transform's second pass done at a time by
 * cpu_band_image (cpu/band_image.h): their input and output, 2 x 8 rows of
 * N = 256 complex floats (32 KiB), stay in L1 (48 KiB here). */
#define CPU_FFT_BLOCK_ROWS 8

/* Allocate in/out (fftwf_malloc, SIMD-aligned) and plan (estimated, see
 * the top; 0.1-1 ms at N = 256-1024). Planning runs before any pupil is
 * written, and in and out are zeroed after it. threads > 1 uses FFTW's
 * threads. Returns 0, or -1 with err (allocation or planner failure). */
int cpu_fft_plan_create(cpu_fft_plan *p, int npix, int threads, char *err, size_t errlen);

/* The same with the transform pruned (band B > 0, 2 B <= N): with X in in,
 * its samples inside rows and columns [0, B) and [N - B, N) (the rest zero),
 * the 1D DFTs of X's 2 B band rows R = X F (in -> out), the transpose of
 * those rows into in's band columns (F X^T: zero elsewhere as X is), and
 * the DFTs of in's N contiguous rows: out = F X^T F = DFT2(X)^T, the 2D DFT
 * of X^T. So in takes the pupil transposed (sample (i, j) at j N + i) and
 * out is its DFT in the usual layout, from 2 B/N of the first pass's rows
 * and no strided column pass (which cost 2/3 of FFTW's own 2D transform at
 * N = 256-1024). After each transform in is all zero again (its band
 * columns cleared). On one thread the block plan too (p->block, with
 * p->block_in and p->block_out), for cpu_band_image (cpu/band_image.h).
 * band = 0, or one for which pruning saves under 20% of the row work,
 * plans the whole 2D transform. Returns as cpu_fft_plan_create. */
int cpu_fft_plan_create_band(cpu_fft_plan *p, int npix, int band, int threads, char *err,
                             size_t errlen);

/* Another pair of block buffers for p (p->block), for a thread of its own:
 * *block_in zeroed, both fftwf_malloc'd (free with fftwf_free). Returns 0,
 * or -1 (allocation; both NULL). */
int cpu_fft_block_alloc(const cpu_fft_plan *p, fftwf_complex **block_in, fftwf_complex **block_out);

/* Plan the whole N x N transform of a pruned p too (for a pupil with samples
 * outside the band); in and out are zeroed after.
 * Returns 0, or -1 with err. */
int cpu_fft_plan_add_full(cpu_fft_plan *p, char *err, size_t errlen);

/* Transform in into out (p->in/p->out or other fftwf_malloc'd N x N buffers):
 * pruned unless full (then p->plan, which must exist, on in as it is). */
void cpu_fft_plan_execute_dft(const cpu_fft_plan *p, fftwf_complex *in, fftwf_complex *out,
                              int full);

/* Transform p->in into p->out. */
void cpu_fft_plan_execute(const cpu_fft_plan *p);

void cpu_fft_plan_destroy(cpu_fft_plan *p);

/* Set the process's FFTW wisdom aside (exported, then forgotten) until
 * cpu_fft_planner_leave restores it, for plans that must not take a
 * measured plan from it (FFTW_ESTIMATE does when the wisdom has one: the
 * library's caller may have measured or imported some). Every psfsim
 * plan is made between the two (cpu/detector.c's too); not reentrant,
 * serialised as FFTW's planner is. */
void cpu_fft_planner_enter(void);
void cpu_fft_planner_leave(void);

#endif
