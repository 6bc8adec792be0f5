/* SPDX-License-Identifier: BSD-3-Clause */
/* table: CSV tables of a listed set; good files (spaces, quotes, CRLF and
 * CR line ends, blank lines, symlinks), every refusal with its exact
 * message, the size caps, and the column validator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app/set/table.h"

#include "tests/support/testutil.h"

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("table");
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

/* len bytes of text (NULs allowed) into g_dir/t.csv; its path. */
static const char *write_bytes(const char *text, size_t len)
{
    const char *path = in_dir("t.csv");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    return path;
}

static psf_table *load_ok(const char *text)
{
    psf_table *t = NULL;
    char err[512] = "";
    int rc = table_load(write_bytes(text, strlen(text)), &t, err, sizeof err);
    if (rc != 0) fail_msg("%s", err);
    assert_non_null(t);
    return t;
}

/* table_load of path fails with "<path><suffix>". */
static void load_fails_at(const char *path, const char *suffix)
{
    psf_table *t = (psf_table *)&t; /* must be reset to NULL */
    char err[512] = "";
    assert_int_equal(table_load(path, &t, err, sizeof err), -1);
    assert_null(t);
    assert_string_equal(err, tu_format("%s%s", path, suffix));
}

static void load_fails(const char *text, const char *suffix)
{
    load_fails_at(write_bytes(text, strlen(text)), suffix);
}

static void test_good_table(void **state)
{
    (void)state;
    psf_table *t = load_ok("wavelength_nm,defocus,z4\n500,0.1,0.02\n600,-0.1,0\n");
    assert_int_equal(t->ncols, 3);
    assert_int_equal(t->nrows, 2);
    assert_string_equal(t->names[2], "z4");
    assert_int_equal(table_column(t, "defocus"), 1);
    assert_int_equal(table_column(t, "z5"), -1);
    assert_true(t->cols[0][0] == 500 && t->cols[0][1] == 600);
    assert_true(t->cols[1][1] == -0.1 && t->cols[2][0] == 0.02);
    assert_int_equal(t->header_line, 1);
    assert_int_equal(t->line[0], 2);
    assert_int_equal(t->line[1], 3);
    assert_string_equal(t->path, in_dir("t.csv"));
    char err[256] = "";
    assert_int_equal(table_check_columns(t, ZCONV_NOLL, err, sizeof err), 0);
    table_free(t);
    table_free(NULL);
}

/* Spaces, tabs, quotes, number forms. */
static void test_spaces_quotes_numbers(void **state)
{
    (void)state;
    psf_table *t = load_ok(" \"z4\" ,\t\"defocus\"\t, z 5 ,\"a,b\"\n"
                           " 1.5 ,\t\" -2e-3 \"\t,0x1p-3,+.25\n");
    assert_int_equal(t->ncols, 4);
    assert_string_equal(t->names[0], "z4");
    assert_string_equal(t->names[1], "defocus");
    assert_string_equal(t->names[2], "z 5");
    assert_string_equal(t->names[3], "a,b");
    assert_true(t->cols[0][0] == 1.5 && t->cols[1][0] == -2e-3);
    assert_true(t->cols[2][0] == 0.125 && t->cols[3][0] == 0.25);
    table_free(t);
}

/* CRLF and CR line ends; blank lines before, between and after rows; no
 * final line end. Lines count as a text editor shows them. */
static void test_line_ends_and_blank_lines(void **state)
{
    (void)state;
    psf_table *t = load_ok("z4,z5\r\n1,2\r\n3,4\r\n\r\n");
    assert_int_equal(t->nrows, 2);
    assert_true(t->cols[1][1] == 4);
    assert_int_equal(t->line[1], 3);
    table_free(t);
    t = load_ok("z4\r1\r2\r");
    assert_int_equal(t->nrows, 2);
    assert_int_equal(t->line[1], 3);
    table_free(t);
    t = load_ok("\n  \n\tz4\n1\n\n \n2");
    assert_int_equal(t->header_line, 3);
    assert_int_equal(t->nrows, 2);
    assert_int_equal(t->line[0], 4);
    assert_int_equal(t->line[1], 7);
    assert_true(t->cols[0][1] == 2);
    table_free(t);
    /* a quoted line end stays in its cell (and is not a number) */
    load_fails("z4\n\"1\n\"\n", ":3:1 (z4): \"1?\" is not a number");
}

/* A UTF-8 byte order mark (a spreadsheet's "CSV UTF-8") is skipped: it
 * made the first column "\xEF\xBB\xBFdefocus", refused as unknown. Only a
 * leading one: elsewhere it stays text. */
