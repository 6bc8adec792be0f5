/* maps: transmission and OPD maps from PNG and FITS, by extension; values
 * normalised, scaled and checked; refused and broken files. */
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

#include "app/formats/fits_io.h"
#include "app/set/maps.h"
#include "app/formats/png_io.h"
/* libpng declares a psf_png_write_image of its own (see png_io.h). */
#include <png.h>

#include "tests/support/testutil.h"

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("maps");
    return g_dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmtree(g_dir);
    free(g_dir);
    g_dir = NULL;
    return 0;
}

/* g_dir/name in one of 8 rotating buffers (valid for the next 7 calls). */
static const char *in_dir(const char *name)
{
    static char buf[8][4096];
    static int next;
    char *b = buf[next++ % 8];
    snprintf(b, sizeof buf[0], "%s/%s", g_dir, name);
    return b;
}

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

static void test_png_transmission_8_and_16(void **state)
{
    (void)state;
    char err[512] = "";
    float *t;
    int rows, cols;
    unsigned short lv8[4] = {0, 255, 51, 128};
    const char *p8 = strdup(in_dir("pupil8.png"));
    assert_int_equal(psf_png_write_levels(p8, lv8, 2, 8, 1, err, sizeof err), 0);
    assert_int_equal(maps_load_transmission(p8, &t, &rows, &cols, err, sizeof err), 0);
    assert_int_equal(rows, 2);
    assert_int_equal(cols, 2);
    assert_float_equal(t[0], 0.0, 0.0);
    assert_float_equal(t[1], 1.0, 0.0);
    assert_float_equal(t[2], 0.2, 1e-7);
    assert_float_equal(t[3], 128.0 / 255.0, 1e-7);
    free(t);
    free((void *)p8);

    unsigned short lv16[4] = {65535, 0, 32768, 13107};
    const char *p16 = strdup(in_dir("PUPIL16.PNG")); /* extension in any case */
    assert_int_equal(psf_png_write_levels(p16, lv16, 2, 16, 1, err, sizeof err), 0);
    assert_int_equal(maps_load_transmission(p16, &t, &rows, &cols, err, sizeof err), 0);
    assert_float_equal(t[0], 1.0, 0.0);
    assert_float_equal(t[1], 0.0, 0.0);
    assert_float_equal(t[2], 32768.0 / 65535.0, 1e-7);
    assert_float_equal(t[3], 0.2, 1e-7);
    for (int i = 0; i < 4; ++i)
        assert_true(t[i] >= 0.0f && t[i] <= 1.0f);
    free(t);
    free((void *)p16);
}

static void test_fits_transmission(void **state)
{
    (void)state;
    char err[512] = "";
    float *t;
    int rows, cols;
    float img[9] = {0, 0.5f, 1, NAN, 0.25f, 1, 0, 0, 0.125f};
    const char *p = in_dir("pupil.fits");
    assert_int_equal(psf_fits_write_image(p, img, 3, NULL, 0, err, sizeof err), 0);
    assert_int_equal(maps_load_transmission(p, &t, &rows, &cols, err, sizeof err), 0);
    assert_int_equal(rows, 3);
    assert_int_equal(cols, 3);
    assert_float_equal(t[1], 0.5, 0.0);
    assert_float_equal(t[3], 0.0, 0.0); /* NaN -> 0 */
    assert_float_equal(t[8], 0.125, 0.0);
    free(t);

    /* .fit and .fts are FITS too. */
    const char *pf = in_dir("pupil.FiT");
    assert_int_equal(psf_fits_write_image(pf, img, 3, NULL, 0, err, sizeof err), 0);
    assert_int_equal(maps_load_transmission(pf, &t, &rows, &cols, err, sizeof err), 0);
    free(t);
    const char *pt = in_dir("pupil.fts");
    assert_int_equal(psf_fits_write_image(pt, img, 3, NULL, 0, err, sizeof err), 0);
    assert_int_equal(maps_load_transmission(pt, &t, &rows, &cols, err, sizeof err), 0);
    free(t);
}

