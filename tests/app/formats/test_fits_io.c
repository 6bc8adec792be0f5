/* SPDX-License-Identifier: BSD-3-Clause */
/* fits_io: float32 round trip, header keywords, orientation (array row 0 =
 * first stored row), atomic writes, and reading maps of other types. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fitsio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/formats/fits.h"
#include "tests/support/testutil.h"

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void truncate_to(const char *path, long n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *buf = malloc((size_t)n);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    f = fopen(path, "wb");
    assert_int_equal(fwrite(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    free(buf);
}

static void test_round_trip_and_keys(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("fits");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/psf_00.fits", dir);
    enum { N = 6 };
    float img[N * N], copy[N * N];
    for (int i = 0; i < N * N; ++i)
        img[i] = (float)(i * 0.1 + 1e-30 * i) - 1.5f;
    img[7] = 3.0e38f;
    img[8] = 1.0e-38f;
    img[9] = NAN;
    img[10] = -0.0f;
    img[11] = INFINITY;
    img[12] = -INFINITY;
    img[13] = 1e-45f; /* the smallest subnormal */
    memcpy(copy, img, sizeof img);
    char longstr[101];
    for (int i = 0; i < 100; ++i)
        longstr[i] = (char)('a' + i % 26);
    longstr[100] = '\0';
    const fits_kv kvs[] = {
        {.key = "WAVELEN", .type = FITS_KV_DOUBLE, .d = 5.5e-7, .comment = "wavelength [m]"},
        {.key = "PIXSCLLD", .type = FITS_KV_DOUBLE, .d = 1.0 / 3.0, .comment = "lambda/D per pix"},
        {.key = "NPIX", .type = FITS_KV_INT, .i = N, .comment = "N"},
        {.key = "BIGINT", .type = FITS_KV_INT, .i = 123456789012LL, .comment = NULL},
        {.key = "BACKEND", .type = FITS_KV_STRING, .s = "cpu", .comment = "computed by"},
        {.key = "STREHL", .type = FITS_KV_DOUBLE, .d = NAN, .comment = "not available"},
        {.key = "CRPIX1", .type = FITS_KV_DOUBLE, .d = N / 2 + 1, .comment = NULL},
        {.key = "LONGSTR", .type = FITS_KV_STRING, .s = longstr, .comment = "CONTINUE cards"},
    };
    const int nkv = (int)(sizeof kvs / sizeof kvs[0]);
    assert_int_equal(psf_fits_write_image(path, img, N, kvs, nkv, err, sizeof err), 0);
    assert_memory_equal(img, copy, sizeof img); /* input untouched */
    assert_int_equal(tu_count_entries(dir), 1);
    assert_int_equal(file_size(path) % 2880, 0);

    /* Pixels back, bit for bit (NaN as NaN). */
    float *data;
    int rows, cols;
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), 0);
    assert_int_equal(rows, N);
    assert_int_equal(cols, N);
    for (int i = 0; i < N * N; ++i) {
        if (isnan(img[i]))
            assert_true(isnan(data[i]));
        else
            assert_memory_equal(&data[i], &img[i], sizeof(float));
    }
    free(data);

    /* Keys through our readers and through cfitsio. */
    double d = 0;
    assert_int_equal(psf_fits_read_key_double(path, "WAVELEN", &d), 0);
    assert_true(d == 5.5e-7);
    assert_int_equal(psf_fits_read_key_double(path, "PIXSCLLD", &d), 0);
    assert_true(d == 1.0 / 3.0); /* enough digits to round-trip */
    assert_int_equal(psf_fits_read_key_double(path, "NPIX", &d), 0);
    assert_true(d == N);
    assert_int_equal(psf_fits_read_key_double(path, "CRPIX1", &d), 0);
    assert_true(d == 4.0);
    char s[80] = "";
    assert_int_equal(psf_fits_read_key_string(path, "BACKEND", s, sizeof s), 0);
    assert_string_equal(s, "cpu");
    char ls[200] = "";
    assert_int_equal(psf_fits_read_key_string(path, "LONGSTR", ls, sizeof ls), 0);
    assert_string_equal(ls, longstr);
    assert_int_equal(psf_fits_read_key_string(path, "LONGSTR", s, 11), 0); /* cut to fit */
    assert_string_equal(s, "abcdefghij");
    assert_int_equal(psf_fits_read_key_double(path, "NOSUCH", &d), -1);
    assert_int_equal(psf_fits_read_key_string(path, "NOSUCH", s, sizeof s), -1);
    assert_int_equal(psf_fits_read_key_double(path, "STREHL", &d), -1); /* undefined value */

    fitsfile *f = NULL;
    int status = 0;
    assert_int_equal(fits_open_diskfile(&f, path, READONLY, &status), 0);
    int bitpix = 0, naxis = 0;
    long naxes[2] = {0, 0};
    fits_get_img_param(f, 2, &bitpix, &naxis, naxes, &status);
    assert_int_equal(status, 0);
    assert_int_equal(bitpix, FLOAT_IMG);
    assert_int_equal(naxis, 2);
    assert_int_equal(naxes[0], N);
    assert_int_equal(naxes[1], N);
    LONGLONG big = 0;
    char comment[FLEN_COMMENT];
    fits_read_key(f, TLONGLONG, "BIGINT", &big, NULL, &status);
    assert_int_equal(status, 0);
    assert_true(big == 123456789012LL);
    long npix = 0;
    fits_read_key(f, TLONG, "NPIX", &npix, comment, &status);
    assert_int_equal(status, 0);
    assert_int_equal(npix, N);
    assert_string_equal(comment, "N");
    char sval[FLEN_VALUE];
    fits_read_key(f, TSTRING, "BACKEND", sval, comment, &status);
    assert_int_equal(status, 0);
    assert_string_equal(sval, "cpu");
    assert_string_equal(comment, "computed by");
    double wl = 0;
    fits_read_key(f, TDOUBLE, "WAVELEN", &wl, comment, &status);
    assert_true(wl == 5.5e-7);
    assert_string_equal(comment, "wavelength [m]");
    /* Orientation: FITS pixel (1, 1) is array row 0, column 0; (2, 1) is
     * row 0, column 1; (1, 2) is row 1, column 0. */
    float v = 0;
    int anynul = 0;
    long fpix[2] = {1, 1};
    fits_read_pix(f, TFLOAT, fpix, 1, NULL, &v, &anynul, &status);
    assert_int_equal(status, 0);
    assert_true(v == img[0]);
    fpix[0] = 2;
    fits_read_pix(f, TFLOAT, fpix, 1, NULL, &v, &anynul, &status);
    assert_true(v == img[1]);
    fpix[0] = 1;
    fpix[1] = 2;
    fits_read_pix(f, TFLOAT, fpix, 1, NULL, &v, &anynul, &status);
    assert_true(v == img[N]);
    fpix[0] = 3;
    fpix[1] = 4;
    fits_read_pix(f, TFLOAT, fpix, 1, NULL, &v, &anynul, &status);
    assert_true(v == img[3 * N + 2]);
    assert_int_equal(status, 0);
    fits_close_file(f, &status);
    tu_rmtree(dir);
    free(dir);
}