static void test_byte_order_mark(void **state)
{
    (void)state;
    psf_table *t = load_ok("\xEF\xBB\xBF"
                           "defocus,z4\n0.5,1\n");
    assert_string_equal(t->names[0], "defocus");
    assert_int_equal(t->header_line, 1);
    assert_int_equal(t->line[0], 2);
    char err[256] = "";
    assert_int_equal(table_check_columns(t, ZCONV_NOLL, err, sizeof err), 0);
    table_free(t);
    load_fails("z4\n\xEF\xBB\xBF"
               "1\n",
               ":2:1 (z4): \"\xEF\xBB\xBF"
               "1\" is not a number");
}

static void test_symlink_followed(void **state)
{
    (void)state;
    write_bytes("z4\n1\n", 5);
    const char *link = in_dir("link.csv");
    assert_int_equal(symlink("t.csv", link), 0);
    psf_table *t = NULL;
    char err[256] = "";
    assert_int_equal(table_load(link, &t, err, sizeof err), 0);
    assert_true(t->nrows == 1 && t->cols[0][0] == 1);
    table_free(t);
}

static void test_not_a_table_file(void **state)
{
    (void)state;
    load_fails_at(in_dir("missing.csv"), ": cannot open: No such file or directory");
    load_fails_at(g_dir, ": not a regular file");
    load_fails_at("/dev/null", ": not a regular file");
    const char *fifo = in_dir("fifo.csv");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    load_fails_at(fifo, ": not a regular file"); /* at once: no writer awaited */
    load_fails("", ": empty file (a header row of column names is required)");
    load_fails("\n \r\n\t\n", ": no header row (the file holds only blank lines)");
    load_fails("z4,z5\n", ": no data rows after the header (one image per row)");
    load_fails("z4,z5\n\n", ": no data rows after the header (one image per row)");
}

static void test_bad_header(void **state)
{
    (void)state;
    load_fails("0.1,0.2\n1,2\n",
               ":1:1: \"0.1\" is a number; the first row must be the header (column names)");
    load_fails("\nz4,-3\n1,2\n",
               ":2:2: \"-3\" is a number; the first row must be the header (column names)");
    load_fails("z4,,z5\n1,2,3\n", ":1:2: empty column name");
    load_fails("z4, \"\" \n1,2\n", ":1:2: empty column name");
    load_fails("z4,defocus,z5,z4,defocus\n1,2,3,4,5\n",
               ":1:4 (z4): duplicate column name (also column 1)");
    load_fails("b,a,c,a,b\n1,2,3,4,5\n", ":1:4 (a): duplicate column name (also column 2)");
    load_fails_at(write_bytes("z4,a\0b\n1,2\n", 11), ":1:2: a NUL byte in the column name");
    char *wide = malloc(8 * (TABLE_MAX_COLUMNS + 1) + 16);
    assert_non_null(wide);
    size_t n = 0;
    for (int c = 0; c <= TABLE_MAX_COLUMNS; ++c)
        n += (size_t)sprintf(wide + n, "%sc%d", c ? "," : "", c);
    strcpy(wide + n, "\n1\n");
    load_fails(wide, ":1: more than 8192 columns (the limit of a table)");
    free(wide);
}

static void test_bad_cells(void **state)
{
    (void)state;
    load_fails("z4,z5\n1,2\n1,2,3\n", ":3:3: extra cell (the header has 2 columns)");
    load_fails("z4,z5,defocus\n1,2\n", ":2:3 (defocus): missing cell (the row has 2 of 3 cells)");
    load_fails("z4,z5\r\n1,2\r\n3\r\n", ":3:2 (z5): missing cell (the row has 1 of 2 cells)");
    load_fails("z4,z5\n1,x1\n", ":2:2 (z5): \"x1\" is not a number");
    load_fails("z4,z5\n1,2\n1.5m,2\n", ":3:1 (z4): \"1.5m\" is not a number");
    load_fails("z4\n1 2\n", ":2:1 (z4): \"1 2\" is not a number");
    load_fails("z4,z5\n1,\n", ":2:2 (z5): empty cell");
    load_fails("z4,z5\n1,\"\"\n", ":2:2 (z5): empty cell");
    load_fails("z4,z5\n1,inf\n", ":2:2 (z5): \"inf\" is not finite");
    load_fails("z4,z5\n1,NaN\n", ":2:2 (z5): \"NaN\" is not finite");
    load_fails("z4,z5\n1,1e999\n", ":2:2 (z5): \"1e999\" is not finite");
    load_fails_at(write_bytes("z4\n1\0002\n", 7), ":2:1 (z4): \"1\" is not a number");
    load_fails("z\x01q\n\x1b[2J\n", ":2:1 (z?q): \"?[2J\" is not a number");
    load_fails("z4,z5\n1,2\"3\n", ":2: malformed CSV (a quote inside an unquoted cell, or text "
                                  "after a closing quote)");
    load_fails("z4,z5\n1,\"2\"3\n", ":2: malformed CSV (a quote inside an unquoted cell, or "
                                    "text after a closing quote)");
    load_fails("z4,z5\n1,\"2\n", ":2: a quoted cell is not closed by the end of the file");
}

