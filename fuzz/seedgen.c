/* SPDX-License-Identifier: BSD-3-Clause */
/* Writes the binary seed files of the map fuzz targets (fuzz/corpus/png_map
 * and fuzz/corpus/fits_map) into a directory, with psfsim's own writers and
 * with libpng / cfitsio for the kinds psfsim does not write (1-bit and
 * interlaced grayscale, RGB, palette; integer FITS with BLANK and BSCALE, a
 * cube, an image extension, a tile-compressed image, a table; raw header
 * cards for what cfitsio does not write: NAXIS = 104, END placement; a
 * gzip-compressed map). Every image is at most 8 x 8, so the seeds stay a
 * few kB each (under the fuzz runs' -max_len of 16 KiB). Run by hand to
 * regenerate them:
 * build-fuzz/fuzz/seedgen png|fits DIR. */
#include <fitsio.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "app/formats/fits.h"
#include "app/formats/png_io.h"

static const char *dir;

static const char *in(const char *name)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

static void die(const char *what)
{
    fprintf(stderr, "seedgen: %s\n", what);
    exit(1);
}

/* A PNG through libpng: w x h, the given colour type, depth and interlace;
 * samples from a ramp. */
static void raw_png(const char *name, int w, int h, int ctype, int depth, int interlace)
{
    FILE *f = fopen(in(name), "wb");
    if (!f) die(name);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) die(name);
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, ctype, interlace,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (ctype == PNG_COLOR_TYPE_PALETTE) {
        png_color pal[4] = {{0, 0, 0}, {80, 80, 80}, {160, 160, 160}, {255, 255, 255}};
        png_set_PLTE(png, info, pal, 4);
    }
    png_write_info(png, info);
    int channels = ctype == PNG_COLOR_TYPE_RGB ? 3 : ctype == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : 1;
    size_t rowbytes = ((size_t)w * channels * depth + 7) / 8;
    unsigned char *row = malloc(rowbytes);
    int passes = png_set_interlace_handling(png);
    for (int p = 0; p < passes; ++p)
        for (int r = 0; r < h; ++r) {
            for (size_t i = 0; i < rowbytes; ++i)
                row[i] = (unsigned char)(37 * (r + 1) + 11 * i);
            png_write_row(png, row);
        }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(row);
    fclose(f);
}

static void pngs(void)
{
    char err[512];
    unsigned short lv[64];
    for (int i = 0; i < 64; ++i)
        lv[i] = (unsigned short)(i * 1000);
    if (psf_png_write_levels(in("gray16_8x8.png"), lv, 8, 16, 1, err, sizeof err)) die(err);
    for (int i = 0; i < 64; ++i)
        lv[i] = (unsigned short)(i * 4);
    if (psf_png_write_levels(in("gray8_8x8.png"), lv, 8, 8, 9, err, sizeof err)) die(err);
    unsigned short one = 255;
    if (psf_png_write_levels(in("gray8_1x1.png"), &one, 1, 8, 0, err, sizeof err)) die(err);
    raw_png("gray1_5x3.png", 5, 3, PNG_COLOR_TYPE_GRAY, 1, PNG_INTERLACE_NONE);
    raw_png("gray4_3x2.png", 3, 2, PNG_COLOR_TYPE_GRAY, 4, PNG_INTERLACE_NONE);
    raw_png("gray8_interlaced_7x5.png", 7, 5, PNG_COLOR_TYPE_GRAY, 8, PNG_INTERLACE_ADAM7);
    raw_png("gray16_interlaced_3x6.png", 3, 6, PNG_COLOR_TYPE_GRAY, 16, PNG_INTERLACE_ADAM7);
    raw_png("rgb8_2x2.png", 2, 2, PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_NONE);
    raw_png("palette2_4x4.png", 4, 4, PNG_COLOR_TYPE_PALETTE, 2, PNG_INTERLACE_NONE);
    raw_png("grayalpha8_2x2.png", 2, 2, PNG_COLOR_TYPE_GRAY_ALPHA, 8, PNG_INTERLACE_NONE);
}

static void check(int status, const char *what)
{
    if (status) {
        char text[FLEN_STATUS];
        fits_get_errstatus(status, text);
        fprintf(stderr, "seedgen: %s: %s\n", what, text);
        exit(1);
    }
}

/* A FITS file through cfitsio: bitpix, naxis dims, optional BSCALE/BZERO
 * and BLANK (not with compression); tile compression (int16 only) when
 * compress; an empty primary before the image when ext. */
