/* SPDX-License-Identifier: BSD-3-Clause */
/* NAME.h5's writer thread and its queue of blocks (app/dataset/hdf5_writer.h).
 * Over 450 lines because the thread's groups of blocks, the blocks that
 * point into the caller's slots (and the slots they hold) and the memory
 * the writer needs (its sizes, at the end) are one account of its bytes. */
#include "app/dataset/hdf5_writer.h"
#include "app/set/field_grid.h"

#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app/formats/png_io.h"
#include "app/set/noise.h"
#include "app/set/set_detector.h"
#include "backend/bytes.h"

#define HDF5_ERRLEN 1024

/* The writer thread's group: up to 16 MiB of rows per h5set_write, and
 * written after a second without a new block. */
#define HDF5_GROUP_BYTES ((size_t)16 << 20)
#define HDF5_GROUP_WAIT_S 1
/* Blocks kept for reuse: as many as can be alive at once (one being
 * filled, the queue's, one being written, one more filled by a second
 * lane), so none is malloc'd and freed per batch once the run is going. */
#define HDF5_SPARES (HDF5_QUEUE_BATCHES + 2)

/* Consecutive images k = first .. first + count - 1 and their labels. */
typedef struct block {
    struct block *next;
    long long first;
    int count, cap;               /* cap: rows it has room for */
    size_t bytes;                 /* what it holds, for the queue's bound */
    void *images;                 /* cap x M x M, the file's dtype: its own copy (NULL until one) */
    void *extra[H5SET_MAX_EXTRA]; /* cap x m x m of each extra image dataset, likewise */
    /* What is written: images / extra, or the caller's rows in place
     * (hdf5_writer_add_held: the slot's memory, no copy). */
    const void *img_at;
    const void *extra_at[H5SET_MAX_EXTRA];
    int slot;        /* the caller's slot whose memory img_at or extra_at point into, else -1 */
    double *zernike; /* count x J */
    int64_t *index;
    double *d[HDF5_NDOUBLES]; /* the float64 columns, HDF5_COL_WAVELENGTH on */
    double *seg; /* desc.nseg segment columns, then desc.nfc field ones, column c at c * cap */
    char (*backend)[HDF5_BACKEND_WIDTH + 1];
    const char **backend_at; /* [count] -> backend[i] */
} block;

struct hdf5_writer {
    const image_set *set;
    hdf5_set_desc desc;
    h5set *h5;
    size_t image_bytes;
    size_t extra_bytes[H5SET_MAX_EXTRA]; /* an image of each extra dataset */
    unsigned char *had;                  /* [K] written when opened */
    pthread_mutex_t mu;
    pthread_cond_t work, room, released;
    int held[HDF5_MAX_SLOTS]; /* blocks of each slot queued or being written */
    block *head, *tail;
    block *group;              /* the writer thread's rows not yet written */
    block *spare[HDF5_SPARES]; /* blocks written or copied into the group, for the next batches */
    int nspare;
    int group_rows;     /* its capacity */
    int group_goal;     /* rows that make it written: doubles from 1 to group_rows */
    size_t queued, cap; /* bytes queued, and the bound */
    int closing, failed, started;
    int resumed; /* the temp file was an earlier run's (h5set_info.resumed) */
    pthread_t thread;
    const void **cols; /* [desc.p.ncolumns] write_part's column pointers */
    char err[HDF5_ERRLEN];
};

static void block_free(block *b)
{
    if (!b) return;
    free(b->images);
    for (int e = 0; e < H5SET_MAX_EXTRA; ++e)
        free(b->extra[e]);
    free(b->zernike);
    free(b->index);
    for (int c = 0; c < HDF5_NDOUBLES; ++c)
        free(b->d[c]);
    free(b->backend);
    free(b->backend_at);
    free(b->seg);
    free(b);
}

/* Bytes of one image in a block: the image and its labels. */
/* Rows of the writer thread's group for rows of row bytes: none where one
 * would not hold more than a batch (large images: their batches are
 * written as they come, as large writes already), else up to
 * HDF5_GROUP_BYTES and the set's count. */
static size_t group_rows_of(size_t row, int batch, long long nimages)
{
    size_t rows = HDF5_GROUP_BYTES / (row ? row : 1);
    return rows <= (size_t)(batch > 0 ? batch : 1) ? 0
           : rows > (size_t)nimages                ? (size_t)nimages
                                                   : rows;
}