static void test_fits_transmission_out_of_range(void **state)
{
    (void)state;
    char err[512] = "";
    float *t = (float *)1;
    int rows = 5, cols = 5;
    float img[4] = {0, 0.5f, 1.5f, 1};
    const char *p = in_dir("bad.fits");
    assert_int_equal(psf_fits_write_image(p, img, 2, NULL, 0, err, sizeof err), 0);
    assert_int_equal(maps_load_transmission(p, &t, &rows, &cols, err, sizeof err), -1);
    assert_null(t);
    assert_int_equal(rows, 0);
    assert_int_equal(cols, 0);
    assert_non_null(strstr(err, p));
    assert_non_null(strstr(err, "1.5"));
    assert_non_null(strstr(err, "row 1, column 0"));

    float neg[4] = {0, -0.25f, 0, 0};
    assert_int_equal(psf_fits_write_image(p, neg, 2, NULL, 0, err, sizeof err), 0);
    assert_int_equal(maps_load_transmission(p, &t, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, "-0.25"));

    float inf[4] = {0, 0, 0, INFINITY};
    assert_int_equal(psf_fits_write_image(p, inf, 2, NULL, 0, err, sizeof err), 0);
    assert_int_equal(maps_load_transmission(p, &t, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, "inf"));
}

static void test_opd_maps(void **state)
{
    (void)state;
    char err[512] = "";
    float *o;
    int rows, cols;
    float img[6] = {1.0f, -2.0f, NAN, 0.5f, 0.0f, 100.0f};
    /* A 3 x 2 FITS via cfitsio (psf_fits_write_image writes squares only). */
    const char *p = in_dir("opd.fits");
    {
        fitsfile *f = NULL;
        int status = 0;
        long ax[2] = {3, 2};
        fits_create_diskfile(&f, p, &status);
        fits_create_img(f, FLOAT_IMG, 2, ax, &status);
        fits_write_img(f, TFLOAT, 1, 6, img, &status);
        fits_close_file(f, &status);
        assert_int_equal(status, 0);
    }
    assert_int_equal(maps_load_opd(p, 2.5, &o, &rows, &cols, err, sizeof err), 0);
    assert_int_equal(rows, 2);
    assert_int_equal(cols, 3);
    assert_float_equal(o[0], 2.5, 0.0);
    assert_float_equal(o[1], -5.0, 0.0);
    assert_float_equal(o[2], 0.0, 0.0); /* NaN -> 0 */
    assert_float_equal(o[3], 1.25, 0.0);
    assert_float_equal(o[4], 0.0, 0.0);
    assert_float_equal(o[5], 250.0, 0.0);
    free(o);

    /* PNG: grey levels times scale (not normalised). */
    unsigned short lv[4] = {0, 1, 1000, 65535};
    const char *pp = in_dir("opd.png");
    assert_int_equal(psf_png_write_levels(pp, lv, 2, 16, 1, err, sizeof err), 0);
    assert_int_equal(maps_load_opd(pp, 0.5, &o, &rows, &cols, err, sizeof err), 0);
    assert_float_equal(o[0], 0.0, 0.0);
    assert_float_equal(o[1], 0.5, 0.0);
    assert_float_equal(o[2], 500.0, 0.0);
    assert_float_equal(o[3], 32767.5, 0.0);
    free(o);

    /* Infinity in an OPD map, or a non-finite scale, is an error. */
    float inf[4] = {0, -INFINITY, 0, 0};
    assert_int_equal(psf_fits_write_image(p, inf, 2, NULL, 0, err, sizeof err), 0);
    o = (float *)1;
    assert_int_equal(maps_load_opd(p, 1.0, &o, &rows, &cols, err, sizeof err), -1);
    assert_null(o);
    assert_non_null(strstr(err, p));
    assert_non_null(strstr(err, "-inf"));
    assert_int_equal(maps_load_opd(pp, NAN, &o, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, pp));
}

