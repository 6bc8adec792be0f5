/* SPDX-License-Identifier: BSD-3-Clause */
/* A FITS file's bytes, plain or gzip-compressed (fits_source.h). */
#include "app/formats/fits_source.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define GZ_CHUNK (64 * 1024)
/* cfitsio 4.2 (drvrmem.c, mem_compress_open) trusts gzip's ISIZE, the
 * inflated size mod 2^32, only for a file up to this size; a larger one
 * whose ISIZE is smaller than the file it takes for 2^32 bytes more. */
#define CFITSIO_ISIZE_TRUSTED 10000

/* Inflate the whole of f (a gzip file of file_size bytes, read from its
 * start) and count the bytes: 0 with *inflated, or -1 with err. The whole
 * stream is read (its CRC-32 and ISIZE checked by zlib); cfitsio reads the
 * first member only, so anything after it is refused. */
static int gzip_inflated_size(FILE *f, const char *path, long long file_size, long long *inflated,
                              char *err, size_t errlen)
{
    unsigned char *in = malloc(GZ_CHUNK), *out = malloc(GZ_CHUNK);
    z_stream z;
    memset(&z, 0, sizeof z);
    int rc = in && out ? inflateInit2(&z, 16 + MAX_WBITS) : Z_MEM_ERROR;
    if (rc != Z_OK) {
        free(in);
        free(out);
        snprintf(err, errlen, "%s: cannot inflate the gzip data: out of memory", path);
        return -1;
    }
    long long total = 0;
    int ok = 0;
    while (rc != Z_STREAM_END) {
        if (z.avail_in == 0) {
            size_t n = fread(in, 1, GZ_CHUNK, f);
            if (n == 0) {
                if (ferror(f))
                    snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
                else
                    snprintf(err, errlen, "%s: the gzip data end early (truncated?)", path);
                goto out;
            }
            z.next_in = in;
            z.avail_in = (uInt)n;
        }
        z.next_out = out;
        z.avail_out = GZ_CHUNK;
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR) {
            snprintf(err, errlen, "%s: corrupt gzip data (zlib: %s)", path,
                     z.msg               ? z.msg
                     : rc == Z_MEM_ERROR ? "out of memory"
                                         : "bad data");
            goto out;
        }
        total += GZ_CHUNK - z.avail_out;
        if (total > FITS_GZIP_MAX_BYTES) {
            snprintf(err, errlen,
                     "%s: the gzip data inflate to more than %lld bytes (1 GiB), the most psfsim "
                     "reads compressed (a gzip bomb?); gunzip it to read it uncompressed",
                     path, FITS_GZIP_MAX_BYTES);
            goto out;
        }
    }
    if (z.avail_in > 0 || fgetc(f) != EOF) {
        snprintf(err, errlen,
                 "%s: data after the end of the gzip stream (psfsim reads one gzip member; "
                 "gunzip it)",
                 path);
        goto out;
    }
    if (file_size > CFITSIO_ISIZE_TRUSTED && total < file_size) {
        snprintf(err, errlen,
                 "%s: the gzip file (%lld bytes) is larger than the FITS it holds (%lld bytes), "
                 "which cfitsio would take for more than 4 GiB; gunzip it",
                 path, file_size, total);
        goto out;
    }
    *inflated = total;
    ok = 1;
out:
    inflateEnd(&z);
    free(in);
    free(out);
    return ok ? 0 : -1;
}

int fits_source_open(fits_source *s, const char *path, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->f = fopen(path, "rb");
    if (!s->f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    s->size = fstat(fileno(s->f), &st) == 0 ? (long long)st.st_size : 0;
    unsigned char magic[2];
    int gzip = fread(magic, 1, 2, s->f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    rewind(s->f);
    if (!gzip) return 0;
    long long inflated = 0;
    if (gzip_inflated_size(s->f, path, s->size, &inflated, err, errlen)) {
        fits_source_close(s);
        return -1;
    }
    /* Read it again from the start, through zlib, on the same open file. */
    int fd = dup(fileno(s->f));
    if (fd >= 0 && lseek(fd, 0, SEEK_SET) == 0) s->gz = gzdopen(fd, "rb");
    if (!s->gz) {
        int e = errno;
        if (fd >= 0) close(fd);
        fits_source_close(s);
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(e ? e : ENOMEM));
        return -1;
    }
    s->size = inflated;
    return 0;
}

size_t fits_source_read(fits_source *s, void *buf, size_t n)
{
    if (!s->gz) return fread(buf, 1, n, s->f);
    int got = gzread((gzFile)s->gz, buf, (unsigned)n);
    return got > 0 ? (size_t)got : 0;
}

int fits_source_seek(fits_source *s, long long pos)
{
    if (!s->gz) return fseeko(s->f, (off_t)pos, SEEK_SET);
    return gzseek((gzFile)s->gz, (z_off_t)pos, SEEK_SET) == (z_off_t)pos ? 0 : -1;
}

void fits_source_close(fits_source *s)
{
    if (s->gz) gzclose((gzFile)s->gz);
    if (s->f) fclose(s->f);
    memset(s, 0, sizeof *s);
}