static size_t row_bytes(const hdf5_writer *w)
{
    size_t extra = 0;
    for (int e = 0; e < w->desc.p.nextra; ++e)
        extra += w->extra_bytes[e];
    return w->image_bytes + extra +
           ((size_t)w->desc.nterms + (size_t)w->desc.p.ncolumns + 1) * sizeof(double) +
           HDF5_BACKEND_WIDTH + 1;
}

static block *block_new(const hdf5_writer *w, long long first, int count)
{
    block *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    size_t n = (size_t)count, j = (size_t)w->desc.nterms;
    b->first = first;
    b->count = b->cap = count;
    b->slot = -1;
    b->zernike = malloc((j ? j : 1) * n * sizeof(double));
    b->index = malloc(n * sizeof *b->index);
    int ok = b->zernike && b->index;
    for (int c = 0; c < HDF5_NDOUBLES; ++c)
        ok &= (b->d[c] = malloc(n * sizeof(double))) != NULL;
    b->backend = calloc(n, sizeof *b->backend);
    b->backend_at = malloc(n * sizeof *b->backend_at);
    b->seg = malloc(((size_t)(w->desc.nseg + w->desc.nfc) * n + 1) * sizeof *b->seg);
    ok &= b->seg != NULL;
    if (!ok || !b->backend || !b->backend_at) {
        block_free(b);
        return NULL;
    }
    b->bytes = n * row_bytes(w);
    return b;
}

/* Give b room of its own for the images (images 1) and extra dataset e's
 * rows (bit e of extra) it copies: allocated once per block, kept with it
 * for reuse. 0, or -1: no memory. */
static int block_own(const hdf5_writer *w, block *b, int images, unsigned extra)
{
    size_t n = (size_t)b->cap;
    if (images && !b->images && !(b->images = malloc(n * w->image_bytes))) return -1;
    for (int e = 0; e < w->desc.p.nextra; ++e)
        if ((extra >> e & 1U) && !b->extra[e] && !(b->extra[e] = malloc(n * w->extra_bytes[e])))
            return -1;
    b->img_at = images ? b->images : b->img_at;
    for (int e = 0; e < w->desc.p.nextra; ++e)
        b->extra_at[e] = extra >> e & 1U ? b->extra[e] : b->extra_at[e];
    return 0;
}

/* Row i's extra images from job j: the oversampled image (float32, or its
 * own PNG stretch levels for uint16) and the noisy one (noise.h, drawn from
 * the image as the FITS NOISY extension is, so it is the same bits). */
static void fill_extra(const hdf5_writer *w, block *b, int i, const write_job *j)
{
    const psf_config *cfg = w->set->cfg;
    int m = w->set->samp.npix;
    if (w->desc.over >= 0 && b->extra_at[w->desc.over] == b->extra[w->desc.over]) {
        int e = w->desc.over, om = w->desc.extra[e].npix;
        void *dst = (char *)b->extra[e] + (size_t)i * w->extra_bytes[e];
        if (w->desc.p.dtype == H5SET_UINT16)
            psf_png_stretch_levels(j->over.img, om, cfg->png_bits, cfg->png_stretch,
                                   cfg->png_dynamic_range, dst);
        else
            memcpy(dst, j->over.img, w->extra_bytes[e]);
    }
    if (w->desc.noisy >= 0) {
        int e = w->desc.noisy;
        noise_image(&cfg->noise, (uint32_t)j->k, j->img, (size_t)m * (size_t)m,
                    (uint16_t *)((char *)b->extra[e] + (size_t)i * w->extra_bytes[e]));
    }
}

