/* SPDX-License-Identifier: BSD-3-Clause */
/* fits_scan / fits_source on gzip-compressed FITS: a .fits.gz reads as the
 * FITS it holds (through fits_scan and cfitsio); a gzip bomb, corrupt,
 * truncated or trailing data, and a file cfitsio would size wrongly are
 * refused before cfitsio sees them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "app/formats/fits.h"
#include "app/formats/fits_scan.h"
#include "app/formats/fits_source.h"
#include "app/set/maps.h"
#include "tests/support/testutil.h"

static char *g_dir;
static maps_opd_units units;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("fits_scan");
    return g_dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmtree(g_dir);
    free(g_dir);
    return 0;
}

static const char *in_dir(const char *name)
{
    static char buf[4][4096];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", g_dir, name);
    return b;
}

static unsigned char *slurp(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    rewind(f);
    unsigned char *b = malloc((size_t)*n + 1);
    assert_int_equal(fread(b, 1, (size_t)*n, f), (size_t)*n);
    fclose(f);
    return b;
}

static void spit(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* gzip src into dst at level (0: stored, larger than src). */
static void gzip_file(const char *src, const char *dst, int level)
{
    long n;
    unsigned char *b = slurp(src, &n);
    char mode[8];
    snprintf(mode, sizeof mode, "wb%d", level);
    gzFile gz = gzopen(dst, mode);
    assert_non_null(gz);
    assert_int_equal(gzwrite(gz, b, (unsigned)n), (int)n);
    assert_int_equal(gzclose(gz), Z_OK);
    free(b);
}

/* An npix x npix float32 map (i / npix^2) as path. */
static void write_map(const char *path, int npix)
{
    float *img = malloc(sizeof *img * (size_t)npix * npix);
    for (int i = 0; i < npix * npix; ++i)
        img[i] = (float)((i * 7919) % 1000) / 1000.0f;
    char err[512];
    fits_kv kv = {.key = "BUNIT", .type = FITS_KV_STRING, .s = "meter"};
    assert_int_equal(psf_fits_write_image(path, img, npix, &kv, 1, err, sizeof err), 0);
    free(img);
}

static void expect_refused(const char *path, const char *what)
{
    fits_scan_result r;
    char err[1024] = "";
    assert_int_equal(fits_scan_image(path, &r, err, sizeof err), -1);
    if (!strstr(err, what)) fail_msg("%s: \"%s\" lacks \"%s\"", path, err, what);
    assert_non_null(strstr(err, path));
    float *data = (float *)1;
    int rows = 1, cols = 1;
    assert_int_equal(psf_fits_read_image(path, &data, &rows, &cols, err, sizeof err), -1);
    assert_null(data);
    assert_non_null(strstr(err, what));
}

