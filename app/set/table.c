/* SPDX-License-Identifier: BSD-3-Clause */
/* A listed set's table: the file read whole (capped), fed to libcsv a line
 * at a time so that every message can name its line. */
#include "app/set/table.h"

#include "app/base/text_shown.h"

#include <csv.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHOWN 48 /* bytes of a name or a cell a message shows */

typedef struct {
    psf_table *t;
    size_t lineno;   /* the line being fed to libcsv */
    size_t row_line; /* the line of the current row's first cell */
    int field;       /* the current cell's column, 0-based */
    int header_done;
    size_t cap;    /* rows allocated */
    int names_cap; /* names allocated */
    int failed;
    const char *rows; /* what a row is, for "no data rows" */
    char *err;
    size_t errlen;
} table_parse;

/* The first failure's message; later callbacks do nothing. Returns -1. */
__attribute__((format(printf, 2, 3))) static int fail(table_parse *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
    p->failed = 1;
    return -1;
}

static const char *shown(const char *s, size_t len, char *buf, size_t buflen)
{
    return text_shown(s, len < SHOWN ? len : SHOWN, buf, buflen);
}

/* Spaces and tabs off both ends (libcsv trims unquoted cells only). */
static const char *trim(const char *s, size_t *len)
{
    while (*len && (s[0] == ' ' || s[0] == '\t')) {
        ++s;
        --*len;
    }
    while (*len && (s[*len - 1] == ' ' || s[*len - 1] == '\t'))
        --*len;
    return s;
}

/* The whole of s[0..len) as a number (s[len] is within libcsv's
 * NUL-terminated cell): 0, or 1 empty, 2 not a number, 3 not finite. */
static int parse_number(const char *s, size_t len, double *v)
{
    if (len == 0) return 1;
    if (isspace((unsigned char)s[0])) return 2; /* strtod would skip a quoted newline */
    char *end;
    *v = strtod(s, &end);
    if (end != s + len) return 2;
    return isfinite(*v) ? 0 : 3;
}

static int add_name(table_parse *p, const char *s, size_t len)
{
    psf_table *t = p->t;
    char buf[SHOWN + 1];
    double v;
    int col = p->field + 1;
    if (t->ncols >= TABLE_MAX_COLUMNS)
        return fail(p, "%s:%zu: more than %d columns (the limit of a table)", t->path, p->row_line,
                    TABLE_MAX_COLUMNS);
    if (memchr(s, '\0', len))
        return fail(p, "%s:%zu:%d: a NUL byte in the column name", t->path, p->row_line, col);
    if (len == 0) return fail(p, "%s:%zu:%d: empty column name", t->path, p->row_line, col);
    if (parse_number(s, len, &v) == 0)
        return fail(p,
                    "%s:%zu:%d: \"%s\" is a number; the first row must be the header (column "
                    "names)",
                    t->path, p->row_line, col, shown(s, len, buf, sizeof buf));
    if (t->ncols == p->names_cap) {
        int cap = p->names_cap ? 2 * p->names_cap : 16;
        char **names = realloc(t->names, (size_t)cap * sizeof *names);
        if (!names) return fail(p, "%s: out of memory", t->path);
        t->names = names;
        p->names_cap = cap;
    }
    char *name = malloc(len + 1);
    if (!name) return fail(p, "%s: out of memory", t->path);
    memcpy(name, s, len);
    name[len] = '\0';
    t->names[t->ncols++] = name;
    return 0;
}

typedef struct {
    const char *name;
    int col;
} named_col;

static int cmp_named(const void *a, const void *b)
{
    const named_col *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->col > y->col) - (x->col < y->col);
}

/* The first column (in file order) whose name an earlier column has. */
static int check_duplicates(table_parse *p)
{
    psf_table *t = p->t;
    named_col *v = malloc((size_t)t->ncols * sizeof *v);
    if (!v) return fail(p, "%s: out of memory", t->path);
    for (int c = 0; c < t->ncols; ++c)
        v[c] = (named_col){t->names[c], c};
    qsort(v, (size_t)t->ncols, sizeof *v, cmp_named);
    int dup = -1, first = -1;
    for (int k = 1; k < t->ncols; ++k)
        if (strcmp(v[k].name, v[k - 1].name) == 0 && (dup < 0 || v[k].col < dup) &&
            (k == 1 || strcmp(v[k - 1].name, v[k - 2].name) != 0)) {
            dup = v[k].col; /* the second of its group: the first repeat */
            first = v[k - 1].col;
        }
    free(v);
    char buf[SHOWN + 1];
    if (dup < 0) return 0;
    return fail(p, "%s:%zu:%d (%s): duplicate column name (also column %d)", t->path,
                t->header_line, dup + 1,
                shown(t->names[dup], strlen(t->names[dup]), buf, sizeof buf), first + 1);
}

