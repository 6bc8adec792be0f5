/* config_load on input it must not trust: integer literals past their
 * range, names too long for the set's files, standard input and streams,
 * a file past the size cap, @include fan-out past the caps, each with its
 * exact message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/config/config.h"
#include "tests/support/testutil.h"

static char *g_dir; /* a fresh temp dir per test */

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("config_trust");
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

/* Load "-" with text on standard input (a pipe, closed after the text, as
 * a shell's `printf ... | psfsim -c -` gives it). Returns config_load's
 * status; cfg is for the caller to free. */
static int load_stdin(const char *text, psf_config *cfg, char *err, size_t errlen)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    size_t n = strlen(text);
    assert_true(n < 65536); /* fits the pipe's buffer: no writer thread */
    assert_int_equal(write(p[1], text, n), (ssize_t)n);
    close(p[1]);
    int saved = dup(STDIN_FILENO);
    assert_true(saved >= 0);
    assert_int_equal(dup2(p[0], STDIN_FILENO), STDIN_FILENO);
    close(p[0]);
    int rc = config_load("-", cfg, err, errlen);
    assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
    close(saved);
    return rc;
}

static void test_stdin(void **state)
{
    (void)state;
    psf_config c;
    char err[2048] = "";
    if (load_stdin(MINIMAL, &c, err, sizeof err) != 0) fail_msg("%s", err);
    assert_string_equal(c.name, "t");
    assert_string_equal(c.path, "<stdin>");
    assert_int_equal(c.text_len, strlen(MINIMAL)); /* the bytes loaded, kept */
    assert_memory_equal(c.text, MINIMAL, strlen(MINIMAL));
    config_free(&c);
    assert_int_equal(load_stdin(MINIMAL "output: { png: { bits = 12; }; };\n", &c, err, sizeof err),
                     -1);
    assert_string_equal(err, "<stdin>:4: output.png.bits: must be 8 or 16 (got 12)");
    config_free(&c);
    assert_int_equal(load_stdin("name = ;\n", &c, err, sizeof err), -1);
    assert_string_equal(err, "<stdin>:1: syntax error");
    config_free(&c);
}

/* A stream's @include resolves against the current directory. */
static void test_stdin_include(void **state)
{
    (void)state;
    assert_int_equal(tu_write_file(in_dir("part.cfg"), MINIMAL), 0);
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(g_dir), 0);
    psf_config c;
    char err[2048] = "";
    int rc = load_stdin("@include \"part.cfg\"\n", &c, err, sizeof err);
    assert_int_equal(chdir(cwd), 0);
    if (rc != 0) fail_msg("%s", err);
    assert_string_equal(c.name, "t");
    config_free(&c);
}

/* A regular file past the cap is refused before it is read. */
static void test_size_cap(void **state)
{
    (void)state;
    const char *big = in_dir("big.cfg");
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (16 << 20) + 1), 0); /* sparse: no disk used */
    close(fd);
    psf_config c;
    char err[2048] = "", want[4200];
    assert_int_equal(config_load(big, &c, err, sizeof err), -1);
    config_free(&c);
    snprintf(want, sizeof want,
             "%s: cannot read: larger than the 16 MiB cap on a config (16777217 bytes)", big);
    assert_string_equal(err, want);
    /* An @include'd file past the cap too. */
    assert_int_equal(tu_write_file(in_dir("inc.cfg"), "name = \"t\";\n@include \"big.cfg\"\n"), 0);
    assert_int_equal(config_load(in_dir("inc.cfg"), &c, err, sizeof err), -1);
    config_free(&c);
    snprintf(want, sizeof want,
             "%s:2: @include \"big.cfg\": larger than the 16 MiB cap on a config (16777217 bytes)",
             in_dir("inc.cfg"));
    assert_string_equal(err, want);
}

/* A device is a stream: read up to the cap, then refused. */
static void test_device(void **state)
{
    (void)state;
    psf_config c;
    char err[2048] = "";
    assert_int_equal(config_load("/dev/zero", &c, err, sizeof err), -1);
    config_free(&c);
    assert_string_equal(err, "/dev/zero: cannot read: larger than the 16 MiB cap on a config "
                             "(read as a stream, stopped at the cap)");
}

/* Text of n lines "@include \"NAME\"": NAME is name, or with numbered
 * nameI.cfg for line I (0-based). Caller frees. */
