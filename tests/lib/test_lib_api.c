/* SPDX-License-Identifier: BSD-3-Clause */
/* libpsfsim's C API (lib/psfsim.h), linked as users link it (the shared
 * library): every entry point with good and bad input returns the
 * documented code and message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/psfsim.h"
#include "tests/support/testutil.h"

#define SMALL                                                                                      \
    "name = \"small\";\n"                                                                          \
    "optics: { wavelength_nm = 550.0; f_number = 10.0;\n"                                          \
    "  aperture: { diameter_m = 1.0; obscuration = 0.2; }; };\n"                                   \
    "sampling: { pupil_samples = 32; padding = 2.0; };\n"                                          \
    "aberrations: { zernike = ( (11, 0.05) ); };\n"                                                \
    "sweep: { defocus = [-0.2, 0.0, 0.2]; zernike = ( (6, [0.0, 0.1]) ); };\n"

static psfsim_set *open_text(const char *text, const char *backend)
{
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = backend;
    psfsim_set *s = NULL;
    char err[1024] = "";
    int rc = psfsim_open_text(text, &o, &s, err, sizeof err);
    if (rc != PSFSIM_OK) fail_msg("open: %s: %s", psfsim_status_name(rc), err);
    return s;
}

/* Open text that must fail with status and exactly message. */
static void open_fails(const char *text, const psfsim_options *o, int status, const char *message)
{
    psfsim_set *s = (psfsim_set *)1;
    char err[1024] = "";
    int rc = psfsim_open_text(text, o, &s, err, sizeof err);
    assert_int_equal(rc, status);
    assert_null(s);
    assert_string_equal(err, message);
}

static void test_status_and_version(void **state)
{
    (void)state;
    assert_string_equal(psfsim_status_name(PSFSIM_OK), "ok");
    assert_string_equal(psfsim_status_name(PSFSIM_ERR_CONFIG), "config");
    assert_string_equal(psfsim_status_name(PSFSIM_ERR_CANCELLED), "cancelled");
    assert_string_equal(psfsim_status_name(PSFSIM_ERR_BUSY), "busy");
    assert_string_equal(psfsim_status_name(99), "unknown");
    assert_string_equal(psfsim_status_name(-1), "unknown");
    assert_string_equal(psfsim_version(), PSFSIM_VERSION);
}

static void test_open_file(void **state)
{
    (void)state;
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s/configs/defocus.cfg", tu_source_dir());
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = "cpu";
    psfsim_set *s = NULL;
    assert_int_equal(psfsim_open_file(path, &o, &s, err, sizeof err), PSFSIM_OK);
    psfsim_info info;
    assert_int_equal(psfsim_describe(s, &info, err, sizeof err), PSFSIM_OK);
    assert_int_equal(info.count, 9);
    assert_int_equal(info.npix, 512);
    assert_int_equal(info.pupil_samples, 256);
    assert_int_equal(info.fft_npix, 512);
    assert_int_equal(info.mft, 0);
    assert_int_equal(info.png_bits, 16);
    assert_string_equal(info.name, "defocus");
    assert_string_equal(info.normalization, "peak");
    psfsim_decision d;
    assert_int_equal(psfsim_decision_get(s, &d, err, sizeof err), PSFSIM_OK);
    assert_string_equal(d.backend, "cpu");
    assert_string_equal(d.reason, "backend cpu: requested");
    assert_true(isnan(d.predicted_cpu_us) && isnan(d.predicted_gpu_us));
    psfsim_close(s);
    /* A file that is not there: the command's message. */
    assert_int_equal(psfsim_open_file("/nonexistent/x.cfg", NULL, &s, err, sizeof err),
                     PSFSIM_ERR_CONFIG);
    assert_null(s);
    assert_string_equal(err, "/nonexistent/x.cfg: cannot read: No such file or directory");
    psfsim_close(NULL); /* harmless */
}

