/* SPDX-License-Identifier: BSD-3-Clause */
/* Maps given in memory (lib/psfsim.h, psfsim_map; API version 3): an
 * array for optics.aperture.file or aberrations.opd_map.file gives the
 * images of the same map written to a FITS file, bit for bit; the array
 * counts in the fingerprint; the file path's checks and the array's own
 * refuse what they should, naming the key. */
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

#include "lib/psfsim.h"
#include "tests/support/testutil.h"

#define APERTURE_KEY "optics.aperture.file"
#define OPD_KEY "aberrations.opd_map.file"

/* A set with a transmission map (shape "file") and an OPD map; FILE_A and
 * OPD_GROUP fill in the file keys (or nothing, for arrays). */
#define BASE(file_a, opd_group)                                                                    \
    "name = \"maps\";\n"                                                                           \
    "optics: { wavelength_nm = 600.0; f_number = 10.0;\n"                                          \
    "  aperture: { diameter_m = 1.0; shape = \"file\"; " file_a " }; };\n"                         \
    "sampling: { pupil_samples = 40; padding = 2.0; };\n"                                          \
    "aberrations: { " opd_group " };\n"                                                            \
    "sweep: { defocus = [0.0, 0.3]; };\n"

/* A rows x cols float32 (bitpix FLOAT_IMG) or float64 (DOUBLE_IMG) FITS
 * image of values (row 0 the first stored row) at path. */
static void write_fits(const char *path, int bitpix, const double *values, int rows, int cols)
{
    fitsfile *f = NULL;
    int status = 0;
    long naxes[2] = {cols, rows};
    char bang[4400];
    snprintf(bang, sizeof bang, "!%s", path);
    fits_create_file(&f, bang, &status);
    fits_create_img(f, bitpix, 2, naxes, &status);
    fits_write_img(f, TDOUBLE, 1, (long long)rows * cols, (double *)values, &status);
    fits_close_file(f, &status);
    if (status) fail_msg("cannot write %s (cfitsio status %d)", path, status);
}

/* An asymmetric transmission map, rows != cols: no flip or transpose of
 * it is itself. One NaN pixel (read as 0). */
static double *transmission(int rows, int cols)
{
    double *t = malloc((size_t)rows * cols * sizeof *t);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j)
            t[i * cols + j] = i < rows / 4 && j < cols / 3
                                  ? 0.0
                                  : 0.2 + 0.8 * (i + 2.0 * j) / (rows + 2.0 * cols);
    t[(rows - 1) * cols + 2] = NAN;
    return t;
}

/* An asymmetric OPD in waves with fractions float32 rounds (x 1/3). */
static double *opd(int rows, int cols)
{
    double *o = malloc((size_t)rows * cols * sizeof *o);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j)
            o[i * cols + j] = (0.7 * i * i - 0.4 * j + 0.1 * i * j) / (3.0 * rows * cols);
    return o;
}

/* values as float32, as a FITS float64 image is read (a C cast). */
static float *to_float(const double *v, size_t n)
{
    float *f = malloc(n * sizeof *f);
    for (size_t i = 0; i < n; ++i)
        f[i] = (float)v[i];
    return f;
}

/* Open text (base_dir dir) with the maps, on the CPU; the status, *s and
 * the message. */
static int open_maps(const char *text, const char *dir, const psfsim_map *maps, int nmaps,
                     psfsim_set **s, char *err, size_t errlen)
{
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = "cpu";
    o.threads = 2;
    o.name = "<t>";
    o.base_dir = dir;
    o.maps = maps;
    o.nmaps = nmaps;
    *s = (psfsim_set *)1;
    return psfsim_open_text(text, &o, s, err, errlen);
}

/* All images of the set opened from text with the maps, malloc'd. */
static float *images(const char *text, const char *dir, const psfsim_map *maps, int nmaps,
                     size_t *n)
{
    psfsim_set *s = NULL;
    char err[2048] = "";
    int rc = open_maps(text, dir, maps, nmaps, &s, err, sizeof err);
    if (rc != PSFSIM_OK) fail_msg("open: %s: %s", psfsim_status_name(rc), err);
    psfsim_info info;
    assert_int_equal(psfsim_describe(s, &info, NULL, 0), PSFSIM_OK);
    *n = (size_t)info.count * info.npix * info.npix;
    float *img = malloc(*n * sizeof *img);
    if (psfsim_compute(s, 0, info.count, img, *n, NULL, err, sizeof err) != PSFSIM_OK)
        fail_msg("compute: %s", err);
    psfsim_close(s);
    return img;
}

