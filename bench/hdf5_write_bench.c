/* SPDX-License-Identifier: BSD-3-Clause */
/* The HDF5 writer at GPU rates (issue 13): a set's images, synthetic (no
 * compute: DISTINCT images cycled), given to app/dataset/hdf5_writer.h in batches
 * as psfsim's run loop gives them, against in the same run
 *   module: the HDF5 module alone (h5set_write of 16 MiB blocks, the same
 *           images and labels: the writer's queue and copies left out);
 *   write:  the same bytes as the writer's NAME.h5 written by write(2) in
 *           16 MiB blocks to a file in the same directory (dd's bound).
 * Each is repeated REPEAT times, alternating, and the best kept (the
 * machine may be shared). Files are removed after each run.
 * Prints CSV rows: what,images,npix,best_seconds,mb_per_s,against_write
 * (hdf5_writer_add_calls: the time the best writer run's caller spent in
 * hdf5_writer_add, copying rows and waiting for room in the queue;
 * hdf5_writer_held: the writer given each batch in place from one of
 * WRITER_SLOTS batch buffers, hdf5_writer_add_held, as psfsim's run loop
 * does for an HDF5-only set, and the time in it and hdf5_writer_wait_slot)
 * Usage: psfsim_hdf5_write_bench CONFIG DIR IMAGES [BATCH] [REPEAT] [THREADS]
 *   BATCH: images per add (the GPU's batch: 1024); THREADS: the host
 *   pool's threads with the caller's (default: the online CPUs, at most 16,
 *   as app/run/run.c makes it)
 *   CONFIG: an output.hdf5 set (its npix, dtype, compression, labels) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app/base/make_dir.h"
#include "app/dataset/hdf5_writer.h"
#include "app/base/host_pool.h"
#include "app/set/image_set.h"

#define DISTINCT 64
#define BLOCK_BYTES ((size_t)16 << 20)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
    image_set *set;
    int dirfd;
    const char *dir;
    long long total;
    int batch;
    host_pool *pool; /* the rows' copies in parts, as the run's host pool makes them */
    float *imgs;     /* DISTINCT images */
    unsigned short *levels;
    image_info *infos;
    image_result *res;
} bench;

/* Batch buffers as the run loop's slots (WRITER_SLOTS of a lane): images
 * and levels in place, row i the distinct image i % DISTINCT, filled once
 * (the compute that would fill them is not timed here). */
typedef struct {
    float *imgs[WRITER_SLOTS];
    unsigned short *levels[WRITER_SLOTS];
} slots;

static void slots_fill(const bench *b, slots *sl)
{
    size_t plane = (size_t)b->set->samp.npix * (size_t)b->set->samp.npix;
    for (int s = 0; s < WRITER_SLOTS; ++s) {
        sl->imgs[s] = malloc((size_t)b->batch * plane * sizeof(float));
        sl->levels[s] = malloc((size_t)b->batch * plane * sizeof(unsigned short));
        if (!sl->imgs[s] || !sl->levels[s]) exit(1);
        for (int i = 0; i < b->batch; ++i) {
            memcpy(sl->imgs[s] + (size_t)i * plane, b->imgs + (size_t)(i % DISTINCT) * plane,
                   plane * sizeof(float));
            memcpy(sl->levels[s] + (size_t)i * plane, b->levels + (size_t)(i % DISTINCT) * plane,
                   plane * sizeof(unsigned short));
        }
    }
}

/* The writer as the run loop drives it: batches of jobs, then close.
 * sl NULL: each batch's rows copied (hdf5_writer_add, the jobs pointing at
 * the distinct images); else from the slots in place (hdf5_writer_add_held,
 * a slot reused once hdf5_writer_wait_slot says the writer is done). */