static void test_replace_and_failures(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("fits");
    char path[4096], err[512] = "";
    float img[4] = {1, 2, 3, 4};
    fits_kv kv = {.key = "NPIX", .type = FITS_KV_INT, .i = 2};

    /* Missing directory: -1 naming the path, nothing created. */
    snprintf(path, sizeof path, "%s/missing/psf.fits", dir);
    assert_int_equal(psf_fits_write_image(path, img, 2, &kv, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_int_equal(tu_count_entries(dir), 0);

    /* Replace an existing file. */
    snprintf(path, sizeof path, "%s/psf.fits", dir);
    assert_int_equal(tu_write_file(path, "old"), 0);
    assert_int_equal(psf_fits_write_image(path, img, 2, &kv, 1, err, sizeof err), 0);
    assert_int_equal(tu_count_entries(dir), 1);
    double d = 0;
    assert_int_equal(psf_fits_read_key_double(path, "NPIX", &d), 0);
    assert_true(d == 2);

    /* A failure inside cfitsio (a keyword of no known type, after the file
     * was created) fails with cfitsio's text, leaves the old file and no
     * temp. */
    const long before = file_size(path);
    fits_kv bad[2] = {{.key = "NPIX", .type = FITS_KV_INT, .i = 2},
                      {.key = "ODDTYPE", .type = (fits_kv_type)99, .d = 1.0}};
    float other[4] = {9, 9, 9, 9};
    err[0] = '\0';
    assert_int_equal(psf_fits_write_image(path, other, 2, bad, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "ODDTYPE"));
    assert_non_null(strstr(err, "cfitsio"));
    assert_int_equal(tu_count_entries(dir), 1);
    assert_int_equal(file_size(path), before);

    /* Keys cfitsio would rewrite (HIERARCH, upper-casing) or text it would
     * cut are refused up front. */
    const char *badkeys[] = {"BAD KEY", "lower", "K=", "TOOLONGKEY", ""};
    for (int k = 0; k < 5; ++k) {
        fits_kv kb = {.key = badkeys[k], .type = FITS_KV_INT, .i = 1};
        err[0] = '\0';
        assert_int_equal(psf_fits_write_image(path, img, 2, &kb, 1, err, sizeof err), -1);
        assert_non_null(strstr(err, path));
        assert_non_null(strstr(err, badkeys[k]));
    }
    fits_kv ks = {.key = "NAME", .type = FITS_KV_STRING, .s = "caf\xc3\xa9"};
    assert_int_equal(psf_fits_write_image(path, img, 2, &ks, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "ASCII"));
    fits_kv kc = {.key = "NAME", .type = FITS_KV_STRING, .s = "ok", .comment = "a\nb"};
    assert_int_equal(psf_fits_write_image(path, img, 2, &kc, 1, err, sizeof err), -1);
    assert_int_equal(tu_count_entries(dir), 1);
    assert_int_equal(file_size(path), before);
    float *data;
    int rows, cols;
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), 0);
    assert_true(data[3] == 4.0f);
    free(data);

    /* Bad size. */
    assert_int_equal(psf_fits_write_image(path, img, 0, NULL, 0, err, sizeof err), -1);
    assert_int_equal(tu_count_entries(dir), 1);

    /* Final name is a non-empty directory: rename fails, no temp left. */
    char dpath[4096], inner[4200];
    snprintf(dpath, sizeof dpath, "%s/adir.fits", dir);
    assert_int_equal(mkdir(dpath, 0755), 0);
    snprintf(inner, sizeof inner, "%s/x", dpath);
    assert_int_equal(tu_write_file(inner, "x"), 0);
    assert_int_equal(psf_fits_write_image(dpath, img, 2, NULL, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, dpath));
    assert_int_equal(tu_count_entries(dir), 2);

    /* Names cfitsio would parse as extended syntax are taken literally. */
    snprintf(path, sizeof path, "%s/odd[1](x)!.fits", dir);
    assert_int_equal(psf_fits_write_image(path, img, 2, NULL, 0, err, sizeof err), 0);
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), 0);
    assert_true(data[2] == 3.0f);
    free(data);
    assert_int_equal(tu_count_entries(dir), 3);
    tu_rmtree(dir);
    free(dir);
}

