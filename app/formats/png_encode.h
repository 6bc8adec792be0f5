/* SPDX-License-Identifier: BSD-3-Clause */
/* A grayscale PNG's bytes in memory (png_io.c writes them to the file):
 * the signature, IHDR, one IDAT and IEND, written here around a deflate
 * library (docs/design.md, "PNG encoding"). */
#ifndef PSFSIM_PNG_ENCODE_H
#define PSFSIM_PNG_ENCODE_H

#include <stddef.h>

/* png_encode_levels' results besides 0. */
#define PNG_ENCODE_TOO_LARGE 1 /* over PNG_ONE_PIECE_MAX_BYTES: the caller streams it */
#define PNG_ENCODE_FAILED (-1) /* memory, or the deflate library: why says which */

/* The whole file of an npix x npix grayscale PNG of bits 8 or 16 (levels:
 * row-major, row 0 = top, native uint16; 8-bit levels above 255 clamped),
 * filter type 0 (None) on every row, no interlace. compression 1: ISA-L's
 * igzip level 1; 0: stored; 2..9: libdeflate's level. *png gets the
 * malloc'd bytes, *len their count. Returns 0; PNG_ENCODE_TOO_LARGE when
 * the scanlines exceed 128 MiB (the caller streams the image through
 * libpng's zlib: other bytes, the same pixels); or PNG_ENCODE_FAILED with
 * the reason in why (memory short, or the deflate library's error code).
 * Nothing stays allocated on failure. A failure is not streamed through
 * libpng instead: the file's bytes would then depend on the moment's
 * memory, not on the image. npix, bits and compression are the caller's
 * checked values. */
int png_encode_levels(const unsigned short *levels, int npix, int bits, int compression,
                      unsigned char **png, size_t *len, char *why, size_t whylen);

/* Scanlines of that size or less are deflated in one piece (2^27 = 128
 * MiB: N up to 8191 at 16 bits). */
#define PNG_ONE_PIECE_MAX_BYTES ((size_t)1 << 27)

#endif
