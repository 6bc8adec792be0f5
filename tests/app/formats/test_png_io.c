/* SPDX-License-Identifier: BSD-3-Clause */
/* png_io: stretch levels, PNG files checked with libpng directly (bit
 * depth, colour type, size, big-endian samples), atomic writes, and
 * psf_png_read_gray on good, refused and broken files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/formats/png_io.h"
/* libpng declares a psf_png_write_image of its own (see png_io.h). */
#include <png.h>
#include <zlib.h>

#include "tests/support/testutil.h"

/* ---- helpers: libpng used directly ---- */

typedef struct {
    png_uint_32 w, h;
    int depth, ctype, interlace;
    unsigned char *bytes; /* rows as stored in the file (big-endian 16-bit) */
    size_t rowbytes;
} raw_png;

/* libpng's warnings while reading (test_write_png_layout wants none). */
static int png_warnings;

static void quiet_warning(png_structp p, png_const_charp m)
{
    (void)p, (void)m;
    ++png_warnings;
}

static void quiet_error(png_structp p, png_const_charp m)
{
    (void)m;
    png_longjmp(p, 1);
}

/* Read path's samples without any transform. Returns 0 or -1. */
static int raw_png_read(const char *path, raw_png *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    png_structp png =
        png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, quiet_error, quiet_warning);
    png_infop info = png_create_info_struct(png);
    png_bytep *volatile rows = NULL;
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(rows);
        free(out->bytes);
        out->bytes = NULL;
        fclose(f);
        return -1;
    }
    png_init_io(png, f);
    png_read_info(png, info);
    png_get_IHDR(png, info, &out->w, &out->h, &out->depth, &out->ctype, &out->interlace, NULL,
                 NULL);
    (void)png_set_interlace_handling(png);
    png_read_update_info(png, info);
    out->rowbytes = png_get_rowbytes(png, info);
    out->bytes = malloc(out->rowbytes * out->h);
    rows = malloc(sizeof *rows * out->h);
    for (png_uint_32 r = 0; r < out->h; ++r)
        rows[r] = out->bytes + r * out->rowbytes;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    fclose(f);
    return 0;
}

static unsigned raw16(const raw_png *p, int row, int col)
{
    const unsigned char *b = p->bytes + (size_t)row * p->rowbytes + 2 * (size_t)col;
    return (unsigned)b[0] << 8 | b[1];
}

static unsigned raw8(const raw_png *p, int row, int col)
{
    return p->bytes[(size_t)row * p->rowbytes + (size_t)col];
}

/* Write a PNG of any type with libpng; bytes are rows as stored. */
static void write_test_png(const char *path, int w, int h, int depth, int ctype, int interlace,
                           const unsigned char *bytes, size_t rowbytes)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) fail_msg("libpng failed writing a test file");
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, ctype, interlace,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (ctype == PNG_COLOR_TYPE_PALETTE) {
        png_color pal[2] = {{0, 0, 0}, {255, 255, 255}};
        png_set_PLTE(png, info, pal, 2);
    }
    png_write_info(png, info);
    /* Row by row, each pass (libpng's psf_png_write_image is hidden here). */
    const int passes = png_set_interlace_handling(png);
    for (int pass = 0; pass < passes; ++pass)
        for (int r = 0; r < h; ++r)
            png_write_row(png, bytes + (size_t)r * rowbytes);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
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

/* The level the documented formula gives, computed independently. */
static unsigned expect_level(double I, double peak, int bits, png_stretch s, double dr)
{
    double v = I / peak, t;
    if (!(v > 0)) return 0;
    if (s == STRETCH_LINEAR)
        t = v;
    else if (s == STRETCH_SQRT)
        t = sqrt(v);
    else
        t = (log10(v) + log10(dr)) / log10(dr);
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    return (unsigned)llround(t * ((1 << bits) - 1));
}

/* ---- stretch ---- */

static void test_stretch_linear(void **state)
{
    (void)state;
    float img[4] = {2.0f, 1.0f, 0.5f, 0.0f};
    unsigned short out[4];
    psf_png_stretch_levels(img, 2, 16, STRETCH_LINEAR, 1e6, out);
    assert_int_equal(out[0], 65535);
    assert_int_equal(out[1], 32768); /* 32767.5 rounds up */
    assert_int_equal(out[2], 16384); /* 16383.75 */
    assert_int_equal(out[3], 0);
    psf_png_stretch_levels(img, 2, 8, STRETCH_LINEAR, 1e6, out);
    assert_int_equal(out[0], 255);
    assert_int_equal(out[1], 128); /* 127.5 */
    assert_int_equal(out[2], 64);  /* 63.75 */
    assert_int_equal(out[3], 0);
}

static void test_stretch_sqrt(void **state)
{
    (void)state;
    float img[4] = {4.0f, 1.0f, 0.25f, 0.0f};
    unsigned short out[4];
    psf_png_stretch_levels(img, 2, 16, STRETCH_SQRT, 1e6, out);
    assert_int_equal(out[0], 65535);
    assert_int_equal(out[1], 32768); /* sqrt(1/4) = 0.5 */
    assert_int_equal(out[2], 16384); /* sqrt(1/16) = 0.25 */
    assert_int_equal(out[3], 0);
}