static int end_header(table_parse *p)
{
    psf_table *t = p->t;
    t->header_line = p->row_line;
    p->header_done = 1;
    if (check_duplicates(p) != 0) return -1;
    t->cols = calloc((size_t)t->ncols, sizeof *t->cols);
    return t->cols ? 0 : fail(p, "%s: out of memory", t->path);
}

/* Room for row t->nrows in every column. */
static int grow_rows(table_parse *p)
{
    psf_table *t = p->t;
    if (t->nrows >= TABLE_MAX_ROWS)
        return fail(p, "%s:%zu: more than %zu rows (the limit of a table)", t->path, p->row_line,
                    TABLE_MAX_ROWS);
    if (t->nrows < p->cap) return 0;
    size_t cap = p->cap ? 2 * p->cap : 1024;
    if (cap > TABLE_MAX_ROWS) cap = TABLE_MAX_ROWS;
    size_t *line = realloc(t->line, cap * sizeof *line);
    if (line) t->line = line;
    for (int c = 0; line && c < t->ncols; ++c) {
        double *col = realloc(t->cols[c], cap * sizeof *col);
        if (!col)
            line = NULL;
        else
            t->cols[c] = col;
    }
    if (!line) return fail(p, "%s: out of memory", t->path);
    p->cap = cap;
    return 0;
}

static int store_cell(table_parse *p, const char *s, size_t len)
{
    psf_table *t = p->t;
    int col = p->field + 1;
    char name[SHOWN + 1], cell[SHOWN + 1];
    if (p->field >= t->ncols)
        return fail(p, "%s:%zu:%d: extra cell (the header has %d columns)", t->path, p->lineno, col,
                    t->ncols);
    if (p->field == 0 && grow_rows(p) != 0) return -1;
    const char *nm = t->names[p->field];
    shown(nm, strlen(nm), name, sizeof name);
    double v = 0;
    switch (parse_number(s, len, &v)) {
    case 1:
        return fail(p, "%s:%zu:%d (%s): empty cell", t->path, p->lineno, col, name);
    case 2:
        return fail(p, "%s:%zu:%d (%s): \"%s\" is not a number", t->path, p->lineno, col, name,
                    shown(s, len, cell, sizeof cell));
    case 3:
        return fail(p, "%s:%zu:%d (%s): \"%s\" is not finite", t->path, p->lineno, col, name,
                    shown(s, len, cell, sizeof cell));
    }
    t->cols[p->field][t->nrows] = v;
    return 0;
}

static void on_cell(void *s, size_t len, void *data)
{
    table_parse *p = data;
    if (p->failed) return;
    const char *cell = s ? s : "";
    if (p->field == 0) p->row_line = p->lineno;
    cell = trim(cell, &len);
    if (!p->header_done)
        add_name(p, cell, len);
    else
        store_cell(p, cell, len);
    ++p->field;
}

static void on_row(int c, void *data)
{
    (void)c;
    table_parse *p = data;
    psf_table *t = p->t;
    if (p->failed) return;
    if (!p->header_done) {
        end_header(p);
    } else if (p->field < t->ncols) {
        char buf[SHOWN + 1];
        const char *nm = t->names[p->field];
        fail(p, "%s:%zu:%d (%s): missing cell (the row has %d of %d cells)", t->path, p->lineno,
             p->field + 1, shown(nm, strlen(nm), buf, sizeof buf), p->field, t->ncols);
        return;
    } else {
        t->line[t->nrows++] = p->row_line;
    }
    p->field = 0;
}

