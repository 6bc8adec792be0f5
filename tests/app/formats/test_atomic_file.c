/* SPDX-License-Identifier: BSD-3-Clause */
/* atomic_file: commit replaces the final file only on success, abort and
 * every failure leave the old file and no temp file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/formats/atomic_file.h"
#include "tests/support/testutil.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void path_in(char *out, size_t outlen, const char *dir, const char *name)
{
    snprintf(out, outlen, "%s/%s", dir, name);
}

static void test_commit_creates_file(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("atomic");
    assert_non_null(dir);
    char path[4096], err[512] = "";
    path_in(path, sizeof path, dir, "out.txt");
    atomic_file af;
    assert_int_equal(atomic_open(&af, path, err, sizeof err), 0);
    assert_non_null(af.fp);
    /* The temp file is hidden, beside the final name, named after it. */
    char prefix[4096];
    snprintf(prefix, sizeof prefix, "%s/.out.txt.tmp.", dir);
    assert_int_equal(strncmp(af.tmp_path, prefix, strlen(prefix)), 0);
    assert_int_equal(tu_count_entries(dir), 1);
    assert_int_equal(access(path, F_OK), -1); /* not there before commit */
    fputs("hello\n", af.fp);
    assert_int_equal(atomic_commit(&af, err, sizeof err), 0);
    assert_string_equal(slurp(path), "hello\n");
    assert_int_equal(tu_count_entries(dir), 1);
    /* An ordinary file mode (umask applied), not mkstemp's 0600. */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    mode_t mask = umask(022);
    umask(mask);
    assert_int_equal(st.st_mode & 0777, 0666 & ~mask);
    tu_rmtree(dir);
    free(dir);
}

static void test_commit_replaces_existing(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("atomic");
    char path[4096], err[512] = "";
    path_in(path, sizeof path, dir, "f.csv");
    assert_int_equal(tu_write_file(path, "old\n"), 0);
    atomic_file af;
    assert_int_equal(atomic_open(&af, path, err, sizeof err), 0);
    fputs("new contents\n", af.fp);
    /* Until commit the old file is intact. */
    fflush(af.fp);
    assert_string_equal(slurp(path), "old\n");
    assert_int_equal(atomic_commit(&af, err, sizeof err), 0);
    assert_string_equal(slurp(path), "new contents\n");
    assert_int_equal(tu_count_entries(dir), 1);
    tu_rmtree(dir);
    free(dir);
}

static void test_abort_keeps_old(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("atomic");
    char path[4096], err[512] = "";
    path_in(path, sizeof path, dir, "f.csv");
    assert_int_equal(tu_write_file(path, "old\n"), 0);
    atomic_file af;
    assert_int_equal(atomic_open(&af, path, err, sizeof err), 0);
    fputs("half-written", af.fp);
    assert_int_equal(tu_count_entries(dir), 2);
    atomic_abort(&af);
    assert_string_equal(slurp(path), "old\n");
    assert_int_equal(tu_count_entries(dir), 1);
    /* A second abort, or an abort of a zeroed struct, does nothing. */
    atomic_abort(&af);
    atomic_file zero;
    memset(&zero, 0, sizeof zero);
    atomic_abort(&zero);
    assert_int_equal(tu_count_entries(dir), 1);
    tu_rmtree(dir);
    free(dir);
}

static void test_open_missing_dir(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("atomic");
    char path[4096], err[512] = "";
    snprintf(path, sizeof path, "%s/no/such/dir/x.png", dir);
    atomic_file af;
    assert_int_equal(atomic_open(&af, path, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, strerror(ENOENT)));
    assert_int_equal(tu_count_entries(dir), 0);
    atomic_abort(&af); /* harmless after a failed open */
    tu_rmtree(dir);
    free(dir);
}

static void test_open_bad_names(void **state)
{
    (void)state;
    char err[512] = "";
    atomic_file af;
    assert_int_equal(atomic_open(&af, "", err, sizeof err), -1);
    assert_true(err[0] != '\0');
    err[0] = '\0';
    assert_int_equal(atomic_open(&af, "somedir/", err, sizeof err), -1);
    assert_non_null(strstr(err, "somedir/"));
    char *longname = malloc(5000);
    memset(longname, 'a', 4999);
    longname[4999] = '\0';
    assert_int_equal(atomic_open(&af, longname, err, sizeof err), -1);
    assert_non_null(strstr(err, strerror(ENAMETOOLONG)));
    free(longname);
}

/* A commit whose rename fails (the final name is a non-empty directory)
 * returns -1 naming the path and leaves no temp file. */