/* The FITS CFGHASH of image 0 of the set. */
static void cfghash(const char *text, const char *dir, const psfsim_map *maps, int nmaps,
                    char out[72])
{
    psfsim_set *s = NULL;
    char err[2048] = "";
    if (open_maps(text, dir, maps, nmaps, &s, err, sizeof err) != PSFSIM_OK)
        fail_msg("open: %s", err);
    psfsim_card cards[300];
    int n = 0;
    psfsim_metrics m = {1.0, 1.0, "cpu"};
    assert_int_equal(psfsim_fits_header(s, 0, &m, cards, 300, &n, err, sizeof err), PSFSIM_OK);
    out[0] = '\0';
    for (int i = 0; i < n; ++i)
        if (strcmp(cards[i].key, "CFGHASH") == 0) snprintf(out, 72, "%s", cards[i].s);
    psfsim_close(s);
    assert_true(out[0] != '\0');
}

enum { AR = 30, AC = 44, OR = 52, OC = 36 }; /* maps of 30 x 44 and 52 x 36 pixels */

/* Arrays give the FITS files' images bit for bit: a float32 transmission
 * map (non-square, stretched) and a float64 OPD map placed at its pixel
 * scale, both asymmetric; the flipped transmission array does not, nor
 * the set without the OPD map. */
static void test_arrays_equal_files(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("libmaps");
    double *t = transmission(AR, AC), *o = opd(OR, OC);
    write_fits(tu_format("%s/t.fits", dir), FLOAT_IMG, t, AR, AC);
    write_fits(tu_format("%s/o.fits", dir), DOUBLE_IMG, o, OR, OC);
    const char *with_files = BASE("file = \"t.fits\";", "opd_map: { file = \"o.fits\"; "
                                                        "units = \"waves\"; scale = 0.5; "
                                                        "pixel_scale_m = 0.03; };");
    const char *with_arrays = BASE("", "opd_map: { units = \"waves\"; scale = 0.5; "
                                       "pixel_scale_m = 0.03; };");
    float *tf = to_float(t, (size_t)AR * AC), *of = to_float(o, (size_t)OR * OC);
    psfsim_map maps[2] = {{APERTURE_KEY, tf, AR, AC}, {OPD_KEY, of, OR, OC}};
    size_t n1, n2, n3;
    float *a = images(with_files, dir, NULL, 0, &n1);
    float *b = images(with_arrays, dir, maps, 2, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1 * sizeof *a);
    /* The same rows upside down: another pupil, other images. */
    float *flip = malloc((size_t)AR * AC * sizeof *flip);
    for (int i = 0; i < AR; ++i)
        memcpy(flip + (size_t)i * AC, tf + (size_t)(AR - 1 - i) * AC, AC * sizeof *flip);
    maps[0].values = flip;
    float *c = images(with_arrays, dir, maps, 2, &n3);
    assert_true(tu_rel_l2(c, a, n1) > 1e-3);
    /* Without the OPD array (and its group): other images too. */
    maps[0].values = tf;
    float *d = images(BASE("", ""), dir, maps, 1, &n3);
    assert_true(tu_rel_l2(d, a, n1) > 1e-3);
    free(d);
    free(a);
    free(b);
    free(c);
    free(flip);
    free(t);
    free(o);
    free(tf);
    free(of);
    tu_rmtree(dir);
    free(dir);
}

/* The library copies the arrays at open: overwritten after it, they change
 * nothing; an OPD array without the aberrations.opd_map group takes the
 * group's defaults (nm, scale 1), as a group holding only the file does. */