/* Row i of b from job j. */
static void fill_row(const hdf5_writer *w, block *b, int i, const write_job *j)
{
    const image_info *info = j->info;
    const void *src = w->desc.p.dtype == H5SET_UINT16 ? (const void *)j->levels : j->img;
    if (b->img_at == b->images)
        memcpy((char *)b->images + (size_t)i * w->image_bytes, src, w->image_bytes);
    fill_extra(w, b, i, j);
    for (int t = 0; t < w->desc.nterms; ++t)
        b->zernike[(size_t)i * w->desc.nterms + t] = info->coeff_units[w->desc.term[t]];
    b->index[i] = j->k;
    double v[HDF5_NDOUBLES] = {image_info_wavelength_nm(info),
                               info->params.sweep_defocus,
                               info->params.sweep_focus_shift_um,
                               info->pixel_lambda_d,
                               info->pixel_arcsec,
                               info->pixel_um,
                               j->res->strehl,
                               j->res->axial_intensity};
    for (int c = 0; c < HDF5_NDOUBLES; ++c)
        b->d[c][i] = v[c];
    size_t bl = strnlen(j->res->backend, HDF5_BACKEND_WIDTH); /* printf per row was its cost */
    memcpy(b->backend[i], j->res->backend, bl);
    b->backend[i][bl] = '\0';
    b->backend_at[i] = b->backend[i];
    const set_segterms *st = &w->set->segterms;
    for (int c = 0; c < w->desc.nseg; ++c)
        b->seg[(size_t)c * b->cap + i] = info->seg_units[st->label_index[c]];
    double *fc = b->seg + (size_t)w->desc.nseg * b->cap + i, x, y;
    if (w->desc.nfc >= 2 && field_grid_position(&w->set->axes, j->k, &x, &y)) {
        fc[0] = x;
        fc[b->cap] = y;
    }
    if (w->desc.nfc == 4 && field_grid_h(&w->set->axes, j->k, &x, &y)) {
        fc[2 * b->cap] = x;
        fc[3 * b->cap] = y;
    }
}

/* h5set_write of b's images a .. a + n - 1. */
static int write_part(hdf5_writer *w, const block *b, int a, int n, char *err, size_t errlen)
{
    const void **cols = w->cols;
    for (int c = 0; c < w->desc.nseg + w->desc.nfc; ++c)
        cols[HDF5_NCOLS + c] = b->seg + (size_t)c * b->cap + a;
    cols[HDF5_COL_INDEX] = b->index + a;
    for (int c = 0; c < HDF5_NDOUBLES; ++c)
        cols[HDF5_COL_WAVELENGTH + c] = b->d[c] + a;
    cols[HDF5_COL_BACKEND] = b->backend_at + a;
    h5set_rows rows = {.images = (const char *)b->img_at + (size_t)a * w->image_bytes,
                       .zernike = w->desc.nterms ? b->zernike + (size_t)a * w->desc.nterms : NULL,
                       .columns = cols};
    for (int e = 0; e < w->desc.p.nextra; ++e)
        rows.extra[e] = (const char *)b->extra_at[e] + (size_t)a * w->extra_bytes[e];
    return h5set_write(w->h5, b->first + a, n, &rows, err, errlen);
}

/* Write block b, leaving out the images the file had when opened (every
 * image of a chunk is flagged together, so what is left is whole). */
static int write_block(hdf5_writer *w, const block *b, char *err, size_t errlen)
{
    for (int i = 0; i < b->count;) {
        if (w->had[b->first + i]) {
            ++i;
            continue;
        }
        int e = i + 1;
        while (e < b->count && !w->had[b->first + e])
            ++e;
        if (write_part(w, b, i, e - i, err, errlen) != 0) return -1;
        i = e;
    }
    return 0;
}

/* Append b's rows to the group g (room checked by the caller). */
static void group_add(const hdf5_writer *w, block *g, const block *b)
{
    size_t i = (size_t)g->count, n = (size_t)b->count, j = (size_t)w->desc.nterms;
    memcpy((char *)g->images + i * w->image_bytes, b->img_at, n * w->image_bytes);
    for (int e = 0; e < w->desc.p.nextra; ++e)
        memcpy((char *)g->extra[e] + i * w->extra_bytes[e], b->extra_at[e], n * w->extra_bytes[e]);
    if (j) memcpy(g->zernike + i * j, b->zernike, n * j * sizeof(double));
    memcpy(g->index + i, b->index, n * sizeof *b->index);
    for (int c = 0; c < HDF5_NDOUBLES; ++c)
        memcpy(g->d[c] + i, b->d[c], n * sizeof(double));
    memcpy(g->backend + i, b->backend, n * sizeof *b->backend);
    for (int c = 0; c < w->desc.nseg + w->desc.nfc; ++c)
        memcpy(g->seg + (size_t)c * g->cap + i, b->seg + (size_t)c * b->cap, n * sizeof(double));
    for (size_t r = 0; r < n; ++r)
        g->backend_at[i + r] = g->backend[i + r];
    if (!g->count) g->first = b->first;
    g->count += b->count;
}

/* Keep b, copied into the group or written, for the next batches' rows (a
 * block malloc'd and freed per batch cost page faults each time: 16 MiB
 * for a GPU batch of 64 x 64, 256 MiB of 256 x 256; and its malloc on the
 * lane's thread and free on this one may fragment the heap), or, with
 * HDF5_SPARES kept, free it. */
