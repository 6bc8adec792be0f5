/* SPDX-License-Identifier: BSD-3-Clause */
/* A check of a FITS file's structure before cfitsio reads it (issue 6).
 * cfitsio 4.2 trusts some header values it cannot parse: a binary table
 * whose NAXIS1 is not a number makes it read an uninitialised variable
 * and allocate that many bytes (found by fuzz_fits_map). So psfsim walks
 * the headers itself first, up to the image it will read, and hands
 * cfitsio only files whose HDUs on the way are well formed. */
#ifndef PSFSIM_FITS_SCAN_H
#define PSFSIM_FITS_SCAN_H

#include <stddef.h>

/* Find the first HDU holding an image with NAXIS >= 1 in the FITS file at
 * path, reading its headers as the FITS standard 4.0 lays them out (sec. 3:
 * 2880-byte blocks of 80-byte cards, sec. 4.4.1: the mandatory keywords).
 * The HDUs before it and its own header must be: the primary HDU (SIMPLE
 * = T first), then image extensions (XTENSION = 'IMAGE'); BITPIX one of 8,
 * 16, 32, 64, -32, -64; NAXIS 0..2 (a map is 2-D: "PATH: image HDU k has
 * NAXIS = n; a map must be 2-D"; a table's NAXIS 0..999); NAXISn (all
 * present), PCOUNT, GCOUNT, TFIELDS integers >= 0, each written as an
 * integer; the data sizes they give must fit in 2^62 bytes and in the file
 * (so nothing is allocated for data a truncated file does not hold). A
 * table or any other extension before the image is refused (a map is an
 * image, not a table), and so is a tile-compressed image (ZIMAGE = T):
 * cfitsio 4.2's decompressor reads past its buffers on a crafted tile.
 * A gzip-compressed file (cfitsio reads it inflated) is scanned as what it
 * inflates to, after the checks of fits_source.h (at most 1 GiB inflated).
 * Returns 0 with *hdu (1-based), or -1 with a message in err naming path,
 * the HDU and the keyword, e.g. "m.fits: not a valid FITS file: HDU 2:
 * NAXIS1 is not an integer"; "m.fits: not a FITS file (it does not begin
 * with SIMPLE = T)"; "m.fits: no image in this FITS file". Messages show
 * keywords psfsim knows and integers it read, never other bytes of the
 * file (which may be anything: a secret given as a map). Reads at most the
 * headers up to the image (no data). */
int fits_scan_first_image(const char *path, int *hdu, char *err, size_t errlen);

/* A real-valued keyword of the image's header. */
typedef struct {
    int seen;     /* 1: a finite number (value), -1: not a number, 0: absent */
    double value; /* as written, 0 unless seen is 1 */
} fits_scan_scale;

/* What fits_scan_image found of the image: its HDU, its header's BUNIT
 * (the map's unit; FITS 4.0 sec. 4.4.2.1) and the keywords POPPY and
 * WebbPSF state a pupil map's pixel scale with (PUPLSCAL, metres per pixel;
 * PIXELSCL with its unit PIXUNIT), not interpreted here. */
typedef struct {
    int hdu;             /* 1-based */
    int bunit;           /* 1: BUNIT is a string (bunit_text), -1: BUNIT is
                            not a string of printable ASCII, 0: no BUNIT */
    char bunit_text[80]; /* its text, without the quotes and trailing blanks */
    fits_scan_scale puplscal, pixelscl;
    int pixunit; /* PIXUNIT, as bunit */
    char pixunit_text[80];
} fits_scan_result;

/* fits_scan_first_image with the image's BUNIT too: the same checks, errors
 * and messages; on error res is zero. */
int fits_scan_image(const char *path, fits_scan_result *res, char *err, size_t errlen);

#endif
