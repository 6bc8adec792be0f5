/* SPDX-License-Identifier: BSD-3-Clause */
/* hdf5_io: a set of K = 37 images of 16 x 16 (both dtypes, with and without
 * gzip, blocks of uneven size) read back with libhdf5 itself: shapes,
 * types, chunks, filters, values bit for bit, labels, attributes; an
 * interrupted set (closed unfinished, or a child killed with SIGKILL while
 * it writes) resumed to the same content; temp files that must not be
 * trusted (garbage, cut short, killed mid-flush, another run's, a symbolic
 * link) rebuilt; parameter errors; the module's ABI check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/base/module_loader.h"
#include "app/formats/h5set.h"
#include "app/formats/hdf5_abi.h"
#include "tests/support/testutil.h"

extern char **environ;
/* This program, for test_module_abi's fresh process (argv[0]: under
 * valgrind /proc/self/exe is valgrind itself). */
static const char *g_self = "/proc/self/exe";

enum { K = 37, M = 16, J = 4, NCOL = 3, CHUNK = 8, NPIX = M * M };
static const int NOLL[J] = {4, 5, 6, 11};
static const h5set_column COLS[NCOL] = {
    {.name = "strehl", .type = H5SET_DOUBLE, .units = "1", .description = "Strehl ratio"},
    {.name = "draw", .type = H5SET_INT64, .description = "draw index"},
    {.name = "backend", .type = H5SET_STRING, .width = 8},
};
static const h5set_attr ATTRS[] = {
    {.key = "pixel_scale_arcsec", .type = H5SET_DOUBLE, .d = 0.0125},
    {.key = "wavelength_nm", .type = H5SET_DOUBLE, .d = 550.0},
    {.key = "seed", .type = H5SET_INT64, .i = 1234567890123LL},
    {.key = "psfsim_version", .type = H5SET_STRING, .s = "0.1.0"},
    {.object = "images", .key = "units", .type = H5SET_STRING, .s = "peak = 1"},
    {.object = "labels/strehl", .key = "convention", .type = H5SET_STRING, .s = "Marechal"},
};
enum { NATTR = sizeof ATTRS / sizeof *ATTRS };
/* Blocks of uneven size, none chunk-aligned for long. */
static const int BLOCKS[] = {5, 11, 1, 8, 12};
enum { NBLOCKS = sizeof BLOCKS / sizeof *BLOCKS };

/* A set's content: images k < 16 smooth (deflate shrinks their chunks),
 * the rest random bits (NaN payloads, subnormals; stored unfiltered). */
typedef struct {
    h5set_dtype dtype;
    size_t esize;
    unsigned char images[K * NPIX * 4];
    double zernike[K * J], strehl[K];
    int64_t draw[K];
    const char *backend[K];
} set_data;

static uint32_t next(uint32_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 17, *x ^= *x << 5;
    return *x;
}

static void make_data(set_data *d, h5set_dtype dtype)
{
    uint32_t x = 2463534242u;
    d->dtype = dtype;
    d->esize = dtype == H5SET_FLOAT32 ? 4 : 2;
    for (int k = 0; k < K; ++k) {
        for (int i = 0; i < NPIX; ++i) {
            unsigned char *p = d->images + ((size_t)k * NPIX + i) * d->esize;
            float f = (float)(k + 1) /
                      (1.0f + (float)((i / M - 8) * (i / M - 8) + (i % M - 8) * (i % M - 8)));
            uint32_t bits = k < 16 ? 0 : next(&x);
            uint16_t u = k < 16 ? (uint16_t)(k * 40 + i / 8) : (uint16_t)bits;
            if (dtype == H5SET_FLOAT32 && k < 16) memcpy(&bits, &f, 4);
            if (dtype == H5SET_FLOAT32)
                memcpy(p, &bits, 4);
            else
                memcpy(p, &u, 2);
        }
        for (int j = 0; j < J; ++j)
            d->zernike[k * J + j] = 0.1 * (k + 1) - 0.03 * j;
        d->strehl[k] = 1.0 / (k + 1.5);
        d->draw[k] = 1000000000000LL + k;
        d->backend[k] = k % 3 == 0 ? "cpu" : k % 3 == 1 ? "gpu" : "gpu:1234";
    }
}

static h5set_params params(const char *name, const set_data *d, int gzip)
{
    return (h5set_params){.dir_fd = AT_FDCWD,
                          .name = name,
                          .nimages = K,
                          .npix = M,
                          .dtype = d->dtype,
                          .gzip = gzip,
                          .chunk_images = CHUNK,
                          .threads = 3,
                          .nzernike = J,
                          .noll_j = NOLL,
                          .zernike_units = "nm",
                          .ncolumns = NCOL,
                          .columns = COLS,
                          .nattrs = NATTR,
                          .attrs = ATTRS,
                          .resume_key = "run-1"};
}

/* Images first .. first + count - 1 of d. */
static int write_images(h5set *s, const set_data *d, long long first, int count, char *err,
                        size_t errlen)
{
    const void *cols[NCOL] = {&d->strehl[first], &d->draw[first], &d->backend[first]};
    h5set_rows rows = {.images = d->images + (size_t)first * NPIX * d->esize,
                       .zernike = &d->zernike[first * J],
                       .columns = cols};
    return h5set_write(s, first, count, &rows, err, errlen);
}