static void recycle(hdf5_writer *w, block *b)
{
    pthread_mutex_lock(&w->mu);
    if (b->slot >= 0 && --w->held[b->slot] == 0) /* done with the caller's memory */
        pthread_cond_broadcast(&w->released);
    b->slot = -1;
    block *old = w->nspare < HDF5_SPARES ? NULL : b;
    if (!old) w->spare[w->nspare++] = b;
    pthread_mutex_unlock(&w->mu);
    block_free(old);
}

/* A spare block with room for count rows (then first and count set),
 * else a new one; NULL: no memory. */
static block *take_block(hdf5_writer *w, long long first, int count)
{
    pthread_mutex_lock(&w->mu);
    block *b = NULL;
    for (int i = w->nspare - 1; i >= 0 && !b; --i)
        if (w->spare[i]->cap >= count) {
            b = w->spare[i];
            w->spare[i] = w->spare[--w->nspare];
        }
    pthread_mutex_unlock(&w->mu);
    if (!b) return block_new(w, first, count);
    b->next = NULL;
    b->first = first;
    b->count = count;
    b->bytes = (size_t)count * row_bytes(w);
    b->img_at = NULL;
    for (int e = 0; e < H5SET_MAX_EXTRA; ++e)
        b->extra_at[e] = NULL;
    return b;
}

/* Write the group (one h5set_write per run: one flush), unless an
 * earlier write failed, and empty it. */
static void group_write(hdf5_writer *w, block *g)
{
    if (!g->count) return;
    char e[HDF5_ERRLEN];
    pthread_mutex_lock(&w->mu);
    int failed = w->failed;
    pthread_mutex_unlock(&w->mu);
    if (!failed && write_block(w, g, e, sizeof e) != 0) {
        pthread_mutex_lock(&w->mu);
        w->failed = 1;
        snprintf(w->err, sizeof w->err, "%s", e);
        pthread_cond_broadcast(&w->room); /* a waiting lane sees the failure */
        pthread_mutex_unlock(&w->mu);
    }
    g->count = 0;
}

/* The next block, waiting for one; NULL when closing and none is left,
 * or, with a group pending, after HDF5_GROUP_WAIT_S without one (the
 * group is then written: a slow run still has its images flagged). */
static block *next_block(hdf5_writer *w, int pending)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += HDF5_GROUP_WAIT_S;
    pthread_mutex_lock(&w->mu);
    int timed_out = 0;
    while (!w->head && !w->closing && !timed_out)
        if (pending)
            timed_out = pthread_cond_timedwait(&w->work, &w->mu, &until) != 0;
        else
            pthread_cond_wait(&w->work, &w->mu);
    block *b = w->head;
    if (b) {
        w->head = b->next;
        if (!w->head) w->tail = NULL;
        /* Its rows are copied into the group at once: room for the lanes. */
        w->queued -= b->bytes;
        pthread_cond_broadcast(&w->room);
    }
    pthread_mutex_unlock(&w->mu);
    return b;
}

/* Blocks are gathered into a group of consecutive images of up to
 * w->group_rows, written with one h5set_write: the module flushes once
 * per write, and a flush per batch cost more than the images' bytes. The
 * first block is written alone and each group's goal doubles, so a run
 * killed early still has its first images flagged, as before. */
static void *writer_main(void *arg)
{
    hdf5_writer *w = arg;
    block *g = w->group;
    for (;;) {
        block *b = next_block(w, g && g->count > 0);
        if (!b) {
            if (g) group_write(w, g);
            pthread_mutex_lock(&w->mu);
            int done = w->closing && !w->head;
            pthread_mutex_unlock(&w->mu);
            if (done) return NULL;
            continue;
        }
        if (g && g->count &&
            (g->first + g->count != b->first || g->count + b->count > w->group_rows))
            group_write(w, g);
        if (b->count > w->group_rows) {
            group_write(w, b); /* larger than a group: written as it is */
            recycle(w, b);     /* and kept for the next batch, as the group's are */
        } else {
            group_add(w, g, b);
            if (g->count >= w->group_goal) {
                group_write(w, g);
                w->group_goal =
                    w->group_goal > w->group_rows / 2 ? w->group_rows : 2 * w->group_goal;
            }
            recycle(w, b);
        }
    }
}

