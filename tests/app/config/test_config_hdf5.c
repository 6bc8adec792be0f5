/* The HDF5 output's keys (output.hdf5.enabled, dtype, compression, level):
 * values and defaults, HDF5 as the only output, and each mistake with its
 * exact "FILE:LINE: key: ..." message, psfsim exiting 2 on it with nothing
 * written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "app/config/config.h"
#include "tests/support/testutil.h"

static char *g_dir; /* a fresh temp dir per test */

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("config_hdf5");
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

/* DIR/name, in a static buffer per slot. */
static const char *in_dir(const char *name)
{
    static char buf[4][4096];
    static int slot;
    slot = (slot + 1) % 4;
    snprintf(buf[slot], sizeof buf[slot], "%s/%s", g_dir, name);
    return buf[slot];
}

#define MINIMAL                                                                                    \
    "name = \"t\";\n"                                                                              \
    "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"                       \
    "sampling: { pupil_samples = 32; };\n"

/* Load text that must fail with "DIR/x.cfg" + tail; then run psfsim on it
 * and check it exits 2 with the same message and writes nothing. */
static void expect_error(const char *text, const char *tail)
{
    psf_config cfg;
    char err[2048], want[4096];
    assert_int_equal(tu_write_file(in_dir("x.cfg"), text), 0);
    int rc = config_load(in_dir("x.cfg"), &cfg, err, sizeof err);
    config_free(&cfg);
    snprintf(want, sizeof want, "%s%s", in_dir("x.cfg"), tail);
    if (rc != -1) fail_msg("loaded, expected the error \"%s\"", want);
    assert_string_equal(err, want);

    const char *bin = getenv("PSFSIM_BIN");
    if (!bin) return;
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "'%s' -q --backend cpu -c '%s' -o '%s' 2>'%s'", bin, in_dir("x.cfg"),
             in_dir("out"), in_dir("stderr"));
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 2);
    assert_int_equal(tu_count_entries(in_dir("out")), -1); /* nothing written */
    FILE *f = fopen(in_dir("stderr"), "r");
    assert_non_null(f);
    char line[4096] = "";
    if (!fgets(line, sizeof line, f)) line[0] = '\0';
    fclose(f);
    char msg[4200];
    snprintf(msg, sizeof msg, "psfsim: %s\n", want);
    assert_string_equal(line, msg);
}

static psf_config load_ok(const char *text)
{
    psf_config c;
    char err[2048] = "";
    assert_int_equal(tu_write_file(in_dir("ok.cfg"), text), 0);
    if (config_load(in_dir("ok.cfg"), &c, err, sizeof err) != 0) fail_msg("%s", err);
    return c;
}

static void test_values_and_defaults(void **state)
{
    (void)state;
    psf_config c = load_ok(MINIMAL);
    assert_int_equal(c.hdf5_enabled, 0);
    assert_int_equal(c.hdf5_dtype, HDF5_FLOAT32);
    assert_int_equal(c.hdf5_compression, HDF5_NONE);
    assert_int_equal(c.hdf5_level, 4);
    config_free(&c);
    c = load_ok(MINIMAL "output: { hdf5: { enabled = true; dtype = \"uint16\"; compression = "
                        "\"gzip\"; level = 9; }; };\n");
    assert_int_equal(c.hdf5_enabled, 1);
    assert_int_equal(c.hdf5_dtype, HDF5_UINT16);
    assert_int_equal(c.hdf5_compression, HDF5_GZIP);
    assert_int_equal(c.hdf5_level, 9);
    config_free(&c);
    /* HDF5 alone is something to write. */
    c = load_ok(MINIMAL "output: { png: { enabled = false; }; hdf5: { enabled = true; }; };\n");
    assert_int_equal(c.png_enabled, 0);
    assert_int_equal(c.fits_enabled, 0);
    assert_int_equal(c.hdf5_enabled, 1);
    assert_int_equal(c.hdf5_level, 4);
    config_free(&c);
    /* The keys may be given while HDF5 is off. */
    c = load_ok(MINIMAL "output: { hdf5: { dtype = \"uint16\"; }; };\n");
    assert_int_equal(c.hdf5_enabled, 0);
    assert_int_equal(c.hdf5_dtype, HDF5_UINT16);
    config_free(&c);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error(MINIMAL "output: { hdf5: { enabled = 1; }; };\n",
                 ":4: output.hdf5.enabled: expected true or false (got an integer)");
    expect_error(MINIMAL "output: { hdf5: {\n  dtype = \"float64\"; }; };\n",
                 ":5: output.hdf5.dtype: must be \"float32\" or \"uint16\" (got \"float64\")");
    expect_error(MINIMAL "output: { hdf5: { compression = \"lzf\"; }; };\n",
                 ":4: output.hdf5.compression: must be \"none\" or \"gzip\" (got \"lzf\")");
    expect_error(MINIMAL "output: { hdf5: { compression = \"gzip\"; level = 0; }; };\n",
                 ":4: output.hdf5.level: must be >= 1 (got 0)");
    expect_error(MINIMAL "output: { hdf5: { compression = \"gzip\"; level = 10; }; };\n",
                 ":4: output.hdf5.level: must be <= 9 (got 10)");
    expect_error(MINIMAL "output: { hdf5: { compression = \"gzip\"; level = 4.0; }; };\n",
                 ":4: output.hdf5.level: expected an integer (got a float)");
    expect_error(MINIMAL "output: { hdf5: { level = 6; }; };\n",
                 ":4: output.hdf5.level: only used with output.hdf5.compression = \"gzip\"");
    expect_error(MINIMAL "output: { hdf5: { dtpye = \"uint16\"; }; };\n",
                 ":4: output.hdf5.dtpye: unknown key (did you mean output.hdf5.dtype?)");
    expect_error(MINIMAL "output: { hdf5 = true; };\n",
                 ":4: output.hdf5: expected a group { ... } (got a boolean)");
    expect_error(MINIMAL "output: { png: { enabled = false; };\n  hdf5: { enabled = false; }; };\n",
                 ":4: output: nothing to write: output.png.enabled, output.fits.enabled or "
                 "output.hdf5.enabled must be true");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_values_and_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
