/* SPDX-License-Identifier: BSD-3-Clause */
/* The sidecar NAME.json (app/dataset/sidecar.h) read back with jansson: it parses,
 * holds every key the header lists, the resolved config mirrors the
 * config's groups with its values and defaults (app/dataset/config_json.h), the
 * label j lists follow the convention, and sidecar_config_hash reads back
 * the fingerprint. */
#include <fcntl.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "app/config/config.h"
#include "app/dataset/config_json.h"
#include "app/set/image_set.h"
#include "app/dataset/sidecar.h"
#include "tests/support/testutil.h"

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("sidecar");
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

typedef struct {
    psf_config cfg;
    image_set set;
} loaded;

static void load(const char *text, loaded *l)
{
    char path[4200], err[1024] = "";
    snprintf(path, sizeof path, "%s/s.cfg", g_dir);
    assert_int_equal(tu_write_file(path, text), 0);
    if (config_load(path, &l->cfg, err, sizeof err) != 0) fail_msg("config: %s", err);
    if (image_set_init(&l->set, &l->cfg, err, sizeof err) != 0) fail_msg("image set: %s", err);
}

/* config_load alone, of text written to g_dir/file. */
static void load_config(const char *file, const char *text, psf_config *cfg)
{
    char path[4200], err[1024] = "";
    snprintf(path, sizeof path, "%s/%s", g_dir, file);
    assert_int_equal(tu_write_file(path, text), 0);
    if (config_load(path, cfg, err, sizeof err) != 0) fail_msg("config: %s", err);
}

static void unload(loaded *l)
{
    image_set_free(&l->set);
    config_free(&l->cfg);
}

/* The value at a path of object keys ("config", "optics", "f_number", NULL). */
static json_t *at(json_t *root, ...)
{
    va_list ap;
    va_start(ap, root);
    for (const char *k; root && (k = va_arg(ap, const char *));)
        root = json_object_get(root, k);
    va_end(ap);
    if (!root) fail_msg("a key is missing");
    return root;
}

static const char *str(json_t *v)
{
    assert_true(json_is_string(v));
    return json_string_value(v);
}

