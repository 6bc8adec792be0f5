/* SPDX-License-Identifier: BSD-3-Clause */
/* A pruned transform's image on one thread, its second pass fused with the
 * intensity: the band rows' DFTs (cpu/plan_cache.h), then the output a
 * block of CPU_FFT_BLOCK_ROWS rows at a time: the block's input gathered
 * from the band rows' columns (the transpose), its DFTs, and its |.|^2
 * shifted into the image (cpu/intensity.h), all while the block is in L1.
 * The unfused order took three passes over 512 KiB buffers (the transpose
 * into in's band columns, the N row DFTs, the intensity) and a fourth
 * clearing in's band columns. */
#ifndef PSFSIM_CPU_BAND_IMAGE_H
#define PSFSIM_CPU_BAND_IMAGE_H

#include <fftw3.h>

#include "cpu/intensity.h"
#include "cpu/plan_cache.h"

/* image (N x N, optical axis at (N/2, N/2)) = op.scale |DFT2(X^T)|^2
 * shifted (or += with op.first == 0; op's stream and scan as
 * cpu_intensity_rows says), the same values as cpu_fft_plan_execute_dft
 * and cpu_intensity_write give to float rounding, with X in in as
 * cpu_fft_plan_create_band says (the pupil transposed). p pruned with
 * p->block; in and out (N x N) and block_in, block_out (p's, or another
 * pair from cpu_fft_block_alloc) fftwf_malloc'd. in is left as it was (its
 * samples are the pupil's: the next image writes the same ones), out holds
 * the first pass's rows, block_in keeps its zeros outside the band. */
void cpu_band_image(const cpu_fft_plan *p, fftwf_complex *in, fftwf_complex *out,
                    fftwf_complex *block_in, fftwf_complex *block_out, const cpu_intensity_op *op,
                    float *image);

#endif