static void raw_fits(const char *name, int bitpix, int naxis, long *dims, int ext, int compress)
{
    fitsfile *f;
    int status = 0;
    remove(in(name));
    fits_create_diskfile(&f, in(name), &status);
    if (ext) fits_create_img(f, 8, 0, NULL, &status);
    if (compress) fits_set_compression_type(f, RICE_1, &status);
    fits_create_img(f, bitpix, naxis, dims, &status);
    long n = 1;
    for (int i = 0; i < naxis; ++i)
        n *= dims[i];
    double *v = malloc(sizeof *v * (size_t)n);
    for (long i = 0; i < n; ++i)
        v[i] = (double)(i % 7) * 0.125;
    if (bitpix > 0) {
        for (long i = 0; i < n; ++i)
            v[i] = (double)(i % 5);
    }
    if (bitpix > 0 && !compress) {
        double bscale = 0.5, bzero = 1.0;
        long blank = -1;
        fits_update_key(f, TDOUBLE, "BSCALE", &bscale, NULL, &status);
        fits_update_key(f, TDOUBLE, "BZERO", &bzero, NULL, &status);
        if (bitpix != 8) fits_update_key(f, TLONG, "BLANK", &blank, NULL, &status);
        for (long i = 0; i < n; ++i)
            v[i] = 1.0 + 0.5 * (double)(i % 5);
    }
    if (compress) { /* cfitsio converts no types into a compressed image */
        short *sv = malloc(sizeof *sv * (size_t)n);
        for (long i = 0; i < n; ++i)
            sv[i] = (short)v[i];
        fits_write_img(f, TSHORT, 1, n, sv, &status);
        free(sv);
    } else {
        fits_write_img(f, TDOUBLE, 1, n, v, &status);
    }
    fits_close_file(f, &status);
    free(v);
    check(status, name);
}

/* A FITS file card by card (for headers cfitsio will not write): the
 * cards, each padded to 80 characters, then END (unless end is 0), blanks
 * to the end of the block, then data_bytes zero bytes padded to a block. */
static void raw_cards(const char *name, const char *const *cards, int ncards, int end,
                      size_t data_bytes)
{
    FILE *f = fopen(in(name), "wb");
    if (!f) die(name);
    char card[81];
    size_t n = 0;
    for (int i = 0; i <= ncards; ++i, n += 80) {
        if (i == ncards && !end) break;
        snprintf(card, sizeof card, "%-80s", i < ncards ? cards[i] : "END");
        fwrite(card, 1, 80, f);
    }
    for (; n % 2880; ++n)
        fputc(' ', f);
    for (size_t i = 0; i < (data_bytes + 2879) / 2880 * 2880; ++i)
        fputc(0, f);
    if (fclose(f)) die(name);
}

/* Header edge cases: NAXIS past what cfitsio survives, END as the last card
 * of a block, as the first of the next, or missing, and a float image with
 * BSCALE / BZERO. */
static void raw_headers(void)
{
    static char naxis[110][32];
    const char *c[110] = {"SIMPLE  =                    T", "BITPIX  =                    8",
                          "NAXIS   =                  104"};
    for (int i = 1; i <= 104; ++i) {
        snprintf(naxis[i], sizeof naxis[i], "NAXIS%-3d=                    1", i);
        c[2 + i] = naxis[i];
    }
    /* cfitsio 4.2 frees a wild pointer opening it (fits_scan.c refuses it;
     * also tests/regress/fits_map/cfitsio-naxis-104-wild-free.fits). */
    raw_cards("naxis104_1x1.fits", c, 107, 1, 1);

    const char *h[36] = {"SIMPLE  =                    T", "BITPIX  =                  -32",
                         "NAXIS   =                    2", "NAXIS1  =                    2",
                         "NAXIS2  =                    2", "BSCALE  =                  2.5",
                         "BZERO   =                 -1.0", "BUNIT   = 'nm      '"};
    for (int i = 8; i < 36; ++i)
        h[i] = "COMMENT   padding to the end of the block";
    raw_cards("float32_bscale_2x2.fits", h, 8, 1, 16);
    raw_cards("end_last_card_2x2.fits", h, 35, 1, 16);
    raw_cards("end_second_block_2x2.fits", h, 36, 1, 16);
    raw_cards("no_end_2x2.fits", h, 8, 0, 16);
}

/* A small float image with a BUNIT (OPD maps in m, um, rad, ... ) and the
 * same in an image extension after a primary with its own BUNIT. */