static char *include_lines(int n, const char *name, int numbered)
{
    char *text = malloc((size_t)n * 64 + 1);
    assert_non_null(text);
    size_t used = 0;
    for (int i = 0; i < n; ++i) {
        if (numbered)
            used += (size_t)snprintf(text + used, 64, "@include \"%s%d.cfg\"\n", name, i);
        else
            used += (size_t)snprintf(text + used, 64, "@include \"%s\"\n", name);
    }
    text[used] = '\0';
    return text;
}

static void expect_load_error(const char *name, const char *want_tail)
{
    psf_config c;
    char err[8192] = "", want[8192];
    assert_int_equal(config_load(in_dir(name), &c, err, sizeof err), -1);
    config_free(&c);
    snprintf(want, sizeof want, "%s%s", in_dir(name), want_tail);
    assert_string_equal(err, want);
}

/* libconfig reads a file again at each @include of it: that is allowed,
 * within the caps. */
static void test_include_twice(void **state)
{
    (void)state;
    assert_int_equal(tu_write_file(in_dir("note.cfg"), "# a comment only\n"), 0);
    assert_int_equal(
        tu_write_file(in_dir("x.cfg"), "@include \"note.cfg\"\n" MINIMAL "@include \"note.cfg\"\n"),
        0);
    psf_config c;
    char err[2048] = "";
    if (config_load(in_dir("x.cfg"), &c, err, sizeof err) != 0) fail_msg("%s", err);
    config_free(&c);
}

static void test_include_caps(void **state)
{
    (void)state;
    assert_int_equal(tu_write_file(in_dir("e.cfg"), ""), 0);
    char *text = include_lines(1025, "e.cfg", 0);
    assert_int_equal(tu_write_file(in_dir("many.cfg"), text), 0);
    free(text);
    expect_load_error("many.cfg",
                      tu_format(":1025: @include \"e.cfg\": more than 1024 inclusions in all (the "
                                "cap for one config, %s; libconfig reads a file again at each "
                                "@include of it)",
                                in_dir("many.cfg")));
    /* 9 MiB read twice: past 16 MiB in all. */
    int fd = open(in_dir("nine.cfg"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 9 << 20), 0);
    close(fd);
    assert_int_equal(tu_write_file(in_dir("big.cfg"), "@include \"nine.cfg\"\n"
                                                      "@include \"nine.cfg\"\n"),
                     0);
    expect_load_error("big.cfg",
                      tu_format(":2: @include \"nine.cfg\": more than 16 MiB read in all (the cap "
                                "for one config, %s, with every inclusion; libconfig reads a file "
                                "again at each @include of it)",
                                in_dir("big.cfg")));
    /* 65 distinct files. */
    for (int i = 0; i < 65; ++i)
        assert_int_equal(tu_write_file(in_dir(tu_format("f%d.cfg", i)), ""), 0);
    text = include_lines(65, "f", 1);
    assert_int_equal(tu_write_file(in_dir("wide.cfg"), text), 0);
    free(text);
    expect_load_error("wide.cfg", ":65: @include \"f64.cfg\": more than 64 distinct files "
                                  "included (the cap for one config)");
}

/* Ten files of ten includes each: refused at once, not after 10^9 reads
 * (ctest's timeout catches a walk that is not linear). */
static void test_include_fan_out(void **state)
{
    (void)state;
    for (int i = 0; i < 9; ++i) {
        char *text = include_lines(10, tu_format("g%d.cfg", i + 1), 0);
        assert_int_equal(tu_write_file(in_dir(tu_format("g%d.cfg", i)), text), 0);
        free(text);
    }
    assert_int_equal(tu_write_file(in_dir("g9.cfg"), ""), 0);
    psf_config c;
    char err[8192] = "";
    assert_int_equal(config_load(in_dir("g0.cfg"), &c, err, sizeof err), -1);
    config_free(&c);
    assert_non_null(strstr(err, "more than 1024 inclusions in all"));
    assert_non_null(strstr(err, in_dir("g0.cfg")));
}

static void expect_text_error(const char *text, const char *want_tail)
{
    assert_int_equal(tu_write_file(in_dir("x.cfg"), text), 0);
    expect_load_error("x.cfg", want_tail);
}

