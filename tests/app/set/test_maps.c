/* SPDX-License-Identifier: BSD-3-Clause */
/* maps: transmission and OPD maps from PNG and FITS, by extension; values
 * normalised, scaled and checked; refused and broken files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fitsio.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "app/formats/fits.h"
#include "app/set/maps.h"
#include "app/formats/png_io.h"
/* libpng declares a psf_png_write_image of its own (see png_io.h). */
#include <png.h>

#include "tests/support/psf_harness.h"
#include "tests/support/testutil.h"

static char *g_dir;
static maps_opd_units u; /* the unit of the last OPD map loaded */

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

    /* .fits.gz (any case) is gzip-compressed FITS: the same map. */
    const char *pz = in_dir("pupil.FITS.gz");
    gzFile gz = gzopen(pz, "wb9");
    assert_non_null(gz);
    FILE *f = fopen(p, "rb");
    char block[2880];
    size_t n;
    while ((n = fread(block, 1, sizeof block, f)) > 0)
        assert_int_equal(gzwrite(gz, block, (unsigned)n), (int)n);
    fclose(f);
    assert_int_equal(gzclose(gz), Z_OK);
    if (maps_load_transmission(pz, &t, &rows, &cols, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(rows, 3);
    assert_float_equal(t[1], 0.5, 0.0);
    assert_float_equal(t[8], 0.125, 0.0);
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
    assert_int_equal(maps_load_opd(p, 2.5, ZUNITS_NM, &o, &rows, &cols, &u, err, sizeof err), 0);
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
    assert_int_equal(maps_load_opd(pp, 0.5, ZUNITS_NM, &o, &rows, &cols, &u, err, sizeof err), 0);
    assert_float_equal(o[0], 0.0, 0.0);
    assert_float_equal(o[1], 0.5, 0.0);
    assert_float_equal(o[2], 500.0, 0.0);
    assert_float_equal(o[3], 32767.5, 0.0);
    free(o);

    /* Infinity in an OPD map, or a non-finite scale, is an error. */
    float inf[4] = {0, -INFINITY, 0, 0};
    assert_int_equal(psf_fits_write_image(p, inf, 2, NULL, 0, err, sizeof err), 0);
    o = (float *)1;
    assert_int_equal(maps_load_opd(p, 1.0, ZUNITS_NM, &o, &rows, &cols, &u, err, sizeof err), -1);
    assert_null(o);
    assert_non_null(strstr(err, p));
    assert_non_null(strstr(err, "-inf"));
    assert_int_equal(maps_load_opd(pp, NAN, ZUNITS_NM, &o, &rows, &cols, &u, err, sizeof err), -1);
    assert_non_null(strstr(err, pp));
}

/* A cols x rows float FITS map through cfitsio with BUNIT = bunit (none
 * when NULL; bunit_int: an integer BUNIT instead), in an image extension
 * after a primary whose BUNIT is 'nm' when ext. */
static void write_map(const char *path, const char *bunit, int bunit_int, int ext, int rows,
                      int cols, const float *v)
{
    fitsfile *f = NULL;
    int status = 0;
    long ax[2] = {cols, rows};
    remove(path);
    fits_create_diskfile(&f, path, &status);
    if (ext) {
        fits_create_img(f, 8, 0, NULL, &status);
        fits_update_key_str(f, "BUNIT", "nm", NULL, &status);
    }
    fits_create_img(f, FLOAT_IMG, 2, ax, &status);
    if (bunit) fits_update_key_str(f, "BUNIT", bunit, NULL, &status);
    if (bunit_int) fits_update_key_lng(f, "BUNIT", bunit_int, NULL, &status);
    fits_write_img(f, TFLOAT, 1, (LONGLONG)rows * cols, (void *)(uintptr_t)v, &status);
    fits_close_file(f, &status);
    assert_int_equal(status, 0);
}

/* BUNIT: lengths to nm, phases to waves; without one, the config's unit. */
static void test_opd_bunit(void **state)
{
    (void)state;
    static const struct {
        const char *bunit;
        double factor;
        zernike_units units;
    } cases[] = {
        {"meter", 1e9, ZUNITS_NM},
        {"m", 1e9, ZUNITS_NM},
        {"METERS", 1e9, ZUNITS_NM},
        {"metre", 1e9, ZUNITS_NM},
        {"um", 1e3, ZUNITS_NM},
        {"micron", 1e3, ZUNITS_NM},
        {"Microns", 1e3, ZUNITS_NM},
        {"nm", 1.0, ZUNITS_NM},
        {"nanometers", 1.0, ZUNITS_NM},
        {"rad", 1.0 / 6.283185307179586, ZUNITS_WAVES},
        {"radians", 1.0 / 6.283185307179586, ZUNITS_WAVES},
        {"waves", 1.0, ZUNITS_WAVES},
        {"wave", 1.0, ZUNITS_WAVES},
    };
    char err[512] = "";
    float *o;
    int rows, cols;
    const float v[4] = {1e-7f, -2.5e-8f, 3.0f, 0.0f};
    const char *p = in_dir("unit.fits");
    for (size_t k = 0; k < sizeof cases / sizeof *cases; ++k) {
        write_map(p, cases[k].bunit, 0, 0, 2, 2, v);
        for (int fallback = 0; fallback < 2; ++fallback) { /* BUNIT wins over the config's */
            zernike_units fb = fallback ? ZUNITS_WAVES : ZUNITS_NM;
            if (maps_load_opd(p, 2.0, fb, &o, &rows, &cols, &u, err, sizeof err) != 0)
                fail_msg("BUNIT = '%s': %s", cases[k].bunit, err);
            for (int i = 0; i < 4; ++i)
                assert_float_equal(o[i], (float)((double)v[i] * 2.0 * cases[k].factor),
                                   1e-6 * fabs(v[i] * 2.0 * cases[k].factor));
            assert_int_equal(u.units, cases[k].units);
            char want[64];
            snprintf(want, sizeof want, "BUNIT = '%s'", cases[k].bunit);
            assert_non_null(strstr(u.what, want));
            free(o);
        }
    }
    /* The image's own BUNIT counts, not the primary's ('nm') before it. */
    write_map(p, "meter", 0, 1, 2, 2, v);
    assert_int_equal(maps_load_opd(p, 1.0, ZUNITS_NM, &o, &rows, &cols, &u, err, sizeof err), 0);
    assert_float_equal(o[0], 100.0, 1e-4);
    assert_non_null(strstr(u.what, "m (the map's BUNIT = 'meter')"));
    free(o);

    /* No BUNIT, or a blank one: aberrations.opd_map.units (nm by default). */
    write_map(p, NULL, 0, 0, 2, 2, v);
    assert_int_equal(maps_load_opd(p, 1.0, ZUNITS_NM, &o, &rows, &cols, &u, err, sizeof err), 0);
    assert_true(o[2] == 3.0f);
    assert_int_equal(u.units, ZUNITS_NM);
    assert_non_null(strstr(u.what, "nm (aberrations.opd_map.units; the map has no BUNIT)"));
    free(o);
    assert_int_equal(maps_load_opd(p, 1.0, ZUNITS_WAVES, &o, &rows, &cols, &u, err, sizeof err), 0);
    assert_int_equal(u.units, ZUNITS_WAVES);
    assert_non_null(strstr(u.what, "waves (aberrations.opd_map.units"));
    free(o);
    write_map(p, "", 0, 0, 2, 2, v);
    assert_int_equal(maps_load_opd(p, 1.0, ZUNITS_NM, &o, &rows, &cols, &u, err, sizeof err), 0);
    assert_true(o[2] == 3.0f);
    assert_non_null(strstr(u.what, "blank BUNIT"));
    free(o);
    unsigned short lv[4] = {0, 1, 2, 3};
    const char *pp = in_dir("unit.png");
    assert_int_equal(psf_png_write_levels(pp, lv, 2, 16, 1, err, sizeof err), 0);
    assert_int_equal(maps_load_opd(pp, 1.0, ZUNITS_WAVES, &o, &rows, &cols, &u, err, sizeof err),
                     0);
    assert_int_equal(u.units, ZUNITS_WAVES);
    assert_non_null(strstr(u.what, "a PNG has no BUNIT"));
    free(o);

    /* An unknown unit, or a BUNIT that is not a string: an error naming both. */
    write_map(p, "furlong", 0, 0, 2, 2, v);
    o = (float *)1;
    assert_int_equal(maps_load_opd(p, 1.0, ZUNITS_NM, &o, &rows, &cols, &u, err, sizeof err), -1);
    assert_null(o);
    assert_int_equal(rows, 0);
    assert_non_null(strstr(err, p));
    assert_non_null(strstr(err, "BUNIT = 'furlong' is not a unit of OPD"));
    write_map(p, NULL, 7, 0, 2, 2, v);
    assert_int_equal(maps_load_opd(p, 1.0, ZUNITS_NM, &o, &rows, &cols, &u, err, sizeof err), -1);
    assert_non_null(strstr(err, p));
    assert_non_null(strstr(err, "BUNIT is not a quoted string"));
    /* A transmission map has no unit: its BUNIT is not read. */
    float t[4] = {0, 0.5f, 1, 1};
    write_map(p, "furlong", 0, 0, 2, 2, t);
    assert_int_equal(maps_load_transmission(p, &o, &rows, &cols, err, sizeof err), 0);
    free(o);
}

/* The PSF of an OPD map (16 x 16, 0..~120 nm of defocus and tilt) given
 * in nm, in m, as a phase in rad or in waves at 550 nm: the same image. A
 * broadband image (500 and 600 nm) of the rad map is that of the same
 * values in units = "waves" (the phase is the same at every wavelength). */
static float *psf_of(const float *opd, const char *bunit, const char *extra)
{
    const char *p = in_dir("psf_opd.fits");
    write_map(p, bunit, 0, 0, 16, 16, opd);
    const char *cfg = tu_format("name = \"u\";\n"
                                "optics: { %s aperture: { diameter_m = 1.0; }; };\n"
                                "sampling: { pupil_samples = 32; };\n"
                                "aberrations: { opd_map: { file = \"%s\"; %s }; };\n",
                                strstr(extra, "units") ? "wavelengths_nm = [500.0, 600.0];"
                                                       : "wavelength_nm = 550.0;",
                                p, extra);
    long long n = 0;
    int npix = 0;
    float *img = harness_compute_all(cfg, NULL, &n, &npix);
    assert_non_null(img);
    assert_int_equal(n, 1);
    assert_int_equal(npix, 64);
    return img;
}

static void test_opd_bunit_psf(void **state)
{
    (void)state;
    float nm[256], m[256], rad[256], waves[256];
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 16; ++c) {
            double x = (c - 7.5) / 8, y = (r - 7.5) / 8;
            int i = r * 16 + c;
            nm[i] = (float)(60.0 * (x * x + y * y) + 20.0 * x);
            m[i] = (float)(nm[i] * 1e-9);
            rad[i] = (float)(6.283185307179586 * nm[i] / 550.0);
            waves[i] = (float)(nm[i] / 550.0);
        }
    float *a = psf_of(nm, "nm", ""), *b = psf_of(m, "meter", "");
    float *c = psf_of(rad, "rad", ""), *d = psf_of(waves, "waves", "");
    float *flat = psf_of(waves, NULL, "scale = 1e-30;");
    assert_true(tu_rel_l2(a, b, 64 * 64) < 1e-6);
    assert_true(tu_rel_l2(a, c, 64 * 64) < 1e-6);
    assert_true(tu_rel_l2(a, d, 64 * 64) < 1e-6);
    assert_true(tu_rel_l2(a, flat, 64 * 64) > 1e-2); /* the map does something */
    float *e = psf_of(rad, "radians", "units = \"nm\";");
    float *f = psf_of(waves, NULL, "units = \"waves\";");
    float *g = psf_of(nm, NULL, "units = \"nm\";");
    assert_true(tu_rel_l2(e, f, 64 * 64) < 1e-6);
    assert_true(tu_rel_l2(e, g, 64 * 64) > 1e-4); /* nm: the phase scales as 1/lambda */
    free(a), free(b), free(c), free(d), free(e), free(f), free(g), free(flat);
}

