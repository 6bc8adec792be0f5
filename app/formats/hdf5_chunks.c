/* SPDX-License-Identifier: BSD-3-Clause */
/* Writing blocks of images and labels (hdf5_layout.h): each image goes
 * into its chunk, a chunk only partly given waits in a stage, whole chunks
 * are written, then come the flush and their written flags. With gzip each
 * chunk is shuffled and deflated here, by up to s->threads threads at
 * once, as HDF5's shuffle and deflate filters do (H5Zshuffle.c,
 * H5Zdeflate.c: compress2 at the level), so HDF5 and h5py read it back
 * through those filters; it is then written with H5Dwrite_chunk.
 * Compressing inside H5Dwrite would use one core (libhdf5 serialises its
 * calls): too slow to keep up with a GPU. Part of the HDF5 module. */
#include "app/formats/hdf5_layout.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* H5Dwrite_chunk takes the bytes as stored: the file types are little-endian. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the HDF5 writer needs a little-endian host");

/* The chunk's filter mask when stored unfiltered: shuffle (bit 0) and
 * deflate (bit 1) skipped, as HDF5 stores a chunk that deflate would not
 * shrink (both filters are optional). */
#define SKIP_FILTERS 0x3u

typedef struct {
    const h5set *s;
    const unsigned char *raw; /* chunk_bytes */
    unsigned char *scratch;   /* chunk_bytes: the shuffled chunk */
    unsigned char *out;       /* deflated, or NULL: store raw */
    size_t outlen;
    int failed; /* out of memory */
} job;

/* HDF5's shuffle: byte b of value i goes to b * n + i (n values). */
static void shuffle(const unsigned char *in, unsigned char *out, size_t nbytes, size_t esize)
{
    size_t n = nbytes / esize;
    for (size_t b = 0; b < esize; ++b) {
        unsigned char *o = out + b * n;
        const unsigned char *p = in + b;
        for (size_t i = 0; i < n; ++i)
            o[i] = p[i * esize];
    }
}

static void *compress_job(void *arg)
{
    job *j = arg;
    const h5set *s = j->s;
    shuffle(j->raw, j->scratch, s->chunk_bytes, s->esize);
    uLongf len = compressBound((uLong)s->chunk_bytes);
    if (!(j->out = malloc(len))) {
        j->failed = 1;
        return NULL;
    }
    if (compress2(j->out, &len, j->scratch, (uLong)s->chunk_bytes, s->gzip) != Z_OK ||
        len >= s->chunk_bytes) {
        free(j->out);
        j->out = NULL;
        return NULL;
    }
    j->outlen = len;
    return NULL;
}

static int put(const h5set *s, long long q, const void *data, size_t len, uint32_t mask)
{
    hsize_t off[3] = {(hsize_t)(q * s->chunk), 0, 0};
    return H5Dwrite_chunk(s->images, H5P_DEFAULT, mask, off, len, data) < 0 ? -1 : 0;
}

/* Compress jobs[0..m-1], one thread each (the caller's thread does the
 * first; a thread that cannot start leaves its job to the caller). */
static void compress_all(job *jobs, int m)
{
    pthread_t tid[64];
    int started[64] = {0};
    for (int i = 1; i < m; ++i)
        started[i] = pthread_create(&tid[i], NULL, compress_job, &jobs[i]) == 0;
    compress_job(&jobs[0]);
    for (int i = 1; i < m; ++i) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            compress_job(&jobs[i]);
    }
}

/* Rounds of up to s->threads chunks: compress them, then write them in order. */
static int write_gzip(h5set *s, const long long *q, const unsigned char *const *data, int n,
                      char *err, size_t errlen)
{
    int t = s->threads < n ? s->threads : n, rc = 0;
    job jobs[64] = {{0}};
    unsigned char *scratch = malloc((size_t)t * s->chunk_bytes);
    if (!scratch) {
        h5l_error(s, "out of memory", err, errlen);
        return -1;
    }
    for (int i0 = 0; i0 < n && !rc; i0 += t) {
        int m = n - i0 < t ? n - i0 : t;
        for (int i = 0; i < m; ++i)
            jobs[i] = (job){.s = s, .raw = data[i0 + i], .scratch = scratch + i * s->chunk_bytes};
        compress_all(jobs, m);
        for (int i = 0; i < m; ++i) {
            const job *j = &jobs[i];
            if (!rc && j->failed) {
                h5l_error(s, "out of memory", err, errlen);
                rc = -1;
            }
            if (!rc && (j->out ? put(s, q[i0 + i], j->out, j->outlen, 0)
                               : put(s, q[i0 + i], j->raw, s->chunk_bytes, SKIP_FILTERS))) {
                h5l_error(s, "cannot write images", err, errlen);
                rc = -1;
            }
            free(j->out);
        }
    }
    free(scratch);
    return rc;
}

/* Write chunks q[0..n-1] from data[i] (chunk_bytes each). 0, or -1 with err. */
static int write_chunks(h5set *s, const long long *q, const unsigned char *const *data, int n,
                        char *err, size_t errlen)
{
    if (s->gzip) return write_gzip(s, q, data, n, err, errlen);
    for (int i = 0; i < n; ++i)
        if (put(s, q[i], data[i], s->chunk_bytes, 0)) {
            h5l_error(s, "cannot write images", err, errlen);
            return -1;
        }
    return 0;
}