static void test_sidecar_keys(void **state)
{
    (void)state;
    loaded l;
    load("name = \"s\";\n"
         "optics: { wavelength_nm = 600.0; f_number = 8.0; aperture: { diameter_m = 2.0; "
         "obscuration = 0.1; }; };\n"
         "sampling: { pupil_samples = 32; };\n"
         "aberrations: { convention = \"ansi\"; zernike = ((7, 0.05)); };\n"
         "sweep: { defocus = [0.0, 0.2]; };\n"
         "output: { hdf5: { enabled = true; compression = \"gzip\"; }; };\n",
         &l);
    int dev[1] = {0};
    sidecar_run run = {.pv = {.config_hash = "0123456789abcdef", .backend = "backend cpu: x"},
                       .ndevices = 1,
                       .devices = dev};
    char err[1024] = "", path[4200];
    int dfd = open(g_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* the set's directory */
    assert_true(dfd >= 0);
    assert_int_equal(sidecar_write(&l.set, dfd, g_dir, &run, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/s.json", g_dir);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) fail_msg("s.json: line %d: %s", je.line, je.text);
    static const char *const keys[] = {
        "format", "format_version", "name",     "config_file", "config_hash", "date", "files",
        "config", "conventions",    "versions", "machine",     "backend",     "set",  "labels"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; ++i)
        if (!json_object_get(root, keys[i])) fail_msg("no key %s", keys[i]);
    assert_string_equal(str(at(root, "format", NULL)), "psfsim image set sidecar");
    assert_string_equal(str(at(root, "config_hash", NULL)), "0123456789abcdef");
    assert_string_equal(str(at(root, "files", "hdf5", NULL)), "s.h5");
    /* The config, resolved: given values, defaults, and null for "not set". */
    assert_true(json_real_value(at(root, "config", "optics", "f_number", NULL)) == 8.0);
    assert_true(json_real_value(at(root, "config", "sampling", "padding", NULL)) == 2.0);
    assert_string_equal(str(at(root, "config", "aberrations", "convention", NULL)), "ansi");
    assert_string_equal(str(at(root, "config", "output", "png", "stretch", NULL)), "log");
    assert_true(json_is_null(at(root, "config", "output", "npix", NULL)));
    assert_true(json_is_null(at(root, "config", "sweep", "focus_shift_um", NULL)));
    assert_int_equal(json_integer_value(at(root, "config", "output", "hdf5", "level", NULL)), 4);
    assert_string_equal(str(at(root, "config", "output", "hdf5", "compression", NULL)), "gzip");
    assert_int_equal(json_array_size(at(root, "config", "sweep", "defocus", NULL)), 2);
    /* Conventions, versions (no GPU: cuda null, no GPU named), the set. */
    static const char *const conv[] = {
        "zernike_convention", "zernike_units", "zernike_normalisation", "normalization",
        "centring",           "orientation",   "propagation",           "propagation_sign"};
    for (size_t i = 0; i < sizeof conv / sizeof *conv; ++i)
        str(at(root, "conventions", conv[i], NULL));
    assert_string_equal(str(at(root, "conventions", "zernike_convention", NULL)), "ansi");
    assert_string_equal(str(at(root, "versions", "psfsim", NULL)), PSFSIM_VERSION);
    str(at(root, "versions", "fftw", NULL));
    str(at(root, "versions", "hdf5", NULL));
    assert_true(json_is_null(at(root, "versions", "cuda", NULL)));
    str(at(root, "machine", "hostname", NULL));
    assert_int_equal(json_array_size(at(root, "machine", "gpus", NULL)), 0);
    assert_int_equal(json_integer_value(at(root, "set", "nimages", NULL)), 2);
    assert_int_equal(json_integer_value(at(root, "set", "npix", NULL)), 64);
    assert_true(json_real_value(at(root, "set", "pixel_scale_lambda_d", NULL)) == 0.5);
    /* The label terms in ascending j of the config's convention (the
     * manifest's z<j>): defocus ANSI 4 = Noll 4, then ANSI 7 (3, -1). */
    json_t *noll = at(root, "labels", "zernike_noll_j", NULL),
           *ansi = at(root, "labels", "zernike_j", NULL);
    assert_int_equal(json_array_size(noll), 2);
    assert_int_equal(json_integer_value(json_array_get(ansi, 0)), 4);
    assert_int_equal(json_integer_value(json_array_get(noll, 0)), 4);
    assert_int_equal(json_integer_value(json_array_get(ansi, 1)), 7);
    assert_int_equal(json_integer_value(json_array_get(noll, 1)), zernike_nm_to_noll(3, -1));
    assert_string_equal(str(json_array_get(at(root, "labels", "columns", NULL), 0)), "index");
    json_decref(root);
    char hash[64];
    assert_int_equal(sidecar_config_hash(dfd, "s", hash, sizeof hash), 0);
    assert_string_equal(hash, "0123456789abcdef");
    assert_int_equal(sidecar_config_hash(dfd, "none", hash, sizeof hash), -1);
    close(dfd);
    unload(&l);
}

/* Every group of the config is an object, every list of the config a list. */
static void test_config_groups(void **state)
{
    (void)state;
    loaded l;
    load("name = \"g\";\n"
         "optics: { wavelengths_nm = [500.0, 700.0]; weights = [1.0, 3.0]; aperture: { "
         "diameter_m = 1.0; spiders: { count = 4; width_m = 0.01; }; }; };\n"
         "sampling: { pupil_samples = 32; padding = 3.0; };\n"
         "sweep: { zernike = ((5, [0.0, 0.1]), (6, [0.2])); };\n"
         "output: { npix = 40; pixel_scale = 0.4; png: { bits = 8; }; fits: { enabled = true; "
         "cube = true; }; };\n",
         &l);
    json_t *c = config_to_json(&l.cfg);
    assert_non_null(c);
    assert_string_equal(str(at(c, "name", NULL)), "g");
    json_t *w = at(c, "optics", "weights", NULL);
    assert_true(fabs(json_real_value(json_array_get(w, 1)) - 0.75) < 1e-15);
    assert_int_equal(json_integer_value(at(c, "optics", "aperture", "spiders", "count", NULL)), 4);
    assert_true(json_is_null(at(c, "optics", "f_number", NULL)));
    assert_true(json_is_null(at(c, "aberrations", "opd_map", NULL)));
    json_t *z = at(c, "sweep", "zernike", NULL);
    assert_int_equal(json_array_size(z), 2);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(z, 0), 0)), 5);
    assert_int_equal(json_array_size(json_array_get(json_array_get(z, 0), 1)), 2);
    assert_int_equal(json_integer_value(at(c, "output", "npix", NULL)), 40);
    assert_true(json_real_value(at(c, "output", "pixel_scale", NULL)) == 0.4);
    assert_true(json_is_true(at(c, "output", "fits", "cube", NULL)));
    assert_true(json_is_false(at(c, "output", "hdf5", "enabled", NULL)));
    assert_string_equal(str(at(c, "backend", NULL)), "auto");
    char *text = json_dumps(c, 0);
    json_t *back = json_loads(text, 0, NULL);
    assert_true(json_equal(c, back));
    free(text);
    json_decref(back);
    json_decref(c);
    unload(&l);
}