static void test_commit_rename_fails(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("atomic");
    char path[4096], inner[4200], err[512] = "";
    path_in(path, sizeof path, dir, "taken");
    assert_int_equal(mkdir(path, 0755), 0);
    path_in(inner, sizeof inner, path, "keep");
    assert_int_equal(tu_write_file(inner, "x"), 0);
    atomic_file af;
    assert_int_equal(atomic_open(&af, path, err, sizeof err), 0);
    fputs("data", af.fp);
    assert_int_equal(atomic_commit(&af, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_int_equal(tu_count_entries(dir), 1); /* only the directory */
    assert_int_equal(tu_count_entries(path), 1);
    tu_rmtree(dir);
    free(dir);
}

/* A write error (the disk is full) is caught at commit. */
static void test_commit_write_error(void **state)
{
    (void)state;
    if (access("/dev/full", W_OK) != 0) skip();
    /* atomic_open on /dev/full is not possible (no temp beside it), so
     * swap the stream for one on /dev/full after opening. */
    char *dir = tu_mkdtemp("atomic");
    char path[4096], err[512] = "";
    path_in(path, sizeof path, dir, "full.bin");
    atomic_file af;
    assert_int_equal(atomic_open(&af, path, err, sizeof err), 0);
    fclose(af.fp);
    af.fp = fopen("/dev/full", "wb");
    assert_non_null(af.fp);
    for (int i = 0; i < 10000; ++i)
        fputs("0123456789", af.fp);
    assert_int_equal(atomic_commit(&af, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, strerror(ENOSPC)));
    assert_int_equal(tu_count_entries(dir), 0);
    tu_rmtree(dir);
    free(dir);
}

/* atomic_open_at: the file is made through the directory's descriptor; a
 * symbolic link at the final name is replaced, never followed; a name with
 * a '/' is refused; the temp's name is recognised as that file's. */
static void test_open_at_links(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("atomic"), *other = tu_mkdtemp("atomic_other");
    char path[4096], outside[4096], err[512] = "";
    path_in(outside, sizeof outside, other, "outside.txt");
    assert_int_equal(tu_write_file(outside, "keep"), 0);
    path_in(path, sizeof path, dir, "final.txt");
    assert_int_equal(symlink(outside, path), 0);
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dirfd >= 0);
    atomic_file af;
    assert_int_equal(atomic_open_at(&af, dirfd, dir, "final.txt", err, sizeof err), 0);
    assert_string_equal(af.final_path, path);
    assert_true(atomic_is_temp_of(af.tmp_path + strlen(dir) + 1, "final.txt"));
    fputs("new", af.fp);
    assert_int_equal(atomic_commit(&af, err, sizeof err), 0);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_string_equal(slurp(path), "new");
    assert_string_equal(slurp(outside), "keep");
    assert_int_equal(atomic_open_at(&af, dirfd, dir, "sub/x", err, sizeof err), -1);
    assert_non_null(strstr(err, "sub/x"));
    assert_int_equal(tu_count_entries(dir), 1);
    close(dirfd);
    assert_true(atomic_is_temp_of(".a.png.tmp.AbC123", "a.png"));
    assert_false(atomic_is_temp_of(".a.png.tmp.AbC12", "a.png"));
    assert_false(atomic_is_temp_of(".a.png.tmp.AbC1234", "a.png"));
    assert_false(atomic_is_temp_of(".a.png.tmp.AbC-23", "a.png"));
    assert_false(atomic_is_temp_of(".b.png.tmp.AbC123", "a.png"));
    assert_false(atomic_is_temp_of("a.png.tmp.AbC123", "a.png"));
    tu_rmtree(dir);
    tu_rmtree(other);
    free(dir);
    free(other);
}

/* A relative name (no directory part) puts the temp in the current dir. */
static void test_relative_name(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("atomic");
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    char err[512] = "";
    atomic_file af;
    assert_int_equal(atomic_open(&af, "rel.txt", err, sizeof err), 0);
    assert_int_equal(strncmp(af.tmp_path, ".rel.txt.tmp.", 13), 0);
    fputs("r", af.fp);
    assert_int_equal(atomic_commit(&af, err, sizeof err), 0);
    assert_string_equal(slurp("rel.txt"), "r");
    assert_int_equal(tu_count_entries("."), 1);
    assert_int_equal(chdir(cwd), 0);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_creates_file), cmocka_unit_test(test_commit_replaces_existing),
        cmocka_unit_test(test_abort_keeps_old),     cmocka_unit_test(test_open_missing_dir),
        cmocka_unit_test(test_open_bad_names),      cmocka_unit_test(test_commit_rename_fails),
        cmocka_unit_test(test_commit_write_error),  cmocka_unit_test(test_open_at_links),
        cmocka_unit_test(test_relative_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