static void test_stretch_log(void **state)
{
    (void)state;
    /* peak 1; 1e-6 = peak/dr -> 0; 1e-3 with dr = 1e6 -> half way: 0.001f
     * is 1.00000005e-3, a hair above, so 32767.5 + 0.0002 rounds to 32768;
     * below 1/dr clamps to 0; zero and negative -> 0. */
    float img[9] = {1.0f, 1e-6f, 1e-3f, 1e-9f, 0.0f, -1.0f, 0.5f, 1e-2f, 1e-4f};
    unsigned short out[9];
    psf_png_stretch_levels(img, 3, 16, STRETCH_LOG, 1e6, out);
    assert_int_equal(out[0], 65535);
    assert_int_equal(out[1], 0);
    assert_int_equal(out[2], 32768);
    assert_int_equal(out[3], 0);
    assert_int_equal(out[4], 0);
    assert_int_equal(out[5], 0);
    for (int i = 0; i < 9; ++i)
        assert_int_equal(out[i], expect_level(img[i], 1.0, 16, STRETCH_LOG, 1e6));
    /* 0.5 of the peak with dr 1e6: (6 - 0.30103) / 6 * 65535 = 62247.0... */
    assert_int_equal(out[6], 62247);
    psf_png_stretch_levels(img, 3, 8, STRETCH_LOG, 1e6, out);
    assert_int_equal(out[0], 255);
    assert_int_equal(out[2], 128); /* 127.5 + a hair */
    for (int i = 0; i < 9; ++i)
        assert_int_equal(out[i], expect_level(img[i], 1.0, 8, STRETCH_LOG, 1e6));
    /* The peak scales out: same levels for the image times 8. */
    float img7[9];
    unsigned short out7[9];
    for (int i = 0; i < 9; ++i)
        img7[i] = img[i] * 8.0f; /* a power of two keeps the ratios exact */
    psf_png_stretch_levels(img7, 3, 8, STRETCH_LOG, 1e6, out7);
    assert_memory_equal(out, out7, sizeof out);
}

/* The first psf_png_stretch_levels' arithmetic (commit 53cb6e0), one
 * pixel at a time: the levels the stretch keeps, bit for bit. */
static unsigned first_level(float I, double peak, int bits, png_stretch s, double dr)
{
    const double maxlev = (double)((1u << bits) - 1u);
    const int log_ok = isfinite(dr) && dr > 1.0;
    const double inv_ln_dr = log_ok ? 1.0 / log(dr) : 0.0;
    double v = (double)I / peak, t;
    if (!(v > 0)) {
        t = 0;
    } else {
        if (v > 1) v = 1;
        if (s == STRETCH_LOG)
            t = log_ok ? 1.0 + log(v) * inv_ln_dr : (v >= 1 ? 1.0 : 0.0);
        else
            t = s == STRETCH_SQRT ? sqrt(v) : v;
        if (t < 0) t = 0;
        if (t > 1) t = 1;
    }
    return (unsigned short)(t * maxlev + 0.5);
}

/* The stretch's fast route (I times 1/peak, the vector log, by blocks)
 * gives the first code's levels on 512^2 pixels per case: log-uniform
 * values over 14 decades, values 0..2 float ulps either side of each
 * level's rounding boundary (x = t maxlev + 0.5 an integer), exact ties
 * (I = peak / 2: v = 0.5, x = 32768 or 128, which I * (1/peak) misses for
 * peak 3), NaN, zero, negative and -inf; log at dr 2, 10, 1e5, 1e6, 1e38,
 * linear and sqrt; 8 and 16 bits; peaks 1, 3 and 3.7e-30. */
static void test_stretch_levels_exact(void **state)
{
    (void)state;
    enum { N = 512 };
    float *img = malloc(sizeof *img * N * N);
    unsigned short *out = malloc(sizeof *out * N * N);
    static const double drs[] = {2.0, 10.0, 1e5, 1e6, 1e38}, peaks[] = {1.0, 3.0, 3.7e-30};
    static const png_stretch kinds[] = {STRETCH_LOG, STRETCH_LOG,    STRETCH_LOG, STRETCH_LOG,
                                        STRETCH_LOG, STRETCH_LINEAR, STRETCH_SQRT};
    long long compared = 0;
    for (int ki = 0; ki < 7; ++ki)
        for (int pi = 0; pi < 3; ++pi)
            for (int bits = 8; bits <= 16; bits += 8) {
                const png_stretch s = kinds[ki];
                const double dr = ki < 5 ? drs[ki] : 1e5, peak = peaks[pi];
                const double maxlev = (double)((1u << bits) - 1u);
                unsigned seed = 2024u + 77u * (unsigned)ki + 7u * (unsigned)pi + (unsigned)bits;
                for (int i = 0; i < N * N; ++i) {
                    seed = seed * 1103515245u + 12345u;
                    const double u = (seed >> 8) / 16777216.0;
                    double v;
                    if (i % 3 == 0) { /* log-uniform */
                        v = pow(10.0, -14.0 * u);
                    } else { /* near level L's boundary: t = (L - 0.5) / maxlev */
                        const double t = (floor(u * maxlev) + 0.5) / maxlev;
                        v = s == STRETCH_LOG    ? exp((t - 1.0) * log(dr))
                            : s == STRETCH_SQRT ? t * t
                                                : t;
                    }
                    float I = (float)(v * peak);
                    for (int k = (int)(seed % 5u) - 2; k < 0; ++k)
                        I = nextafterf(I, 0.0f);
                    for (int k = (int)(seed % 5u) - 2; k > 0; --k)
                        I = nextafterf(I, INFINITY);
                    img[i] = I;
                }
                img[0] = (float)peak;
                img[1] = (float)(peak / 2.0); /* a tie */
                img[2] = NAN;
                img[3] = 0.0f;
                img[4] = -1.0f;
                img[5] = -INFINITY;
                double p = -INFINITY; /* the peak the stretch takes */
                for (int i = 0; i < N * N; ++i)
                    p = img[i] > p ? img[i] : p;
                psf_png_stretch_levels(img, N, bits, s, dr, out);
                for (int i = 0; i < N * N; ++i) {
                    const unsigned want = first_level(img[i], p, bits, s, dr);
                    if (out[i] != want)
                        fail_msg("stretch %d dr %g peak %g %d-bit: I = %a: %u, the first code %u",
                                 (int)s, dr, peak, bits, (double)img[i], out[i], want);
                }
                compared += N * N;
            }
    assert_int_equal(compared, 7LL * 3 * 2 * N * N);
    free(img);
    free(out);
}