static void test_open_text_errors(void **state)
{
    (void)state;
    psfsim_options o;
    psfsim_options_init(&o);
    open_fails("name = \"x\";\noptics: { wavelength_nm = ; };\n", NULL, PSFSIM_ERR_CONFIG,
               "<config>:2: syntax error");
    o.name = "mine.cfg";
    open_fails("name = \"x\";\noptics: { wavelenght_nm = 550.0; };\n", &o, PSFSIM_ERR_CONFIG,
               "mine.cfg:2: optics.wavelenght_nm: unknown key (did you mean "
               "optics.wavelength_nm?)");
    open_fails(SMALL "output: { png: { bits = 12; }; };\n", &o, PSFSIM_ERR_CONFIG,
               "mine.cfg:7: output.png.bits: must be 8 or 16 (got 12)");
    /* detector.write = "both": two images per image, the program's FITS files only. */
    open_fails(SMALL "output: { fits: { enabled = true; }; };\n"
                     "detector: { oversample = 2; write = \"both\"; };\n",
               &o, PSFSIM_ERR_CONFIG,
               "mine.cfg:8: detector.write: \"both\" is written by the psfsim program only; the "
               "library takes \"detector\" or \"oversampled\"");
    open_fails("name = \"x\";\n", &o, PSFSIM_ERR_CONFIG,
               "mine.cfg: optics.wavelength_nm: required key missing (or optics.wavelengths_nm, "
               "or sweep.wavelength_nm)");
    /* A relative map resolves against base_dir. */
    o.base_dir = "/nonexistent";
    open_fails("name = \"x\";\noptics: { wavelength_nm = 550.0; aperture: { shape = \"file\";"
               " diameter_m = 1.0; file = \"m.png\"; }; };\nsampling: { pupil_samples = 32; };\n",
               &o, PSFSIM_ERR_CONFIG,
               "mine.cfg:2: optics.aperture.file: cannot read /nonexistent/m.png: No such file "
               "or directory");
    /* The text goes through config_load's checks: integer literals out of
     * range, the @include walk. */
    o.base_dir = NULL;
    open_fails(SMALL "output: { npix = 4294967360; };\n", &o, PSFSIM_ERR_CONFIG,
               "mine.cfg:7: output.npix: integer 4294967360 is out of the 32-bit range "
               "-2147483648..2147483647 (a 64-bit integer is written with an L suffix)");
    o.base_dir = "/";
    open_fails(SMALL "@include \"tmp\"\n", &o, PSFSIM_ERR_CONFIG,
               "mine.cfg:7: @include \"tmp\": is a directory, not a config file");
    size_t big = ((size_t)16 << 20) + 1; /* one byte past the cap of a config file */
    char *text = malloc(big + 1);
    assert_non_null(text);
    memset(text, ' ', big);
    text[big] = '\0';
    open_fails(text, &o, PSFSIM_ERR_CONFIG,
               "mine.cfg: larger than the 16 MiB cap on a config (16777217 bytes)");
    free(text);
}

