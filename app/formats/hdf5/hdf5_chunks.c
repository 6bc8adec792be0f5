/* SPDX-License-Identifier: BSD-3-Clause */
/* Writing blocks of images and labels (hdf5_layout.h): each image (of
 * images and of each extra image dataset) goes into its chunk, a chunk only partly given waits in a
 * stage, whole chunks are written, then come the flush and their written flags. With gzip each
 * chunk is shuffled and deflated here, by up to s->threads threads at
 * once, each a run of consecutive chunks, as HDF5's shuffle and deflate filters do (H5Zshuffle.c,
 * H5Zdeflate.c: compress2 at the level), so HDF5 and h5py read it back
 * through those filters; it is then written with H5Dwrite_chunk.
 * Compressing inside H5Dwrite would use one core (libhdf5 serialises its
 * calls): too slow to keep up with a GPU. Part of the HDF5 module. */
#include "app/formats/hdf5/hdf5_layout.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "backend/fork_join.h"

/* H5Dwrite_chunk takes the bytes as stored: the file types are little-endian. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the HDF5 writer needs a little-endian host");

/* The chunk's filter mask when stored unfiltered: shuffle (bit 0) and
 * deflate (bit 1) skipped, as HDF5 stores a chunk that deflate would not
 * shrink (both filters are optional). */
#define SKIP_FILTERS 0x3u

/* Most chunks in a thread's run (with H5SET_GZIP_RUN_BYTES). */
#define RUN_CHUNKS 64

/* One chunk to write: chunk q of dataset d, bytes long, values of esize. */
typedef struct {
    hid_t d;
    long long q;
    const unsigned char *raw;
    size_t bytes, esize;
} chunk;

/* A thread's run: consecutive chunks of a round, compressed one after
 * another into out (issue 27: small chunks, one thread start per run, not
 * per chunk). */