static void writer_free(hdf5_writer *w)
{
    for (block *b = w->head, *next; b; b = next) {
        next = b->next;
        block_free(b);
    }
    block_free(w->group);
    for (int i = 0; i < w->nspare; ++i)
        block_free(w->spare[i]);
    hdf5_set_desc_free(&w->desc);
    free(w->had);
    free(w->cols);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->room);
    pthread_cond_destroy(&w->released);
    free(w);
}

int hdf5_writer_check_complete(const image_set *s, int dirfd, const char *dir,
                               const hdf5_provenance *pv, char *why, size_t whylen)
{
    hdf5_set_desc d;
    int ok = 0;
    if (hdf5_set_describe(s, dirfd, dir, pv, &d, why, whylen) == 0)
        ok = h5set_check_complete(&d.p, why, whylen);
    hdf5_set_desc_free(&d);
    return ok;
}

hdf5_writer *hdf5_writer_open(const image_set *s, int dirfd, const char *dir,
                              const hdf5_provenance *pv, int resume, int batch, h5set_info *info,
                              char *err, size_t errlen)
{
    hdf5_writer *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "cannot start the HDF5 writer: out of memory");
        return NULL;
    }
    w->set = s;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->room, NULL);
    pthread_cond_init(&w->released, NULL);
    if (hdf5_set_describe(s, dirfd, dir, pv, &w->desc, err, errlen) != 0) {
        writer_free(w);
        return NULL;
    }
    w->cols = malloc((size_t)w->desc.p.ncolumns * sizeof *w->cols);
    if (!w->cols) {
        snprintf(err, errlen, "cannot write %s: out of memory", w->desc.shown);
        writer_free(w);
        return NULL;
    }
    size_t esize = w->desc.p.dtype == H5SET_UINT16 ? 2 : 4;
    w->image_bytes = (size_t)s->samp.npix * (size_t)s->samp.npix * esize;
    for (int e = 0; e < w->desc.p.nextra; ++e) {
        size_t m = (size_t)w->desc.extra[e].npix;
        w->extra_bytes[e] = m * m * (w->desc.extra[e].dtype == H5SET_UINT16 ? 2 : 4);
    }
    w->cap = (size_t)HDF5_QUEUE_BATCHES * (size_t)(batch > 0 ? batch : 1) * row_bytes(w);
    w->group_rows = (int)group_rows_of(row_bytes(w), batch, s->nimages);
    w->group = w->group_rows ? block_new(w, 0, w->group_rows) : NULL;
    if (w->group && block_own(w, w->group, 1, ~0U) != 0) {
        block_free(w->group);
        w->group = NULL;
    }
    if (w->group) w->group->count = 0;
    w->group_goal = 1;
    w->had = w->group || !w->group_rows ? malloc((size_t)s->nimages) : NULL;
    if (w->had)
        w->h5 = h5set_open(&w->desc.p, resume ? H5SET_RESUME : H5SET_NEW, info, err, errlen);
    else
        snprintf(err, errlen, "cannot write %s: out of memory", w->desc.shown);
    if (!w->h5) {
        writer_free(w);
        return NULL;
    }
    w->resumed = info && info->resumed;
    memcpy(w->had, h5set_written(w->h5), (size_t)s->nimages);
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        snprintf(err, errlen, "cannot write %s: cannot start its thread", w->desc.shown);
        h5set_close(w->h5, H5SET_KEEP, NULL, 0);
        writer_free(w);
        return NULL;
    }
    w->started = 1;
    return w;
}

const unsigned char *hdf5_writer_written(const hdf5_writer *w)
{
    return w->had;
}

/* Wait until bytes fit in the queue (an empty queue takes any block) and
 * count them in. 0, or -1 with the thread's failure in err. */
static int reserve(hdf5_writer *w, size_t bytes, char *err, size_t errlen)
{
    pthread_mutex_lock(&w->mu);
    while (!w->failed && w->queued > 0 && w->queued + bytes > w->cap)
        pthread_cond_wait(&w->room, &w->mu);
    int failed = w->failed;
    if (failed)
        snprintf(err, errlen, "%s", w->err);
    else
        w->queued += bytes;
    pthread_mutex_unlock(&w->mu);
    return failed ? -1 : 0;
}

/* Queue b (its bytes reserved), or, b NULL, give back bytes. */
static void enqueue(hdf5_writer *w, block *b, size_t bytes)
{
    pthread_mutex_lock(&w->mu);
    if (b) {
        if (w->tail)
            w->tail->next = b;
        else
            w->head = b;
        w->tail = b;
        pthread_cond_signal(&w->work);
    } else {
        w->queued -= bytes;
        pthread_cond_broadcast(&w->room);
    }
    pthread_mutex_unlock(&w->mu);
}

