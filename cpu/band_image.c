/* SPDX-License-Identifier: BSD-3-Clause */
/* The pruned transform's second pass in blocks, fused with |.|^2
 * (cpu/band_image.h). */
#include "cpu/band_image.h"

#include <stddef.h>

/* block_in row j = column u0 + j of out's band rows (rows [0, B) and
 * [N - B, N); the rest of block_in stays zero): the second pass's input
 * rows u0 .. u0 + m - 1, as band_transpose in cpu/plan_cache.c writes them
 * into in. Each band row gives m adjacent values (one cache line for m =
 * 8), written down the block's m rows, all in L1. */
static void gather(const fftwf_complex *out, int n, int b, int u0, int m, fftwf_complex *block_in)
{
    for (int h = 0; h < 2; ++h)
        for (int r = h ? n - b : 0, r1 = h ? n : b; r < r1; ++r) {
            const fftwf_complex *src = out + (size_t)r * n + u0;
            for (int j = 0; j < m; ++j) {
                block_in[(size_t)j * n + r][0] = src[j][0];
                block_in[(size_t)j * n + r][1] = src[j][1];
            }
        }
}

void cpu_band_image(const cpu_fft_plan *p, fftwf_complex *in, fftwf_complex *out,
                    fftwf_complex *block_in, fftwf_complex *block_out, const cpu_intensity_op *op,
                    float *image)
{
    int n = p->npix, b = p->band;
    float *ri = (float *)in, *ro = (float *)out;
    fftwf_execute_split_dft(p->rows, ri, ri + 1, ro, ro + 1); /* as cpu_fft_plan_execute_dft */
    for (int u0 = 0; u0 < n; u0 += CPU_FFT_BLOCK_ROWS) {
        /* a last, partial block transforms rows left from the one before:
         * finite values, not written out */
        int m = n - u0 < CPU_FFT_BLOCK_ROWS ? n - u0 : CPU_FFT_BLOCK_ROWS;
        gather(out, n, b, u0, m, block_in);
        fftwf_execute_dft(p->block, block_in, block_out);
        cpu_intensity_rows(block_out, n, u0, m, op, image);
    }
}