static void test_stretch_degenerate(void **state)
{
    (void)state;
    const png_stretch all[3] = {STRETCH_LINEAR, STRETCH_LOG, STRETCH_SQRT};
    unsigned short out[4];
    for (int s = 0; s < 3; ++s) {
        float constant[4] = {3.0f, 3.0f, 3.0f, 3.0f};
        psf_png_stretch_levels(constant, 2, 16, all[s], 1e6, out);
        for (int i = 0; i < 4; ++i)
            assert_int_equal(out[i], 65535);
        float zero[4] = {0};
        psf_png_stretch_levels(zero, 2, 16, all[s], 1e6, out);
        for (int i = 0; i < 4; ++i)
            assert_int_equal(out[i], 0);
        float neg[4] = {-1.0f, -2.0f, -3.0f, -0.5f};
        psf_png_stretch_levels(neg, 2, 16, all[s], 1e6, out);
        for (int i = 0; i < 4; ++i)
            assert_int_equal(out[i], 0);
        float withnan[4] = {NAN, 2.0f, 1.0f, NAN};
        psf_png_stretch_levels(withnan, 2, 16, all[s], 1e6, out);
        assert_int_equal(out[0], 0);
        assert_int_equal(out[1], 65535);
        assert_int_equal(out[2], expect_level(1.0, 2.0, 16, all[s], 1e6));
        assert_int_equal(out[3], 0);
        float allnan[4] = {NAN, NAN, NAN, NAN};
        psf_png_stretch_levels(allnan, 2, 16, all[s], 1e6, out);
        for (int i = 0; i < 4; ++i)
            assert_int_equal(out[i], 0);
        float withinf[4] = {INFINITY, 1.0f, 0.5f, 0.0f};
        psf_png_stretch_levels(withinf, 2, 16, all[s], 1e6, out);
        for (int i = 0; i < 4; ++i)
            assert_int_equal(out[i], 0);
        float withneginf[4] = {-INFINITY, 1.0f, 1.0f, 1.0f};
        psf_png_stretch_levels(withneginf, 2, 16, all[s], 1e6, out);
        assert_int_equal(out[0], 0);
        assert_int_equal(out[1], 65535);
    }
    /* log with a dynamic range that leaves no range: peak -> top, else 0. */
    float img[4] = {1.0f, 0.5f, 0.0f, 1.0f};
    psf_png_stretch_levels(img, 2, 16, STRETCH_LOG, 1.0, out);
    assert_int_equal(out[0], 65535);
    assert_int_equal(out[1], 0);
    assert_int_equal(out[2], 0);
    assert_int_equal(out[3], 65535);
    psf_png_stretch_levels(img, 2, 16, STRETCH_LOG, NAN, out);
    assert_int_equal(out[1], 0);
}

/* ---- writing ---- */

static void test_write_16bit_big_endian(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/psf_0.png", dir);
    /* Linear stretch with peak 65535: level = value. */
    enum { N = 5 };
    float img[N * N] = {0};
    img[0 * N + 1] = 0x1234; /* row 0, column 1 */
    img[1 * N + 0] = 0xABCD; /* row 1, column 0 */
    img[2 * N + 2] = 65535.0f;
    img[4 * N + 3] = 0x00FF;
    assert_int_equal(psf_png_write_image(path, img, N, 16, STRETCH_LINEAR, 1e6, 1, err, sizeof err),
                     0);
    assert_int_equal(tu_count_entries(dir), 1);

    raw_png p;
    assert_int_equal(raw_png_read(path, &p), 0);
    assert_int_equal(p.w, N);
    assert_int_equal(p.h, N);
    assert_int_equal(p.depth, 16);
    assert_int_equal(p.ctype, PNG_COLOR_TYPE_GRAY);
    assert_int_equal(p.interlace, PNG_INTERLACE_NONE);
    assert_int_equal(p.rowbytes, 2 * N);
    /* High byte first, as PNG requires; row 0 is the top (first) row. */
    const unsigned char *r0 = p.bytes;
    assert_int_equal(r0[2], 0x12);
    assert_int_equal(r0[3], 0x34);
    assert_int_equal(raw16(&p, 0, 1), 0x1234);
    assert_int_equal(raw16(&p, 1, 0), 0xABCD);
    assert_int_equal(raw16(&p, 2, 2), 0xFFFF);
    assert_int_equal(raw16(&p, 4, 3), 0x00FF);
    assert_int_equal(raw16(&p, 0, 0), 0);
    free(p.bytes);

    /* And through psf_png_read_gray. */
    float *data;
    int rows, cols, maxval;
    assert_int_equal(psf_png_read_gray(path, &data, &rows, &cols, &maxval, err, sizeof err), 0);
    assert_int_equal(rows, N);
    assert_int_equal(cols, N);
    assert_int_equal(maxval, 65535);
    for (int i = 0; i < N * N; ++i)
        assert_float_equal(data[i], img[i], 0.0);
    free(data);
    tu_rmtree(dir);
    free(dir);
}