/* Rows [begin, end) of a block, from their jobs (host_pool_run parts). */
typedef struct {
    const hdf5_writer *w;
    block *b;
    const write_job *jobs; /* the block's first row's */
} fill_ctx;

static void fill_part(void *arg, int begin, int end)
{
    const fill_ctx *c = arg;
    for (int r = begin; r < end; ++r)
        fill_row(c->w, c->b, r, &c->jobs[r]);
}

/* The rows of jobs[0..n) as one array: the first job's pointer (at
 * offset off in write_job) when each next row follows the last, bytes
 * apart, else NULL. */
static const char *rows_in_place(const write_job *jobs, int n, size_t off, size_t bytes)
{
    const char *first = *(const char *const *)((const char *)&jobs[0] + off);
    for (int i = 1; i < n && first; ++i)
        if (*(const char *const *)((const char *)&jobs[i] + off) != first + (size_t)i * bytes)
            return NULL;
    return first;
}

/* Where a run's rows are written from: the caller's (slot >= 0 and the
 * rows in place: the images, and the oversampled ones when float32), NULL
 * for the block's own copy. */
typedef struct {
    const void *images, *over;
} run_sources;

static run_sources sources(const hdf5_writer *w, const write_job *jobs, int n, int slot)
{
    run_sources src = {0};
    /* Rows bound for the group are copied there by the writer thread, which
     * may first be writing the last group: a slot held meanwhile stalled
     * its lane (CPU batches of 64 x 64: 10% slower), so those are copied
     * here as before. */
    if (slot < 0 || n <= w->group_rows) return src;
    size_t img_off =
        w->desc.p.dtype == H5SET_UINT16 ? offsetof(write_job, levels) : offsetof(write_job, img);
    src.images = rows_in_place(jobs, n, img_off, w->image_bytes);
    int o = w->desc.over;
    if (o >= 0 && w->desc.extra[o].dtype == H5SET_FLOAT32)
        src.over = rows_in_place(jobs, n, offsetof(write_job, over.img), w->extra_bytes[o]);
    return src;
}

/* Bytes a run of n rows copies into its block (the queue's count). */
static size_t copied_bytes(const hdf5_writer *w, const run_sources *src, int n)
{
    size_t kept = src->images ? w->image_bytes : 0;
    if (src->over) kept += w->extra_bytes[w->desc.over];
    return (size_t)n * (row_bytes(w) - kept);
}

/* Queue jobs[0..n) (consecutive k, all written by the pool), copying
 * what is not taken in place; the block holds slot until written. */
static int add_run(hdf5_writer *w, host_pool *pool, const write_job *jobs, int n, int slot,
                   char *err, size_t errlen)
{
    run_sources src = sources(w, jobs, n, slot);
    size_t bytes = copied_bytes(w, &src, n);
    if (reserve(w, bytes, err, errlen) != 0) return -1;
    block *b = take_block(w, jobs[0].k, n);
    unsigned own = src.over ? ~(1U << w->desc.over) : ~0U;
    if (b) {
        b->img_at = src.images;
        if (src.over) b->extra_at[w->desc.over] = src.over;
    }
    if (!b || block_own(w, b, !src.images, own) != 0) {
        if (b) recycle(w, b);
        enqueue(w, NULL, bytes);
        snprintf(err, errlen, "cannot write %s: out of memory for %d images", w->desc.shown, n);
        return -1;
    }
    b->bytes = bytes;
    fill_ctx c = {.w = w, .b = b, .jobs = jobs};
    host_pool_run(pool, n, fill_part, &c); /* the rows' copies side by side */
    if (src.images || src.over) {
        b->slot = slot;
        pthread_mutex_lock(&w->mu);
        w->held[slot]++;
        pthread_mutex_unlock(&w->mu);
    }
    enqueue(w, b, 0);
    return 0;
}

/* hdf5_writer_add and hdf5_writer_add_held: slot -1 copies every row. */
static int add_jobs(hdf5_writer *w, host_pool *pool, const write_job *jobs, int n, int slot,
                    char *err, size_t errlen)
{
    for (int i = 0; i < n;) {
        if (jobs[i].status != 0) {
            ++i;
            continue;
        }
        int e = i + 1; /* a run of consecutive k */
        while (e < n && jobs[e].status == 0 && jobs[e].k == jobs[e - 1].k + 1)
            ++e;
        if (add_run(w, pool, jobs + i, e - i, slot, err, errlen) != 0) return -1;
        i = e;
    }
    return 0;
}

