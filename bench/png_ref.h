/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim's PNG writer before issue 17 (bench/png_ref.c), the benchmark's
 * reference: the same arguments as psf_png_stretch_levels and
 * psf_png_write_image_at (bits 8 or 16, compression: zlib's level 0..9). */
#ifndef PSFSIM_BENCH_PNG_REF_H
#define PSFSIM_BENCH_PNG_REF_H

#include "app/formats/png_io.h"

void ref_png_stretch_levels(const float *img, int npix, int bits, png_stretch stretch,
                            double dynamic_range, unsigned short *out);

/* Returns 0 or -1 (no message). */
int ref_png_write_image_at(int dirfd, const char *dir, const char *name, const float *img, int npix,
                           int bits, png_stretch stretch, double dynamic_range, int compression);

#endif