static void test_write_8bit(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/psf8.png", dir);
    enum { N = 4 };
    float img[N * N] = {0};
    img[0 * N + 3] = 255.0f;
    img[3 * N + 0] = 100.0f;
    img[1 * N + 2] = 1.0f;
    assert_int_equal(psf_png_write_image(path, img, N, 8, STRETCH_LINEAR, 1e6, 9, err, sizeof err),
                     0);
    raw_png p;
    assert_int_equal(raw_png_read(path, &p), 0);
    assert_int_equal(p.w, N);
    assert_int_equal(p.h, N);
    assert_int_equal(p.depth, 8);
    assert_int_equal(p.ctype, PNG_COLOR_TYPE_GRAY);
    assert_int_equal(raw8(&p, 0, 3), 255);
    assert_int_equal(raw8(&p, 3, 0), 100);
    assert_int_equal(raw8(&p, 1, 2), 1);
    assert_int_equal(raw8(&p, 0, 0), 0);
    free(p.bytes);
    assert_int_equal(tu_count_entries(dir), 1);
    tu_rmtree(dir);
    free(dir);
}

static void test_write_stretches_in_file(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path[4096], err[512] = "";
    enum { N = 3 };
    float img[N * N] = {1.0f, 1e-6f, 1e-3f, 0.25f, 0.0f, 0.5f, 1e-9f, 1.0f, 0.0625f};
    const png_stretch all[3] = {STRETCH_LINEAR, STRETCH_LOG, STRETCH_SQRT};
    for (int s = 0; s < 3; ++s) {
        snprintf(path, sizeof path, "%s/s%d.png", dir, s);
        assert_int_equal(psf_png_write_image(path, img, N, 16, all[s], 1e6, 1, err, sizeof err), 0);
        raw_png p;
        assert_int_equal(raw_png_read(path, &p), 0);
        for (int i = 0; i < N * N; ++i)
            assert_int_equal(raw16(&p, i / N, i % N), expect_level(img[i], 1.0, 16, all[s], 1e6));
        free(p.bytes);
    }
    /* Spot values: log peak/dr -> 0, 1e-3 -> 32768; sqrt 0.25 -> 32768. */
    raw_png p;
    snprintf(path, sizeof path, "%s/s1.png", dir);
    assert_int_equal(raw_png_read(path, &p), 0);
    assert_int_equal(raw16(&p, 0, 0), 65535);
    assert_int_equal(raw16(&p, 0, 1), 0);
    assert_int_equal(raw16(&p, 0, 2), 32768);
    free(p.bytes);
    snprintf(path, sizeof path, "%s/s2.png", dir);
    assert_int_equal(raw_png_read(path, &p), 0);
    assert_int_equal(raw16(&p, 1, 0), 32768);
    assert_int_equal(raw16(&p, 2, 2), 16384);
    free(p.bytes);
    assert_int_equal(tu_count_entries(dir), 3);
    tu_rmtree(dir);
    free(dir);
}

static void test_write_degenerate_images(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path[4096], err[512] = "";
    enum { N = 8 };
    float zero[N * N] = {0}, constant[N * N], nanimg[N * N];
    for (int i = 0; i < N * N; ++i) {
        constant[i] = 0.125f;
        nanimg[i] = (i % 3 == 0) ? NAN : (float)i;
    }
    nanimg[N * N - 1] = 100.0f; /* the peak */
    const struct {
        const float *img;
        const char *name;
    } cases[] = {{zero, "zero"}, {constant, "const"}, {nanimg, "nan"}};
    const png_stretch all[3] = {STRETCH_LINEAR, STRETCH_LOG, STRETCH_SQRT};
    for (int c = 0; c < 3; ++c) {
        for (int s = 0; s < 3; ++s) {
            for (int bits = 8; bits <= 16; bits += 8) {
                snprintf(path, sizeof path, "%s/%s_%d_%d.png", dir, cases[c].name, s, bits);
                assert_int_equal(psf_png_write_image(path, cases[c].img, N, bits, all[s], 1e4, 1,
                                                     err, sizeof err),
                                 0);
                raw_png p;
                assert_int_equal(raw_png_read(path, &p), 0);
                assert_int_equal(p.w, N);
                assert_int_equal(p.depth, bits);
                const unsigned top = (1u << bits) - 1;
                for (int i = 0; i < N * N; ++i) {
                    unsigned v = bits == 16 ? raw16(&p, i / N, i % N) : raw8(&p, i / N, i % N);
                    if (c == 0)
                        assert_int_equal(v, 0);
                    else if (c == 1)
                        assert_int_equal(v, top);
                    else if (isnan(nanimg[i]))
                        assert_int_equal(v, 0);
                    else
                        assert_int_equal(v, expect_level(nanimg[i], 100.0, bits, all[s], 1e4));
                }
                free(p.bytes);
            }
        }
    }
    assert_int_equal(tu_count_entries(dir), 18);
    tu_rmtree(dir);
    free(dir);
}

static void test_write_replaces_and_compression(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path0[4096], path9[4096], err[512] = "";
    enum { N = 64 };
    float *img = malloc(sizeof *img * N * N);
    for (int r = 0; r < N; ++r)
        for (int c = 0; c < N; ++c)
            img[r * N + c] = expf(-((r - 32) * (r - 32) + (c - 32) * (c - 32)) / 50.0f);
    snprintf(path0, sizeof path0, "%s/c0.png", dir);
    snprintf(path9, sizeof path9, "%s/c9.png", dir);
    assert_int_equal(tu_write_file(path0, "not a png, replaced"), 0);
    assert_int_equal(psf_png_write_image(path0, img, N, 16, STRETCH_LOG, 1e6, 0, err, sizeof err),
                     0);
    assert_int_equal(psf_png_write_image(path9, img, N, 16, STRETCH_LOG, 1e6, 9, err, sizeof err),
                     0);
    assert_true(file_size(path9) < file_size(path0));
    assert_true(file_size(path0) > 2 * N * N); /* level 0: stored */
    raw_png a, b;
    assert_int_equal(raw_png_read(path0, &a), 0);
    assert_int_equal(raw_png_read(path9, &b), 0);
    assert_int_equal(a.rowbytes, b.rowbytes);
    assert_memory_equal(a.bytes, b.bytes, a.rowbytes * a.h);
    assert_int_equal(raw16(&a, 32, 32), 65535);
    free(a.bytes);
    free(b.bytes);
    free(img);
    assert_int_equal(tu_count_entries(dir), 2);
    tu_rmtree(dir);
    free(dir);
}

