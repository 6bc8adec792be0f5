/* SPDX-License-Identifier: BSD-3-Clause */
/* |.|^2 + shift + scale of an FFT image (cpu/intensity.h). */
#include "cpu/intensity.h"

#include <stddef.h>

void cpu_intensity_accumulate(const fftwf_complex *out, int npix, float scale, float *image)
{
    int h = npix / 2;
    for (int u = 0; u < npix; ++u) {
        const fftwf_complex *src = out + (size_t)u * npix;
        float *dst = image + (size_t)((u + h) % npix) * npix;
        int split = npix - h; /* columns v < split go to v + h, the rest wrap */
        for (int v = 0; v < split; ++v)
            dst[v + h] += scale * (src[v][0] * src[v][0] + src[v][1] * src[v][1]);
        for (int v = split; v < npix; ++v)
            dst[v - split] += scale * (src[v][0] * src[v][0] + src[v][1] * src[v][1]);
    }
}