/* A grayscale PNG of depth bits (1..8) through libpng, w x h, a ramp. */
static void write_gray_png(const char *path, int w, int h, int bits)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) fail_msg("libpng failed writing the test file");
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, bits, PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    unsigned char row[64];
    for (int r = 0; r < h; ++r) {
        for (int i = 0; i < 64; ++i)
            row[i] = (unsigned char)(37 * r + 11 * i);
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

/* An OPD map PNG must be 16-bit; an aperture map PNG may have any depth. */
static void test_opd_png_depth(void **state)
{
    (void)state;
    char err[512] = "";
    float *o;
    int rows, cols;
    const int depths[] = {1, 2, 4, 8};
    for (int k = 0; k < 4; ++k) {
        const char *p = in_dir("low.png");
        write_gray_png(p, 4, 4, depths[k]);
        o = (float *)1;
        assert_int_equal(maps_load_opd(p, 1.0, ZUNITS_NM, &o, &rows, &cols, &u, err, sizeof err),
                         -1);
        assert_null(o);
        assert_int_equal(rows, 0);
        assert_non_null(strstr(err, p));
        assert_non_null(strstr(err, "an OPD map PNG must be 16-bit grayscale"));
        assert_int_equal(maps_load_transmission(p, &o, &rows, &cols, err, sizeof err), 0);
        assert_int_equal(rows, 4);
        for (int i = 0; i < 16; ++i)
            assert_true(o[i] >= 0.0f && o[i] <= 1.0f);
        free(o);
    }
}

/* What load() writes on stderr (the log), into out. */
static void stderr_of(void (*load)(const char *), const char *path, char *out, size_t outlen)
{
    const char *log = in_dir("stderr.txt");
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    load(path);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    FILE *f = fopen(log, "r");
    size_t n = fread(out, 1, outlen - 1, f);
    out[n] = '\0';
    fclose(f);
}

static void load_both(const char *path)
{
    char err[512];
    float *o;
    int rows, cols;
    assert_int_equal(maps_load_transmission(path, &o, &rows, &cols, err, sizeof err), 0);
    free(o);
    assert_int_equal(maps_load_opd(path, 1.0, ZUNITS_NM, &o, &rows, &cols, &u, err, sizeof err), 0);
    free(o);
}

/* A non-square map is stretched over D x D: said once per load. */
static void test_non_square_warns(void **state)
{
    (void)state;
    float v[6] = {0, 0.5f, 1, 1, 0.5f, 0};
    const char *p = strdup(in_dir("wide.fits"));
    write_map(p, NULL, 0, 0, 2, 3, v);
    char out[4096];
    stderr_of(load_both, p, out, sizeof out);
    char want[4200];
    snprintf(want, sizeof want,
             "psfsim: %s: the map is 2 rows x 3 columns, not square: it is stretched over D x D "
             "(a pixel D/3 wide and D/2 high)\n",
             p);
    const char *first = strstr(out, want);
    if (!first) fail_msg("no warning in \"%s\"", out);
    assert_non_null(strstr(first + 1, want)); /* transmission and OPD */
    write_map(p, NULL, 0, 0, 3, 3, (float[9]){0});
    stderr_of(load_both, p, out, sizeof out);
    assert_null(strstr(out, "not square"));
    free((void *)p);
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
    assert_int_equal(maps_load_opd(p, 1.0, ZUNITS_NM, &t, &rows, &cols, &u, err, sizeof err), -1);
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
    assert_int_equal(maps_load_opd(pp, 1.0, ZUNITS_NM, &t, &rows, &cols, &u, err, sizeof err), -1);

    const char *pf = strdup(in_dir("cut.fits"));
    assert_int_equal(psf_fits_write_image(pf, img, N, NULL, 0, err, sizeof err), 0);
    truncate_to(pf, file_size(pf) / 2);
    err[0] = '\0';
    assert_int_equal(maps_load_transmission(pf, &t, &rows, &cols, err, sizeof err), -1);
    assert_null(t);
    assert_non_null(strstr(err, pf));
    assert_int_equal(maps_load_opd(pf, 1.0, ZUNITS_NM, &t, &rows, &cols, &u, err, sizeof err), -1);
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
    const char *names[] = {"pupil.jpg", "pupil",    "dir.png/pupil", "pupil.png.gz",
                           "pupil.",    "pupil.gz", "pupil.fits.zip"};
    for (size_t k = 0; k < sizeof names / sizeof *names; ++k) {
        const char *p = in_dir(names[k]);
        err[0] = '\0';
        assert_int_equal(maps_load_transmission(p, &t, &rows, &cols, err, sizeof err), -1);
        assert_null(t);
        assert_non_null(strstr(err, p));
        assert_non_null(strstr(err, "unknown map file type"));
        assert_int_equal(maps_load_opd(p, 1.0, ZUNITS_NM, &t, &rows, &cols, &u, err, sizeof err),
                         -1);
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
        cmocka_unit_test(test_opd_bunit),
        cmocka_unit_test(test_opd_bunit_psf),
        cmocka_unit_test(test_opd_png_depth),
        cmocka_unit_test(test_non_square_warns),
        cmocka_unit_test(test_rgb_png_refused),
        cmocka_unit_test(test_truncated_files),
        cmocka_unit_test(test_unknown_extension),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
