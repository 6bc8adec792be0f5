/* Regression inputs: every file under tests/regress/<target>/ goes through
 * the entry point of the fuzz target of that name (fuzz/fuzz_<target>.c)
 * and must give a clean error: -1, no output left, and one line of
 * printable text that names the file. These are the inputs the fuzzers
 * (and the hardening of issue 6) found to crash, exit, leak, read
 * uninitialised memory, allocate what a header claims (ctest runs this
 * test with ASan's max_allocation_size_mb=256) or print garbage; run here
 * in every build, they keep the fixes:
 *  - config/: config_load (then the image set, for a small valid config);
 *  - png_map/, fits_map/: psf_png_read_gray / psf_fits_read_image and
 *    maps_load_transmission / maps_load_opd on the file as it is; a FITS
 *    file must be refused by fits_scan_first_image already, before cfitsio
 *    parses it (its bugs show under valgrind only, not here);
 *  - cli/: the file split at NUL bytes and newlines is argv[1..]; after
 *    cli_parse refuses it, its strings are overwritten with 'v' and a
 *    valid command line must parse to exactly its options (getopt state
 *    left from the input would read the 'v's as -v).
 * A file whose name starts with "ok-" must instead be accepted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/run/cli.h"
#include "app/config/config.h"
#include "app/formats/fits.h"
#include "app/formats/fits_scan.h"
#include "app/set/image_set.h"
#include "app/set/maps.h"
#include "app/formats/png_io.h"
#include "tests/support/testutil.h"

/* Sorted file names of tests/regress/<target> (NULL-terminated; NULL when
 * the directory is missing). */
static char **list_inputs(const char *target, char *dir, size_t dirlen)
{
    snprintf(dir, dirlen, "%s/tests/regress/%s", tu_source_dir(), target);
    DIR *d = opendir(dir);
    if (!d) return NULL;
    size_t n = 0, cap = 16;
    char **names = calloc(cap + 1, sizeof *names);
    struct dirent *e;
    while (names && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            char **grown = realloc(names, (2 * cap + 1) * sizeof *names);
            if (!grown) break;
            names = grown;
            cap *= 2;
        }
        names[n++] = strdup(e->d_name);
        names[n] = NULL;
    }
    closedir(d);
    for (size_t i = 1; i < n; ++i) /* insertion sort: a few files */
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; --j) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    return names;
}

static void free_list(char **names)
{
    for (size_t i = 0; names && names[i]; ++i)
        free(names[i]);
    free(names);
}

static int expect_ok(const char *name)
{
    return strncmp(name, "ok-", 3) == 0;
}

/* err is one line of printable text holding what (when not NULL). */
static void assert_clean_message(const char *err, const char *what, const char *input)
{
    if (!err[0]) fail_msg("%s: an error without a message", input);
    for (const char *c = err; *c; ++c)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            fail_msg("%s: control character 0x%02x in \"%s\"", input, (unsigned)(unsigned char)*c,
                     err);
    if (what && !strstr(err, what))
        fail_msg("%s: the message does not name %s: %s", input, what, err);
}

static void replay_config(const char *path, const char *name)
{
    psf_config cfg;
    char err[1024] = "";
    int rc = config_load(path, &cfg, err, sizeof err);
    if (expect_ok(name)) {
        if (rc != 0) fail_msg("%s: refused: %s", name, err);
        image_set s;
        if (image_set_init(&s, &cfg, err, sizeof err) != 0)
            fail_msg("%s: image set: %s", name, err);
        image_set_free(&s);
    } else {
        if (rc != -1) fail_msg("%s: accepted", name);
        assert_clean_message(err, name, name);
    }
    config_free(&cfg);
}

