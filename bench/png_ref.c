/* SPDX-License-Identifier: BSD-3-Clause */
/* The reference for bench_png.c: psfsim's PNG writer as it was before issue
 * 17 (app/formats/png_io.c at commit 53cb6e0), kept for the benchmark only:
 * the stretch in one loop with a division and, for log, a log per pixel;
 * libpng writing every row through zlib at the given level, no row filter,
 * libpng swapping the 16-bit samples; the same atomic file. Errors are
 * not described: -1 (the bench stops). */
#include "bench/png_ref.h"

#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app/formats/atomic_file.h"

void ref_png_stretch_levels(const float *img, int npix, int bits, png_stretch stretch,
                            double dynamic_range, unsigned short *out)
{
    const size_t n = (size_t)npix * (size_t)npix;
    const double maxlev = (double)((1u << bits) - 1u);
    double peak = -INFINITY;
    int peak_ok = 1;
    for (size_t i = 0; i < n; ++i) {
        const float v = img[i];
        if (isnan(v)) continue;
        if (isinf(v) && v > 0) peak_ok = 0;
        if (v > peak) peak = v;
    }
    if (!peak_ok || !isfinite(peak) || peak <= 0) {
        memset(out, 0, n * sizeof *out);
        return;
    }
    const int log_ok = isfinite(dynamic_range) && dynamic_range > 1.0;
    const double inv_ln_dr = log_ok ? 1.0 / log(dynamic_range) : 0.0;
    for (size_t i = 0; i < n; ++i) {
        double v = (double)img[i] / peak, t;
        if (!(v > 0)) {
            t = 0;
        } else {
            if (v > 1) v = 1;
            switch (stretch) {
            case STRETCH_SQRT:
                t = sqrt(v);
                break;
            case STRETCH_LOG:
                t = log_ok ? 1.0 + log(v) * inv_ln_dr : (v >= 1 ? 1.0 : 0.0);
                break;
            case STRETCH_LINEAR:
            default:
                t = v;
                break;
            }
            if (t < 0) t = 0;
            if (t > 1) t = 1;
        }
        out[i] = (unsigned short)(t * maxlev + 0.5);
    }
}

static void ref_error(png_structp png, png_const_charp msg)
{
    (void)msg;
    png_longjmp(png, 1);
}

static void ref_warning(png_structp png, png_const_charp msg)
{
    (void)png, (void)msg;
}

static int ref_body(png_structp png, png_infop info, FILE *fp, const unsigned short *levels,
                    int npix, int bits, int compression, unsigned char *row8)
{
    if (setjmp(png_jmpbuf(png))) return -1;
    png_init_io(png, fp);
    png_set_IHDR(png, info, (png_uint_32)npix, (png_uint_32)npix, bits, PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, compression);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    png_write_info(png, info);
    const uint16_t one = 1;
    if (bits == 16 && *(const unsigned char *)&one == 1) png_set_swap(png);
    const size_t w = (size_t)npix;
    for (size_t r = 0; r < w; ++r) {
        const unsigned short *src = levels + r * w;
        if (bits == 16) {
            png_write_row(png, (png_const_bytep)src);
        } else {
            for (size_t c = 0; c < w; ++c)
                row8[c] = (unsigned char)(src[c] > 255 ? 255 : src[c]);
            png_write_row(png, row8);
        }
    }
    png_write_end(png, NULL);
    return 0;
}

int ref_png_write_image_at(int dirfd, const char *dir, const char *name, const float *img, int npix,
                           int bits, png_stretch stretch, double dynamic_range, int compression)
{
    unsigned short *levels = malloc((size_t)npix * (size_t)npix * sizeof *levels);
    unsigned char *row8 = malloc((size_t)npix);
    char err[512];
    atomic_file af;
    if (!levels || !row8 || atomic_open_at(&af, dirfd, dir, name, err, sizeof err)) {
        free(levels);
        free(row8);
        return -1;
    }
    ref_png_stretch_levels(img, npix, bits, stretch, dynamic_range, levels);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, ref_error, ref_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int rc = png && info ? ref_body(png, info, af.fp, levels, npix, bits, compression, row8) : -1;
    if (png) png_destroy_write_struct(&png, info ? &info : NULL);
    free(levels);
    free(row8);
    if (rc) {
        atomic_abort(&af);
        return -1;
    }
    return atomic_commit(&af, err, sizeof err);
}