static double run_writer(const bench *b, const slots *sl, long long *bytes, double *add_s)
{
    char err[1024];
    hdf5_provenance pv = {.config_hash = "bench", .backend = "bench", .gpu = 0};
    double t0 = now_s();
    hdf5_writer *w =
        hdf5_writer_open(b->set, b->dirfd, b->dir, &pv, 0, b->batch, NULL, err, sizeof err);
    if (!w) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    size_t plane = (size_t)b->set->samp.npix * (size_t)b->set->samp.npix;
    write_job *jobs = calloc((size_t)b->batch, sizeof *jobs);
    image_timing tim;
    for (long long k0 = 0; k0 < b->total; k0 += b->batch) {
        int n = (int)(b->total - k0 < b->batch ? b->total - k0 : b->batch);
        int s = (int)(k0 / b->batch % WRITER_SLOTS);
        double a0 = now_s();
        if (sl) hdf5_writer_wait_slot(w, s); /* before the slot's next batch */
        for (int i = 0; i < n; ++i) {
            int d = sl ? i % DISTINCT : (int)((k0 + i) % DISTINCT);
            jobs[i] = (write_job){
                .k = k0 + i,
                .img = sl ? sl->imgs[s] + (size_t)i * plane : b->imgs + (size_t)d * plane,
                .levels = sl ? sl->levels[s] + (size_t)i * plane : b->levels + (size_t)d * plane,
                .info = &b->infos[d],
                .res = &b->res[d],
                .timing = &tim};
        }
        int rc = sl ? hdf5_writer_add_held(w, b->pool, jobs, n, s, err, sizeof err)
                    : hdf5_writer_add(w, b->pool, jobs, n, err, sizeof err);
        if (rc) {
            fprintf(stderr, "%s\n", err);
            exit(1);
        }
        *add_s += now_s() - a0;
    }
    if (hdf5_writer_close(w, 1, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    double t = now_s() - t0;
    char name[600];
    snprintf(name, sizeof name, "%s.h5", b->set->cfg->name);
    struct stat st;
    *bytes = fstatat(b->dirfd, name, &st, 0) == 0 ? (long long)st.st_size : 0;
    unlinkat(b->dirfd, name, 0);
    free(jobs);
    return t;
}

/* The module alone: h5set_write of blocks of up to 16 MiB of images. */
static double run_module(const bench *b)
{
    char err[1024];
    hdf5_provenance pv = {.config_hash = "bench", .backend = "bench", .gpu = 0};
    hdf5_set_desc desc;
    if (hdf5_set_describe(b->set, b->dirfd, b->dir, &pv, &desc, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    size_t esize = desc.p.dtype == H5SET_UINT16 ? 2 : 4;
    size_t image = (size_t)b->set->samp.npix * (size_t)b->set->samp.npix * esize;
    int n = (int)(BLOCK_BYTES / image) > DISTINCT ? (int)(BLOCK_BYTES / image) : DISTINCT;
    n -= n % DISTINCT; /* whole cycles of the distinct images */
    char *imgs = malloc((size_t)n * image);
    const void *src = desc.p.dtype == H5SET_UINT16 ? (const void *)b->levels : b->imgs;
    for (int i = 0; i < n; i += DISTINCT)
        memcpy(imgs + (size_t)i * image, src, DISTINCT * image);
    int nc = desc.p.ncolumns;
    double *dcol = calloc((size_t)n, sizeof *dcol);
    long long *icol = calloc((size_t)n, sizeof *icol);
    const char **scol = calloc((size_t)n, sizeof *scol);
    double *zern = calloc((size_t)n * (size_t)(desc.nterms ? desc.nterms : 1), sizeof *zern);
    const void **cols = calloc((size_t)nc, sizeof *cols);
    for (int i = 0; i < n; ++i)
        scol[i] = "cpu";
    for (int c = 0; c < nc; ++c)
        cols[c] = desc.cols[c].type == H5SET_DOUBLE  ? (const void *)dcol
                  : desc.cols[c].type == H5SET_INT64 ? (const void *)icol
                                                     : (const void *)scol;
    double t0 = now_s();
    h5set *s = h5set_open(&desc.p, H5SET_NEW, NULL, err, sizeof err);
    if (!s) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    h5set_rows rows = {.images = imgs, .zernike = desc.nterms ? zern : NULL, .columns = cols};
    for (long long k0 = 0; k0 < b->total; k0 += n) {
        int m = (int)(b->total - k0 < n ? b->total - k0 : n);
        if (h5set_write(s, k0, m, &rows, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            exit(1);
        }
    }
    if (h5set_close(s, H5SET_COMPLETE, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    double t = now_s() - t0;
    unlinkat(b->dirfd, desc.name, 0);
    hdf5_set_desc_free(&desc);
    free(imgs), free(dcol), free(icol), free(scol), free(zern), free(cols);
    return t;
}

/* bytes by write(2) in 16 MiB blocks (dd bs=16M, no sync). */
static double run_write(const bench *b, long long bytes)
{
    char *buf = malloc(BLOCK_BYTES);
    memset(buf, 1, BLOCK_BYTES); /* not a zero page: real copies */
    double t0 = now_s();
    int fd = openat(b->dirfd, "bench_write.bin", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) exit(1);
    for (long long left = bytes; left > 0;) {
        size_t n = left < (long long)BLOCK_BYTES ? (size_t)left : BLOCK_BYTES;
        if (write(fd, buf, n) != (ssize_t)n) exit(1);
        left -= (long long)n;
    }
    close(fd);
    double t = now_s() - t0;
    unlinkat(b->dirfd, "bench_write.bin", 0);
    free(buf);
    return t;
}

static void setup(bench *b, psf_config *cfg, image_set *set)
{
    size_t plane = (size_t)set->samp.npix * (size_t)set->samp.npix, per = image_set_storage(set);
    b->imgs = malloc(DISTINCT * plane * sizeof *b->imgs);
    b->levels = malloc(DISTINCT * plane * sizeof *b->levels);
    b->infos = calloc(DISTINCT, sizeof *b->infos);
    b->res = calloc(DISTINCT, sizeof *b->res);
    double *storage = malloc(DISTINCT * per * sizeof *storage);
    psf_job job;
    char err[1024];
    uint32_t x = 2463534242u;
    for (int d = 0; d < DISTINCT; ++d) {
        if (image_set_job(set, d, storage + d * per, &job, &b->infos[d], err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            exit(1);
        }
        b->res[d] = (image_result){.backend = "gpu", .strehl = 0.9, .axial_intensity = 0.8};
        for (size_t i = 0; i < plane; ++i) { /* noise-like: gzip works as on real images */
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            b->imgs[d * plane + i] = (float)(x >> 8) * 0x1p-30f / (1.0f + (float)(i % 64));
            b->levels[d * plane + i] = (unsigned short)(x >> 16);
        }
    }
    (void)cfg;
    /* storage backs the infos' coefficient pointers: kept to the end */
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s CONFIG DIR IMAGES [BATCH] [REPEAT]\n", argv[0]);
        return 2;
    }
    char err[1024];
    psf_config cfg;
    image_set set;
    if (config_load(argv[1], &cfg, err, sizeof err) ||
        image_set_init(&set, &cfg, err, sizeof err) || make_dir(argv[2], err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    long long total = atoll(argv[3]);
    set.nimages = total;
    bench b = {
        .set = &set, .dir = argv[2], .total = total, .batch = argc > 4 ? atoi(argv[4]) : 1024};
    int repeat = argc > 5 ? atoi(argv[5]) : 3;
    long threads = argc > 6 ? atol(argv[6]) : sysconf(_SC_NPROCESSORS_ONLN);
    b.pool = host_pool_create((threads < 16 ? (int)threads : 16) - 1); /* app/run/run.c's */
    b.dirfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (b.dirfd < 0 || !cfg.hdf5_enabled || b.batch < 1 || total < 1) {
        fprintf(stderr, "need an output.hdf5 config, a directory, IMAGES >= 1, BATCH >= 1\n");
        return 2;
    }
    setup(&b, &cfg, &set);
    slots sl;
    slots_fill(&b, &sl);
    double best_w = 1e30, best_h = 1e30, best_m = 1e30, best_d = 1e30, add_w = 0, add_h = 0;
    long long bytes = 0;
    for (int r = 0; r < repeat; ++r) {
        double add = 0, t = run_writer(&b, NULL, &bytes, &add);
        add_w = t < best_w ? add : add_w;
        best_w = t < best_w ? t : best_w;
        add = 0;
        t = run_writer(&b, &sl, &bytes, &add);
        add_h = t < best_h ? add : add_h;
        best_h = t < best_h ? t : best_h;
        t = run_module(&b);
        best_m = t < best_m ? t : best_m;
        t = run_write(&b, bytes);
        best_d = t < best_d ? t : best_d;
    }
    int npix = set.samp.npix;
    double mb = (double)bytes / 1e6;
    printf("what,images,npix,best_seconds,mb_per_s,against_write\n");
    printf("hdf5_writer,%lld,%d,%.3f,%.0f,%.2f\n", total, npix, best_w, mb / best_w,
           best_w / best_d);
    printf("hdf5_writer_add_calls,%lld,%d,%.3f,,\n", total, npix, add_w);
    printf("hdf5_writer_held,%lld,%d,%.3f,%.0f,%.2f\n", total, npix, best_h, mb / best_h,
           best_h / best_d);
    printf("hdf5_writer_held_add_calls,%lld,%d,%.3f,,\n", total, npix, add_h);
    printf("hdf5_module,%lld,%d,%.3f,%.0f,%.2f\n", total, npix, best_m, mb / best_m,
           best_m / best_d);
    printf("write_same_bytes,%lld,%d,%.3f,%.0f,1.00\n", total, npix, best_d, mb / best_d);
    for (int s = 0; s < WRITER_SLOTS; ++s)
        free(sl.imgs[s]), free(sl.levels[s]);
    close(b.dirfd);
    host_pool_destroy(b.pool);
    return 0;
}