/* The stage of chunk q, made (zeroed) when there is none; NULL: no memory. */
static h5_stage *stage(h5set *s, long long q)
{
    for (int i = 0; i < s->nstages; ++i)
        if (s->stages[i].q == q) return &s->stages[i];
    if (s->nstages == s->capstages) {
        int cap = s->capstages ? 2 * s->capstages : 4;
        h5_stage *more = realloc(s->stages, (size_t)cap * sizeof *more);
        if (!more) return NULL;
        s->stages = more;
        s->capstages = cap;
    }
    unsigned char *buf = calloc(1, s->chunk_bytes);
    if (!buf) return NULL;
    s->stages[s->nstages] = (h5_stage){.q = q, .have = 0, .buf = buf};
    return &s->stages[s->nstages++];
}

/* Free the stage of chunk q, if there is one. */
static void unstage(h5set *s, long long q)
{
    for (int i = 0; i < s->nstages; ++i)
        if (s->stages[i].q == q) {
            free(s->stages[i].buf);
            s->stages[i] = s->stages[--s->nstages];
            return;
        }
}

/* The checks of a block before anything is written. 0, or -1 with err. */
static int check_block(const h5set *s, long long first, int count, const h5set_rows *rows,
                       char *err, size_t errlen)
{
    const char *bad = NULL;
    if (s->failed)
        bad = "an earlier write failed";
    else if (count < 1 || first < 0 || first > s->nimages - count)
        bad = "the images are outside the set";
    else if (!rows || !rows->images || (s->nzernike && !rows->zernike) ||
             (s->ncols && !rows->columns))
        bad = "no images or labels given";
    for (int c = 0; !bad && c < s->ncols; ++c)
        if (!rows->columns[c]) bad = "a label column is missing";
    if (bad) {
        snprintf(err, errlen, "cannot write %s: images %lld..%lld: %s", s->shown, first,
                 first + count - 1, bad);
        return -1;
    }
    for (long long k = first; k < first + count; ++k)
        if (s->given[k]) {
            snprintf(err, errlen, "cannot write %s: image %lld was given before", s->shown, k);
            return -1;
        }
    for (int c = 0; c < s->ncols; ++c) {
        if (s->cols[c].type != H5SET_STRING) continue;
        const char *const *str = rows->columns[c];
        size_t w = (size_t)s->cols[c].width;
        for (int k = 0; k < count; ++k)
            if (!str[k] || strnlen(str[k], w + 1) > w) {
                snprintf(err, errlen, "cannot write %s: label %s of image %lld: %s", s->shown,
                         s->cols[c].name, first + k,
                         str[k] ? "longer than its width" : "no string");
                return -1;
            }
    }
    return 0;
}

/* The flush (hdf5_io.h), then the written flags of chunks q[0..n-1]
 * (ascending), one write per run of consecutive chunks. 0 or -1. */
static int commit(h5set *s, const long long *q, int n, char *err, size_t errlen)
{
    if (h5l_flush(s)) {
        h5l_error(s, "cannot flush", err, errlen);
        return -1;
    }
    for (int i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && q[j] == q[j - 1] + 1;)
            ++j;
        long long a = q[i] * s->chunk, b = (q[j - 1] + 1) * s->chunk;
        if (b > s->nimages) b = s->nimages;
        memset(s->flags + a, 1, (size_t)(b - a));
        if (h5l_write_u8(s->written, a, b - a, s->flags + a)) {
            h5l_error(s, "cannot write the written flags", err, errlen);
            return -1;
        }
    }
    return 0;
}

/* Take images first .. first + count - 1 into the chunks they belong to:
 * a chunk wholly in the block is written from it, the rest are staged;
 * the chunks now whole go to q, data (n of them). 0, or -1 (no memory). */
static int gather(h5set *s, long long first, int count, const unsigned char *img, long long *q,
                  const unsigned char **data, int *n)
{
    long long c = s->chunk, end = first + count;
    size_t ib = s->image_bytes;
    *n = 0;
    for (long long ch = first / c; ch <= (end - 1) / c; ++ch) {
        long long a = ch * c, b = a + c < s->nimages ? a + c : s->nimages;
        long long lo = a > first ? a : first, hi = b < end ? b : end;
        if (lo == a && hi == b && b - a == c) {
            q[*n] = ch;
            data[(*n)++] = img + (size_t)(a - first) * ib;
            continue;
        }
        h5_stage *st = stage(s, ch);
        if (!st) return -1;
        memcpy(st->buf + (size_t)(lo - a) * ib, img + (size_t)(lo - first) * ib,
               (size_t)(hi - lo) * ib);
        st->have += hi - lo;
        if (st->have == b - a) {
            q[*n] = ch;
            data[(*n)++] = st->buf;
        }
    }
    memset(s->given + first, 1, (size_t)count);
    return 0;
}

int h5c_write_block(h5set *s, long long first, int count, const h5set_rows *rows, char *err,
                    size_t errlen)
{
    if (check_block(s, first, count, rows, err, errlen)) return -1;
    int n = 0, rc = h5l_write_labels(s, first, count, rows, err, errlen);
    int most = (int)((first + count - 1) / s->chunk - first / s->chunk + 1);
    long long *q = malloc((size_t)most * sizeof *q);
    const unsigned char **data = malloc((size_t)most * sizeof *data);
    if (!rc && (!q || !data || gather(s, first, count, rows->images, q, data, &n))) {
        snprintf(err, errlen, "cannot write %s: out of memory", s->shown);
        rc = -1;
    }
    if (!rc && n) rc = write_chunks(s, q, data, n, err, errlen);
    if (!rc && n) rc = commit(s, q, n, err, errlen);
    for (int i = 0; !rc && i < n; ++i)
        unstage(s, q[i]);
    free(q);
    free(data);
    if (rc) s->failed = 1;
    return rc;
}