static void test_write_errors(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path[4096], err[512] = "";
    float img[4] = {1, 2, 3, 4};
    snprintf(path, sizeof path, "%s/missing/sub/psf.png", dir);
    assert_int_equal(psf_png_write_image(path, img, 2, 16, STRETCH_LOG, 1e6, 1, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, path));
    assert_int_equal(tu_count_entries(dir), 0);

    snprintf(path, sizeof path, "%s/psf.png", dir);
    err[0] = '\0';
    assert_int_equal(psf_png_write_image(path, img, 2, 12, STRETCH_LOG, 1e6, 1, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, path));
    err[0] = '\0';
    assert_int_equal(psf_png_write_image(path, img, 2, 16, STRETCH_LOG, 1e6, 10, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, path));
    err[0] = '\0';
    assert_int_equal(psf_png_write_image(path, img, 0, 16, STRETCH_LOG, 1e6, 1, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, path));
    assert_int_equal(tu_count_entries(dir), 0);

    /* The final name is a non-empty directory: rename fails, no temp left. */
    assert_int_equal(mkdir(path, 0755), 0);
    char inner[4200];
    snprintf(inner, sizeof inner, "%s/x", path);
    assert_int_equal(tu_write_file(inner, "x"), 0);
    err[0] = '\0';
    assert_int_equal(psf_png_write_image(path, img, 2, 16, STRETCH_LOG, 1e6, 1, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, path));
    assert_int_equal(tu_count_entries(dir), 1);
    tu_rmtree(dir);
    free(dir);
}

/* psf_png_write_levels: precomputed levels written as they are (8-bit
 * clamped at 255), the file replaced atomically. */
static void test_write_levels(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/lv.png", dir);
    unsigned short lv[9] = {0, 1, 2, 300, 65535, 5, 6, 7, 8};
    assert_int_equal(psf_png_write_levels(path, lv, 3, 8, 1, err, sizeof err), 0);
    raw_png p;
    assert_int_equal(raw_png_read(path, &p), 0);
    assert_int_equal(raw8(&p, 1, 0), 255); /* 300 clamped */
    assert_int_equal(raw8(&p, 1, 1), 255);
    assert_int_equal(raw8(&p, 2, 2), 8);
    free(p.bytes);
    assert_int_equal(psf_png_write_levels(path, lv, 3, 16, 1, err, sizeof err), 0);
    assert_int_equal(raw_png_read(path, &p), 0);
    assert_int_equal(raw16(&p, 1, 0), 300);
    assert_int_equal(raw16(&p, 1, 1), 65535);
    free(p.bytes);
    assert_int_equal(tu_count_entries(dir), 1);
    tu_rmtree(dir);
    free(dir);
}

/* A PSF-like image's levels: a core of width w pixels over a floor, rings,
 * single-level noise (seeded), scaled to top; n x n, malloc'd. */
static unsigned short *psf_levels(int n, double w, double top, unsigned seed)
{
    unsigned short *lv = malloc(sizeof *lv * (size_t)n * n);
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c) {
            double x = (c - n / 2) / w, y = (r - n / 2) / w, q = sqrt(x * x + y * y);
            seed = seed * 1103515245u + 12345u;
            double v = top * exp(-0.1 * q) * (0.5 + 0.5 * cos(q)) + (seed >> 31);
            lv[(size_t)r * n + c] = (unsigned short)(v > 65535.0 ? 65535.0 : v);
        }
    return lv;
}

/* Levels written at every compression level and both depths decode to
 * exactly what was given: 1^2, 100^2 and 600^2 (level 1: ISA-L's igzip,
 * 0 and 2..9: libdeflate), PSF-like (a bright core, rings, a dark floor
 * with single-level noise). */
