/* SPDX-License-Identifier: BSD-3-Clause */
/* hdf5_io's extra image datasets (h5set_params.extra: the oversampled and
 * noisy images of detector.write = "both" and detector.noise), read back
 * with libhdf5 itself: K = 29 images of 8 x 8 float32 with an "oversampled"
 * dataset of 24 x 24 float32 and a "noisy" one of 8 x 8 uint16, given in
 * blocks of uneven size; shapes, types, chunks (c images in every dataset),
 * filters and values bit for bit, with and without gzip; a set closed
 * unfinished keeps the whole chunks of every dataset and its resume equals
 * the uninterrupted content; a temp file made with other extra datasets is
 * not resumed; the automatic chunk follows the largest image; bad names
 * and missing images are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/formats/h5set.h"
#include "tests/support/testutil.h"

enum { K = 29, M = 8, S = 3, OM = M * S, CHUNK = 4 };
static const int BLOCKS[] = {3, 7, 1, 5, 6};
enum { NBLOCKS = sizeof BLOCKS / sizeof *BLOCKS };

typedef struct {
    float images[K * M * M];
    float over[K * OM * OM];
    uint16_t noisy[K * M * M];
} set_data;

/* Random bits for a third of the images (stored unfiltered with gzip), a
 * smooth ramp for the rest (deflated). */
static void make_data(set_data *d)
{
    uint32_t x = 88172645u;
    for (int k = 0; k < K; ++k) {
        for (int i = 0; i < OM * OM; ++i) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            float f = (float)(k + 1) / (1.0f + (float)i);
            if (k % 3 == 2) memcpy(&f, &x, 4);
            d->over[k * OM * OM + i] = f;
            if (i < M * M) {
                d->images[k * M * M + i] = (float)k + 0.25f * (float)i;
                d->noisy[k * M * M + i] = (uint16_t)(k % 3 == 2 ? x : (uint32_t)(k * 100 + i));
            }
        }
    }
}

static const h5set_images EXTRA[2] = {{"oversampled", OM, H5SET_FLOAT32},
                                      {"noisy", M, H5SET_UINT16}};

static h5set_params params(const char *path, int gzip)
{
    return (h5set_params){.dir_fd = AT_FDCWD,
                          .name = path,
                          .nimages = K,
                          .npix = M,
                          .dtype = H5SET_FLOAT32,
                          .gzip = gzip,
                          .chunk_images = CHUNK,
                          .threads = 2,
                          .resume_key = "run-1",
                          .nextra = 2,
                          .extra = EXTRA};
}

static int write_images(h5set *s, const set_data *d, long long first, int count)
{
    char err[512] = "";
    h5set_rows rows = {.images = &d->images[first * M * M],
                       .extra = {&d->over[first * OM * OM], &d->noisy[first * M * M]}};
    int rc = h5set_write(s, first, count, &rows, err, sizeof err);
    if (rc) print_message("%s\n", err);
    return rc;
}

/* Images first .. end - 1 not yet written, in blocks of BLOCKS' sizes. */
static void write_range(h5set *s, const set_data *d, int first, int end)
{
    const unsigned char *w = h5set_written(s);
    for (int k = first, b = 0; k < end;) {
        if (w[k]) {
            ++k;
            continue;
        }
        int n = 0;
        while (k + n < end && !w[k + n] && n < BLOCKS[b % NBLOCKS])
            ++n;
        assert_int_equal(write_images(s, d, k, n), 0);
        k += n, ++b;
    }
}

/* Dataset name of f: [K, npix, npix] of class cls and size esize, chunks
 * of CHUNK whole images, nfilters filters, values equal to want. */
static void check_dataset(hid_t f, const char *name, int npix, H5T_class_t cls, size_t esize,
                          int nfilters, const void *want)
{
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t sp = H5Dget_space(d), t = H5Dget_type(d), pl = H5Dget_create_plist(d);
    hsize_t dims[3], chunk[3];
    assert_int_equal(H5Sget_simple_extent_ndims(sp), 3);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    assert_int_equal(dims[0], K);
    assert_int_equal(dims[1], npix);
    assert_int_equal(dims[2], npix);
    assert_int_equal(H5Tget_class(t), cls);
    assert_int_equal(H5Tget_size(t), esize);
    assert_int_equal(H5Tget_order(t), H5T_ORDER_LE);
    assert_int_equal(H5Pget_chunk(pl, 3, chunk), 3);
    assert_int_equal(chunk[0], CHUNK);
    assert_int_equal(chunk[1], npix);
    assert_int_equal(chunk[2], npix);
    assert_int_equal(H5Pget_nfilters(pl), nfilters);
    size_t bytes = (size_t)K * npix * npix * esize;
    unsigned char *back = malloc(bytes);
    hid_t mt = cls == H5T_FLOAT ? H5T_NATIVE_FLOAT : H5T_NATIVE_UINT16;
    assert_true(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0);
    assert_memory_equal(back, want, bytes);
    free(back);
    H5Pclose(pl);
    H5Tclose(t);
    H5Sclose(sp);
    H5Dclose(d);
}

static void check_file(const char *path, const set_data *d, int gzip)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    int nf = gzip ? 2 : 0;
    check_dataset(f, "images", M, H5T_FLOAT, 4, nf, d->images);
    check_dataset(f, "oversampled", OM, H5T_FLOAT, 4, nf, d->over);
    check_dataset(f, "noisy", M, H5T_INTEGER, 2, nf, d->noisy);
    unsigned char w[K];
    hid_t wd = H5Dopen2(f, "written", H5P_DEFAULT);
    assert_true(H5Dread(wd, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, w) >= 0);
    for (int k = 0; k < K; ++k)
        assert_int_equal(w[k], 1);
    H5Dclose(wd);
    H5Fclose(f);
}