static void replay_map(const char *path, const char *name, int fits)
{
    float *img = (float *)1;
    int rows = -1, cols = -1, maxval = -1;
    char err[1024] = "";
    int rc = fits ? psf_fits_read_image(path, &img, &rows, &cols, err, sizeof err)
                  : psf_png_read_gray(path, &img, &rows, &cols, &maxval, err, sizeof err);
    if (expect_ok(name)) {
        if (rc != 0) fail_msg("%s: refused: %s", name, err);
        assert_true(rows > 0 && cols > 0);
        free(img);
        return;
    }
    if (rc != -1) fail_msg("%s: accepted (%d x %d)", name, rows, cols);
    if (fits) { /* refused before cfitsio parses it (fits_scan.h) */
        int hdu = 0;
        char serr[1024] = "";
        if (fits_scan_first_image(path, &hdu, serr, sizeof serr) != -1)
            fail_msg("%s: fits_scan passed it on to cfitsio (HDU %d)", name, hdu);
        assert_clean_message(serr, name, name);
    }
    assert_null(img);
    assert_int_equal(rows, 0);
    assert_int_equal(cols, 0);
    assert_clean_message(err, name, name);
    err[0] = '\0';
    assert_int_equal(maps_load_transmission(path, &img, &rows, &cols, err, sizeof err), -1);
    assert_null(img);
    assert_clean_message(err, name, name);
    err[0] = '\0';
    maps_opd_units units;
    assert_int_equal(
        maps_load_opd(path, 2.0, ZUNITS_NM, &img, &rows, &cols, &units, err, sizeof err), -1);
    assert_null(img);
    assert_clean_message(err, name, name);
}

static void replay_cli(const char *path, const char *name)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    char *argv[66];
    int argc = 0;
    argv[argc++] = strdup("psfsim");
    size_t start = 0;
    for (size_t i = 0; i <= n && argc < 64; ++i) {
        if (i == n || buf[i] == '\0' || buf[i] == '\n') {
            argv[argc] = malloc(i - start + 1);
            memcpy(argv[argc], buf + start, i - start);
            argv[argc++][i - start] = '\0';
            start = i + 1;
        }
    }
    argv[argc] = NULL;
    cli_options o;
    char err[512] = "";
    int rc = cli_parse(argc, argv, &o, err, sizeof err);
    if (expect_ok(name)) {
        if (rc != 0) fail_msg("%s: refused: %s", name, err);
    } else {
        if (rc != -1) fail_msg("%s: accepted", name);
        assert_clean_message(err, NULL, name);
    }
    for (int i = 1; i < argc; ++i) { /* what a stale getopt would read next */
        size_t len = strlen(argv[i]);
        if (len > 1) memset(argv[i] + 1, 'v', len - 1);
    }
    char *good[] = {"psfsim", "-c", "x.cfg", NULL};
    err[0] = '\0';
    if (cli_parse(3, good, &o, err, sizeof err) != 0)
        fail_msg("%s: then a valid command line was refused: %s", name, err);
    assert_string_equal(o.config_path, "x.cfg");
    assert_false(o.verbose || o.quiet || o.force || o.help || o.version || o.probe ||
                 o.backend_given || o.output_dir);
    for (int i = 0; i < argc; ++i)
        free(argv[i]);
}

static void replay_target(const char *target)
{
    char dir[4096];
    char **names = list_inputs(target, dir, sizeof dir);
    int n = 0;
    for (size_t i = 0; names && names[i]; ++i, ++n) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        print_message("%s/%s\n", target, names[i]);
        if (!strcmp(target, "config"))
            replay_config(path, names[i]);
        else if (!strcmp(target, "png_map"))
            replay_map(path, names[i], 0);
        else if (!strcmp(target, "fits_map"))
            replay_map(path, names[i], 1);
        else
            replay_cli(path, names[i]);
    }
    print_message("%s: %d input(s)\n", target, n);
    free_list(names);
}

static void test_config(void **state)
{
    (void)state;
    replay_target("config");
}

static void test_png_map(void **state)
{
    (void)state;
    replay_target("png_map");
}

static void test_fits_map(void **state)
{
    (void)state;
    replay_target("fits_map");
}

static void test_cli(void **state)
{
    (void)state;
    replay_target("cli");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_png_map),
        cmocka_unit_test(test_fits_map),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