/* Give every image not yet written, in blocks of BLOCKS' sizes. */
static void write_missing(h5set *s, const set_data *d)
{
    char err[512] = "";
    const unsigned char *w = h5set_written(s);
    unsigned char given[K];
    memcpy(given, w, K);
    for (int k = 0, b = 0; k < K;) {
        if (given[k]) {
            ++k;
            continue;
        }
        int n = 0;
        while (k + n < K && !given[k + n] && n < BLOCKS[b % NBLOCKS])
            ++n;
        assert_int_equal(write_images(s, d, k, n, err, sizeof err), 0);
        k += n, ++b;
    }
}

static char *string_attr(hid_t obj, const char *key)
{
    hid_t a = H5Aopen(obj, key, H5P_DEFAULT), t = H5Tcopy(H5T_C_S1);
    assert_true(a >= 0);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    char *v = NULL;
    assert_true(H5Aread(a, t, &v) >= 0);
    char *out = strdup(v);
    H5free_memory(v);
    H5Tclose(t);
    H5Aclose(a);
    return out;
}

static double number_attr(hid_t obj, const char *key)
{
    double v = -1;
    hid_t a = H5Aopen(obj, key, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0);
    H5Aclose(a);
    return v;
}

static void check_dims(hid_t d, int rank, const hsize_t *want)
{
    hid_t sp = H5Dget_space(d);
    hsize_t dims[3];
    assert_int_equal(H5Sget_simple_extent_ndims(sp), rank);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    for (int i = 0; i < rank; ++i)
        assert_int_equal(dims[i], want[i]);
    H5Sclose(sp);
}

/* The images dataset: shape, type, chunks, filters and values bit for bit;
 * with gzip a smooth chunk is deflated, a random one stored unfiltered. */