static void test_rgb_png_refused(void **state)
{
    (void)state;
    const char *p = in_dir("rgb.png");
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) fail_msg("libpng failed writing the test file");
    png_init_io(png, f);
    png_set_IHDR(png, info, 2, 2, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    unsigned char row[6] = {255, 0, 0, 0, 255, 0};
    png_write_row(png, row);
    png_write_row(png, row);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);

    char err[512] = "";
    float *t = (float *)1;
    int rows, cols;
    assert_int_equal(maps_load_transmission(p, &t, &rows, &cols, err, sizeof err), -1);
    assert_null(t);
    assert_non_null(strstr(err, p));
    assert_non_null(strstr(err, "RGB"));
    assert_int_equal(maps_load_opd(p, 1.0, &t, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, "RGB"));
}

static void test_truncated_files(void **state)
{
    (void)state;
    char err[512] = "";
    float *t = (float *)1;
    int rows = 3, cols = 3;
    enum { N = 48 };
    unsigned short *lv = malloc(sizeof *lv * N * N);
    float *img = malloc(sizeof *img * N * N);
    for (int i = 0; i < N * N; ++i) {
        lv[i] = (unsigned short)((i * 7919u) & 0xFFFF);
        img[i] = (float)((i * 37) % 101) / 100.0f;
    }
    const char *pp = strdup(in_dir("cut.png"));
    assert_int_equal(psf_png_write_levels(pp, lv, N, 16, 1, err, sizeof err), 0);
    truncate_to(pp, file_size(pp) / 2);
    assert_int_equal(maps_load_transmission(pp, &t, &rows, &cols, err, sizeof err), -1);
    assert_null(t);
    assert_int_equal(rows, 0);
    assert_non_null(strstr(err, pp));
    assert_non_null(strstr(err, "truncated"));
    assert_int_equal(maps_load_opd(pp, 1.0, &t, &rows, &cols, err, sizeof err), -1);

    const char *pf = strdup(in_dir("cut.fits"));
    assert_int_equal(psf_fits_write_image(pf, img, N, NULL, 0, err, sizeof err), 0);
    truncate_to(pf, file_size(pf) / 2);
    err[0] = '\0';
    assert_int_equal(maps_load_transmission(pf, &t, &rows, &cols, err, sizeof err), -1);
    assert_null(t);
    assert_non_null(strstr(err, pf));
    assert_int_equal(maps_load_opd(pf, 1.0, &t, &rows, &cols, err, sizeof err), -1);
    free((void *)pp);
    free((void *)pf);
    free(lv);
    free(img);
}

static void test_unknown_extension(void **state)
{
    (void)state;
    char err[512] = "";
    float *t = (float *)1;
    int rows, cols;
    const char *names[] = {"pupil.jpg", "pupil", "dir.png/pupil", "pupil.fits.gz", "pupil."};
    for (int k = 0; k < 5; ++k) {
        const char *p = in_dir(names[k]);
        err[0] = '\0';
        assert_int_equal(maps_load_transmission(p, &t, &rows, &cols, err, sizeof err), -1);
        assert_null(t);
        assert_non_null(strstr(err, p));
        assert_non_null(strstr(err, "unknown map file type"));
        assert_int_equal(maps_load_opd(p, 1.0, &t, &rows, &cols, err, sizeof err), -1);
        assert_non_null(strstr(err, "unknown map file type"));
    }
    /* Known extension, missing file: the reader's message, naming it. */
    const char *p = in_dir("missing.png");
    assert_int_equal(maps_load_transmission(p, &t, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, p));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_png_transmission_8_and_16),
        cmocka_unit_test(test_fits_transmission),
        cmocka_unit_test(test_fits_transmission_out_of_range),
        cmocka_unit_test(test_opd_maps),
        cmocka_unit_test(test_rgb_png_refused),
        cmocka_unit_test(test_truncated_files),
        cmocka_unit_test(test_unknown_extension),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