/* Feed buf to libcsv a line (LF, CRLF or CR ended) at a time. */
static void feed(table_parse *p, struct csv_parser *csv, const char *buf, size_t len)
{
    size_t pos = 0;
    while (pos < len && !p->failed) {
        size_t end = pos;
        while (end < len && buf[end] != '\n' && buf[end] != '\r')
            ++end;
        if (end < len) end += (buf[end] == '\r' && end + 1 < len && buf[end + 1] == '\n') ? 2 : 1;
        ++p->lineno;
        if (csv_parse(csv, buf + pos, end - pos, on_cell, on_row, p) != end - pos && !p->failed)
            fail(p,
                 "%s:%zu: malformed CSV (a quote inside an unquoted cell, or text after a "
                 "closing quote)",
                 p->t->path, p->lineno);
        pos = end;
    }
    if (!p->failed && csv_fini(csv, on_cell, on_row, p) != 0 && !p->failed)
        fail(p, "%s:%zu: a quoted cell is not closed by the end of the file", p->t->path,
             p->lineno);
    if (p->failed) return;
    if (!p->header_done)
        fail(p, "%s: no header row (the file holds only blank lines)", p->t->path);
    else if (p->t->nrows == 0)
        fail(p, "%s: no data rows after the header (%s)", p->t->path, p->rows);
}

/* The file whole into *buf (malloc'd, NUL-terminated), at most
 * TABLE_MAX_BYTES: 0, or -1 with err. */
