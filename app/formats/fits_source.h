/* SPDX-License-Identifier: BSD-3-Clause */
/* The bytes of a FITS file as fits_scan reads them: the file itself, or,
 * for a gzip-compressed one (RFC 1952; WebbPSF ships .fits.gz), what it
 * inflates to. cfitsio reads such a file itself (it inflates the whole of
 * it into memory first), so the compressed file is checked before it
 * does: one gzip member, intact, inflating to at most FITS_GZIP_MAX_BYTES
 * (a gzip bomb is refused unread by cfitsio). No cfitsio here. */
#ifndef PSFSIM_FITS_SOURCE_H
#define PSFSIM_FITS_SOURCE_H

#include <stddef.h>
#include <stdio.h>

/* Most bytes a gzip-compressed map may inflate to: 1 GiB (a 16383 x 16383
 * float32 map with its header). */
#define FITS_GZIP_MAX_BYTES (1LL << 30)

typedef struct {
    FILE *f;        /* the file */
    void *gz;       /* a gzFile reading it inflated, or NULL: not compressed */
    long long size; /* bytes of FITS: the file's size, or what it inflates to */
} fits_source;

/* Open path for reading: a file whose first two bytes are gzip's magic
 * (1f 8b, what cfitsio goes by too) is inflated once to check it and to
 * learn its size. Returns 0, or -1 with err naming path: "cannot open
 * PATH: <strerror>", and for gzip "PATH: the gzip data inflate to more
 * than 1073741824 bytes ...", "PATH: corrupt gzip data (zlib: ...)",
 * "PATH: the gzip data end early (truncated?)", "PATH: data after the end
 * of the gzip stream ...", and "PATH: the gzip file is larger than the
 * FITS it holds ..." (cfitsio 4.2 takes such a file of over 10,000 bytes
 * for one of more than 4 GiB, drvrmem.c mem_compress_open, and allocates
 * that). Nothing is left open on error. */
int fits_source_open(fits_source *s, const char *path, char *err, size_t errlen);

/* Read up to n bytes at the current position into buf: the count read
 * (fewer at the end or on an error). */
size_t fits_source_read(fits_source *s, void *buf, size_t n);

/* Go to byte pos (of the inflated bytes for gzip: forward only) of the
 * FITS. 0, or -1 (errno set for a file). */
int fits_source_seek(fits_source *s, long long pos);

void fits_source_close(fits_source *s);

#endif