int hdf5_writer_add(hdf5_writer *w, host_pool *pool, const write_job *jobs, int n, char *err,
                    size_t errlen)
{
    return add_jobs(w, pool, jobs, n, -1, err, errlen);
}

int hdf5_writer_add_held(hdf5_writer *w, host_pool *pool, const write_job *jobs, int n, int slot,
                         char *err, size_t errlen)
{
    return add_jobs(w, pool, jobs, n, slot >= 0 && slot < HDF5_MAX_SLOTS ? slot : -1, err, errlen);
}

void hdf5_writer_wait_slot(hdf5_writer *w, int slot)
{
    if (!w || slot < 0 || slot >= HDF5_MAX_SLOTS) return;
    pthread_mutex_lock(&w->mu);
    while (w->held[slot] > 0)
        pthread_cond_wait(&w->released, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

/* A temp file an earlier run left, resumed, that this run could not write
 * (metadata damaged yet opening, or the disk failing): kept, every later
 * --resume would resume it and fail again. It is removed (the run holds the
 * set's lock: no other run writes it), so the next --resume starts NAME.h5
 * afresh, and err says so. */
static void discard_resumed(const hdf5_writer *w, char *err, size_t errlen)
{
    char tmp[sizeof w->desc.name + 16];
    struct stat st;
    int fd = w->desc.p.dir_fd;
    if (h5set_temp_name(w->desc.name, tmp, sizeof tmp) != 0 ||
        fstatat(fd, tmp, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        unlinkat(fd, tmp, 0) != 0)
        return;
    size_t n = strlen(err);
    snprintf(err + n, errlen - n,
             "; its temp file %s, resumed from an earlier run, was removed (damaged, or the "
             "disk failed): the next --resume writes %s afresh",
             tmp, w->desc.name);
}

int hdf5_writer_close(hdf5_writer *w, int complete, char *err, size_t errlen)
{
    if (!w) return 0;
    pthread_mutex_lock(&w->mu);
    w->closing = 1;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
    if (w->started) pthread_join(w->thread, NULL);
    int rc = 0;
    if (w->failed) {
        snprintf(err, errlen, "%s", w->err);
        rc = -1;
    }
    char e[HDF5_ERRLEN];
    h5set_close_mode mode = complete && !rc ? H5SET_COMPLETE : H5SET_KEEP;
    if (h5set_close(w->h5, mode, e, sizeof e) != 0 && rc == 0) {
        snprintf(err, errlen, "%s", e);
        rc = -1;
    }
    if (rc != 0 && w->resumed) discard_resumed(w, err, errlen);
    writer_free(w);
    return rc;
}

unsigned long long hdf5_writer_image_bytes(const image_set *s)
{
    unsigned long long m = (unsigned long long)s->samp.npix;
    return m * m * (s->cfg->hdf5_dtype == HDF5_UINT16 ? 2ULL : 4ULL);
}

unsigned long long hdf5_writer_over_bytes(const image_set *s)
{
    const psf_config *cfg = s->cfg;
    if (!cfg->detector.enabled || cfg->detector.write != DET_WRITE_BOTH) return 0;
    unsigned long long m = (unsigned long long)set_detector_backend_npix(s);
    return m * m * (cfg->hdf5_dtype == HDF5_UINT16 ? 2ULL : 4ULL);
}

/* Bytes of image k's images beside images: oversampled, noisy (uint16). */
static unsigned long long extra_bytes(const image_set *s)
{
    unsigned long long m = (unsigned long long)s->samp.npix;
    return hdf5_writer_over_bytes(s) + (s->cfg->noise.enabled ? 2ULL * m * m : 0);
}

unsigned long long hdf5_writer_chunk_images(const image_set *s)
{
    unsigned long long c = (unsigned long long)s->cfg->hdf5_chunk_images;
    if (c == 0) { /* unset: the module's rule, over the largest image dataset's image */
        unsigned long long big = hdf5_writer_image_bytes(s);
        big = hdf5_writer_over_bytes(s) > big ? hdf5_writer_over_bytes(s)
                                              : big; /* noisy's is never larger than images' */
        c = (unsigned long long)h5set_auto_chunk_images((size_t)big, s->nimages);
    }
    if (c < 1) c = 1;
    return c < (unsigned long long)s->nimages ? c : (unsigned long long)s->nimages;
}

/* A chunk of every image dataset, as a stage holds them. */
static unsigned long long chunk_bytes(const image_set *s)
{
    return hdf5_writer_chunk_images(s) *
           (hdf5_writer_image_bytes(s) + extra_bytes(s)); /* < 12 GiB + 3 MiB */
}

/* Label bytes of one image: the terms, the columns (the field's too) and
 * the written flag. */
static unsigned long long label_bytes(const image_set *s)
{
    double x, y; /* the field columns: 2 with positions, 2 more with (hx, hy) */
    unsigned long long nfc = 2ULL * (unsigned long long)field_grid_position(&s->axes, 0, &x, &y) +
                             2ULL * (unsigned long long)field_grid_h(&s->axes, 0, &x, &y);
    return ((unsigned long long)hdf5_label_terms(s, NULL) + HDF5_NCOLS +
            (unsigned long long)s->segterms.nlabels + nfc) *
               8ULL +
           1ULL;
}

/* Bytes of one image's row as the queue and the group count it, at most:
 * its images, labels and backend name (with room). */
static unsigned long long row_most(const image_set *s)
{
    return hdf5_writer_image_bytes(s) + extra_bytes(s) + label_bytes(s) + 2ULL * HDF5_BACKEND_WIDTH;
}

int hdf5_writer_batch(const image_set *s, int batch, long long todo)
{
    if (!s->cfg->hdf5_enabled || batch < 1) return batch;
    unsigned long long images = hdf5_writer_image_bytes(s) + extra_bytes(s);
    /* A row is at least its images and at most row_most: the group holds
     * between these many rows (group_rows_of). */
    unsigned long long most = HDF5_GROUP_BYTES / (images ? images : 1);
    unsigned long long least = HDF5_GROUP_BYTES / row_most(s);
    if ((unsigned long long)batch > least) return batch; /* a group holds no more than a batch */
    long long want = (long long)most + 1, cap = todo / 4;
    if (want > cap) want = cap;
    return want > batch ? (int)want : batch;
}

unsigned long long hdf5_writer_memory_need(const image_set *s, int batch, int lanes)
{
    if (!s->cfg->hdf5_enabled) return 0;
    unsigned long long b = (unsigned long long)(batch > 0 ? batch : 1);
    unsigned long long l = (unsigned long long)(lanes > 0 ? lanes : 1);
    unsigned long long image = hdf5_writer_image_bytes(s);
    unsigned long long row = row_most(s);
    /* The queue's batches, the one being written, and the group. */
    unsigned long long queue = bytes_mul((HDF5_QUEUE_BATCHES + 1) * b, row);
    queue = bytes_add(queue, bytes_mul(group_rows_of((size_t)row, batch, s->nimages), row));
    unsigned long long stages = bytes_mul(WRITER_SLOTS * l + 2, chunk_bytes(s));
    unsigned long long run =
        chunk_bytes(s) > H5SET_GZIP_RUN_BYTES ? chunk_bytes(s) : H5SET_GZIP_RUN_BYTES;
    unsigned long long gzip = s->cfg->hdf5_compression == HDF5_GZIP
                                  ? bytes_mul(8ULL, bytes_add(2 * run, run / 512 + 1024))
                                  : 0;
    unsigned long long flags = bytes_mul(3ULL, (unsigned long long)s->nimages);
    unsigned long long levels =
        s->cfg->hdf5_dtype == HDF5_UINT16 ? bytes_mul(WRITER_SLOTS * l * b, image) : 0;
    return bytes_add(bytes_add(queue, stages), bytes_add(bytes_add(gzip, flags), levels));
}

unsigned long long hdf5_writer_disk_need(const image_set *s)
{
    if (!s->cfg->hdf5_enabled) return 0;
    unsigned long long k = (unsigned long long)s->nimages;
    unsigned long long images = bytes_mul(k, hdf5_writer_image_bytes(s) + extra_bytes(s));
    unsigned long long nchunks =
        (k + hdf5_writer_chunk_images(s) - 1) / hdf5_writer_chunk_images(s);
    unsigned long long meta = bytes_add(bytes_mul(nchunks, 256ULL), 2ULL << 20); /* + NAME.json */
    return bytes_add(bytes_add(images, bytes_mul(k, label_bytes(s))), meta);
}