typedef struct {
    const h5set *s;
    const chunk *c; /* [n] */
    int n;
    unsigned char *scratch; /* the largest chunk's bytes: a chunk shuffled */
    unsigned char *out;     /* the run's deflated chunks, one after another */
    size_t *len;            /* [n]: chunk i's deflated bytes, or 0: store it raw */
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

/* Shuffle and deflate the run's chunks into out, which holds
 * compressBound(the largest chunk) bytes for each: a chunk kept deflated
 * is shorter than itself, so the next always has its bound left. */
static void *compress_job(void *arg)
{
    job *j = arg;
    size_t off = 0;
    for (int i = 0; i < j->n; ++i) {
        const chunk *c = &j->c[i];
        shuffle(c->raw, j->scratch, c->bytes, c->esize);
        uLongf len = compressBound((uLong)c->bytes);
        j->len[i] =
            compress2(j->out + off, &len, j->scratch, (uLong)c->bytes, j->s->gzip) == Z_OK &&
                    len < c->bytes
                ? (size_t)len
                : 0;
        off += j->len[i];
    }
    return NULL;
}

static int put(const h5set *s, const chunk *c, const void *data, size_t len, uint32_t mask)
{
    hsize_t off[3] = {(hsize_t)(c->q * s->chunk), 0, 0};
    return H5Dwrite_chunk(c->d, H5P_DEFAULT, mask, off, len, data) < 0 ? -1 : 0;
}

/* Compress jobs[0..m-1], one thread each (the caller's thread does the
 * first; a thread that cannot start leaves its job to the caller). */
static void compress_all(job *jobs, int m)
{
    psf_fork_join(compress_job, jobs, sizeof jobs[0], m);
}

/* Rounds of up to s->threads runs of up to r chunks each (r: the chunks in
 * H5SET_GZIP_RUN_BYTES, 1..RUN_CHUNKS): the threads compress their runs,
 * then the chunks are written in order. */
static int write_gzip(h5set *s, const chunk *ch, int n, char *err, size_t errlen)
{
    size_t most = s->chunk_bytes;
    for (int i = 0; i < s->nextra; ++i)
        most = s->extra[i].chunk_bytes > most ? s->extra[i].chunk_bytes : most;
    size_t r = H5SET_GZIP_RUN_BYTES / most;
    r = r < 1 ? 1 : r > RUN_CHUNKS ? RUN_CHUNKS : r;
    int t = s->threads < n ? s->threads : n, rc = 0;
    size_t bound = compressBound((uLong)most);
    job jobs[64] = {{0}};
    unsigned char *scratch = malloc((size_t)t * most);
    unsigned char *out = malloc((size_t)t * r * bound);
    size_t *lens = malloc((size_t)t * r * sizeof *lens);
    if (!scratch || !out || !lens) {
        h5l_error(s, "out of memory", err, errlen);
        rc = -1;
    }
    for (int i0 = 0, m; i0 < n && !rc; i0 += m) {
        m = (size_t)(n - i0) < (size_t)t * r ? n - i0 : (int)((size_t)t * r);
        int u = t < m ? t : m; /* runs of m / u chunks, or one more: <= r */
        for (int w = 0; w < u; ++w) {
            int a = (int)((long long)w * m / u), b = (int)((long long)(w + 1) * m / u);
            jobs[w] = (job){.s = s,
                            .c = &ch[i0 + a],
                            .n = b - a,
                            .scratch = scratch + (size_t)w * most,
                            .out = out + (size_t)w * r * bound,
                            .len = lens + (size_t)w * r};
        }
        compress_all(jobs, u);
        for (int w = 0; w < u && !rc; ++w) {
            const job *j = &jobs[w];
            size_t off = 0;
            for (int i = 0; i < j->n && !rc; off += j->len[i++])
                if (j->len[i] ? put(s, &j->c[i], j->out + off, j->len[i], 0)
                              : put(s, &j->c[i], j->c[i].raw, j->c[i].bytes, SKIP_FILTERS)) {
                    h5l_error(s, "cannot write images", err, errlen);
                    rc = -1;
                }
        }
    }
    free(scratch);
    free(out);
    free(lens);
    return rc;
}

/* Write chunks ch[0..n-1]. 0, or -1 with err. */
static int write_chunks(h5set *s, const chunk *ch, int n, char *err, size_t errlen)
{
    if (s->gzip) return write_gzip(s, ch, n, err, errlen);
    for (int i = 0; i < n; ++i)
        if (put(s, &ch[i], ch[i].raw, ch[i].bytes, 0)) {
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
    unsigned char *buf = calloc(1, s->stage_bytes);
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
    for (int e = 0; !bad && e < s->nextra; ++e)
        if (!rows->extra[e]) bad = "an image dataset's images are missing";
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

/* The flush (h5set.h), then the written flags of chunks q[0..n-1]
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

/* Dataset i's (0: images, 1..: extra i - 1) id, image and chunk bytes,
 * value size and place in a stage. */
typedef struct {
    hid_t d;
    size_t image, bytes, esize, off;
    const unsigned char *src; /* the block's images */
} dset;

static int dsets(const h5set *s, const h5set_rows *rows, dset *ds)
{
    ds[0] = (dset){s->images, s->image_bytes, s->chunk_bytes, s->esize, 0, rows->images};
    for (int e = 0; e < s->nextra; ++e) {
        const h5_extra *x = &s->extra[e];
        ds[e + 1] = (dset){x->id, x->image_bytes, x->chunk_bytes, x->esize, x->off, rows->extra[e]};
    }
    return 1 + s->nextra;
}

/* Chunk q of each of the nd datasets from base (a stage's buffer, off
 * used), or, base NULL, from the block's images at image a - first. */
static void add_chunks(const dset *ds, int nd, long long q, const unsigned char *base,
                       long long from, chunk *out, int *n)
{
    for (int i = 0; i < nd; ++i)
        out[(*n)++] =
            (chunk){ds[i].d, q, base ? base + ds[i].off : ds[i].src + (size_t)from * ds[i].image,
                    ds[i].bytes, ds[i].esize};
}

/* Take images first .. first + count - 1 into the chunks they belong to:
 * a chunk wholly in the block is written from it, the rest are staged;
 * the chunks now whole go to ch (n of them, every dataset's, chunk by
 * chunk) and q (nq chunk indices). 0, or -1 (no memory). */
static int gather(h5set *s, long long first, int count, const h5set_rows *rows, chunk *ch, int *n,
                  long long *q, int *nq)
{
    long long c = s->chunk, end = first + count;
    dset ds[1 + H5SET_MAX_EXTRA];
    int nd = dsets(s, rows, ds);
    *n = *nq = 0;
    for (long long k = first / c; k <= (end - 1) / c; ++k) {
        long long a = k * c, b = a + c < s->nimages ? a + c : s->nimages;
        long long lo = a > first ? a : first, hi = b < end ? b : end;
        if (lo == a && hi == b && b - a == c) {
            q[(*nq)++] = k;
            add_chunks(ds, nd, k, NULL, a - first, ch, n);
            continue;
        }
        h5_stage *st = stage(s, k);
        if (!st) return -1;
        for (int i = 0; i < nd; ++i)
            memcpy(st->buf + ds[i].off + (size_t)(lo - a) * ds[i].image,
                   ds[i].src + (size_t)(lo - first) * ds[i].image, (size_t)(hi - lo) * ds[i].image);
        st->have += hi - lo;
        if (st->have == b - a) {
            q[(*nq)++] = k;
            add_chunks(ds, nd, k, st->buf, 0, ch, n);
        }
    }
    memset(s->given + first, 1, (size_t)count);
    return 0;
}

int h5c_write_block(h5set *s, long long first, int count, const h5set_rows *rows, char *err,
                    size_t errlen)
{
    if (check_block(s, first, count, rows, err, errlen)) return -1;
    int n = 0, nq = 0, rc = h5l_write_labels(s, first, count, rows, err, errlen);
    int most = (int)((first + count - 1) / s->chunk - first / s->chunk + 1);
    long long *q = malloc((size_t)most * sizeof *q);
    chunk *ch = malloc((size_t)most * (size_t)(1 + s->nextra) * sizeof *ch);
    if (!rc && (!q || !ch || gather(s, first, count, rows, ch, &n, q, &nq))) {
        snprintf(err, errlen, "cannot write %s: out of memory", s->shown);
        rc = -1;
    }
    if (!rc && n) rc = write_chunks(s, ch, n, err, errlen);
    if (!rc && nq) rc = commit(s, q, nq, err, errlen);
    for (int i = 0; !rc && i < nq; ++i)
        unstage(s, q[i]);
    free(q);
    free(ch);
    if (rc) s->failed = 1;
    return rc;
}