/* Write a FITS file with cfitsio directly (for the reader). */
static void write_raw_fits(const char *path, int bitpix, int naxis, const long *naxes, int datatype,
                           const void *pix, const char *blank_key, long blank)
{
    fitsfile *f = NULL;
    int status = 0;
    remove(path);
    fits_create_diskfile(&f, path, &status);
    fits_create_img(f, bitpix, naxis, (long *)naxes, &status);
    if (blank_key) fits_update_key(f, TLONG, blank_key, &blank, NULL, &status);
    LONGLONG n = naxis > 0;
    for (int k = 0; k < naxis; ++k)
        n *= naxes[k];
    if (n > 0) fits_write_img(f, datatype, 1, n, (void *)(uintptr_t)pix, &status);
    fits_close_file(f, &status);
    assert_int_equal(status, 0);
}

static void test_read_other_types(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("fits");
    char path[4096], err[512] = "";
    float *data;
    int rows, cols;

    /* 16-bit integers, 3 columns x 2 rows, with a BLANK value -> NaN. */
    short s16[6] = {0, 1, -2, 300, -32768, 7};
    long ax[3] = {3, 2, 2};
    snprintf(path, sizeof path, "%s/i16.fits", dir);
    write_raw_fits(path, SHORT_IMG, 2, ax, TSHORT, s16, "BLANK", -32768);
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), 0);
    assert_int_equal(rows, 2);
    assert_int_equal(cols, 3);
    assert_true(data[0] == 0 && data[1] == 1 && data[2] == -2 && data[3] == 300);
    assert_true(isnan(data[4]));
    assert_true(data[5] == 7);
    free(data);

    /* 64-bit floats. */
    double f64[6] = {0.25, 0.5, 1.0, 1e-3, 0.0, 0.75};
    snprintf(path, sizeof path, "%s/f64.fits", dir);
    write_raw_fits(path, DOUBLE_IMG, 2, ax, TDOUBLE, f64, NULL, 0);
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), 0);
    for (int i = 0; i < 6; ++i)
        assert_true(data[i] == (float)f64[i]);
    free(data);

    /* An empty primary HDU and the image in the first extension. */
    snprintf(path, sizeof path, "%s/ext.fits", dir);
    {
        fitsfile *f = NULL;
        int status = 0;
        remove(path);
        fits_create_diskfile(&f, path, &status);
        fits_create_img(f, 8, 0, NULL, &status);
        fits_create_img(f, FLOAT_IMG, 2, ax, &status);
        float pix[6] = {6, 5, 4, 3, 2, 1};
        fits_write_img(f, TFLOAT, 1, 6, pix, &status);
        fits_close_file(f, &status);
        assert_int_equal(status, 0);
    }
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), 0);
    assert_int_equal(rows, 2);
    assert_int_equal(cols, 3);
    assert_true(data[0] == 6 && data[5] == 1);
    free(data);

    /* 3-D and 1-D are refused; so is a file with no image. */
    float cube[12] = {0};
    snprintf(path, sizeof path, "%s/cube.fits", dir);
    write_raw_fits(path, FLOAT_IMG, 3, ax, TFLOAT, cube, NULL, 0);
    err[0] = '\0';
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), -1);
    assert_null(data);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "NAXIS = 3"));
    snprintf(path, sizeof path, "%s/line.fits", dir);
    write_raw_fits(path, FLOAT_IMG, 1, ax, TFLOAT, cube, NULL, 0);
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, "NAXIS = 1"));
    snprintf(path, sizeof path, "%s/empty.fits", dir);
    write_raw_fits(path, FLOAT_IMG, 0, ax, TFLOAT, NULL, NULL, 0);
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, "no image"));
    tu_rmtree(dir);
    free(dir);
}