/* The real at the path (fails unless a number). */
static double num(json_t *v)
{
    assert_true(json_is_number(v));
    return json_number_value(v);
}

/* A config that sets every group the first sidecar left out: each key holds
 * the value written (or its default), the keys a config can leave out are
 * null in another (test_config_groups' config). config_load alone: the
 * sidecar writes the config as loaded. */
static void test_config_every_group(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/t.csv", g_dir);
    assert_int_equal(tu_write_file(path, "defocus,z5\n0.1,0.2\n"), 0);
    psf_config cfg;
    load_config(
        "e.cfg",
        "name = \"e\";\n"
        "optics: { wavelength_nm = 1000.0; f_number = 10.0; aperture: { shape = \"segmented\"; "
        "obscuration = 0.1; obscuration_shape = \"hexagon\"; segments: { flat_to_flat_m = 1.0; "
        "gap_m = 0.01; rings = 1; zernike = ((2, 4, 0.03)); }; spiders: { vanes = ({ angle_deg "
        "= 30.0; width_m = 0.02; offset_m = 0.05; r_start_m = 0.1; r_end_m = 0.0; }); }; }; "
        "};\n"
        "sampling: { pupil_samples = 64; padding = 2.0; };\n"
        "normalization = \"pupil\";\n"
        "sweep: { table = \"t.csv\"; segment_zernike = ((1, 5, [0.0, 0.01]));\n"
        "  random: { count = 3; seed = 77; zernike = ((7, \"uniform\", 0.04));\n"
        "    segment_zernike = ((6, \"normal\", 0.02));\n"
        "    spectrum: { j_min = 8; j_max = 11; total_rms = 0.05; power = -2.0; };\n"
        "    focus_shift_um = [0.0, 1.5]; wavelength_nm = [900.0, 1100.0]; }; };\n"
        "detector: { oversample = 2; jitter_mas = [3.0, 4.0]; charge_diffusion_px = 0.25;\n"
        "  ipc = [0.0, 0.01, 0.0, 0.01, 0.96, 0.01, 0.0, 0.01, 0.0];\n"
        "  noise: { flux_photons = 1.0e6; background_e = 2.0; read_noise_e = 5.0; "
        "gain_e_per_adu = 1.5; bits = 14; seed = 9; }; };\n"
        "output: { npix = 32; pixel_scale_arcsec = 0.02; orientation = \"poppy\"; "
        "fits: { enabled = true; }; };\n",
        &cfg);
    json_t *c = config_to_json(&cfg);
    assert_non_null(c);

    assert_string_equal(str(at(c, "normalization", NULL)), "pupil"); /* was "peak" */
    json_t *ap = at(c, "optics", "aperture", NULL);
    assert_string_equal(str(at(ap, "obscuration_shape", NULL)), "hexagon");
    assert_true(num(at(ap, "angle_deg", NULL)) == 0.0);
    assert_true(json_is_null(at(ap, "pixel_scale_m", NULL)));
    json_t *vane = json_array_get(at(ap, "spiders", "vanes", NULL), 0);
    assert_true(num(at(vane, "angle_deg", NULL)) == 30.0);
    assert_true(num(at(vane, "offset_m", NULL)) == 0.05);
    assert_true(num(at(vane, "r_start_m", NULL)) == 0.1);
    json_t *sz = json_array_get(at(ap, "segments", "zernike", NULL), 0);
    assert_int_equal(json_integer_value(json_array_get(sz, 0)), 2);
    assert_int_equal(json_integer_value(json_array_get(sz, 1)), 4);
    assert_true(num(json_array_get(sz, 2)) == 0.03);

    json_t *sw = at(c, "sweep", NULL);
    assert_string_equal(str(at(sw, "table", NULL)), cfg.table_file);
    assert_non_null(strstr(cfg.table_file, "t.csv"));
    json_t *ssz = json_array_get(at(sw, "segment_zernike", NULL), 0);
    assert_int_equal(json_integer_value(json_array_get(ssz, 0)), 1);
    assert_int_equal(json_integer_value(json_array_get(ssz, 1)), 5);
    assert_true(num(json_array_get(json_array_get(ssz, 2), 1)) == 0.01);
    json_t *r = at(sw, "random", NULL);
    assert_int_equal(json_integer_value(at(r, "count", NULL)), 3);
    assert_int_equal(json_integer_value(at(r, "seed", NULL)), 77);
    json_t *rz = json_array_get(at(r, "zernike", NULL), 0);
    assert_int_equal(json_integer_value(json_array_get(rz, 0)), 7);
    assert_string_equal(str(json_array_get(rz, 1)), "uniform");
    assert_true(num(json_array_get(rz, 2)) == 0.04);
    json_t *rs = json_array_get(at(r, "segment_zernike", NULL), 0);
    assert_int_equal(json_integer_value(json_array_get(rs, 0)), 6);
    assert_string_equal(str(json_array_get(rs, 1)), "normal");
    assert_true(num(json_array_get(rs, 2)) == 0.02);
    assert_int_equal(json_integer_value(at(r, "spectrum", "j_min", NULL)), 8);
    assert_int_equal(json_integer_value(at(r, "spectrum", "j_max", NULL)), 11);
    assert_true(num(at(r, "spectrum", "total_rms", NULL)) == 0.05);
    assert_true(num(at(r, "spectrum", "power", NULL)) == -2.0);
    assert_true(num(json_array_get(at(r, "focus_shift_um", NULL), 1)) == 1.5);
    assert_true(num(json_array_get(at(r, "wavelength_nm", NULL), 0)) == 900.0);

    json_t *d = at(c, "detector", NULL);
    assert_int_equal(json_integer_value(at(d, "oversample", NULL)), 2);
    assert_true(json_is_true(at(d, "pixel_response", NULL))); /* the default for s > 1 */
    assert_true(num(json_array_get(at(d, "jitter_mas", NULL), 1)) == 4.0);
    assert_true(json_is_null(at(d, "jitter_lambda_d", NULL)));
    assert_true(num(at(d, "charge_diffusion_px", NULL)) == 0.25);
    assert_int_equal(json_array_size(at(d, "ipc", NULL)), 9);
    assert_true(num(json_array_get(at(d, "ipc", NULL), 4)) == 0.96);
    assert_string_equal(str(at(d, "write", NULL)), "detector");
    json_t *n = at(d, "noise", NULL);
    assert_true(num(at(n, "flux_photons", NULL)) == 1.0e6);
    assert_true(num(at(n, "background_e", NULL)) == 2.0);
    assert_true(num(at(n, "read_noise_e", NULL)) == 5.0);
    assert_true(num(at(n, "gain_e_per_adu", NULL)) == 1.5);
    assert_int_equal(json_integer_value(at(n, "bits", NULL)), 14);
    assert_int_equal(json_integer_value(at(n, "seed", NULL)), 9);

    json_t *o = at(c, "output", NULL);
    assert_true(num(at(o, "pixel_scale_arcsec", NULL)) == 0.02);
    assert_string_equal(str(at(o, "orientation", NULL)), "poppy");
    assert_true(json_is_false(at(o, "psf_grid", NULL))); /* its default */
    assert_true(json_is_null(at(o, "pixel_scale", NULL)));
    json_decref(c);
    config_free(&cfg);
}