static void test_gzip_reads_as_plain(void **state)
{
    (void)state;
    const char *plain = strdup(in_dir("m.fits")), *gz = strdup(in_dir("m.fits.gz"));
    write_map(plain, 40);
    gzip_file(plain, gz, 9);
    fits_scan_result a, b;
    char err[1024] = "";
    assert_int_equal(fits_scan_image(plain, &a, err, sizeof err), 0);
    if (fits_scan_image(gz, &b, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(b.hdu, a.hdu);
    assert_int_equal(b.bunit, 1);
    assert_string_equal(b.bunit_text, "meter");
    float *p = NULL, *q = NULL;
    int rp, cp, rq, cq;
    assert_int_equal(psf_fits_read_image(plain, &p, &rp, &cp, err, sizeof err), 0);
    if (psf_fits_read_image(gz, &q, &rq, &cq, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(rq, rp);
    assert_int_equal(cq, cp);
    assert_memory_equal(p, q, sizeof *p * (size_t)rp * cp);
    free(p);
    free(q);

    /* Cut short, a byte changed, or more after the gzip member: refused. */
    long n;
    unsigned char *z = slurp(gz, &n);
    const char *bad = in_dir("bad.fits.gz");
    spit(bad, z, (size_t)n / 2);
    expect_refused(bad, "the gzip data end early");
    z[n / 2] ^= 0x55;
    spit(bad, z, (size_t)n);
    expect_refused(bad, "corrupt gzip data (zlib: ");
    z[n / 2] ^= 0x55;
    unsigned char *twice = malloc(2 * (size_t)n);
    memcpy(twice, z, (size_t)n);
    memcpy(twice + n, z, (size_t)n);
    spit(bad, twice, 2 * (size_t)n);
    expect_refused(bad, "data after the end of the gzip stream");
    free(twice);
    /* A wrong ISIZE (cfitsio would allocate what it says): zlib checks it. */
    z[n - 1] = 0xff;
    spit(bad, z, (size_t)n);
    expect_refused(bad, "corrupt gzip data (zlib: incorrect length check)");
    free(z);

    /* Stored, larger than the 12 kB FITS it holds: cfitsio would size it
     * as 4 GiB more. */
    const char *stored = in_dir("stored.fits.gz");
    gzip_file(plain, stored, 0);
    expect_refused(stored, "larger than the FITS it holds");
    free((void *)plain);
    free((void *)gz);
}

/* A gzip file of more than 1 GiB of zeros, made in a moment: after a full
 * flush, deflate's output for the same 16 MiB is the same bytes, so one
 * chunk's is written 65 times (RFC 1952 header and trailer by hand). */
static void write_bomb(const char *path)
{
    enum { CHUNK = 16 << 20, TIMES = 65 };
    unsigned char *zeros = calloc(CHUNK, 1), *out = malloc(CHUNK);
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY), Z_OK);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    static const unsigned char header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    fwrite(header, 1, sizeof header, f);
    uLong crc = crc32(0, Z_NULL, 0), one = crc32(crc, zeros, CHUNK);
    size_t len = 0;
    for (int i = 0; i < 2; ++i) { /* the second chunk's bytes are the steady ones */
        z.next_in = zeros;
        z.avail_in = CHUNK;
        z.next_out = out;
        z.avail_out = CHUNK;
        assert_int_equal(deflate(&z, Z_FULL_FLUSH), Z_OK);
        assert_int_equal(z.avail_in, 0);
        len = CHUNK - z.avail_out;
        if (i == 0) fwrite(out, 1, len, f);
    }
    for (int i = 1; i < TIMES; ++i)
        fwrite(out, 1, len, f);
    for (int i = 0; i < TIMES; ++i)
        crc = crc32_combine(crc, one, CHUNK);
    z.next_out = out;
    z.avail_out = CHUNK;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    fwrite(out, 1, CHUNK - z.avail_out, f);
    unsigned long isize = (unsigned long)CHUNK * TIMES;
    unsigned char trailer[8];
    for (int i = 0; i < 4; ++i) {
        trailer[i] = (unsigned char)(crc >> (8 * i));
        trailer[4 + i] = (unsigned char)(isize >> (8 * i));
    }
    fwrite(trailer, 1, sizeof trailer, f);
    assert_int_equal(fclose(f), 0);
    deflateEnd(&z);
    free(zeros);
    free(out);
}

static void test_gzip_bomb(void **state)
{
    (void)state;
    const char *bomb = in_dir("bomb.fits.gz");
    write_bomb(bomb);
    struct stat st;
    assert_int_equal(stat(bomb, &st), 0);
    assert_true(st.st_size < (2 << 20)); /* ~1 MB for 1040 MiB */
    expect_refused(bomb, "inflate to more than 1073741824 bytes (1 GiB)");
    fits_source s;
    char err[512];
    assert_int_equal(fits_source_open(&s, bomb, err, sizeof err), -1);
    assert_null(s.f);
}

/* Cards (each padded to 80 characters), END, and one block of zero data. */
static void write_cards(const char *path, const char *const *cards, int n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    char card[81];
    long len = 0;
    for (int i = 0; i <= n; ++i, len += 80) {
        snprintf(card, sizeof card, "%-80s", i < n ? cards[i] : "END");
        fwrite(card, 1, 80, f);
    }
    for (; len % 2880 || len < 2 * 2880; ++len)
        fputc(len < 2880 ? ' ' : 0, f);
    assert_int_equal(fclose(f), 0);
}

/* Whatever a file holds, a message shows none of it but the keywords and
 * numbers psfsim read: a secret given as a map stays secret. */
static void test_no_echo(void **state)
{
    (void)state;
    static const char *const secret[] = {"hunter2", "password", "PASSWORD", "HUNTER2"};
    const char *p = in_dir("secret.fits");
    const char *text[] = {"password = hunter2"};
    const char *simple[] = {"SIMPLE  = hunter2"};
    const char *key[] = {"SIMPLE  =                    T", "BITPIX  =                  -32",
                         "NAXIS   =                    2", "NAXIS1  = 'hunter2 '",
                         "NAXIS2  =                    2"};
    const char *primary[] = {"SIMPLE  =                    T", "BITPIX  =                    8",
                             "NAXIS   =                    0", "EXTEND  =                    T"};
    const char *ext[] = {"XTENSION= 'hunter2 '", "BITPIX  =                    8",
                         "NAXIS   =                    0", "PCOUNT  =                    0",
                         "GCOUNT  =                    1"};
    const char *zimage[] = {"XTENSION= 'IMAGE   '", "BITPIX  =                    8",
                            "NAXIS   =                    0", "ZIMAGE  = hunter2"};
    const char *big[] = {"SIMPLE  =                    T", "BITPIX  =                    8",
                         "NAXIS   =                    1", "NAXIS1  = 99999999999999999999"};
    struct {
        const char *const *cards;
        int n;
        const char *said;
    } files[] = {
        {text, 1, "not a FITS file (it does not begin with SIMPLE = T)"},
        {simple, 1, "not a FITS file (it does not begin with SIMPLE = T)"},
        {key, 5, "HDU 1: NAXIS1 is not an integer"},
        {big, 4, "HDU 1: NAXIS1 is too large"},
    };
    char err[1024];
    fits_scan_result r;
    float *data;
    int rows, cols;
    for (size_t k = 0; k < sizeof files / sizeof *files; ++k) {
        write_cards(p, files[k].cards, files[k].n);
        for (int via = 0; via < 3; ++via) {
            err[0] = '\0';
            int rc = via == 0   ? fits_scan_image(p, &r, err, sizeof err)
                     : via == 1 ? psf_fits_read_image(p, &data, &rows, &cols, err, sizeof err)
                                : maps_load_opd(p, 1.0, ZUNITS_NM, &data, &rows, &cols, &units, err,
                                                sizeof err);
            assert_int_equal(rc, -1);
            if (!strstr(err, files[k].said)) fail_msg("\"%s\" lacks \"%s\"", err, files[k].said);
            for (size_t w = 0; w < sizeof secret / sizeof *secret; ++w)
                if (strstr(err, secret[w])) fail_msg("\"%s\" echoes the file", err);
        }
    }
    /* An extension after an empty primary. */
    struct {
        const char *const *cards;
        int n;
        const char *said;
    } exts[] = {
        {ext, 5, "HDU 2: a non-standard extension before any image"},
        {zimage, 4, "HDU 2: ZIMAGE is not T or F"},
    };
    for (size_t k = 0; k < sizeof exts / sizeof *exts; ++k) {
        write_cards(p, primary, 4);
        FILE *f = fopen(p, "r+b");
        assert_non_null(f);
        fseek(f, 2880, SEEK_SET); /* the extension's header over the zero block */
        char card[81];
        for (int i = 0; i < 36; ++i) {
            snprintf(card, sizeof card, "%-80s",
                     i < exts[k].n    ? exts[k].cards[i]
                     : i == exts[k].n ? "END"
                                      : "");
            fwrite(card, 1, 80, f);
        }
        assert_int_equal(fclose(f), 0);
        err[0] = '\0';
        assert_int_equal(fits_scan_image(p, &r, err, sizeof err), -1);
        if (!strstr(err, exts[k].said)) fail_msg("\"%s\" lacks \"%s\"", err, exts[k].said);
        for (size_t w = 0; w < sizeof secret / sizeof *secret; ++w)
            if (strstr(err, secret[w])) fail_msg("\"%s\" echoes the file", err);
    }
    /* Not PNG either: said without the content. */
    const char *png = in_dir("secret.png");
    assert_int_equal(tu_write_file(png, "password = hunter2\n"), 0);
    assert_int_equal(maps_load_transmission(png, &data, &rows, &cols, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a PNG file"));
    assert_null(strstr(err, "hunter2"));
}

/* fits_scan_layout_fd walks every HDU of a cube as fits_cube.c writes it
 * (3 planes of 8 x 8 float32, CFGHASH, the PLANES table of 2 double
 * columns) and says whether the file is exactly its HDUs: one cut short,
 * one with bytes after, one with a block after (not an HDU) are told. */
static void test_layout(void **state)
{
    (void)state;
    int dirfd = open(g_dir, O_RDONLY | O_DIRECTORY);
    assert_true(dirfd >= 0);
    fits_kv kv = {.key = "CFGHASH", .type = FITS_KV_STRING, .s = "0123abcd"};
    char err[1024] = "";
    psf_fits_cube *c = psf_fits_cube_open_at(dirfd, g_dir, "l.fits", 8, 3, &kv, 1, err, sizeof err);
    if (!c) fail_msg("%s", err);
    float plane[64] = {1.0f};
    for (int k = 0; k < 3; ++k)
        assert_int_equal(psf_fits_cube_write_plane(c, k, plane, err, sizeof err), 0);
    double a[3] = {0, 1, 2}, b[3] = {5, 6, 7}, *cols[2] = {a, b};
    const char *names[2] = {"INDEX", "STREHL"}, *tunit[2] = {"", ""};
    assert_int_equal(psf_fits_cube_commit(c, 2, names, tunit, cols, err, sizeof err), 0);
    const char *p = in_dir("l.fits");
    long n;
    unsigned char *bytes = slurp(p, &n);
    int fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    fits_scan_layout l;
    if (fits_scan_layout_fd(fd, "l.fits", "CFGHASH", &l, err, sizeof err)) fail_msg("%s", err);
    close(fd);
    assert_int_equal(l.nhdus, 2);
    const fits_scan_hdu *h = &l.hdus[0], *t = &l.hdus[1];
    assert_string_equal(h->xtension, "");
    assert_int_equal(h->bitpix, -32);
    assert_int_equal(h->naxis, 3);
    assert_int_equal(h->naxes[0], 8);
    assert_int_equal(h->naxes[1], 8);
    assert_int_equal(h->naxes[2], 3);
    assert_int_equal(h->data_bytes, 8 * 8 * 3 * 4);
    assert_int_equal(h->named, 1);
    assert_string_equal(h->named_text, "0123abcd");
    assert_int_equal(h->extname, 0);
    assert_string_equal(t->xtension, "BINTABLE");
    assert_int_equal(t->extname, 1);
    assert_string_equal(t->extname_text, "PLANES");
    assert_int_equal(t->bitpix, 8);
    assert_int_equal(t->naxis, 2);
    assert_int_equal(t->naxes[0], 16);
    assert_int_equal(t->naxes[1], 3);
    assert_int_equal(t->pcount, 0);
    assert_int_equal(t->gcount, 1);
    assert_int_equal(t->named, 0);
    assert_int_equal(h->header_bytes % 2880, 0);
    assert_int_equal(t->header_bytes % 2880, 0);
    assert_int_equal(l.size, n);
    assert_int_equal(l.total, h->header_bytes + 2880 + t->header_bytes + 2880);
    assert_int_equal(l.exact, 1);
    /* Changed: cut by 100 bytes, 100 bytes after, a block of zeros after. */
    const char *q = in_dir("l2.fits");
    static const unsigned char zeros[2880];
    for (int how = 0; how < 3; ++how) {
        FILE *f = fopen(q, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(bytes, 1, (size_t)(how ? n : n - 100), f),
                         (size_t)(how ? n : n - 100));
        if (how)
            assert_int_equal(fwrite(zeros, 1, how == 1 ? 100 : 2880, f), how == 1 ? 100 : 2880);
        assert_int_equal(fclose(f), 0);
        fd = open(q, O_RDONLY);
        err[0] = '\0';
        int rc = fits_scan_layout_fd(fd, "l2.fits", "CFGHASH", &l, err, sizeof err);
        close(fd);
        if (how == 2) {
            assert_int_equal(rc, -1);
            assert_string_equal(err, "l2.fits: not a valid FITS file: HDU 3: the header does not "
                                     "begin with XTENSION");
            continue;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(l.nhdus, 2);
        assert_int_equal(l.size, how ? n + 100 : n - 100);
        assert_int_equal(l.total, n);
        assert_int_equal(l.exact, 0);
    }
    /* Not a regular file. */
    assert_int_equal(fits_scan_layout_fd(dirfd, "d", NULL, &l, err, sizeof err), -1);
    assert_string_equal(err, "d: not a regular file");
    free(bytes);
    close(dirfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gzip_reads_as_plain),
        cmocka_unit_test(test_gzip_bomb),
        cmocka_unit_test(test_no_echo),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