static void test_open_bad_arguments(void **state)
{
    (void)state;
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = "fast";
    open_fails(SMALL, &o, PSFSIM_ERR_ARGUMENT, "backend: expected auto, cpu or gpu (got \"fast\")");
    psfsim_options_init(&o);
    o.gpus = "0,x";
    psfsim_set *s = NULL;
    char err[512];
    assert_int_equal(psfsim_open_text(SMALL, &o, &s, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    assert_non_null(strstr(err, "--gpus"));
    psfsim_options_init(&o);
    o.size = 8;
    open_fails(SMALL, &o, PSFSIM_ERR_ARGUMENT, "options: size 8 (not from psfsim_options_init)");
    /* threads: 0 (one per CPU) or 1..1024; a negative count is refused */
    psfsim_options_init(&o);
    o.threads = -5;
    open_fails(SMALL, &o, PSFSIM_ERR_ARGUMENT,
               "threads: expected 0 (one per CPU) or 1..1024 (got -5)");
    o.threads = 1025;
    open_fails(SMALL, &o, PSFSIM_ERR_ARGUMENT,
               "threads: expected 0 (one per CPU) or 1..1024 (got 1025)");
    o.threads = 1;
    assert_int_equal(psfsim_open_text(SMALL, &o, &s, err, sizeof err), PSFSIM_OK);
    psfsim_close(s);
    assert_int_equal(psfsim_open_text(NULL, NULL, &s, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    assert_int_equal(psfsim_open_text(SMALL, NULL, NULL, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    assert_int_equal(psfsim_open_file(NULL, NULL, &s, NULL, 0), PSFSIM_ERR_ARGUMENT);
    /* err may be NULL */
    assert_int_equal(psfsim_open_text("x", NULL, &s, NULL, 0), PSFSIM_ERR_CONFIG);
}

/* A program built against API version 2 calls the symbol
 * psfsim_options_init with a struct that ends at base_dir: it must fill
 * no byte past it (version 3's maps and nmaps are not in that struct).
 * The parenthesised name calls the symbol, not version 3's macro. */
static void test_options_init_v2(void **state)
{
    (void)state;
    psfsim_options o;
    memset(&o, 0xAB, sizeof o);
    (psfsim_options_init)(&o);
    size_t v2 = offsetof(psfsim_options, base_dir) + sizeof(const char *);
    assert_int_equal(o.size, v2);
    assert_null(o.backend);
    assert_null(o.base_dir);
    const unsigned char *tail = (const unsigned char *)&o + v2;
    for (size_t i = 0; i < sizeof o - v2; ++i)
        assert_int_equal(tail[i], 0xAB);
    psfsim_set *s = NULL;
    assert_int_equal(psfsim_open_text(SMALL, &o, &s, NULL, 0), PSFSIM_OK); /* no maps read */
    psfsim_close(s);
    psfsim_options_init(&o); /* version 3's macro: the whole struct */
    assert_int_equal(o.size, sizeof o);
    assert_null(o.maps);
    assert_int_equal(o.nmaps, 0);
}

/* "gpu" on a machine without a usable GPU (or a build without one): the
 * command's usage error. Where CUDA sees no device at all (no module, no
 * driver, none visible), open itself refuses, so that no set is handed out
 * that cannot compute; a device that is there but fails at its start
 * fails at the first compute. */
static void test_forced_gpu(void **state)
{
    (void)state;
    char err[1024] = "";
    void *probe = psfsim_device_alloc(0, 16, err, sizeof err);
    if (probe) psfsim_device_free(0, probe);
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = "gpu";
    psfsim_set *s = NULL;
    err[0] = '\0';
    int rc = psfsim_open_text(SMALL, &o, &s, err, sizeof err);
    if (!probe) { /* no device: refused when opened, the set left NULL */
        assert_int_equal(rc, PSFSIM_ERR_BACKEND);
        assert_null(s);
        assert_true(strncmp(err, "backend gpu: ", 13) == 0);
        return;
    }
    if (rc == PSFSIM_OK) {
        float img[6 * 64 * 64];
        rc = psfsim_compute(s, 0, 1, img, 64 * 64, NULL, err, sizeof err);
        psfsim_decision d;
        psfsim_decision_get(s, &d, NULL, 0);
        psfsim_close(s);
        if (rc == PSFSIM_OK && strcmp(d.backend, "gpu") == 0) skip(); /* a GPU is there */
    }
    assert_int_equal(rc, PSFSIM_ERR_BACKEND);
    assert_true(strncmp(err, "backend gpu: ", 13) == 0);
}

static void test_describe_and_params(void **state)
{
    (void)state;
    psfsim_set *s = open_text(SMALL, "cpu");
    char err[512];
    psfsim_info info;
    assert_int_equal(psfsim_describe(s, &info, err, sizeof err), PSFSIM_OK);
    assert_int_equal(info.count, 6);
    assert_int_equal(info.npix, 64);
    assert_int_equal(info.nswept, 1);
    assert_int_equal(info.nterms, 3); /* 11, then the swept 6, then 4 for defocus */
    assert_int_equal(psfsim_describe(NULL, &info, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    psfsim_params p[6];
    assert_int_equal(psfsim_params_get(s, 0, 6, p, err, sizeof err), PSFSIM_OK);
    for (int k = 0; k < 6; ++k) {
        assert_int_equal(p[k].index, k);
        assert_true(p[k].wavelength_nm == 550.0);
        assert_true(isnan(p[k].focus_shift_um));
        assert_true(fabs(p[k].pixel_scale_lambda_d - 0.5) < 1e-15);
        assert_true(fabs(p[k].sampling_q - 2.0) < 1e-15);
        /* 0.5 lambda/D at f/10: 0.5 * 10 * 0.55 um */
        assert_true(fabs(p[k].pixel_scale_um - 2.75) < 1e-12);
    }
    assert_true(p[0].defocus == -0.2 && p[2].defocus == 0.0 && p[5].defocus == 0.2);
    assert_true(p[0].draw == -1 && p[0].table_row == -1 && info.random_count == 0);
    int sj[1], tj[3];
    assert_int_equal(psfsim_zernike_terms(s, sj, tj, err, sizeof err), PSFSIM_OK);
    assert_int_equal(sj[0], 6);
    assert_int_equal(tj[0], 11);
    assert_int_equal(tj[1], 6);
    assert_int_equal(tj[2], 4);
    double swept[6], total[18];
    assert_int_equal(psfsim_zernike(s, 0, 6, swept, total, err, sizeof err), PSFSIM_OK);
    assert_true(swept[0] == 0.0 && swept[1] == 0.1 && swept[5] == 0.1);
    assert_true(total[1 * 3 + 0] == 0.05 && total[1 * 3 + 1] == 0.1 && total[1 * 3 + 2] == -0.2);
    /* out of range */
    assert_int_equal(psfsim_params_get(s, 4, 3, p, err, sizeof err), PSFSIM_ERR_RANGE);
    assert_string_equal(err, "images 4..6 (first 4, count 3) are not in the set of 6 (0..5)");
    assert_int_equal(psfsim_params_get(s, -1, 1, p, err, sizeof err), PSFSIM_ERR_RANGE);
    assert_int_equal(psfsim_zernike(s, 6, 1, swept, NULL, err, sizeof err), PSFSIM_ERR_RANGE);
    assert_int_equal(psfsim_params_get(s, 0, 1, NULL, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    assert_int_equal(psfsim_params_get(s, 6, 0, p, err, sizeof err), PSFSIM_OK);
    /* a count whose last index is no long long: no overflow (UB) in the message */
    assert_int_equal(psfsim_params_get(s, 2, LLONG_MAX, p, err, sizeof err), PSFSIM_ERR_RANGE);
    assert_string_equal(err, "images from 2, count 9223372036854775807 (the last index is outside "
                             "the 64-bit range) are not in the set of 6 (0..5)");
    assert_int_equal(psfsim_params_get(s, LLONG_MIN, 0, p, err, sizeof err), PSFSIM_ERR_RANGE);
    assert_string_equal(err, "images from -9223372036854775808, count 0 (the last index is outside "
                             "the 64-bit range) are not in the set of 6 (0..5)");
    assert_int_equal(psfsim_params_get(s, 0, LLONG_MAX, p, err, sizeof err), PSFSIM_ERR_RANGE);
    assert_string_equal(err, "images 0..9223372036854775806 (first 0, count 9223372036854775807) "
                             "are not in the set of 6 (0..5)");
    psfsim_close(s);
}

/* A random set: each image's draw index d (k = c * count + d) and the
 * set's seed, the manifest's draw and seed; its label terms (z<j>). */
static void test_random_params(void **state)
{
    (void)state;
    psfsim_set *s =
        open_text("name = \"r\";\n"
                  "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                  "sampling: { pupil_samples = 32; };\n"
                  "sweep: { defocus = [-0.2, 0.2];\n"
                  "  random: { count = 3; seed = 7; zernike = ((5, \"normal\", 0.1)); }; };\n",
                  "cpu");
    char err[512];
    psfsim_info info;
    assert_int_equal(psfsim_describe(s, &info, err, sizeof err), PSFSIM_OK);
    assert_int_equal(info.count, 6);
    assert_int_equal(info.random_count, 3);
    assert_true(info.seed == 7);
    psfsim_params p[6];
    assert_int_equal(psfsim_params_get(s, 0, 6, p, err, sizeof err), PSFSIM_OK);
    for (int k = 0; k < 6; ++k) {
        assert_int_equal(p[k].draw, k % 3);
        assert_int_equal(p[k].table_row, -1);
    }
    assert_true(p[0].defocus == -0.2 && p[3].defocus == 0.2);
    /* the label terms: Z4 (defocus) and the drawn Z5, j ascending, each
     * naming its column of psfsim_zernike's totals */
    int n = -1, j[4], mode[4], tj[4];
    assert_true(info.nterms <= 4); /* the arrays' room */
    assert_int_equal(psfsim_label_terms(s, &n, NULL, NULL, err, sizeof err), PSFSIM_OK);
    assert_int_equal(n, 2);
    assert_int_equal(psfsim_label_terms(s, &n, j, mode, err, sizeof err), PSFSIM_OK);
    assert_true(j[0] == 4 && j[1] == 5);
    assert_int_equal(psfsim_zernike_terms(s, NULL, tj, err, sizeof err), PSFSIM_OK);
    assert_true(tj[mode[0]] == 4 && tj[mode[1]] == 5);
    double total[6 * 4];
    assert_int_equal(psfsim_zernike(s, 0, 6, NULL, total, err, sizeof err), PSFSIM_OK);
    assert_true(total[0 * info.nterms + mode[0]] == -0.2 &&
                total[3 * info.nterms + mode[0]] == 0.2);
    assert_true(total[0 * info.nterms + mode[1]] != 0.0); /* a draw of sigma 0.1 */
    assert_true(total[0 * info.nterms + mode[1]] == total[3 * info.nterms + mode[1]]); /* draw 0 */
    assert_int_equal(psfsim_label_terms(NULL, &n, j, mode, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    assert_string_equal(err, "no set or no count given");
    assert_int_equal(psfsim_label_terms(s, NULL, j, mode, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    psfsim_close(s);
}

/* A segmented set's label terms (segment, j), by segment then j, and
 * their totals: the fixed value plus the swept one, in that order (the
 * manifest's s<segment>_z<j>, docs/config.md "Segmented apertures"). */
static void test_segment_terms(void **state)
{
    (void)state;
    psfsim_set *s =
        open_text("name = \"seg\";\n"
                  "optics: { wavelength_nm = 1000.0; aperture: { shape = \"segmented\";\n"
                  "  segments: { flat_to_flat_m = 1.0; gap_m = 0.01; rings = 1;\n"
                  "    zernike = ( (3, 1, 0.05), (2, 4, 0.01) ); }; }; };\n"
                  "sampling: { pupil_samples = 32; };\n"
                  "sweep: { segment_zernike = ( (3, 1, [0.0, 0.1]) ); };\n",
                  "cpu");
    char err[512] = "";
    int n = -1, seg[2], j[2];
    assert_int_equal(psfsim_segment_terms(s, &n, NULL, NULL, err, sizeof err), PSFSIM_OK);
    assert_int_equal(n, 2);
    assert_int_equal(psfsim_segment_terms(s, &n, seg, j, err, sizeof err), PSFSIM_OK);
    assert_true(seg[0] == 2 && j[0] == 4 && seg[1] == 3 && j[1] == 1);
    double total[4];
    assert_int_equal(psfsim_segment_zernike(s, 0, 2, total, err, sizeof err), PSFSIM_OK);
    volatile double fixed = 0.05, swept = 0.1; /* summed in binary64 as the set sums them */
    assert_true(total[0] == 0.01 && total[1] == 0.05);
    assert_true(total[2] == 0.01 && total[3] == fixed + swept);
    assert_int_equal(psfsim_segment_zernike(s, 1, 1, total, err, sizeof err), PSFSIM_OK);
    assert_true(total[0] == 0.01 && total[1] == fixed + swept);
    /* no field columns: NaN, and present 0 */
    int present = -1;
    double xy[4] = {0};
    assert_int_equal(psfsim_field_positions(s, 0, 2, &present, xy, err, sizeof err), PSFSIM_OK);
    assert_int_equal(present, 0);
    for (int i = 0; i < 4; ++i)
        assert_true(isnan(xy[i]));
    /* bad input */
    assert_int_equal(psfsim_segment_terms(NULL, &n, seg, j, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    assert_string_equal(err, "no set or no count given");
    assert_int_equal(psfsim_segment_terms(s, NULL, seg, j, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    assert_int_equal(psfsim_segment_zernike(NULL, 0, 1, total, err, sizeof err),
                     PSFSIM_ERR_ARGUMENT);
    assert_int_equal(psfsim_segment_zernike(s, 0, 1, NULL, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    assert_string_equal(err, "no total given");
    assert_int_equal(psfsim_segment_zernike(s, 1, 2, total, err, sizeof err), PSFSIM_ERR_RANGE);
    assert_string_equal(err, "images 1..2 (first 1, count 2) are not in the set of 2 (0..1)");
    assert_int_equal(psfsim_segment_zernike(s, -1, 1, total, err, sizeof err), PSFSIM_ERR_RANGE);
    assert_int_equal(psfsim_segment_zernike(s, 2, 0, NULL, err, sizeof err), PSFSIM_OK);
    psfsim_close(s);
    /* a set without segment terms has none */
    s = open_text(SMALL, "cpu");
    n = -1;
    assert_int_equal(psfsim_segment_terms(s, &n, seg, j, err, sizeof err), PSFSIM_OK);
    assert_int_equal(n, 0);
    assert_int_equal(psfsim_segment_zernike(s, 0, 6, NULL, err, sizeof err), PSFSIM_OK);
    psfsim_close(s);
}

/* A table set's field_x_px, field_y_px: each row's detector position. */
static void test_field_positions(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("libfield");
    char *csv = tu_format("%s/t.csv", dir);
    assert_int_equal(tu_write_file(csv, "field_x_px,field_y_px,z4\n10.5,-3,0\n2048,4096.25,0.1\n"
                                        "0,0,0.2\n"),
                     0);
    char *text = tu_format("name = \"f\";\n"
                           "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
                           "sampling: { pupil_samples = 32; };\n"
                           "sweep: { table = \"%s\"; };\n",
                           csv);
    psfsim_set *s = open_text(text, "cpu");
    char err[512] = "";
    int present = -1;
    double xy[6];
    assert_int_equal(psfsim_field_positions(s, 0, 3, &present, xy, err, sizeof err), PSFSIM_OK);
    assert_int_equal(present, 1);
    const double want[6] = {10.5, -3.0, 2048.0, 4096.25, 0.0, 0.0};
    for (int i = 0; i < 6; ++i)
        assert_true(xy[i] == want[i]);
    assert_int_equal(psfsim_field_positions(s, 2, 1, NULL, xy, err, sizeof err), PSFSIM_OK);
    assert_true(xy[0] == 0.0 && xy[1] == 0.0);
    present = -1;
    assert_int_equal(psfsim_field_positions(s, 3, 0, &present, NULL, err, sizeof err), PSFSIM_OK);
    assert_int_equal(present, 1);
    /* bad input */
    assert_int_equal(psfsim_field_positions(s, 1, 3, &present, xy, err, sizeof err),
                     PSFSIM_ERR_RANGE);
    assert_string_equal(err, "images 1..3 (first 1, count 3) are not in the set of 3 (0..2)");
    assert_int_equal(psfsim_field_positions(s, -1, 1, &present, xy, err, sizeof err),
                     PSFSIM_ERR_RANGE);
    assert_int_equal(psfsim_field_positions(s, 0, 1, &present, NULL, err, sizeof err),
                     PSFSIM_ERR_ARGUMENT);
    assert_string_equal(err, "no set or no xy given");
    assert_int_equal(psfsim_field_positions(NULL, 0, 1, &present, xy, err, sizeof err),
                     PSFSIM_ERR_ARGUMENT);
    /* a table's positions have no centre nor radius: no (hx, hy), NaN */
    present = -1;
    double h[6] = {0};
    assert_int_equal(psfsim_field_h(s, 0, 3, &present, h, err, sizeof err), PSFSIM_OK);
    assert_int_equal(present, 0);
    for (int i = 0; i < 6; ++i)
        assert_true(isnan(h[i]));
    /* no segment terms in a circular set */
    int n = -1;
    assert_int_equal(psfsim_segment_terms(s, &n, NULL, NULL, err, sizeof err), PSFSIM_OK);
    assert_int_equal(n, 0);
    psfsim_close(s);
    tu_rmtree(dir);
    free(dir);
}

/* A field group's normalised coordinates (psfsim_field_h): ((x, y) -
 * centre_px) / radius_px per image, binary64, the manifest's field_hx,
 * field_hy; range and argument errors as psfsim_field_positions'. */
static void test_field_h(void **state)
{
    (void)state;
    psfsim_set *s = open_text("name = \"f\";\n"
                              "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; "
                              "};\n"
                              "sampling: { pupil_samples = 32; };\n"
                              "field: { positions_px = ( (100.0, 200.0), (1500.5, 30.0) );\n"
                              "  centre_px = [1023.5, 1000.0]; radius_px = 1448.2; };\n",
                              "cpu");
    char err[512] = "";
    int present = -1;
    double h[4], xy[4];
    assert_int_equal(psfsim_field_h(s, 0, 2, &present, h, err, sizeof err), PSFSIM_OK);
    assert_int_equal(present, 1);
    volatile double x0 = 100.0, y0 = 200.0, x1 = 1500.5, y1 = 30.0, r = 1448.2;
    const double want[4] = {(x0 - 1023.5) / r, (y0 - 1000.0) / r, (x1 - 1023.5) / r,
                            (y1 - 1000.0) / r};
    for (int i = 0; i < 4; ++i)
        assert_true(h[i] == want[i]);
    assert_int_equal(psfsim_field_positions(s, 0, 2, &present, xy, err, sizeof err), PSFSIM_OK);
    assert_true(present == 1 && xy[2] == 1500.5 && xy[3] == 30.0);
    assert_int_equal(psfsim_field_h(s, 1, 1, NULL, h, err, sizeof err), PSFSIM_OK);
    assert_true(h[0] == want[2] && h[1] == want[3]);
    assert_int_equal(psfsim_field_h(s, 2, 0, &present, NULL, err, sizeof err), PSFSIM_OK);
    assert_int_equal(psfsim_field_h(s, 1, 2, &present, h, err, sizeof err), PSFSIM_ERR_RANGE);
    assert_string_equal(err, "images 1..2 (first 1, count 2) are not in the set of 2 (0..1)");
    assert_int_equal(psfsim_field_h(s, 0, 1, &present, NULL, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    assert_string_equal(err, "no set or no hxhy given");
    assert_int_equal(psfsim_field_h(NULL, 0, 1, &present, h, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    psfsim_close(s);
}

/* psfsim_info.nwavelengths: the wavelengths summed into each image, 1 when
 * the images take their own (a sweep, a draw, a table's column), optics'
 * count otherwise: a table's wavelength_nm column without optics'
 * wavelength said 0. */
static void test_describe_nwavelengths(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("libwl");
    char *csv = tu_format("%s/t.csv", dir);
    assert_int_equal(tu_write_file(csv, "wavelength_nm,z4\n550,0\n650,0.1\n"), 0);
    const char *sweeps[] = {
        tu_format("table = \"%s\";", csv),
        "wavelength_nm = [500.0, 600.0];",
        "random: { count = 2; seed = 1; zernike = ((4, \"normal\", 0.1));\n"
        "  wavelength_nm = [900.0, 1100.0]; };",
    };
    for (int i = 0; i < 3; ++i) {
        const char *sweep = sweeps[i];
        char *text = tu_format("name = \"w\";\n"
                               "optics: { aperture: { diameter_m = 1.0; }; };\n"
                               "sampling: { pupil_samples = 16; };\n"
                               "sweep: { %s };\n",
                               sweep);
        psfsim_set *s = open_text(text, "cpu");
        psfsim_info info;
        char err[512] = "";
        assert_int_equal(psfsim_describe(s, &info, err, sizeof err), PSFSIM_OK);
        if (info.nwavelengths != 1)
            fail_msg("sweep %d: nwavelengths %d, not 1", i, info.nwavelengths);
        psfsim_close(s);
    }
    psfsim_set *s = open_text("name = \"b\";\n"
                              "optics: { wavelengths_nm = [500.0, 550.0, 600.0];\n"
                              "  aperture: { diameter_m = 1.0; }; };\n"
                              "sampling: { pupil_samples = 16; };\n",
                              "cpu");
    psfsim_info info;
    char err[512] = "";
    assert_int_equal(psfsim_describe(s, &info, err, sizeof err), PSFSIM_OK);
    assert_int_equal(info.nwavelengths, 3);
    psfsim_close(s);
    tu_rmtree(dir);
    free(dir);
}

static void test_compute_errors(void **state)
{
    (void)state;
    psfsim_set *s = open_text(SMALL, "cpu");
    char err[512];
    size_t plane = 64 * 64;
    float *img = calloc(6 * plane, sizeof *img);
    uint16_t *lv = calloc(6 * plane, sizeof *lv);
    assert_int_equal(psfsim_compute(s, 5, 2, img, 6 * plane, NULL, err, sizeof err),
                     PSFSIM_ERR_RANGE);
    assert_string_equal(err, "images 5..6 (first 5, count 2) are not in the set of 6 (0..5)");
    assert_int_equal(psfsim_compute(s, 0, -1, img, 6 * plane, NULL, err, sizeof err),
                     PSFSIM_ERR_RANGE);
    assert_int_equal(psfsim_compute(s, 0, 2, img, 2 * plane - 1, NULL, err, sizeof err),
                     PSFSIM_ERR_BUFFER);
    assert_string_equal(err, "the buffer holds 8191 values, fewer than the 2 x 64 x 64 = 8192 the "
                             "images need");
    assert_int_equal(psfsim_compute_u16(s, 0, 6, lv, 5 * plane, NULL, err, sizeof err),
                     PSFSIM_ERR_BUFFER);
    assert_int_equal(psfsim_compute(s, 0, 1, NULL, plane, NULL, err, sizeof err),
                     PSFSIM_ERR_ARGUMENT);
    assert_int_equal(psfsim_compute(NULL, 0, 1, img, plane, NULL, err, sizeof err),
                     PSFSIM_ERR_ARGUMENT);
    assert_int_equal(psfsim_compute(s, 6, 0, img, 0, NULL, err, sizeof err), PSFSIM_OK);
    /* and then it computes */
    psfsim_metrics m[6];
    assert_int_equal(psfsim_compute(s, 0, 6, img, 6 * plane, m, err, sizeof err), PSFSIM_OK);
    for (int k = 0; k < 6; ++k) {
        assert_string_equal(m[k].backend, "cpu");
        assert_true(m[k].strehl > 0.05 && m[k].strehl <= 1.0);
        /* peak normalisation: the image's maximum is the Strehl ratio */
        float peak = 0;
        for (size_t i = 0; i < plane; ++i)
            peak = img[k * plane + i] > peak ? img[k * plane + i] : peak;
        assert_true(fabs(peak - m[k].strehl) < 1e-6);
    }
    assert_int_equal(psfsim_compute_u16(s, 0, 6, lv, 6 * plane, NULL, err, sizeof err), PSFSIM_OK);
    for (int k = 0; k < 6; ++k) { /* the log stretch puts each image's peak at 65535 */
        uint16_t top = 0;
        for (size_t i = 0; i < plane; ++i)
            top = lv[k * plane + i] > top ? lv[k * plane + i] : top;
        assert_int_equal(top, 65535);
    }
    free(img);
    free(lv);
    psfsim_close(s);
}

static void test_fits_header(void **state)
{
    (void)state;
    psfsim_set *s = open_text(SMALL, "cpu");
    char err[512];
    psfsim_card cards[300];
    int n = 0;
    psfsim_metrics m = {0.5, 0.25, "cpu"};
    assert_int_equal(psfsim_fits_header(s, 1, &m, cards, 300, &n, err, sizeof err), PSFSIM_OK);
    assert_true(n > 10);
    assert_string_equal(cards[0].key, "WAVELEN");
    assert_int_equal(cards[0].type, 'd');
    assert_true(fabs(cards[0].d - 550e-9) < 1e-20);
    int found = 0;
    for (int i = 0; i < n; ++i) {
        if (!strcmp(cards[i].key, "STREHL")) found += cards[i].d == 0.5;
        if (!strcmp(cards[i].key, "BACKEND")) found += !strcmp(cards[i].s, "cpu");
        if (!strcmp(cards[i].key, "Z6")) found += cards[i].d == 0.1;
        if (!strcmp(cards[i].key, "NPIX")) found += cards[i].type == 'i' && cards[i].i == 64;
    }
    assert_int_equal(found, 4);
    assert_int_equal(psfsim_fits_header(s, 1, &m, cards, 3, &n, err, sizeof err),
                     PSFSIM_ERR_BUFFER);
    assert_int_equal(psfsim_fits_header(s, 6, &m, cards, 300, &n, err, sizeof err),
                     PSFSIM_ERR_RANGE);
    assert_int_equal(psfsim_fits_header(s, 0, NULL, cards, 300, &n, err, sizeof err),
                     PSFSIM_ERR_ARGUMENT);
    psfsim_close(s);
}

/* normalization "pupil": EEFIELD, the image's sum in double as the command
 * sums it (before the 180-degree turn of "poppy"), with the image only. */
static double eefield(const psfsim_card *cards, int n)
{
    for (int i = 0; i < n; ++i)
        if (!strcmp(cards[i].key, "EEFIELD")) return cards[i].d;
    return NAN;
}

static void test_fits_header_eefield(void **state)
{
    (void)state;
    for (int poppy = 0; poppy < 2; ++poppy) {
        char *text = tu_format("%s"
                               "normalization = \"pupil\";\n"
                               "output: { npix = 24; pixel_scale = 0.5; orientation = \"%s\"; };\n",
                               SMALL, poppy ? "poppy" : "psfsim");
        psfsim_set *s = open_text(text, "cpu");

        float img[24 * 24];
        psfsim_metrics m;
        char err[512];
        assert_int_equal(psfsim_compute(s, 2, 1, img, 24 * 24, &m, err, sizeof err), PSFSIM_OK);
        double sum = 0.0;
        for (int i = poppy ? 24 * 24 - 1 : 0; poppy ? i >= 0 : i < 24 * 24; i += poppy ? -1 : 1)
            sum += img[i];
        psfsim_card cards[300];
        int n = 0;
        assert_int_equal(
            psfsim_fits_header_image(s, 2, &m, img, 24 * 24, cards, 300, &n, err, sizeof err),
            PSFSIM_OK);
        assert_true(eefield(cards, n) == sum);
        assert_true(sum > 0.5 && sum < 1.0); /* a 12 lambda/D window */
        int without = 0;
        assert_int_equal(psfsim_fits_header(s, 2, &m, cards, 300, &without, err, sizeof err),
                         PSFSIM_OK);
        assert_int_equal(without, n - 1);
        assert_true(isnan(eefield(cards, without)));
        assert_int_equal(
            psfsim_fits_header_image(s, 2, &m, img, 24 * 24 - 1, cards, 300, &n, err, sizeof err),
            PSFSIM_ERR_BUFFER);
        assert_string_equal(err, "the image holds 575 values, fewer than its 24 x 24");
        psfsim_close(s);
    }
}

/* Messages go to the handler, never to stderr. */
static int g_messages;
static void on_message(int level, const char *message, void *user)
{
    (void)level;
    (void)message;
    (void)user;
    g_messages++;
}

static void test_message_handler(void **state)
{
    (void)state;
    psfsim_set_message_handler(on_message, 4, NULL);
    psfsim_set *s = open_text(SMALL, "auto");
    float img[64 * 64];
    assert_int_equal(psfsim_compute(s, 0, 1, img, 64 * 64, NULL, NULL, 0), PSFSIM_OK);
    psfsim_close(s);
    psfsim_set_message_handler(NULL, 0, NULL);
    assert_true(g_messages >= 0); /* whatever auto said went to the handler */
}

/* One call at a time on a set: a second one, from another thread or from
 * the progress callback, gets PSFSIM_ERR_BUSY and does nothing (two
 * computes at once crashed in an FFTW thread). Deterministic: the second
 * calls are made while the first is inside its progress callback. */
typedef struct {
    psfsim_set *s;
    int rc[5];
    char err[512];
} busy_probe;

static void *busy_calls(void *arg)
{
    busy_probe *b = arg;
    float img[64 * 64];
    psfsim_params p;
    double total[3];
    psfsim_card cards[300];
    psfsim_metrics m = {1.0, 1.0, "cpu"};
    psfsim_decision d;
    int n = 0;
    b->rc[0] = psfsim_compute(b->s, 0, 1, img, 64 * 64, NULL, b->err, sizeof b->err);
    b->rc[1] = psfsim_params_get(b->s, 0, 1, &p, NULL, 0);
    b->rc[2] = psfsim_zernike(b->s, 0, 1, NULL, total, NULL, 0);
    b->rc[3] = psfsim_fits_header(b->s, 0, &m, cards, 300, &n, NULL, 0);
    b->rc[4] = psfsim_decision_get(b->s, &d, NULL, 0);
    return NULL;
}

typedef struct {
    psfsim_set *s;
    int calls;
    busy_probe other, same; /* from another thread; from the callback itself */
} busy_state;

static int busy_progress(long long done, long long total, void *user)
{
    (void)done;
    (void)total;
    busy_state *st = user;
    if (st->calls++ > 0) return 0;
    st->other.s = st->same.s = st->s;
    pthread_t t;
    if (pthread_create(&t, NULL, busy_calls, &st->other) == 0) pthread_join(t, NULL);
    busy_calls(&st->same);
    return 0;
}

static void test_busy(void **state)
{
    (void)state;
    psfsim_set *s = open_text(SMALL, "cpu");
    busy_state st = {.s = s};
    psfsim_set_progress(s, busy_progress, &st);
    size_t plane = 64 * 64;
    float *img = calloc(6 * plane, sizeof *img);
    char err[512] = "";
    assert_int_equal(psfsim_compute(s, 0, 6, img, 6 * plane, NULL, err, sizeof err), PSFSIM_OK);
    assert_true(st.calls >= 1);
    for (int i = 0; i < 5; ++i) {
        assert_int_equal(st.other.rc[i], PSFSIM_ERR_BUSY);
        assert_int_equal(st.same.rc[i], PSFSIM_ERR_BUSY);
    }
    assert_string_equal(
        st.other.err, "psfsim_compute: the set is busy with another call (from another thread, or "
                      "from its progress callback): a set takes one call at a time; open one set "
                      "per thread");
    /* the first call's images are right: the refused ones did nothing */
    float *ref = calloc(6 * plane, sizeof *ref);
    psfsim_set_progress(s, NULL, NULL);
    assert_int_equal(psfsim_compute(s, 0, 6, ref, 6 * plane, NULL, err, sizeof err), PSFSIM_OK);
    assert_memory_equal(img, ref, 6 * plane * sizeof *img);
    /* and the set is free again for every call */
    busy_probe after = {.s = s};
    busy_calls(&after);
    for (int i = 0; i < 5; ++i)
        assert_int_equal(after.rc[i], PSFSIM_OK);
    free(img);
    free(ref);
    psfsim_close(s);
}

/* Two threads computing one set, unsynchronised: each call succeeds or is
 * refused as busy, never crashes, and what succeeded is right. */
typedef struct {
    psfsim_set *s;
    float *img;
    int ok, busy;
} race_arg;

static void *race(void *arg)
{
    race_arg *r = arg;
    for (int i = 0; i < 20; ++i) {
        int rc = psfsim_compute(r->s, 0, 6, r->img, 6 * 64 * 64, NULL, NULL, 0);
        r->ok += rc == PSFSIM_OK;
        r->busy += rc == PSFSIM_ERR_BUSY;
    }
    return NULL;
}

static void test_busy_race(void **state)
{
    (void)state;
    psfsim_set *s = open_text(SMALL, "cpu");
    size_t plane = 64 * 64;
    race_arg r[2] = {{s, calloc(6 * plane, sizeof(float)), 0, 0},
                     {s, calloc(6 * plane, sizeof(float)), 0, 0}};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, race, &r[1]), 0);
    race(&r[0]);
    pthread_join(t, NULL);
    for (int i = 0; i < 2; ++i)
        assert_int_equal(r[i].ok + r[i].busy, 20);
    assert_true(r[0].ok > 0 || r[1].ok > 0);
    float *ref = calloc(6 * plane, sizeof *ref);
    assert_int_equal(psfsim_compute(s, 0, 6, ref, 6 * plane, NULL, NULL, 0), PSFSIM_OK);
    for (int i = 0; i < 2; ++i)
        if (r[i].ok) assert_memory_equal(r[i].img, ref, 6 * plane * sizeof *ref);
    free(r[0].img);
    free(r[1].img);
    free(ref);
    psfsim_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_and_version),
        cmocka_unit_test(test_open_file),
        cmocka_unit_test(test_open_text_errors),
        cmocka_unit_test(test_open_bad_arguments),
        cmocka_unit_test(test_options_init_v2),
        cmocka_unit_test(test_forced_gpu),
        cmocka_unit_test(test_describe_and_params),
        cmocka_unit_test(test_describe_nwavelengths),
        cmocka_unit_test(test_compute_errors),
        cmocka_unit_test(test_fits_header),
        cmocka_unit_test(test_message_handler),
        cmocka_unit_test(test_random_params),
        cmocka_unit_test(test_segment_terms),
        cmocka_unit_test(test_field_positions),
        cmocka_unit_test(test_field_h),
        cmocka_unit_test(test_busy),
        cmocka_unit_test(test_busy_race),
        cmocka_unit_test(test_fits_header_eefield),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
