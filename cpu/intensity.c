/* SPDX-License-Identifier: BSD-3-Clause */
/* |.|^2 + shift + scale of an FFT image (cpu/intensity.h). */
#include "cpu/intensity.h"

#include <stddef.h>

/* Row u of out into its shifted row of image: added, or stored (first). */
static void intensity_row(const fftwf_complex *src, int npix, float scale, int first, float *dst)
{
    int h = npix / 2, split = npix - h; /* columns v < split go to v + h, the rest wrap */
    if (first) {
        for (int v = 0; v < split; ++v)
            dst[v + h] = scale * (src[v][0] * src[v][0] + src[v][1] * src[v][1]);
        for (int v = split; v < npix; ++v)
            dst[v - split] = scale * (src[v][0] * src[v][0] + src[v][1] * src[v][1]);
        return;
    }
    for (int v = 0; v < split; ++v)
        dst[v + h] += scale * (src[v][0] * src[v][0] + src[v][1] * src[v][1]);
    for (int v = split; v < npix; ++v)
        dst[v - split] += scale * (src[v][0] * src[v][0] + src[v][1] * src[v][1]);
}

void cpu_intensity_rows(const fftwf_complex *rows, int npix, int u0, int nrows, float scale,
                        int first, float *image)
{
    int h = npix / 2;
    for (int u = u0; u < u0 + nrows; ++u)
        intensity_row(rows + (size_t)(u - u0) * npix, npix, scale, first,
                      image + (size_t)((u + h) % npix) * npix);
}

void cpu_intensity_accumulate(const fftwf_complex *out, int npix, float scale, float *image)
{
    cpu_intensity_rows(out, npix, 0, npix, scale, 0, image);
}

void cpu_intensity_write(const fftwf_complex *out, int npix, float scale, int first, float *image)
{
    cpu_intensity_rows(out, npix, 0, npix, scale, first, image);
}