static void bunits(void)
{
    static const char *const units[] = {"meter", "um", "nm", "rad", "waves", "furlong", ""};
    float img[4] = {1e-9f, -2e-9f, 0.5f, 0.0f};
    char err[512], name[64];
    for (size_t i = 0; i < sizeof units / sizeof *units; ++i) {
        fits_kv kv = {.key = "BUNIT", .type = FITS_KV_STRING, .s = units[i]};
        snprintf(name, sizeof name, "bunit_%s_2x2.fits", units[i][0] ? units[i] : "blank");
        if (psf_fits_write_image(in(name), img, 2, &kv, 1, err, sizeof err)) die(err);
    }
    fitsfile *f;
    int status = 0;
    long d2[2] = {2, 2};
    remove(in("ext_bunit_2x2.fits"));
    fits_create_diskfile(&f, in("ext_bunit_2x2.fits"), &status);
    fits_create_img(f, 8, 0, NULL, &status);
    fits_update_key_str(f, "BUNIT", "nm", NULL, &status);
    fits_create_img(f, FLOAT_IMG, 2, d2, &status);
    fits_update_key_str(f, "BUNIT", "meter", NULL, &status);
    fits_write_img(f, TFLOAT, 1, 4, img, &status);
    fits_close_file(f, &status);
    check(status, "ext_bunit_2x2.fits");
}

/* A gzip-compressed copy of seed src (WebbPSF's .fits.gz maps). */
static void gzip_seed(const char *src, const char *dst)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", in(src));
    FILE *f = fopen(path, "rb");
    gzFile gz = gzopen(in(dst), "wb9");
    if (!f || !gz) die(dst);
    char buf[2880];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (gzwrite(gz, buf, (unsigned)n) != (int)n) die(dst);
    fclose(f);
    if (gzclose(gz) != Z_OK) die(dst);
}

static void fitses(void)
{
    char err[512];
    float img[64];
    for (int i = 0; i < 64; ++i)
        img[i] = (float)i / 64.0f;
    fits_kv kv[2] = {{.key = "WAVELEN", .type = FITS_KV_DOUBLE, .d = 5.5e-7, .comment = "m"},
                     {.key = "BACKEND", .type = FITS_KV_STRING, .s = "cpu"}};
    if (psf_fits_write_image(in("float32_8x8.fits"), img, 8, kv, 2, err, sizeof err)) die(err);
    long d2[2] = {4, 3}, d3[3] = {2, 2, 2}, d1[1] = {5};
    raw_fits("int16_blank_4x3.fits", SHORT_IMG, 2, d2, 0, 0);
    raw_fits("uint8_bscale_4x3.fits", BYTE_IMG, 2, d2, 0, 0);
    raw_fits("float64_4x3.fits", DOUBLE_IMG, 2, d2, 0, 0);
    raw_fits("int32_ext_4x3.fits", LONG_IMG, 2, d2, 1, 0);
    raw_fits("cube_2x2x2.fits", FLOAT_IMG, 3, d3, 0, 0);
    raw_fits("vector_5.fits", FLOAT_IMG, 1, d1, 0, 0);
    raw_fits("rice_int16_4x3.fits", SHORT_IMG, 2, d2, 0, 1);
    long d3p[3] = {4, 3, 1};
    raw_fits("plane_4x3x1.fits", FLOAT_IMG, 3, d3p, 0, 0);
    raw_fits("int64_blank_4x3.fits", LONGLONG_IMG, 2, d2, 0, 0);
    raw_headers();
    bunits();
    gzip_seed("float32_8x8.fits", "float32_8x8.fits.gz");

    fitsfile *f;
    int status = 0;
    remove(in("table.fits"));
    fits_create_diskfile(&f, in("table.fits"), &status);
    fits_create_img(f, 8, 0, NULL, &status);
    char *ttype[] = {"X"}, *tform[] = {"1E"}, *tunit[] = {"m"};
    fits_create_tbl(f, BINARY_TBL, 2, 1, ttype, tform, tunit, "T", &status);
    float x[2] = {1, 2};
    fits_write_col(f, TFLOAT, 1, 1, 1, 2, x, &status);
    fits_close_file(f, &status);
    check(status, "table.fits");
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "png") && strcmp(argv[1], "fits"))) {
        fprintf(stderr, "usage: seedgen png|fits DIR\n");
        return 2;
    }
    dir = argv[2];
    if (!strcmp(argv[1], "png"))
        pngs();
    else
        fitses();
    return 0;
}
