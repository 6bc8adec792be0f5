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

/* The same for images that may be a cube: NAXIS 0..3 ("PATH: image HDU k
 * has NAXIS = n; images must be 2-D or a 3-D cube"); psf_fits_read_cube's
 * check (psfsim --retrieve's measured images). */
int fits_scan_first_cube(const char *path, int *hdu, char *err, size_t errlen);

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

/* The HDUs fits_scan_layout_fd describes, and the axes of each. */
#define FITS_SCAN_MAX_HDUS 4
#define FITS_SCAN_MAX_AXES 4

/* One HDU's header as fits_scan_layout_fd read it (FITS 4.0 sec. 4.4.1). */
typedef struct {
    char xtension[24];                   /* "" for the primary HDU; else a standard type ("IMAGE",
                                            "BINTABLE", ...) or "non-standard" */
    long long bitpix;                    /* 8, 16, 32, 64, -32 or -64 */
    long long naxis;                     /* 0..999 */
    long long naxes[FITS_SCAN_MAX_AXES]; /* NAXIS1.., the first FITS_SCAN_MAX_AXES; 0 past NAXIS */
    long long pcount, gcount;            /* 0 and 1 for the primary HDU */
    long long header_bytes;              /* whole 2880-byte blocks, through END's */
    long long data_bytes;                /* as the header gives them (eq. 2), without the fill */
    int extname;                         /* EXTNAME: 1 a string (extname_text), -1 not a
                                            string of printable ASCII, 0 absent */
    char extname_text[80];
    int named; /* the card asked for by name: as extname */
    char named_text[80];
} fits_scan_hdu;

/* What fits_scan_layout_fd found: every HDU's place and the file's size. */
typedef struct {
    int nhdus;                              /* HDUs in the file */
    fits_scan_hdu hdus[FITS_SCAN_MAX_HDUS]; /* the first FITS_SCAN_MAX_HDUS of them */
    long long size;                         /* the file's bytes */
    long long total;                        /* the HDUs' headers and data, each data padded
                                               to a whole 2880-byte block (sec. 3.3.2) */
    int exact;                              /* 1: size == total (nothing after the last
                                               HDU, no fill missing) */
} fits_scan_layout;

/* Walk every HDU of the FITS file open as fd (a regular file; read from its
 * start, through a dup of fd, so fd's offset moves) as fits_scan_image
 * reads headers (the same card parsing, mandatory keywords, data sizes),
 * whatever each HDU holds, and report each HDU's mandatory values, its
 * EXTNAME and the string card named (e.g. "CFGHASH"; NULL: none) in out.
 * The walk ends where the file does, or fewer than 2880 bytes before (a
 * partial block after the last HDU: exact is 0). Returns 0, or -1 with a
 * message in err naming shown (the file's name for messages), e.g.
 * "c_cube.fits: not a valid FITS file: HDU 2: the file ends inside the
 * header (truncated?)", "...: HDU 3: the header does not begin with
 * XTENSION" (a block of anything after the last HDU), "...: the file ends
 * inside the data (truncated?): B bytes of data in N", "c_cube.fits: not a
 * FITS file (it does not begin with SIMPLE = T)", "c_cube.fits: not a
 * regular file". Messages show keywords and integers, never other bytes of
 * the file. Reads the headers only. */
int fits_scan_layout_fd(int fd, const char *shown, const char *named, fits_scan_layout *out,
                        char *err, size_t errlen);

#endif