static void test_size_caps(void **state)
{
    (void)state;
    /* a sparse file one byte past the cap: refused before it is parsed */
    const char *big = in_dir("big.csv");
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)TABLE_MAX_BYTES + 1), 0);
    close(fd);
    load_fails_at(big, ": larger than 64 MiB (the limit of a table file)");
    /* one row past the cap ("0\n" each, 20 MB) */
    size_t rows = TABLE_MAX_ROWS + 1, len = 3 + 2 * rows;
    char *text = malloc(len + 1);
    assert_non_null(text);
    memcpy(text, "z4\n", 3);
    for (size_t r = 0; r < rows; ++r)
        memcpy(text + 3 + 2 * r, "0\n", 2);
    load_fails_at(write_bytes(text, len), ":10000002: more than 10000000 rows (the limit of a "
                                          "table)");
    free(text);
}

static void test_zernike_index(void **state)
{
    (void)state;
    assert_int_equal(table_zernike_index("z4", ZCONV_NOLL), 4);
    assert_int_equal(table_zernike_index("z5151", ZCONV_NOLL), 5151);
    assert_int_equal(table_zernike_index("z5152", ZCONV_NOLL), -1);
    assert_int_equal(table_zernike_index("z0", ZCONV_NOLL), -1);
    assert_int_equal(table_zernike_index("z0", ZCONV_ANSI), 0);
    assert_int_equal(table_zernike_index("z37", ZCONV_FRINGE), 37);
    assert_int_equal(table_zernike_index("z04", ZCONV_NOLL), -1);
    assert_int_equal(table_zernike_index("z", ZCONV_NOLL), -1);
    assert_int_equal(table_zernike_index("z+4", ZCONV_NOLL), -1);
    assert_int_equal(table_zernike_index("z4a", ZCONV_NOLL), -1);
    assert_int_equal(table_zernike_index("Z4", ZCONV_NOLL), -1);
    assert_int_equal(table_zernike_index("z99999999999", ZCONV_NOLL), -1);
}

static int only_x(const char *name, void *ctx)
{
    (void)ctx;
    return strcmp(name, "x") == 0;
}

static void test_check_columns(void **state)
{
    (void)state;
    char err[512] = "";
    const char *allowed = "wavelength_nm, defocus, focus_shift_um, field_x_px, field_y_px, z<j> "
                          "with j an index in the";
    psf_table *t = load_ok("wavelength_nm,defocus,focus_shift_um,z4,z11\n1,2,3,4,5\n");
    assert_int_equal(table_check_columns(t, ZCONV_NOLL, err, sizeof err), 0);
    assert_int_equal(table_check_columns(t, ZCONV_FRINGE, err, sizeof err), 0);
    table_free(t);
    t = load_ok("\nwavelength_nm,z04\n1,2\n");
    assert_int_equal(table_check_columns(t, ZCONV_NOLL, err, sizeof err), -1);
    assert_string_equal(err, tu_format("%s:2:2 (z04): unknown column (allowed: %s Noll "
                                       "convention)",
                                       in_dir("t.csv"), allowed));
    table_free(t);
    t = load_ok("z0,Defocus\n1,2\n");
    assert_int_equal(table_check_columns(t, ZCONV_NOLL, err, sizeof err), -1);
    assert_string_equal(err, tu_format("%s:1:1 (z0): unknown column (allowed: %s Noll "
                                       "convention)",
                                       in_dir("t.csv"), allowed));
    assert_int_equal(table_check_columns(t, ZCONV_ANSI, err, sizeof err), -1);
    assert_string_equal(err, tu_format("%s:1:2 (Defocus): unknown column (allowed: %s ANSI "
                                       "convention)",
                                       in_dir("t.csv"), allowed));
    assert_int_equal(table_check_names(t, only_x, NULL, "x", err, sizeof err), -1);
    assert_string_equal(err,
                        tu_format("%s:1:1 (z0): unknown column (allowed: x)", in_dir("t.csv")));
    table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_good_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spaces_quotes_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_line_ends_and_blank_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_byte_order_mark, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_table_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_cells, setup, teardown),
        cmocka_unit_test_setup_teardown(test_size_caps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zernike_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_columns, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