/* output.psf_grid (a FITS cube, so not with detector.noise above; its
 * table is the image set's check, not the config's). */
static void test_config_psf_grid(void **state)
{
    (void)state;
    psf_config cfg;
    load_config("p.cfg",
                "name = \"p\";\n"
                "optics: { wavelength_nm = 500.0; aperture: { diameter_m = 1.0; }; };\n"
                "sampling: { pupil_samples = 32; padding = 2.0; };\n"
                "output: { psf_grid = true; fits: { enabled = true; cube = true; }; };\n",
                &cfg);
    json_t *c = config_to_json(&cfg);
    assert_non_null(c);
    assert_true(json_is_true(at(c, "output", "psf_grid", NULL)));
    json_decref(c);
    config_free(&cfg);
}

/* A config without those groups: each is null, each default as documented. */
static void test_config_unset_null(void **state)
{
    (void)state;
    loaded l;
    load("name = \"u\";\n"
         "optics: { wavelength_nm = 500.0; aperture: { diameter_m = 1.0; }; };\n"
         "sampling: { pupil_samples = 32; padding = 2.0; };\n",
         &l);
    json_t *c = config_to_json(&l.cfg);
    assert_non_null(c);
    const char *null_keys[][4] = {
        {"detector", NULL},
        {"sweep", "random", NULL},
        {"sweep", "table", NULL},
        {"sweep", "segment_zernike", NULL},
        {"optics", "aperture", "segments", NULL},
        {"optics", "aperture", "pixel_scale_m", NULL},
        {"output", "pixel_scale_arcsec", NULL},
    };
    for (size_t i = 0; i < sizeof null_keys / sizeof null_keys[0]; ++i) {
        json_t *v = c;
        for (int k = 0; k < 4 && null_keys[i][k]; ++k)
            v = json_object_get(v, null_keys[i][k]);
        if (!json_is_null(v)) fail_msg("%s.%s is not null", null_keys[i][0], null_keys[i][1]);
    }
    assert_true(json_is_null(at(c, "optics", "aperture", "spiders", "vanes", NULL)));
    assert_string_equal(str(at(c, "optics", "aperture", "obscuration_shape", NULL)), "circle");
    assert_string_equal(str(at(c, "output", "orientation", NULL)), "psfsim");
    assert_true(json_is_false(at(c, "output", "psf_grid", NULL)));
    json_decref(c);
    unload(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sidecar_keys),       cmocka_unit_test(test_config_groups),
        cmocka_unit_test(test_config_every_group), cmocka_unit_test(test_config_unset_null),
        cmocka_unit_test(test_config_psf_grid),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
