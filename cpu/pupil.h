/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU backend's per-set pupil: the open samples of the aperture for one
 * pupil pitch, with each one's FFT-input index, transmission, Zernike basis
 * values and OPD, computed once per set and reused for every image (only
 * the coefficients change from image to image). The same sample list serves
 * the MFT (cpu/mft.h), which wants the field in a compact buffer: the
 * smallest box of grid rows and columns holding every open sample. */
#ifndef PSFSIM_CPU_PUPIL_CACHE_H
#define PSFSIM_CPU_PUPIL_CACHE_H

#include <stddef.h>

#include <fftw3.h>

#include "backend/backend.h"

typedef struct {
    double dx_m;    /* pupil pitch this pupil was built for, metres */
    size_t nopen;   /* samples with transmission > 0 */
    unsigned *dest; /* [nopen] index into the N*N FFT input (< 2^32), axis sample at 0;
                      compact pupils: index (i - row0) * cols + (j - col0) into
                      the rows x cols box */
    float *amp;     /* [nopen] transmission in (0, 1] */
    float *basis;   /* [nterms * nopen] Z_k at each open sample (unit RMS) */
    float *opd;     /* [nopen] OPD map value, or NULL without a map */
    /* Segment terms (psf_problem.seg_modes; optics/seg_wavefront.h); 0 / NULL without. */
    int seg_nterms;
    int seg_count;    /* 1 + the largest segment of a sample (the coefficients read) */
    int *seg;         /* [nopen] the sample's segment, or -1 */
    float *seg_basis; /* [seg_nterms * nopen] segment term t at sample k at t * nopen + k */
    /* Compact pupils only (cpu_pupil_build_compact); 0 for FFT pupils. */
    int grid;       /* G: the pupil grid, sample (i, j) at ((i - G/2) dx, (j - G/2) dx) */
    int row0, col0; /* the box's first grid row and column */
    int rows, cols; /* the box's size (0 x 0 when no sample is open) */
} cpu_pupil;

/* Build the pupil of set at pitch dx_m. The N x N grid is centred as in
 * aperture.h; sample (i, j) goes to FFT index ((i - N/2) mod N) * N +
 * ((j - N/2) mod N), i.e. ifftshift, so the axis is at index 0.
 * Returns 0, or -1 with err (allocation, aperture geometry). */
int cpu_pupil_build(cpu_pupil *pp, const psf_problem *set, double dx_m, char *err, size_t errlen);

/* The same pupil for the MFT: sampled on the grid x grid grid centred as in
 * aperture.h (sample (i, j) at x = (j - grid/2) dx_m, y = (i - grid/2) dx_m,
 * the same values as cpu_pupil_build's grid has at the same positions), with
 * dest indexing the compact rows x cols box (row0, col0, rows, cols set).
 * Returns 0, or -1 with err (allocation, aperture geometry). */
int cpu_pupil_build_compact(cpu_pupil *pp, const psf_problem *set, int grid, double dx_m, char *err,
                            size_t errlen);

/* Write A exp(+i 2 pi W) at the open samples of in (N*N, or rows*cols for a
 * compact pupil; the rest of in must already be zero; cpu/pupil_field.c:
 * glibc's vector sinf/cosf where built with them, at most 4 ulp),
 * W = sum_k coeff_waves[k] basis_k + opd * opd_to_waves, plus for a pupil
 * with segment terms sum_t coeff_waves[nterms + seg * seg_nterms + t]
 * seg_basis_t (psf_component.coeff_waves's layout). */
void cpu_pupil_field(const cpu_pupil *pp, int nterms, const double *coeff_waves,
                     double opd_to_waves, fftwf_complex *in);

/* Zero the open samples of in (before another pupil is written there). */
void cpu_pupil_clear(const cpu_pupil *pp, fftwf_complex *in);

void cpu_pupil_free(cpu_pupil *pp);

#endif