static void test_copied_at_open_and_group_default(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("libmaps2");
    double *t = transmission(AR, AC), *o = opd(OR, OC);
    for (size_t i = 0; i < (size_t)OR * OC; ++i)
        o[i] *= 300.0; /* nm */
    write_fits(tu_format("%s/o.fits", dir), FLOAT_IMG, o, OR, OC);
    float *tf = to_float(t, (size_t)AR * AC), *of = to_float(o, (size_t)OR * OC);
    psfsim_map maps[2] = {{APERTURE_KEY, tf, AR, AC}, {OPD_KEY, of, OR, OC}};
    size_t n1, n2;
    float *a = images(BASE("", "opd_map: { file = \"o.fits\"; };"), dir, maps, 1, &n1);
    psfsim_set *s = NULL;
    char err[2048] = "";
    assert_int_equal(open_maps(BASE("", ""), dir, maps, 2, &s, err, sizeof err), PSFSIM_OK);
    for (size_t i = 0; i < (size_t)AR * AC; ++i)
        tf[i] = 1.0f; /* after open: not seen */
    for (size_t i = 0; i < (size_t)OR * OC; ++i)
        of[i] = 0.0f;
    psfsim_info info;
    assert_int_equal(psfsim_describe(s, &info, NULL, 0), PSFSIM_OK);
    n2 = (size_t)info.count * info.npix * info.npix;
    assert_int_equal(n1, n2);
    float *b = malloc(n2 * sizeof *b);
    assert_int_equal(psfsim_compute(s, 0, info.count, b, n2, NULL, err, sizeof err), PSFSIM_OK);
    assert_memory_equal(a, b, n1 * sizeof *a);
    psfsim_close(s);
    free(a);
    free(b);
    free(t);
    free(o);
    free(tf);
    free(of);
    tu_rmtree(dir);
    free(dir);
}

/* The fingerprint (FITS CFGHASH) counts an array's values and shape: the
 * same array gives the same hash, one changed value or another shape of
 * the same values another. */
static void test_fingerprint(void **state)
{
    (void)state;
    double *t = transmission(AR, AC);
    float *tf = to_float(t, (size_t)AR * AC);
    psfsim_map map = {APERTURE_KEY, tf, AR, AC};
    const char *text = BASE("", "");
    char h1[72], h2[72], h3[72], h4[72];
    cfghash(text, NULL, &map, 1, h1);
    cfghash(text, NULL, &map, 1, h2);
    assert_string_equal(h1, h2);
    tf[AC + 5] = nextafterf(tf[AC + 5], 2.0f);
    cfghash(text, NULL, &map, 1, h3);
    assert_string_not_equal(h1, h3);
    map.rows = AC; /* the same values as 44 x 30 */
    map.cols = AR;
    cfghash(text, NULL, &map, 1, h4);
    assert_string_not_equal(h3, h4);
    free(t);
    free(tf);
}

/* Open text with the maps that must fail with status and exactly message. */
static void fails(const char *text, const char *dir, const psfsim_map *maps, int nmaps, int status,
                  const char *message)
{
    psfsim_set *s = NULL;
    char err[2048] = "";
    assert_int_equal(open_maps(text, dir, maps, nmaps, &s, err, sizeof err), status);
    assert_null(s);
    assert_string_equal(err, message);
}