static void test_write_levels_decode_exactly(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/x.png", dir);
    static const int sizes[] = {1, 100, 600}, depths[] = {8, 16};
    for (int si = 0; si < 3; ++si) {
        int n = sizes[si];
        unsigned short *lv = psf_levels(n, 3.0, 65535.0, 12345u);
        for (int li = 0; li <= 9; ++li)
            for (int di = 0; di < 2; ++di) {
                int bits = depths[di];
                assert_int_equal(psf_png_write_levels(path, lv, n, bits, li, err, sizeof err), 0);
                raw_png p;
                assert_int_equal(raw_png_read(path, &p), 0);
                assert_int_equal(p.w, n);
                assert_int_equal(p.h, n);
                assert_int_equal(p.depth, bits);
                for (int r = 0; r < n; ++r)
                    for (int c = 0; c < n; ++c) {
                        unsigned want = lv[(size_t)r * n + c];
                        if (bits == 8) want = want > 255 ? 255 : want;
                        unsigned got = bits == 16 ? raw16(&p, r, c) : raw8(&p, r, c);
                        if (got != want)
                            fail_msg("%d^2 %d-bit level %d: (%d, %d) %u != %u", n, bits, li, r, c,
                                     got, want);
                    }
                free(p.bytes);
            }
        free(lv);
    }
    assert_int_equal(tu_count_entries(dir), 1);
    tu_rmtree(dir);
    free(dir);
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The file at path, whole (malloc'd), its size in *len; NULL on error. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    unsigned char *b = n > 0 ? malloc((size_t)n) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = b ? (size_t)n : 0;
    return b;
}

/* The written file as the PNG spec (2nd ed.) lays it out, checked with zlib
 * rather than libpng: the signature (5.2), IHDR first (11.2.2: N x N, the
 * depth, greyscale, methods 0, no interlace), every chunk's CRC (5.3: zlib's
 * crc32 over type and data), the IDAT data one zlib stream that inflates to
 * exactly the scanlines (filter type 0, then the samples big-endian, 8-bit
 * clamped at 255), IEND last and empty; libpng then reads it with no
 * warning. Every level, both depths, 37^2 (odd rows) and 256^2. */
static void test_write_png_layout(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/l.png", dir);
    static const unsigned char sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
    static const int sizes[] = {37, 256}, depths[] = {8, 16};
    for (int si = 0; si < 2; ++si) {
        const int n = sizes[si];
        unsigned short *lv = malloc(sizeof *lv * (size_t)n * n);
        for (int i = 0; i < n * n; ++i) /* a ramp of every byte value, a dark band */
            lv[i] = (unsigned short)((i / n) % 4 == 0 ? 0 : (unsigned)i * 2654435761u >> 16);
        for (int di = 0; di < 2; ++di)
            for (int level = 0; level <= 9; ++level) {
                const int bits = depths[di], bps = bits / 8;
                assert_int_equal(psf_png_write_levels(path, lv, n, bits, level, err, sizeof err),
                                 0);
                size_t len = 0, at = 8, idat_len = 0, nidat = 0;
                unsigned char *f = slurp(path, &len);
                assert_non_null(f);
                assert_true(len > 8 + 25 + 12 + 12);
                assert_memory_equal(f, sig, 8);
                unsigned char *idat = malloc(len);
                int chunks = 0, iend = 0;
                while (at + 12 <= len && !iend) {
                    const uint32_t clen = be32(f + at);
                    assert_true(clen <= len - at - 12);
                    const unsigned char *type = f + at + 4, *data = f + at + 8;
                    uLong crc = crc32(crc32(0L, type, 4), data, clen);
                    assert_int_equal(be32(data + clen), (uint32_t)crc);
                    if (chunks == 0) {
                        assert_memory_equal(type, "IHDR", 4);
                        assert_int_equal(clen, 13);
                        assert_int_equal(be32(data), n);
                        assert_int_equal(be32(data + 4), n);
                        assert_int_equal(data[8], bits);
                        for (int k = 9; k < 13; ++k)
                            assert_int_equal(data[k], 0);
                    } else if (!memcmp(type, "IDAT", 4)) {
                        memcpy(idat + idat_len, data, clen);
                        idat_len += clen;
                        ++nidat;
                    } else {
                        assert_memory_equal(type, "IEND", 4);
                        assert_int_equal(clen, 0);
                        iend = 1;
                    }
                    ++chunks;
                    at += 12 + clen;
                }
                assert_true(iend);
                assert_int_equal(at, len); /* nothing after IEND */
                assert_true(nidat >= 1);
                const size_t stride = 1 + (size_t)n * bps, raw_len = stride * n;
                unsigned char *raw = malloc(raw_len + 1), *want = malloc(raw_len);
                for (int r = 0; r < n; ++r) {
                    want[r * stride] = 0;
                    for (int c = 0; c < n; ++c) {
                        const unsigned v = lv[r * n + c];
                        if (bps == 2) {
                            want[r * stride + 1 + 2 * c] = (unsigned char)(v >> 8);
                            want[r * stride + 2 + 2 * c] = (unsigned char)v;
                        } else {
                            want[r * stride + 1 + c] = (unsigned char)(v > 255 ? 255 : v);
                        }
                    }
                }
                uLongf got = (uLongf)raw_len + 1;
                assert_int_equal(uncompress(raw, &got, idat, idat_len), Z_OK);
                assert_int_equal(got, raw_len);
                assert_memory_equal(raw, want, raw_len);
                png_warnings = 0;
                raw_png p;
                assert_int_equal(raw_png_read(path, &p), 0);
                assert_int_equal(png_warnings, 0);
                assert_int_equal(p.rowbytes, stride - 1);
                for (int r = 0; r < n; ++r)
                    assert_memory_equal(p.bytes + r * p.rowbytes, want + r * stride + 1,
                                        stride - 1);
                free(p.bytes);
                free(raw);
                free(want);
                free(idat);
                free(f);
            }
        free(lv);
    }
    assert_int_equal(tu_count_entries(dir), 1);
    tu_rmtree(dir);
    free(dir);
}

/* A file's bytes depend on its levels alone, not on what the heap held
 * before: a 64^2 image written first, then again after the heap was
 * filled with 16-bit 9s and freed (mmap and trimming off, so the writer's
 * blocks come from that memory): byte for byte the same (ISA-L's stream
 * has a window field that its init leaves alone: a stale 9 is a 512-byte
 * window, which made the second file 1.7x larger). */
static void test_write_bytes_reproducible(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char a[4096], b[4096], err[512] = "";
    snprintf(a, sizeof a, "%s/a.png", dir);
    snprintf(b, sizeof b, "%s/b.png", dir);
    unsigned short *small = psf_levels(64, 2.0, 65535.0, 7u);
    assert_int_equal(psf_png_write_levels(a, small, 64, 16, 1, err, sizeof err), 0);
    mallopt(M_MMAP_THRESHOLD, 1 << 28);
    mallopt(M_TRIM_THRESHOLD, 1 << 28);
    const size_t njunk = (size_t)16 << 20;
    unsigned short *junk = malloc(njunk * sizeof *junk);
    assert_non_null(junk);
    for (size_t i = 0; i < njunk; ++i)
        junk[i] = 9;
    free(junk);
    assert_int_equal(psf_png_write_levels(b, small, 64, 16, 1, err, sizeof err), 0);
    size_t la = 0, lb = 0;
    unsigned char *fa = slurp(a, &la), *fb = slurp(b, &lb);
    assert_non_null(fa);
    assert_non_null(fb);
    assert_int_equal(la, lb);
    assert_memory_equal(fa, fb, la);
    free(fa);
    free(fb);
    free(small);
    tu_rmtree(dir);
    free(dir);
}

/* Incompressible levels (seeded noise over every bit) at the default level
 * stay within what app/run/set_limits_disk.c reserves for a PNG: zlib's
 * compressBound of the scanlines (zlib.h) plus the 57 bytes of signature,
 * IHDR, IDAT's frame and IEND (igzip falls back to stored blocks). */
static void test_write_incompressible_within_bound(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/n.png", dir);
    static const int sizes[] = {1, 7, 64, 256, 1024};
    for (int si = 0; si < 5; ++si)
        for (int bits = 8; bits <= 16; bits += 8) {
            const int n = sizes[si];
            unsigned short *lv = malloc(sizeof *lv * (size_t)n * n);
            unsigned seed = 99u;
            for (int i = 0; i < n * n; ++i) {
                seed = seed * 1103515245u + 12345u;
                lv[i] = (unsigned short)((seed >> 16) & (bits == 8 ? 255u : 65535u));
            }
            assert_int_equal(psf_png_write_levels(path, lv, n, bits, 1, err, sizeof err), 0);
            const long long raw = (long long)n * (1 + (long long)n * bits / 8);
            const long long bound = (long long)compressBound((uLong)raw) + 57;
            if (file_size(path) > bound)
                fail_msg("%d^2 %d-bit: %lld bytes > %lld", n, bits, (long long)file_size(path),
                         bound);
            assert_true(file_size(path) > raw); /* noise: nothing to compress */
            free(lv);
        }
    tu_rmtree(dir);
    free(dir);
}

/* ---- reading ---- */

static void test_read_low_depth_gray(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path[4096], err[512] = "";
    float *data;
    int rows, cols, maxval;
    /* 1-bit: 8 x 2, row 0 = 10110000 -> 255 0 255 255 0 0 0 0. */
    unsigned char b1[2] = {0xB0, 0x01};
    snprintf(path, sizeof path, "%s/b1.png", dir);
    write_test_png(path, 8, 2, 1, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, b1, 1);
    assert_int_equal(psf_png_read_gray(path, &data, &rows, &cols, &maxval, err, sizeof err), 0);
    assert_int_equal(rows, 2);
    assert_int_equal(cols, 8);
    assert_int_equal(maxval, 255);
    const float e1[16] = {255, 0, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255};
    for (int i = 0; i < 16; ++i)
        assert_float_equal(data[i], e1[i], 0.0);
    free(data);
    /* 2-bit: levels 0..3 -> 0, 85, 170, 255. */
    unsigned char b2[1] = {0x1B}; /* 00 01 10 11 */
    snprintf(path, sizeof path, "%s/b2.png", dir);
    write_test_png(path, 4, 1, 2, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, b2, 1);
    assert_int_equal(psf_png_read_gray(path, &data, &rows, &cols, &maxval, err, sizeof err), 0);
    assert_int_equal(cols, 4);
    assert_float_equal(data[0], 0, 0.0);
    assert_float_equal(data[1], 85, 0.0);
    assert_float_equal(data[2], 170, 0.0);
    assert_float_equal(data[3], 255, 0.0);
    free(data);
    /* 4-bit: 0x0F -> 0, 255; 0x80 -> 136, 0. */
    unsigned char b4[2] = {0x0F, 0x80};
    snprintf(path, sizeof path, "%s/b4.png", dir);
    write_test_png(path, 2, 2, 4, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, b4, 1);
    assert_int_equal(psf_png_read_gray(path, &data, &rows, &cols, &maxval, err, sizeof err), 0);
    assert_float_equal(data[0], 0, 0.0);
    assert_float_equal(data[1], 255, 0.0);
    assert_float_equal(data[2], 136, 0.0);
    assert_float_equal(data[3], 0, 0.0);
    free(data);
    tu_rmtree(dir);
    free(dir);
}

static void test_read_interlaced_16(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path[4096], err[512] = "";
    enum { W = 13, H = 9 };
    unsigned char bytes[H * W * 2];
    for (int i = 0; i < W * H; ++i) {
        unsigned v = (unsigned)(i * 499 + 7) & 0xFFFF;
        bytes[2 * i] = (unsigned char)(v >> 8);
        bytes[2 * i + 1] = (unsigned char)(v & 0xFF);
    }
    snprintf(path, sizeof path, "%s/adam7.png", dir);
    write_test_png(path, W, H, 16, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_ADAM7, bytes, 2 * W);
    float *data;
    int rows, cols, maxval;
    assert_int_equal(psf_png_read_gray(path, &data, &rows, &cols, &maxval, err, sizeof err), 0);
    assert_int_equal(rows, H);
    assert_int_equal(cols, W);
    assert_int_equal(maxval, 65535);
    for (int i = 0; i < W * H; ++i)
        assert_float_equal(data[i], (float)((i * 499 + 7) & 0xFFFF), 0.0);
    free(data);
    tu_rmtree(dir);
    free(dir);
}

static void test_read_refused_types(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path[4096], err[512] = "";
    unsigned char bytes[64] = {0};
    const struct {
        int ctype, depth, bpp;
        const char *word;
    } cases[] = {
        {PNG_COLOR_TYPE_RGB, 8, 3, "RGB"},          {PNG_COLOR_TYPE_RGB_ALPHA, 8, 4, "RGBA"},
        {PNG_COLOR_TYPE_GRAY_ALPHA, 8, 2, "alpha"}, {PNG_COLOR_TYPE_PALETTE, 8, 1, "palette"},
        {PNG_COLOR_TYPE_RGB, 16, 6, "RGB"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        snprintf(path, sizeof path, "%s/t%zu.png", dir, k);
        write_test_png(path, 2, 2, cases[k].depth, cases[k].ctype, PNG_INTERLACE_NONE, bytes,
                       (size_t)(2 * cases[k].bpp));
        float *data = (float *)1;
        int rows = 7, cols = 7, maxval = 7;
        err[0] = '\0';
        assert_int_equal(psf_png_read_gray(path, &data, &rows, &cols, &maxval, err, sizeof err),
                         -1);
        assert_null(data);
        assert_int_equal(rows, 0);
        assert_int_equal(cols, 0);
        assert_non_null(strstr(err, path));
        assert_non_null(strstr(err, cases[k].word));
        assert_non_null(strstr(err, "grayscale"));
    }
    tu_rmtree(dir);
    free(dir);
}

static void test_read_broken_files(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("png");
    char path[4096], err[512] = "";
    float *data;
    int rows, cols, maxval;
    enum { N = 64 };
    float *img = malloc(sizeof *img * N * N);
    for (int i = 0; i < N * N; ++i)
        img[i] = (float)((i * 7919) % 1000); /* compresses poorly: many IDAT bytes */

    /* Truncated in half (inside IDAT), and at every few bytes. */
    snprintf(path, sizeof path, "%s/cut.png", dir);
    assert_int_equal(psf_png_write_image(path, img, N, 16, STRETCH_LINEAR, 1e6, 1, err, sizeof err),
                     0);
    const long full = file_size(path);
    assert_true(full > 1000);
    char good[4096];
    snprintf(good, sizeof good, "%s/good.png", dir);
    assert_int_equal(psf_png_write_image(good, img, N, 16, STRETCH_LINEAR, 1e6, 1, err, sizeof err),
                     0);
    truncate_to(path, full / 2);
    err[0] = '\0';
    assert_int_equal(psf_png_read_gray(path, &data, &rows, &cols, &maxval, err, sizeof err), -1);
    assert_null(data);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "truncated or corrupt"));

    /* Every length from the signature to one byte short: never a crash. */
    FILE *f = fopen(good, "rb");
    unsigned char *buf = malloc((size_t)full);
    assert_int_equal(fread(buf, 1, (size_t)full, f), (size_t)full);
    fclose(f);
    for (long n = 0; n < full; n += (n < 100 ? 1 : 37)) {
        f = fopen(path, "wb");
        assert_int_equal(fwrite(buf, 1, (size_t)n, f), (size_t)n);
        fclose(f);
        err[0] = '\0';
        assert_int_equal(psf_png_read_gray(path, &data, &rows, &cols, &maxval, err, sizeof err),
                         -1);
        assert_null(data);
        assert_non_null(strstr(err, path));
    }
    /* One byte short: the IEND chunk is cut. */
    f = fopen(path, "wb");
    assert_int_equal(fwrite(buf, 1, (size_t)full - 1, f), (size_t)full - 1);
    fclose(f);
    assert_int_equal(psf_png_read_gray(path, &data, &rows, &cols, &maxval, err, sizeof err), -1);

    /* A flipped byte in the middle of IDAT: CRC error. */
    buf[full / 2] ^= 0x5A;
    f = fopen(path, "wb");
    assert_int_equal(fwrite(buf, 1, (size_t)full, f), (size_t)full);
    fclose(f);
    err[0] = '\0';
    assert_int_equal(psf_png_read_gray(path, &data, &rows, &cols, &maxval, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    free(buf);

    /* Not a PNG at all; missing file. */
    snprintf(path, sizeof path, "%s/text.png", dir);
    assert_int_equal(tu_write_file(path, "P2\n2 2\n255\n0 1 2 3\n"), 0);
    assert_int_equal(psf_png_read_gray(path, &data, &rows, &cols, &maxval, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a PNG"));
    snprintf(path, sizeof path, "%s/nothere.png", dir);
    assert_int_equal(psf_png_read_gray(path, &data, &rows, &cols, &maxval, err, sizeof err), -1);
    assert_non_null(strstr(err, path));

    /* The intact copy still reads. */
    assert_int_equal(psf_png_read_gray(good, &data, &rows, &cols, &maxval, err, sizeof err), 0);
    assert_int_equal(rows, N);
    free(data);
    free(img);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stretch_linear),
        cmocka_unit_test(test_stretch_sqrt),
        cmocka_unit_test(test_stretch_log),
        cmocka_unit_test(test_stretch_degenerate),
        cmocka_unit_test(test_stretch_levels_exact),
        cmocka_unit_test(test_write_16bit_big_endian),
        cmocka_unit_test(test_write_8bit),
        cmocka_unit_test(test_write_stretches_in_file),
        cmocka_unit_test(test_write_degenerate_images),
        cmocka_unit_test(test_write_replaces_and_compression),
        cmocka_unit_test(test_write_errors),
        cmocka_unit_test(test_write_levels),
        cmocka_unit_test(test_write_levels_decode_exactly),
        cmocka_unit_test(test_write_png_layout),
        cmocka_unit_test(test_write_bytes_reproducible),
        cmocka_unit_test(test_write_incompressible_within_bound),
        cmocka_unit_test(test_read_low_depth_gray),
        cmocka_unit_test(test_read_interlaced_16),
        cmocka_unit_test(test_read_refused_types),
        cmocka_unit_test(test_read_broken_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
