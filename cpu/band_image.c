/* SPDX-License-Identifier: BSD-3-Clause */
/* The pruned transform's second pass in blocks, fused with |.|^2
 * (cpu/band_image.h). */
#include "cpu/band_image.h"

#include <stddef.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* block_in row j = column u0 + j of out's band rows (rows [0, B) and
 * [N - B, N); the rest of block_in stays zero): the second pass's input
 * rows u0 .. u0 + m - 1, as band_transpose in cpu/plan_cache.c writes them
 * into in. Each band row gives m adjacent values (one cache line for m =
 * 8), written down the block's m rows, all in L1. */
static void gather_scalar(const fftwf_complex *out, int n, int r0, int r1, int u0, int m,
                          fftwf_complex *block_in)
{
    for (int r = r0; r < r1; ++r) {
        const fftwf_complex *src = out + (size_t)r * n + u0;
        for (int j = 0; j < m; ++j) {
            block_in[(size_t)j * n + r][0] = src[j][0];
            block_in[(size_t)j * n + r][1] = src[j][1];
        }
    }
}

#ifdef __SSE2__
/* The same for rows r0 .. r1 - 1 (r1 - r0 and m even): 2 x 2 blocks of
 * complex values (8 bytes each, moved as doubles: bits, no arithmetic)
 * transposed in registers, so each load and store moves two values (the
 * scalar loop was ~10% of a 256^2 image). */
static void gather_pairs(const fftwf_complex *out, int n, int r0, int r1, int u0, int m,
                         fftwf_complex *block_in)
{
    for (int r = r0; r < r1; r += 2) {
        const double *a = (const double *)(out + (size_t)r * n + u0), *b = a + n;
        for (int j = 0; j < m; j += 2) {
            __m128d x = _mm_loadu_pd(a + j), y = _mm_loadu_pd(b + j);
            _mm_storeu_pd((double *)(block_in + (size_t)j * n + r), _mm_unpacklo_pd(x, y));
            _mm_storeu_pd((double *)(block_in + (size_t)(j + 1) * n + r), _mm_unpackhi_pd(x, y));
        }
    }
}
#endif

/* gather_* over one band half, rows r0 .. r1 - 1. */
static void gather_rows(const fftwf_complex *out, int n, int r0, int r1, int u0, int m,
                        fftwf_complex *block_in)
{
#ifdef __SSE2__
    if (m % 2 == 0) {
        int even = r0 + (r1 - r0) / 2 * 2;
        gather_pairs(out, n, r0, even, u0, m, block_in);
        r0 = even;
    }
#endif
    gather_scalar(out, n, r0, r1, u0, m, block_in);
}

static void gather(const fftwf_complex *out, int n, int b, int u0, int m, fftwf_complex *block_in)
{
    gather_rows(out, n, 0, b, u0, m, block_in);
    gather_rows(out, n, n - b, n, u0, m, block_in);
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