static void test_errors(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("libmaps3");
    double *t = transmission(AR, AC);
    write_fits(tu_format("%s/t.fits", dir), FLOAT_IMG, t, AR, AC);
    float *tf = to_float(t, (size_t)AR * AC);
    psfsim_map m = {APERTURE_KEY, tf, AR, AC};
    /* both a file in the config and an array: the file key's line */
    fails(BASE("file = \"t.fits\";", ""), dir, &m, 1, PSFSIM_ERR_CONFIG,
          "<t>:3: optics.aperture.file: given both as a file in the config and as an array; "
          "give one (leave the key out of the config to use the array)");
    /* neither */
    fails(BASE("", ""), dir, NULL, 0, PSFSIM_ERR_CONFIG,
          "<t>: optics.aperture.file: required key missing (shape = \"file\")");
    /* an array for a shape that takes no map */
    fails("name = \"c\"; optics: { wavelength_nm = 600.0; aperture: { diameter_m = 1.0; }; };\n"
          "sampling: { pupil_samples = 32; };\n",
          dir, &m, 1, PSFSIM_ERR_CONFIG,
          "<t>: optics.aperture.file: only used with shape = \"file\" (shape is \"circular\")");
    /* keys: another key, the same key twice */
    psfsim_map bad = {"sweep.table", tf, AR, AC};
    fails(BASE("", ""), dir, &bad, 1, PSFSIM_ERR_CONFIG,
          "<t>: sweep.table: takes no array (a map in memory stands for optics.aperture.file or "
          "aberrations.opd_map.file)");
    psfsim_map twice[2] = {m, m};
    fails(BASE("", ""), dir, twice, 2, PSFSIM_ERR_CONFIG,
          "<t>: optics.aperture.file: given twice as an array (maps 0 and 1)");
    /* the array's shape, its values */
    psfsim_map empty = {APERTURE_KEY, tf, 0, AC};
    fails(BASE("", ""), dir, &empty, 1, PSFSIM_ERR_CONFIG,
          "<t>: optics.aperture.file: an array of 0 x 44 pixels is empty or too large (a map "
          "holds 1 to 268435456 pixels)");
    psfsim_map none = {APERTURE_KEY, NULL, AR, AC};
    fails(BASE("", ""), dir, &none, 1, PSFSIM_ERR_CONFIG,
          "<t>: optics.aperture.file: the array has no values (NULL)");
    /* the file path's checks, "<array>" for the path */
    tf[3 * AC + 7] = 1.5f;
    fails(BASE("", ""), dir, &m, 1, PSFSIM_ERR_CONFIG,
          "<t>: optics.aperture.file: <array>: transmission 1.5 at row 3, column 7 is outside "
          "[0, 1] (row 0 is the first stored row)");
    for (size_t i = 0; i < (size_t)AR * AC; ++i)
        tf[i] = NAN; /* every pixel NaN: read as 0, the aperture closed */
    fails(BASE("", ""), dir, &m, 1, PSFSIM_ERR_CONFIG,
          "<t>: optics.aperture.file: <array>: every transmission of the map is 0 (NaN and "
          "BLANK pixels read as 0): the aperture is closed");
    /* an OPD that is not finite */
    float o[4] = {1.0f, 2.0f, INFINITY, 4.0f};
    free(tf);
    tf = to_float(t, (size_t)AR * AC);
    psfsim_map two[2] = {{APERTURE_KEY, tf, AR, AC}, {OPD_KEY, o, 2, 2}};
    fails(BASE("", ""), dir, two, 2, PSFSIM_ERR_CONFIG,
          "<t>: aberrations.opd_map.file: <array>: OPD value inf at row 1, column 0 is not "
          "finite (times scale 1)");
    /* options: nmaps out of range, maps NULL */
    fails(BASE("", ""), dir, NULL, 1, PSFSIM_ERR_ARGUMENT,
          "maps: expected 0..16 maps and a maps array for them (got nmaps 1, maps NULL)");
    fails(BASE("", ""), dir, two, -1, PSFSIM_ERR_ARGUMENT,
          "maps: expected 0..16 maps and a maps array for them (got nmaps -1, maps given)");
    free(t);
    free(tf);
    tu_rmtree(dir);
    free(dir);
}

/* A caller built against API version 2 passes the smaller options: they
 * open, without maps. */
static void test_v2_options(void **state)
{
    (void)state;
    psfsim_options o;
    psfsim_options_init(&o);
    o.size = offsetof(psfsim_options, base_dir) + sizeof(const char *);
    o.backend = "cpu";
    o.nmaps = 99; /* past its size: not read */
    psfsim_set *s = NULL;
    char err[1024] = "";
    const char *text = "name = \"v2\"; optics: { wavelength_nm = 600.0;"
                       " aperture: { diameter_m = 1.0; }; }; sampling: { pupil_samples = 16; };\n";
    assert_int_equal(psfsim_open_text(text, &o, &s, err, sizeof err), PSFSIM_OK);
    psfsim_info info;
    assert_int_equal(psfsim_describe(s, &info, NULL, 0), PSFSIM_OK);
    assert_int_equal(info.pupil_samples, 16);
    psfsim_close(s);
    o.size -= 1;
    s = (psfsim_set *)1;
    assert_int_equal(psfsim_open_text(text, &o, &s, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    assert_null(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arrays_equal_files),
        cmocka_unit_test(test_copied_at_open_and_group_default),
        cmocka_unit_test(test_fingerprint),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_v2_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