static int read_capped(int fd, const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        return -1;
    }
    /* st_size is a hint (the file may grow, /proc reports 0): read to EOF. */
    size_t cap =
        (size_t)st.st_size < TABLE_MAX_BYTES ? (size_t)st.st_size + 1 : TABLE_MAX_BYTES + 1;
    size_t n = 0;
    char *b = malloc(cap + 1);
    for (;;) {
        if (!b) {
            snprintf(err, errlen, "%s: out of memory", path);
            return -1;
        }
        if (n > TABLE_MAX_BYTES) {
            free(b);
            snprintf(err, errlen, "%s: larger than %zu MiB (the limit of a table file)", path,
                     TABLE_MAX_BYTES >> 20);
            return -1;
        }
        if (n == cap) {
            cap = 2 * cap > TABLE_MAX_BYTES + 1 ? TABLE_MAX_BYTES + 1 : 2 * cap;
            char *grown = realloc(b, cap + 1);
            if (!grown) free(b);
            b = grown;
            continue;
        }
        ssize_t r = read(fd, b + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
            free(b);
            return -1;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

/* A table for path with nothing loaded yet. */
static psf_table *table_new(const char *path)
{
    psf_table *t = calloc(1, sizeof *t);
    if (t) t->path = strdup(path);
    if (t && !t->path) {
        free(t);
        t = NULL;
    }
    return t;
}

static int parse_text(psf_table *t, const char *text, size_t len, const char *rows, char *err,
                      size_t errlen)
{
    struct csv_parser csv;
    if (csv_init(&csv, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
        snprintf(err, errlen, "%s: out of memory", t->path);
        return -1;
    }
    table_parse p = {.t = t, .rows = rows, .err = err, .errlen = errlen};
    /* A UTF-8 byte order mark (spreadsheets write one) is not part of the
     * first column's name: it showed as '???' in "unknown column". */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        text += 3;
        len -= 3;
    }
    feed(&p, &csv, text, len);
    csv_free(&csv);
    return p.failed ? -1 : 0;
}

int table_load(const char *path, psf_table **out, char *err, size_t errlen)
{
    return table_load_rows(path, "one image per row", out, err, errlen);
}

int table_load_rows(const char *path, const char *rows, psf_table **out, char *err, size_t errlen)
{
    *out = NULL;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused). */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = read_capped(fd, path, &text, &len, err, errlen);
    close(fd);
    if (rc != 0) return -1;
    if (len == 0) {
        free(text);
        snprintf(err, errlen, "%s: empty file (a header row of column names is required)", path);
        return -1;
    }
    psf_table *t = table_new(path);
    if (!t) snprintf(err, errlen, "%s: out of memory", path);
    rc = t ? parse_text(t, text, len, rows, err, errlen) : -1;
    free(text);
    if (rc != 0) {
        table_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

void table_free(psf_table *t)
{
    if (!t) return;
    for (int c = 0; c < t->ncols; ++c) {
        free(t->names[c]);
        if (t->cols) free(t->cols[c]);
    }
    free(t->names);
    free(t->cols);
    free(t->line);
    free(t->path);
    free(t);
}

int table_column(const psf_table *t, const char *name)
{
    for (int c = 0; c < t->ncols; ++c)
        if (strcmp(t->names[c], name) == 0) return c;
    return -1;
}

int table_zernike_index(const char *name, zernike_convention conv)
{
    if (name[0] != 'z' || !isdigit((unsigned char)name[1])) return -1;
    if (name[1] == '0' && name[2] != '\0') return -1; /* a leading zero */
    int j = 0;
    for (const char *s = name + 1; *s; ++s) {
        if (!isdigit((unsigned char)*s) || s - name > 6) return -1; /* past any index */
        j = 10 * j + (*s - '0');
    }
    int n, m;
    return zernike_index_to_nm(conv, j, &n, &m) == 0 ? j : -1;
}

int table_check_names(const psf_table *t, table_name_ok ok, void *ctx, const char *allowed,
                      char *err, size_t errlen)
{
    for (int c = 0; c < t->ncols; ++c)
        if (!ok(t->names[c], ctx)) {
            char buf[SHOWN + 1];
            snprintf(err, errlen, "%s:%zu:%d (%s): unknown column (allowed: %s)", t->path,
                     t->header_line, c + 1,
                     shown(t->names[c], strlen(t->names[c]), buf, sizeof buf), allowed);
            return -1;
        }
    return 0;
}

/* The name of a Zernike convention, for the allowed columns. */
static const char *conv_label(zernike_convention conv)
{
    return conv == ZCONV_ANSI ? "ANSI" : conv == ZCONV_FRINGE ? "Fringe" : "Noll";
}

static int psfsim_column(const char *name, void *ctx)
{
    const zernike_convention *conv = ctx;
    return strcmp(name, "wavelength_nm") == 0 || strcmp(name, "defocus") == 0 ||
           strcmp(name, "focus_shift_um") == 0 || strcmp(name, "field_x_px") == 0 ||
           strcmp(name, "field_y_px") == 0 || table_zernike_index(name, *conv) >= 0;
}

int table_check_columns(const psf_table *t, zernike_convention conv, char *err, size_t errlen)
{
    char allowed[200];
    snprintf(allowed, sizeof allowed,
             "wavelength_nm, defocus, focus_shift_um, field_x_px, field_y_px, z<j> with j an "
             "index in the %s convention",
             conv_label(conv));
    return table_check_names(t, psfsim_column, &conv, allowed, err, errlen);
}

/* The decimal number at *s (no sign, no leading zero, at most 6 digits)
 * up to the character stop; -1 when there is none. */
static int decimal(const char **s, char stop)
{
    const char *p = *s;
    if (!isdigit((unsigned char)*p) || (*p == '0' && isdigit((unsigned char)p[1]))) return -1;
    int v = 0, n = 0;
    for (; isdigit((unsigned char)*p); ++p, ++n)
        v = 10 * v + (*p - '0');
    if (*p != stop || n > 6) return -1;
    *s = p;
    return v;
}

int table_segment_index(const char *name, zernike_convention conv, int *segment)
{
    const char *s = name + 1;
    if (name[0] != 's') return -1;
    int k = decimal(&s, '_');
    if (k < 0 || s[1] != 'z') return -1;
    s += 2;
    int j = decimal(&s, '\0'), n, m;
    if (j < 0 || zernike_index_to_nm(conv, j, &n, &m) != 0) return -1;
    *segment = k;
    return j;
}

/* psfsim's table columns (table_check_columns) and s<segment>_z<j>. */
static int segmented_column(const char *name, void *ctx)
{
    int k;
    return psfsim_column(name, ctx) ||
           table_segment_index(name, *(const zernike_convention *)ctx, &k) >= 0;
}

int table_check_segmented_columns(const psf_table *t, zernike_convention conv, char *err,
                                  size_t errlen)
{
    char allowed[200];
    snprintf(allowed, sizeof allowed,
             "wavelength_nm, defocus, focus_shift_um, field_x_px, field_y_px, z<j> and "
             "s<segment>_z<j> with j an index in the %s convention",
             conv_label(conv));
    return table_check_names(t, segmented_column, &conv, allowed, err, errlen);
}