/* Written at once, and kept after 13 images (chunks 0..2 whole: 12 held),
 * resumed and finished: the same content either way. */
static void test_extra_round_trip_and_resume(void **state)
{
    (void)state;
    static set_data d;
    make_data(&d);
    char *dir = tu_mkdtemp("h5x");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/set.h5", dir);
    for (int gzip = 0; gzip <= 5; gzip += 5) {
        h5set_params p = params(path, gzip);
        h5set *s = h5set_open(&p, H5SET_NEW, NULL, err, sizeof err);
        if (!s) fail_msg("%s", err);
        assert_int_equal(h5set_chunk_images(s), CHUNK);
        write_range(s, &d, 0, K);
        assert_int_equal(h5set_close(s, H5SET_COMPLETE, err, sizeof err), 0);
        check_file(path, &d, gzip);
        unlink(path);

        s = h5set_open(&p, H5SET_NEW, NULL, err, sizeof err);
        assert_non_null(s);
        write_range(s, &d, 0, 13);
        assert_int_equal(h5set_close(s, H5SET_KEEP, err, sizeof err), 0);
        h5set_info info;
        s = h5set_open(&p, H5SET_RESUME, &info, err, sizeof err);
        if (!s) fail_msg("%s", err);
        assert_int_equal(info.resumed, 1);
        assert_int_equal(info.nwritten, 12);
        write_range(s, &d, 0, K);
        assert_int_equal(h5set_close(s, H5SET_COMPLETE, err, sizeof err), 0);
        check_file(path, &d, gzip);
        unlink(path);
    }
    tu_rmtree(dir);
    free(dir);
}

/* A temp file with both extra datasets is not resumed by a run with one. */
static void test_extra_other_layout(void **state)
{
    (void)state;
    static set_data d;
    make_data(&d);
    char *dir = tu_mkdtemp("h5x");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/set.h5", dir);
    h5set_params p = params(path, 0);
    h5set *s = h5set_open(&p, H5SET_NEW, NULL, err, sizeof err);
    assert_non_null(s);
    write_range(s, &d, 0, 9);
    assert_int_equal(h5set_close(s, H5SET_KEEP, err, sizeof err), 0);
    p.nextra = 1;
    h5set_info info;
    s = h5set_open(&p, H5SET_RESUME, &info, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(info.resumed, 0);
    assert_non_null(strstr(info.note, "other parameters"));
    assert_int_equal(h5set_close(s, H5SET_DISCARD, err, sizeof err), 0);
    tu_rmtree(dir);
    free(dir);
}

/* The automatic chunk: 64 KiB over the largest image of every dataset. */
static void test_extra_auto_chunk(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("h5x");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/a.h5", dir);
    h5set_images big = {"oversampled", 32, H5SET_FLOAT32}; /* 4 KiB images */
    h5set_params p = {.dir_fd = AT_FDCWD,
                      .name = path,
                      .nimages = 100,
                      .npix = 16,
                      .dtype = H5SET_FLOAT32,
                      .nextra = 1,
                      .extra = &big};
    h5set *s = h5set_open(&p, H5SET_NEW, NULL, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(h5set_chunk_images(s), 16); /* 64 KiB / 4 KiB, not images' 64 KiB / 1 KiB */
    assert_int_equal(h5set_close(s, H5SET_DISCARD, err, sizeof err), 0);
    tu_rmtree(dir);
    free(dir);
}

static void test_extra_refused(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("h5x");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/set.h5", dir);
    h5set_images bad[2] = {{"written", M, H5SET_FLOAT32}, {"noisy", M, H5SET_UINT16}};
    h5set_params p = params(path, 0);
    p.extra = bad;
    assert_null(h5set_open(&p, H5SET_NEW, NULL, err, sizeof err));
    assert_non_null(strstr(err, "image dataset 0: the name \"written\" is taken"));
    bad[0].name = "noisy";
    assert_null(h5set_open(&p, H5SET_NEW, NULL, err, sizeof err));
    assert_non_null(strstr(err, "image dataset 1: the name \"noisy\" is taken"));
    p = params(path, 0);
    p.nextra = 3;
    assert_null(h5set_open(&p, H5SET_NEW, NULL, err, sizeof err));
    assert_non_null(strstr(err, "extra image datasets: 3 is not 0..2"));
    assert_int_equal(tu_count_entries(dir), 0);
    /* A block without one extra dataset's images. */
    static set_data d;
    make_data(&d);
    p = params(path, 0);
    h5set *s = h5set_open(&p, H5SET_NEW, NULL, err, sizeof err);
    assert_non_null(s);
    h5set_rows rows = {.images = d.images, .extra = {d.over, NULL}};
    assert_int_equal(h5set_write(s, 0, 2, &rows, err, sizeof err), -1);
    assert_non_null(strstr(err, "an image dataset's images are missing"));
    assert_int_equal(h5set_close(s, H5SET_DISCARD, err, sizeof err), 0);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_extra_round_trip_and_resume),
        cmocka_unit_test(test_extra_other_layout),
        cmocka_unit_test(test_extra_auto_chunk),
        cmocka_unit_test(test_extra_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