#define OUT_OF_32                                                                                  \
    " is out of the 32-bit range -2147483648..2147483647 (a 64-bit integer is written with an L "  \
    "suffix)"

/* libconfig 1.5 keeps an integer without L in 32 bits: these read as 8, 64
 * and 4 before, with no word. */
static void test_wide_integers(void **state)
{
    (void)state;
    expect_text_error(MINIMAL "output: { png: { bits = 4294967304; }; };\n",
                      ":4: output.png.bits: integer 4294967304" OUT_OF_32);
    expect_text_error(MINIMAL "output: { npix = 4294967360; };\n",
                      ":4: output.npix: integer 4294967360" OUT_OF_32);
    expect_text_error(MINIMAL "aberrations: { zernike = ( (4294967300, 0.1) ); };\n",
                      ":4: aberrations.zernike[0][0]: integer 4294967300" OUT_OF_32);
    expect_text_error(MINIMAL "aberrations: { zernike = ( (4, 0.1),\n  (-2147483649, 0.1) ); };\n",
                      ":5: aberrations.zernike[1][0]: integer -2147483649" OUT_OF_32);
    expect_text_error(MINIMAL "output: { png: { compression = 0xFFFFFFFF; }; };\n",
                      ":4: output.png.compression: integer 0xFFFFFFFF" OUT_OF_32);
    expect_text_error(MINIMAL "optics2 = 99999999999999999999L;\n",
                      ":4: optics2: integer 99999999999999999999L is out of the 64-bit range "
                      "-9223372036854775808..9223372036854775807");
    /* With L the value is whole, and its range check says so. */
    expect_text_error(MINIMAL "output: { npix = 4294967360L; };\n",
                      ":4: output.npix: must be <= 65536 (got 4294967360)");
    /* In an @include'd file: that file and its line. */
    assert_int_equal(tu_write_file(in_dir("part.cfg"), "# the output\noutput: { npix = "
                                                       "4294967360; };\n"),
                     0);
    char want[8192];
    snprintf(want, sizeof want, "%s:2: output.npix: integer 4294967360" OUT_OF_32,
             in_dir("part.cfg"));
    psf_config c;
    char err[8192] = "";
    assert_int_equal(tu_write_file(in_dir("y.cfg"), MINIMAL "@include \"part.cfg\"\n"), 0);
    assert_int_equal(config_load(in_dir("y.cfg"), &c, err, sizeof err), -1);
    config_free(&c);
    assert_string_equal(err, want);
    /* Not integers: in comments, strings and names, and floats. */
    assert_int_equal(tu_write_file(in_dir("ok.cfg"),
                                   MINIMAL "# 4294967300\n/* 4294967300\n */\n"
                                           "// 4294967300\n"
                                           "aberrations: { convention = \"noll\"; "
                                           "zernike = ( (4, 4294967300.0), (5, "
                                           "1e99) ); };\n"),
                     0);
    if (config_load(in_dir("ok.cfg"), &c, err, sizeof err) != 0) fail_msg("%s", err);
    config_free(&c);
}

/* The set's longest file, .NAME_manifest.csv.tmp.XXXXXX while it is
 * written, must fit NAME_MAX (255): a name of at most 230 characters. */
static void test_name_length(void **state)
{
    (void)state;
    char name[232], text[1024];
    memset(name, 'n', 231);
    name[231] = '\0';
    snprintf(text, sizeof text, "name = \"%s\";\n%s", name, MINIMAL + strlen("name = \"t\";\n"));
    expect_text_error(text, ":1: name: must be at most 230 characters: the set's files, such as "
                            ".NAME_manifest.csv.tmp.XXXXXX while it is written, must fit a file "
                            "name's 255 bytes (got 231)");
    name[230] = '\0';
    snprintf(text, sizeof text, "name = \"%s\";\n%s", name, MINIMAL + strlen("name = \"t\";\n"));
    assert_int_equal(tu_write_file(in_dir("ok.cfg"), text), 0);
    psf_config c;
    char err[2048] = "";
    if (config_load(in_dir("ok.cfg"), &c, err, sizeof err) != 0) fail_msg("%s", err);
    config_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wide_integers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_name_length, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stdin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stdin_include, setup, teardown),
        cmocka_unit_test_setup_teardown(test_size_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_include_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_include_caps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_include_fan_out, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
