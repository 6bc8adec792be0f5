/* FFTW3 single-precision plan for one N x N complex forward transform,
 * made once per image set and executed for every image of it ("plan once,
 * execute many", FFTW manual sec. 4.2). */
#ifndef PSFSIM_CPU_FFT_PLAN_H
#define PSFSIM_CPU_FFT_PLAN_H

#include <stddef.h>

#include <fftw3.h>

typedef struct {
    int npix;
    int threads;          /* threads FFTW uses inside one transform */
    fftwf_plan plan;      /* out-of-place in -> out, FFTW_FORWARD */
    fftwf_complex *in;    /* N*N, row-major, pupil with the axis at index 0 */
    fftwf_complex *out;   /* N*N, row-major, zero frequency at index 0 */
} cpu_fft_plan;

/* Allocate in/out (fftwf_malloc, SIMD-aligned) and plan. measure != 0 asks
 * FFTW_MEASURE, worth it only when many images follow; planning runs before
 * any pupil is written, and in is zeroed after it, so planning never
 * clobbers data. threads > 1 uses FFTW's threads. Returns 0, or -1 with err
 * (allocation or planner failure). */
int cpu_fft_plan_create(cpu_fft_plan *p, int npix, int threads, int measure, char *err,
                        size_t errlen);

/* Transform p->in into p->out. */
void cpu_fft_plan_execute(const cpu_fft_plan *p);

void cpu_fft_plan_destroy(cpu_fft_plan *p);

#endif