static void check_images(hid_t f, const set_data *d, int gzip)
{
    hid_t img = H5Dopen2(f, "images", H5P_DEFAULT);
    assert_true(img >= 0);
    hsize_t dims[3] = {K, M, M}, chunk[3];
    check_dims(img, 3, dims);
    hid_t t = H5Dget_type(img), plist = H5Dget_create_plist(img);
    assert_int_equal(H5Tget_class(t), d->dtype == H5SET_FLOAT32 ? H5T_FLOAT : H5T_INTEGER);
    assert_int_equal(H5Tget_size(t), d->esize);
    assert_int_equal(H5Tget_order(t), H5T_ORDER_LE);
    if (d->dtype == H5SET_UINT16) assert_int_equal(H5Tget_sign(t), H5T_SGN_NONE);
    assert_int_equal(H5Pget_chunk(plist, 3, chunk), 3);
    assert_int_equal(chunk[0], CHUNK);
    assert_int_equal(chunk[1], M);
    assert_int_equal(chunk[2], M);
    assert_int_equal(H5Pget_nfilters(plist), gzip ? 2 : 0);
    if (gzip) {
        unsigned flags, level = 0;
        size_t n = 1;
        assert_int_equal(H5Pget_filter2(plist, 0, &flags, &n, &level, 0, NULL, NULL),
                         H5Z_FILTER_SHUFFLE);
        n = 1;
        assert_int_equal(H5Pget_filter2(plist, 1, &flags, &n, &level, 0, NULL, NULL),
                         H5Z_FILTER_DEFLATE);
        assert_int_equal(level, (unsigned)gzip);
        unsigned mask = 9;
        hsize_t off[3] = {0, 0, 0}, size = 0;
        haddr_t addr;
        assert_true(H5Dget_chunk_info_by_coord(img, off, &mask, &addr, &size) >= 0);
        assert_int_equal(mask, 0);
        assert_true(size < (hsize_t)CHUNK * NPIX * d->esize);
        off[0] = 24;
        assert_true(H5Dget_chunk_info_by_coord(img, off, &mask, &addr, &size) >= 0);
        assert_int_equal(mask, 3);
    }
    unsigned char *back = calloc(K * NPIX, d->esize);
    hid_t mt = d->dtype == H5SET_FLOAT32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_UINT16;
    assert_true(H5Dread(img, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0);
    assert_memory_equal(back, d->images, K * NPIX * d->esize);
    free(back);
    H5Pclose(plist);
    H5Tclose(t);
    H5Dclose(img);
}

static void check_labels(hid_t f, const set_data *d)
{
    hid_t z = H5Dopen2(f, "labels/zernike", H5P_DEFAULT);
    hsize_t dz[2] = {K, J}, dk[1] = {K};
    check_dims(z, 2, dz);
    double zb[K * J], sb[K];
    int64_t db[K];
    int noll[J];
    assert_true(H5Dread(z, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, zb) >= 0);
    assert_memory_equal(zb, d->zernike, sizeof zb);
    hid_t a = H5Aopen(z, "noll_j", H5P_DEFAULT);
    assert_true(H5Aread(a, H5T_NATIVE_INT, noll) >= 0);
    assert_memory_equal(noll, NOLL, sizeof noll);
    H5Aclose(a);
    char *u = string_attr(z, "units");
    assert_string_equal(u, "nm");
    free(u);
    H5Dclose(z);
    hid_t s = H5Dopen2(f, "labels/strehl", H5P_DEFAULT),
          dr = H5Dopen2(f, "labels/draw", H5P_DEFAULT);
    check_dims(s, 1, dk);
    assert_true(H5Dread(s, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, sb) >= 0);
    assert_memory_equal(sb, d->strehl, sizeof sb);
    u = string_attr(s, "convention");
    assert_string_equal(u, "Marechal");
    free(u);
    assert_true(H5Dread(dr, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, db) >= 0);
    assert_memory_equal(db, d->draw, sizeof db);
    H5Dclose(s);
    H5Dclose(dr);
    hid_t b = H5Dopen2(f, "labels/backend", H5P_DEFAULT), t = H5Dget_type(b);
    assert_int_equal(H5Tget_class(t), H5T_STRING);
    assert_int_equal(H5Tget_size(t), 8);
    char sbuf[K][8];
    assert_true(H5Dread(b, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, sbuf) >= 0);
    for (int k = 0; k < K; ++k)
        assert_true(strncmp(sbuf[k], d->backend[k], 8) == 0);
    H5Tclose(t);
    H5Dclose(b);
}

static void check_attrs(hid_t f, int gzip)
{
    char *v = string_attr(f, "psfsim_format");
    assert_string_equal(v, "psfsim image set");
    free(v);
    v = string_attr(f, "compression");
    assert_string_equal(v, gzip ? "gzip" : "none");
    free(v);
    v = string_attr(f, "psfsim_version");
    assert_string_equal(v, "0.1.0");
    free(v);
    assert_true(number_attr(f, "complete") == 1);
    assert_true(number_attr(f, "nimages") == K);
    assert_true(number_attr(f, "chunk_images") == CHUNK);
    assert_true(number_attr(f, "pixel_scale_arcsec") == 0.0125);
    hid_t a = H5Aopen(f, "seed", H5P_DEFAULT);
    int64_t seed = 0;
    assert_true(H5Aread(a, H5T_NATIVE_INT64, &seed) >= 0);
    assert_true(seed == 1234567890123LL);
    H5Aclose(a);
    hid_t img = H5Dopen2(f, "images", H5P_DEFAULT);
    v = string_attr(img, "units");
    assert_string_equal(v, "peak = 1");
    free(v);
    H5Dclose(img);
    unsigned char w[K], fl = 9;
    hid_t wd = H5Dopen2(f, "written", H5P_DEFAULT), fd = H5Dopen2(f, "flushing", H5P_DEFAULT);
    assert_true(H5Dread(wd, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, w) >= 0);
    assert_true(H5Dread(fd, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, &fl) >= 0);
    for (int k = 0; k < K; ++k)
        assert_int_equal(w[k], 1);
    assert_int_equal(fl, 0);
    H5Dclose(wd);
    H5Dclose(fd);
}

/* path holds d, complete, and nothing else is in its directory. */
static void check_file(const char *dir, const char *path, const set_data *d, int gzip)
{
    assert_int_equal(tu_count_entries(dir), 1);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    check_images(f, d, gzip);
    check_labels(f, d);
    check_attrs(f, gzip);
    H5Fclose(f);
}

static void round_trip(h5set_dtype dtype, int gzip)
{
    char *dir = tu_mkdtemp("h5");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/set.h5", dir);
    static set_data d;
    make_data(&d, dtype);
    h5set_params p = params(path, &d, gzip);
    h5set_info info;
    h5set *s = h5set_open(&p, H5SET_NEW, &info, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(info.resumed, 0);
    assert_string_equal(info.note, "");
    assert_int_equal(h5set_chunk_images(s), CHUNK);
    write_missing(s, &d);
    assert_int_equal(access(path, F_OK), -1); /* only the temp file until complete */
    assert_int_equal(h5set_close(s, H5SET_COMPLETE, err, sizeof err), 0);
    check_file(dir, path, &d, gzip);
    tu_rmtree(dir);
    free(dir);
}

static void test_float32(void **state)
{
    (void)state;
    round_trip(H5SET_FLOAT32, 0);
}

static void test_float32_gzip(void **state)
{
    (void)state;
    round_trip(H5SET_FLOAT32, 6);
}

static void test_uint16(void **state)
{
    (void)state;
    round_trip(H5SET_UINT16, 0);
}

static void test_uint16_gzip(void **state)
{
    (void)state;
    round_trip(H5SET_UINT16, 1);
}

/* gzip's runs (hdf5_chunks.c: each thread deflates a run of consecutive
 * chunks into one buffer): one image a chunk, all K images in one write, 2
 * threads (runs of 18 and 19 chunks), smooth and random images alternating
 * so that chunks stored unfiltered fall between deflated ones in a run;
 * every chunk's filter mask (0: deflated, smaller; 3: stored as given) and
 * the values bit for bit. */
static void test_gzip_runs(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("h5");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/runs.h5", dir);
    static set_data src, d;
    make_data(&src, H5SET_FLOAT32);
    d = src;
    int smooth[K];
    for (int k = 0, a = 0, b = 16; k < K; ++k) { /* images 0..15 of src are smooth */
        smooth[k] = k % 2 == 0 && a < 16;
        int from = smooth[k] ? a++ : b++;
        memcpy(d.images + (size_t)k * NPIX * 4, src.images + (size_t)from * NPIX * 4, NPIX * 4);
    }
    h5set_params p = params(path, &d, 4);
    p.chunk_images = 1;
    p.threads = 2;
    h5set *s = h5set_open(&p, H5SET_NEW, NULL, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(write_images(s, &d, 0, K, err, sizeof err), 0);
    assert_int_equal(h5set_close(s, H5SET_COMPLETE, err, sizeof err), 0);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t img = H5Dopen2(f, "images", H5P_DEFAULT);
    assert_true(img >= 0);
    for (int k = 0; k < K; ++k) {
        unsigned mask = 9;
        hsize_t off[3] = {(hsize_t)k, 0, 0}, size = 0;
        haddr_t addr;
        assert_true(H5Dget_chunk_info_by_coord(img, off, &mask, &addr, &size) >= 0);
        assert_int_equal(mask, smooth[k] ? 0 : 3);
        if (smooth[k])
            assert_true(size < NPIX * 4);
        else
            assert_int_equal(size, NPIX * 4);
    }
    unsigned char *back = calloc(K * NPIX, 4);
    assert_true(H5Dread(img, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0);
    assert_memory_equal(back, d.images, K * NPIX * 4);
    free(back);
    H5Dclose(img);
    H5Fclose(f);
    tu_rmtree(dir);
    free(dir);
}

/* A set with no labels, for the tests of names and chunks. */
static h5set_params bare(const char *name, int npix, long long nimages, h5set_dtype dtype)
{
    return (h5set_params){
        .dir_fd = AT_FDCWD, .name = name, .nimages = nimages, .npix = npix, .dtype = dtype};
}

static void test_auto_chunk(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("h5");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/a.h5", dir);
    const struct {
        int npix;
        long long nimages;
        h5set_dtype dtype;
        int want;
    } cases[] = {{16, 37, H5SET_FLOAT32, 37},   /* 1 KiB images: all 37 in 64 KiB */
                 {16, 5000, H5SET_FLOAT32, 64}, /* 64 KiB / 1 KiB */
                 {64, 100, H5SET_FLOAT32, 4},   /* 16 KiB images */
                 {64, 100, H5SET_UINT16, 8},    /* 8 KiB images */
                 {128, 5, H5SET_UINT16, 2},     /* 32 KiB images */
                 {128, 5, H5SET_FLOAT32, 1},    /* 64 KiB images: one a chunk */
                 {600, 2, H5SET_FLOAT32, 1}};   /* an image over 64 KiB: one a chunk */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        h5set_params p = bare(path, cases[i].npix, cases[i].nimages, cases[i].dtype);
        h5set *s = h5set_open(&p, H5SET_NEW, NULL, err, sizeof err);
        assert_non_null(s);
        assert_int_equal(h5set_chunk_images(s), cases[i].want);
        assert_int_equal(h5set_close(s, H5SET_DISCARD, err, sizeof err), 0);
        assert_int_equal(tu_count_entries(dir), 0);
    }
    tu_rmtree(dir);
    free(dir);
}

/* A temp file holding the first n images of d (then closed H5SET_KEEP). */
static void make_kept(const char *path, const set_data *d, int gzip, const char *key, int n)
{
    char err[512] = "";
    h5set_params p = params(path, d, gzip);
    p.resume_key = key;
    h5set *s = h5set_open(&p, H5SET_NEW, NULL, err, sizeof err);
    assert_non_null(s);
    for (int k = 0, b = 0; k < n; k += BLOCKS[b++ % NBLOCKS]) {
        int c = BLOCKS[b % NBLOCKS] < n - k ? BLOCKS[b % NBLOCKS] : n - k;
        assert_int_equal(write_images(s, d, k, c, err, sizeof err), 0);
    }
    assert_int_equal(h5set_close(s, H5SET_KEEP, err, sizeof err), 0);
}

/* Resume path's temp file (expecting resumed and nwritten, or a note
 * containing note), finish the set and check it. */
static void resume_and_finish(const char *dir, const char *path, const set_data *d, int gzip,
                              int resumed, long long nwritten, const char *note)
{
    char err[512] = "";
    h5set_params p = params(path, d, gzip);
    h5set_info info;
    h5set *s = h5set_open(&p, H5SET_RESUME, &info, err, sizeof err);
    if (!s) fail_msg("%s", err);
    assert_int_equal(info.resumed, resumed);
    if (resumed) {
        assert_int_equal(info.nwritten, nwritten);
        const unsigned char *w = h5set_written(s);
        for (int k = 0; k < K; ++k)
            assert_int_equal(w[k], k < nwritten);
    }
    if (note && !strstr(info.note, note)) fail_msg("note \"%s\" lacks \"%s\"", info.note, note);
    if (!note) assert_string_equal(info.note, "");
    write_missing(s, d);
    assert_int_equal(h5set_close(s, H5SET_COMPLETE, err, sizeof err), 0);
    check_file(dir, path, d, gzip);
}

static void test_keep_and_resume(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("h5");
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/set.h5", dir);
    assert_int_equal(h5set_temp_name(path, tmp, sizeof tmp), 0);
    assert_string_equal(tmp, tu_format("%s/.set.h5.part", dir));
    static set_data d;
    for (int gzip = 0; gzip <= 4; gzip += 4) {
        make_data(&d, gzip ? H5SET_UINT16 : H5SET_FLOAT32);
        make_kept(path, &d, gzip, "run-1", 17); /* chunks 0 and 1 whole, image 16 dropped */
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(access(tmp, F_OK), 0);
        resume_and_finish(dir, path, &d, gzip, 1, 16, NULL);
        unlink(path);
    }
    tu_rmtree(dir);
    free(dir);
}

/* A child opens the set and writes it block by block: it tells the parent
 * when the set is open and after each block, and waits for a go before
 * each block. The parent lets it start block n (n = 0: kills it while it
 * opens the set), waits delay_us (a block takes about 100 us: the kill
 * lands anywhere in it, the flush included) and kills it with SIGKILL. */
static void kill_child(const char *path, const set_data *d, int gzip, int n, int delay_us)
{
    int up[2], down[2];
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[512], c;
        h5set_params p = params(path, d, gzip);
        h5set *s = h5set_open(&p, H5SET_NEW, NULL, err, sizeof err);
        if (n > 0 && write(up[1], "o", 1) != 1) _exit(4);
        for (int k = 0, b = 0; s && k < K; k += BLOCKS[b++]) {
            if (read(down[0], &c, 1) != 1) _exit(4);
            if (write_images(s, d, k, BLOCKS[b], err, sizeof err)) _exit(3);
            if (write(up[1], "x", 1) != 1) _exit(4);
        }
        for (;;)
            pause();
    }
    char c;
    for (int i = 0; i < n; ++i) { /* n = 0: killed while it opens the set */
        assert_int_equal(read(up[0], &c, 1), 1);
        assert_int_equal(write(down[1], "g", 1), 1);
    }
    usleep((useconds_t)delay_us);
    kill(pid, SIGKILL);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    close(up[0]), close(up[1]), close(down[0]), close(down[1]);
}

static void test_kill_and_resume(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("h5");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/set.h5", dir);
    static set_data d;
    make_data(&d, H5SET_FLOAT32);
    int cum[NBLOCKS], resumed = 0, rebuilt = 0;
    for (int b = 0, sum = 0; b < NBLOCKS; ++b)
        cum[b] = sum += BLOCKS[b];
    srand(12345);
    for (int it = 0; it < 120; ++it) {
        int gzip = it % 2 ? 3 : 0, n = it / 2 % (NBLOCKS + 1);
        kill_child(path, &d, gzip, n, rand() % 400);
        assert_int_equal(access(path, F_OK), -1);
        h5set_params p = params(path, &d, gzip);
        h5set_info info;
        h5set *s = h5set_open(&p, H5SET_RESUME, &info, err, sizeof err);
        if (!s) fail_msg("%s", err);
        if (info.resumed) {
            /* Every chunk whole after n - 1 blocks is flagged (the child said so). */
            const unsigned char *w = h5set_written(s);
            for (int k = 0; k < K; ++k) {
                int q = k / CHUNK, end = (q + 1) * CHUNK < K ? (q + 1) * CHUNK : K;
                if (n > 1 && end <= cum[n - 2]) assert_int_equal(w[k], 1);
                if (n == 0) assert_int_equal(w[k], 0);
            }
            ++resumed;
        } else {
            /* Killed in a flush (or while it made the file): never a
             * reason that says the file is another's or damaged. */
            if (strstr(info.note, "another run") || strstr(info.note, "other parameters") ||
                strstr(info.note, "damaged") || strstr(info.note, "cannot be read"))
                fail_msg("killed in block %d: %s", n, info.note);
            ++rebuilt;
        }
        write_missing(s, &d);
        assert_int_equal(h5set_close(s, H5SET_COMPLETE, err, sizeof err), 0);
        check_file(dir, path, &d, gzip);
        unlink(path);
    }
    print_message("killed 120 writers: %d resumed, %d started afresh\n", resumed, rebuilt);
    assert_true(resumed > 0);
    tu_rmtree(dir);
    free(dir);
}

/* Set dataset name (uint8) of file path at index k (-1: scalar) to v. */
static void poke(const char *path, const char *name, int k, unsigned char v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT), d = H5Dopen2(f, name, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t fs = H5Dget_space(d), ms = H5Screate(H5S_SCALAR);
    if (k >= 0) {
        hsize_t at = (hsize_t)k;
        H5Sselect_elements(fs, H5S_SELECT_SET, 1, &at);
    }
    assert_true(H5Dwrite(d, H5T_NATIVE_UCHAR, ms, fs, H5P_DEFAULT, &v) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
}

static void test_untrusted_temp(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("h5");
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/set.h5", dir);
    h5set_temp_name(path, tmp, sizeof tmp);
    static set_data d;
    make_data(&d, H5SET_FLOAT32);
    const char *cannot = "the temp file .set.h5.part was not resumed: HDF5 cannot open it";
    /* Not HDF5 at all. */
    assert_int_equal(tu_write_file(tmp, "not an HDF5 file\n"), 0);
    resume_and_finish(dir, path, &d, 4, 0, 0, cannot);
    unlink(path);
    /* Cut short (a disk full, say): HDF5 sees its end of file is gone. */
    make_kept(path, &d, 4, "run-1", 30);
    struct stat st;
    assert_int_equal(stat(tmp, &st), 0);
    assert_int_equal(truncate(tmp, st.st_size / 2), 0);
    resume_and_finish(dir, path, &d, 4, 0, 0, cannot);
    unlink(path);
    /* Killed while H5Fflush wrote metadata. */
    make_kept(path, &d, 4, "run-1", 30);
    poke(tmp, "flushing", -1, 1);
    resume_and_finish(dir, path, &d, 4, 0, 0, "interrupted while HDF5 wrote its metadata");
    unlink(path);
    /* Another run's, or made with other parameters. */
    make_kept(path, &d, 4, "run-0", 30);
    resume_and_finish(dir, path, &d, 4, 0, 0, "made by another run (resume_key differs)");
    unlink(path);
    make_kept(path, &d, 0, "run-1", 30);
    resume_and_finish(dir, path, &d, 4, 0, 0, "made with other parameters");
    unlink(path);
    /* Damaged flags; a chunk flagged in part is taken as not written. */
    make_kept(path, &d, 0, "run-1", 30);
    poke(tmp, "written", 3, 7);
    resume_and_finish(dir, path, &d, 0, 0, 0, "its written flags are damaged");
    unlink(path);
    make_kept(path, &d, 0, "run-1", 30); /* chunks 0..2 whole: 24 images */
    poke(tmp, "written", 20, 0);         /* chunk 2 in part: not written */
    resume_and_finish(dir, path, &d, 0, 1, 16, NULL);
    unlink(path);
    /* H5SET_NEW removes a temp file left behind. */
    make_kept(path, &d, 0, "run-1", 30);
    char err[512];
    h5set_params p = params(path, &d, 0);
    h5set_info info;
    h5set *s = h5set_open(&p, H5SET_NEW, &info, err, sizeof err);
    assert_non_null(s);
    assert_string_equal(info.note, "an earlier temp file .set.h5.part was removed");
    assert_int_equal(info.nwritten, 0);
    assert_int_equal(h5set_close(s, H5SET_DISCARD, err, sizeof err), 0);
    assert_int_equal(tu_count_entries(dir), 0);
    tu_rmtree(dir);
    free(dir);
}

static void test_locked_and_link(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("h5");
    char path[4096], tmp[4200], victim[4200], err[512] = "";
    snprintf(path, sizeof path, "%s/set.h5", dir);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    h5set_temp_name(path, tmp, sizeof tmp);
    static set_data d;
    make_data(&d, H5SET_FLOAT32);
    /* A temp file in use is neither resumed nor removed. */
    h5set_params p = params(path, &d, 0);
    h5set *a = h5set_open(&p, H5SET_NEW, NULL, err, sizeof err);
    assert_non_null(a);
    for (int mode = H5SET_NEW; mode <= H5SET_RESUME; ++mode) {
        assert_null(h5set_open(&p, (h5set_mode)mode, NULL, err, sizeof err));
        assert_string_equal(err, tu_format("cannot write %s: .set.h5.part is locked: another "
                                           "run is writing it",
                                           path));
    }
    assert_int_equal(h5set_close(a, H5SET_DISCARD, err, sizeof err), 0);
    assert_int_equal(tu_count_entries(dir), 0);
    /* A symbolic link at the temp name is never followed. */
    for (int mode = H5SET_NEW; mode <= H5SET_RESUME; ++mode) {
        assert_int_equal(tu_write_file(victim, "keep me\n"), 0);
        assert_int_equal(symlink(victim, tmp), 0);
        h5set_info info;
        h5set *s = h5set_open(&p, (h5set_mode)mode, &info, err, sizeof err);
        assert_non_null(s);
        assert_string_equal(info.note, mode == H5SET_NEW
                                           ? "an earlier temp file .set.h5.part was removed"
                                           : "the temp file .set.h5.part was not resumed: it is "
                                             "a symbolic link; starting afresh");
        write_missing(s, &d);
        assert_int_equal(h5set_close(s, H5SET_COMPLETE, err, sizeof err), 0);
        struct stat st; /* the link's target is untouched */
        assert_int_equal(stat(victim, &st), 0);
        assert_int_equal(st.st_size, 8);
        unlink(victim);
        check_file(dir, path, &d, 0);
        unlink(path);
    }
    tu_rmtree(dir);
    free(dir);
}

static void test_incomplete(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("h5");
    char path[4096], tmp[4200], err[512] = "";
    snprintf(path, sizeof path, "%s/set.h5", dir);
    h5set_temp_name(path, tmp, sizeof tmp);
    static set_data d;
    make_data(&d, H5SET_FLOAT32);
    h5set_params p = params(path, &d, 2);
    h5set *s = h5set_open(&p, H5SET_NEW, NULL, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(write_images(s, &d, 0, 5, err, sizeof err), 0);
    /* Refused blocks change nothing. */
    assert_int_equal(write_images(s, &d, 3, 4, err, sizeof err), -1);
    assert_string_equal(err, tu_format("cannot write %s: image 3 was given before", path));
    assert_int_equal(write_images(s, &d, 30, 8, err, sizeof err), -1);
    assert_string_equal(err, tu_format("cannot write %s: images 30..37: the images are outside "
                                       "the set",
                                       path));
    const char *saved = d.backend[6];
    d.backend[6] = "too long a name";
    assert_int_equal(write_images(s, &d, 5, 12, err, sizeof err), -1);
    assert_string_equal(err, tu_format("cannot write %s: label backend of image 6: longer than "
                                       "its width",
                                       path));
    d.backend[6] = saved;
    assert_int_equal(write_images(s, &d, 5, 12, err, sizeof err), 0);
    assert_int_equal(h5set_close(s, H5SET_COMPLETE, err, sizeof err), -1);
    assert_string_equal(err, tu_format("cannot write %s: not every image was given; "
                                       ".set.h5.part is kept (16 of 37 written)",
                                       path));
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(access(tmp, F_OK), 0);
    resume_and_finish(dir, path, &d, 2, 1, 16, NULL);
    tu_rmtree(dir);
    free(dir);
}

/* A disk that fills up (RLIMIT_FSIZE, in a child): the write fails with
 * the system's reason, the set refuses more blocks, closing it fails, and
 * the file it leaves is not trusted. */
static void test_write_error(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("h5");
    char path[4096];
    snprintf(path, sizeof path, "%s/set.h5", dir);
    static set_data d;
    make_data(&d, H5SET_FLOAT32);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[512] = "", want[4200];
        signal(SIGXFSZ, SIG_IGN);
        h5set_params p = params(path, &d, 4);
        h5set *s = h5set_open(&p, H5SET_NEW, NULL, err, sizeof err);
        char tmp[4200];
        struct stat at;
        h5set_temp_name(path, tmp, sizeof tmp);
        if (!s || stat(tmp, &at)) _exit(2);
        /* Room for the two smooth chunks (deflated), not a random one. */
        struct rlimit lim = {.rlim_cur = (rlim_t)at.st_size + 6000, .rlim_max = RLIM_INFINITY};
        if (setrlimit(RLIMIT_FSIZE, &lim)) _exit(2);
        int k = 0;
        while (k < K && !write_images(s, &d, k, 8, err, sizeof err))
            k += 8;
        snprintf(want, sizeof want,
                 "cannot write %s: cannot write images (HDF5: file write "
                 "failed: File too large)",
                 path);
        if (k >= K || strcmp(err, want)) {
            fprintf(stderr, "%s\n", err);
            _exit(3);
        }
        if (!write_images(s, &d, k + 8, 1, err, sizeof err) ||
            !strstr(err, "an earlier write failed"))
            _exit(4);
        /* The flush of the kept file fails too: it must not be resumed. */
        snprintf(want, sizeof want,
                 "cannot write %s: cannot flush (HDF5: unable to extend file "
                 "properly: File too large)",
                 path);
        if (h5set_close(s, H5SET_KEEP, err, sizeof err) != -1 || strcmp(err, want)) {
            fprintf(stderr, "%s\n", err);
            _exit(5);
        }
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    resume_and_finish(dir, path, &d, 4, 0, 0, "the temp file .set.h5.part was not resumed: ");
    tu_rmtree(dir);
    free(dir);
}

static void expect_refused(h5set_params p, const char *why)
{
    char err[512] = "";
    assert_null(h5set_open(&p, H5SET_NEW, NULL, err, sizeof err));
    const char *msg = strstr(err, ": ");
    if (!msg || strcmp(msg + 2, why)) fail_msg("\"%s\" is not \"...: %s\"", err, why);
}

static void test_bad_params(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("h5");
    char path[4096];
    snprintf(path, sizeof path, "%s/set.h5", dir);
    static set_data d;
    make_data(&d, H5SET_FLOAT32);
    h5set_params p = params(path, &d, 0);
    h5set_column cols[2] = {COLS[0], COLS[0]};
    h5set_attr at = ATTRS[0];
    int j0[J] = {4, 0, 6, 11};
    h5set_params q;
    q = p, q.nimages = 0, expect_refused(q, "nimages 0 < 1");
    q = p, q.npix = 0, expect_refused(q, "npix 0 < 1");
    q = p, q.gzip = 10, expect_refused(q, "gzip level 10 is not 0..9");
    q = p, q.chunk_images = K + 1,
    expect_refused(q, "chunk_images 38 is not 0..nimages (a chunk < 4 GiB)");
    q = p, q.noll_j = j0, expect_refused(q, "Zernike term 1: Noll j 0 < 1");
    q = p, q.columns = cols, q.ncolumns = 2,
    expect_refused(q, "label column strehl is given twice");
    cols[1].name = "zernike", q.columns = cols,
    expect_refused(q, "label column 1: the name \"zernike\" is not 1 to 63 of A-Z a-z 0-9 _ "
                      "(nor zernike)");
    cols[1] = COLS[2], cols[1].width = 0, q.columns = cols,
    expect_refused(q, "label column backend: width 0 is not 1..255");
    at.key = "complete", q = p, q.attrs = &at, q.nattrs = 1,
    expect_refused(q, "attribute complete is psfsim's own");
    at.object = "labels/none", at.key = "x", q.attrs = &at,
    expect_refused(q, "attribute x: no object labels/none in the file");
    q = p, q.name = tu_format("%s/", dir), q.shown = "the set",
    expect_refused(q, "the name is not a file name");
    q = p, q.name = tu_format("%s/none/set.h5", dir),
    expect_refused(q, "cannot open its directory: No such file or directory");
    assert_int_equal(tu_count_entries(dir), 0);
    tu_rmtree(dir);
    free(dir);
}

static void test_dir_fd(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("h5");
    char sub[4096], path[4200], err[512] = "";
    snprintf(sub, sizeof sub, "%s/sub", dir);
    snprintf(path, sizeof path, "%s/x.h5", sub);
    assert_int_equal(mkdir(sub, 0777), 0);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    static set_data d;
    make_data(&d, H5SET_UINT16);
    h5set_params p = params("sub/x.h5", &d, 0);
    p.dir_fd = fd;
    p.shown = "x.h5 (shown)";
    h5set *s = h5set_open(&p, H5SET_NEW, NULL, err, sizeof err);
    assert_non_null(s);
    close(fd); /* the set keeps its own descriptor of sub/ */
    write_missing(s, &d);
    assert_int_equal(h5set_close(s, H5SET_COMPLETE, err, sizeof err), 0);
    check_file(sub, path, &d, 0);
    tu_rmtree(dir);
    free(dir);
}

/* Run in a fresh process (the module is loaded once per process) with
 * $PSFSIM_HDF5_MODULE naming a module of another ABI: it is refused. */
static int stale_child(void)
{
    char err[1024] = "";
    if (hdf5_module_load(err, sizeof err) == 0 || !strstr(err, "is of another psfsim version")) {
        fprintf(stderr, "stale module not refused: %s\n", err);
        return 1;
    }
    h5set_params p = bare("x.h5", 4, 1, H5SET_FLOAT32);
    if (h5set_open(&p, H5SET_NEW, NULL, err, sizeof err) ||
        strncmp(err, "cannot write x.h5: cannot load HDF5 support: ", 45) ||
        access("x.h5", F_OK) == 0 || h5set_thread_safe() != 0) {
        fprintf(stderr, "h5set_open with a stale module: %s\n", err);
        return 1;
    }
    return 0;
}

static void test_module_abi(void **state)
{
    (void)state;
    char err[1024] = "", path[MODULE_PATH_MAX];
    unsetenv("PSFSIM_HDF5_MODULE");
    const char *sym[] = {HDF5_MODULE_ENTRY};
    void *entry = NULL;
    module_status st;
    assert_non_null(module_load(HDF5_MODULE_NAME, "PSFSIM_HDF5_MODULE", sym, &entry, 1, &st, path,
                                sizeof path, err, sizeof err));
    const hdf5_module_ops *ops = entry;
    assert_int_equal(ops->abi, HDF5_MODULE_ABI);
    assert_int_equal(ops->size, sizeof *ops);
    assert_int_equal(hdf5_module_load(err, sizeof err), 0);
    int ts = h5set_thread_safe();
    assert_true(ts == 0 || ts == 1);
    /* The library's version, as libhdf5 gives it. */
    char version[64], want[64];
    unsigned maj, min, rel;
    assert_true(H5get_libversion(&maj, &min, &rel) >= 0);
    snprintf(want, sizeof want, "%u.%u.%u", maj, min, rel);
    h5set_library_version(version, sizeof version);
    assert_string_equal(version, want);
    /* Only the table is exported. */
    const char *hidden[] = {"h5p_new"};
    assert_null(module_load(HDF5_MODULE_NAME, "PSFSIM_HDF5_MODULE", hidden, &entry, 1, &st, NULL, 0,
                            err, sizeof err));
    assert_int_equal(st, MODULE_NO_ENTRY);
    /* A module of another ABI, in a fresh process. */
    char *dir = tu_mkdtemp("h5");
    char *argv[] = {"test_hdf5_io", "--stale-child", NULL};
    setenv("PSFSIM_HDF5_MODULE", PSFSIM_HDF5_STALE, 1);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, dir);
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, g_self, &fa, NULL, argv, environ), 0);
    unsetenv("PSFSIM_HDF5_MODULE");
    posix_spawn_file_actions_destroy(&fa);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(tu_count_entries(dir), 0);
    tu_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--stale-child")) return stale_child();
    static char self[PATH_MAX];
    if (strchr(argv[0], '/') && realpath(argv[0], self)) g_self = self;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float32),         cmocka_unit_test(test_float32_gzip),
        cmocka_unit_test(test_uint16),          cmocka_unit_test(test_uint16_gzip),
        cmocka_unit_test(test_auto_chunk),      cmocka_unit_test(test_keep_and_resume),
        cmocka_unit_test(test_kill_and_resume), cmocka_unit_test(test_untrusted_temp),
        cmocka_unit_test(test_locked_and_link), cmocka_unit_test(test_incomplete),
        cmocka_unit_test(test_write_error),     cmocka_unit_test(test_bad_params),
        cmocka_unit_test(test_dir_fd),          cmocka_unit_test(test_module_abi),
        cmocka_unit_test(test_gzip_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