static void test_read_broken(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("fits");
    char path[4096], err[512] = "";
    float *data = (float *)1;
    int rows = 9, cols = 9;
    enum { N = 64 };
    float *img = calloc(N * N, sizeof *img);
    snprintf(path, sizeof path, "%s/t.fits", dir);
    assert_int_equal(psf_fits_write_image(path, img, N, NULL, 0, err, sizeof err), 0);
    const long full = file_size(path);
    assert_int_equal(full, 2880 + 6 * 2880); /* header + 16384 bytes in blocks */

    /* Cut in half: the header is there, the data are not. */
    truncate_to(path, full / 2);
    err[0] = '\0';
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), -1);
    assert_null(data);
    assert_int_equal(rows, 0);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "truncated"));

    /* Cut inside the header. */
    truncate_to(path, 1000);
    err[0] = '\0';
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, path));

    /* Not FITS; missing. */
    assert_int_equal(tu_write_file(path, "SIMPLE? no, just text\n"), 0);
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    snprintf(path, sizeof path, "%s/nothere.fits", dir);
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    double d;
    assert_int_equal(psf_fits_read_key_double(path, "NPIX", &d), -1);
    free(img);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_keys),
        cmocka_unit_test(test_replace_and_failures),
        cmocka_unit_test(test_read_other_types),
        cmocka_unit_test(test_read_broken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
