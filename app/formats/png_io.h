/* SPDX-License-Identifier: BSD-3-Clause */
/* PNG images through libpng: PSF output (8/16-bit grayscale with a linear,
 * log or sqrt stretch) and grayscale map input (aperture, OPD). */
#ifndef PSFSIM_PNG_IO_H
#define PSFSIM_PNG_IO_H

#include <stddef.h>

/* How intensities map onto grey levels (output.png.stretch). */
typedef enum { STRETCH_LINEAR = 0, STRETCH_LOG = 1, STRETCH_SQRT = 2 } png_stretch;

/* Map an N x N intensity image (row-major, row 0 = top row of the PNG) to
 * grey levels 0..2^bits-1 with the stretch (docs/design.md, "Outputs"):
 * v = I / peak, peak = the image's maximum; linear: v; sqrt: sqrt(v);
 * log: (log10 v + log10 dr) / log10 dr clamped to [0, 1] (maps
 * [1/dr, 1] onto the full range). A constant, all-zero or negative image
 * gives valid levels (0 where peak <= 0), never NaN. out: npix*npix.
 * NaN pixels and pixels <= 0 give level 0; levels round to nearest. A peak
 * that is +inf (or no finite pixel) gives all 0. log with a dynamic_range
 * not > 1 (or not finite) gives the top level where I = peak, else 0.
 * bits: 8 or 16 (anything outside 1..16 is taken as 16).
 * 16-bit values are native uint16; psf_png_write_image swaps to big-endian. */
void psf_png_stretch_levels(const float *img, int npix, int bits, png_stretch stretch,
                            double dynamic_range, unsigned short *out);

/* Write precomputed grey levels (N x N, row-major, row 0 = top row; native
 * uint16 values 0..2^bits-1, e.g. from psf_png_stretch_levels or computed on
 * the GPU) atomically as a grayscale PNG of bits 8 or 16 (8-bit levels above
 * 255 are clamped). compression: zlib level 0..9. Returns 0, or -1 with a
 * message naming the path in err (bad size/bits/level, I/O or libpng
 * error); on error no file and no temp file is left. */
int psf_png_write_levels(const char *path, const unsigned short *levels, int npix, int bits,
                         int compression, char *err, size_t errlen);

/* Write img atomically (atomic_file.h) as a grayscale PNG of bits 8 or 16.
 * compression: zlib level 0..9 (1 is fast and psfsim's default).
 * Returns 0, or -1 with a message naming the path in err. (psf_ prefix:
 * libpng has a png_write_image of its own.) */
int psf_png_write_image(const char *path, const float *img, int npix, int bits, png_stretch stretch,
                        double dynamic_range, int compression, char *err, size_t errlen);

/* psf_png_write_levels and psf_png_write_image into the file name (a plain
 * name) of the directory dirfd, through that descriptor (atomic_open_at:
 * no symbolic link in it is followed); dir names the directory in
 * messages (DIR/NAME). */
int psf_png_write_levels_at(int dirfd, const char *dir, const char *name,
                            const unsigned short *levels, int npix, int bits, int compression,
                            char *err, size_t errlen);
int psf_png_write_image_at(int dirfd, const char *dir, const char *name, const float *img, int npix,
                           int bits, png_stretch stretch, double dynamic_range, int compression,
                           char *err, size_t errlen);

/* Read an 8- or 16-bit grayscale PNG (palette/RGB/alpha are refused with a
 * message). *data (malloc'd, rows x cols, row-major, row 0 = top) gets the
 * raw grey levels as floats; *maxval 255 or 65535. Returns 0 or -1 with err.
 * 1/2/4-bit grayscale is expanded to 8 bits (scaled to 0..255, maxval 255);
 * interlaced files are read. Errors (message names the path): missing or
 * unreadable file, not a PNG, refused colour type, truncated or corrupt
 * data, more than 2^28 pixels; *data is NULL and *rows = *cols = 0 then. */
int psf_png_read_gray(const char *path, float **data, int *rows, int *cols, int *maxval, char *err,
                      size_t errlen);

#endif
