/* SPDX-License-Identifier: BSD-3-Clause */
/* FFTW3 single-precision plan for one N x N complex forward transform,
 * made once per image set and executed for every image of it ("plan once,
 * execute many", FFTW manual sec. 4.2). */
#ifndef PSFSIM_CPU_FFT_PLAN_H
#define PSFSIM_CPU_FFT_PLAN_H

#include <stddef.h>

#include <fftw3.h>

typedef struct {
    int npix;
    int threads;        /* threads FFTW uses inside one transform */
    int measured;       /* the plan was measured (from wisdom or now) */
    fftwf_plan plan;    /* out-of-place in -> out, FFTW_FORWARD */
    fftwf_complex *in;  /* N*N, row-major, pupil with the axis at index 0 */
    fftwf_complex *out; /* N*N, row-major, zero frequency at index 0 */
} cpu_fft_plan;

/* FFTW's wisdom file in the cache directory (psf_backend_options.cache_dir). */
#define CPU_WISDOM_FILE "fftw-wisdom-float"

/* Allocate in/out (fftwf_malloc, SIMD-aligned) and plan. A measured plan is
 * 2-4x faster than an estimated one at N >= 256 but takes 0.1-1 s to make,
 * so: with wisdom_dir (the cache directory holding CPU_WISDOM_FILE; NULL =
 * none) its wisdom is imported and a measured plan made from it when it has
 * one for this size; else measure != 0 (many images follow) makes a
 * measured plan and exports the wisdom, and measure == 0 an estimated one
 * (FFTW manual, 4.7 "Wisdom"). The file is read and written as
 * backend/cache_file.h says (never blocking, never through a link); one
 * that is there but cannot be used is said through warn (may be NULL).
 * Planning runs before any pupil is written, and in is zeroed after it,
 * so planning never clobbers data. threads > 1 uses FFTW's threads.
 * Returns 0, or -1 with err (allocation or planner failure); a wisdom file
 * that cannot be read or written is not an error. */
int cpu_fft_plan_create(cpu_fft_plan *p, int npix, int threads, int measure, const char *wisdom_dir,
                        void (*warn)(const char *), char *err, size_t errlen);

/* Transform p->in into p->out. */
void cpu_fft_plan_execute(const cpu_fft_plan *p);

void cpu_fft_plan_destroy(cpu_fft_plan *p);

#endif
