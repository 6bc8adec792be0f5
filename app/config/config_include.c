/* The @include lines of a config, checked before libconfig reads it (see
 * config_priv.h). libconfig 1.5 opens an include with fopen, which
 * succeeds on a directory (`@include ""` or `@include "."` names the
 * config's own directory); the first read then fails and its flex scanner
 * calls exit(2) from inside config_read_file ("input in flex scanner
 * failed", no file, no line). Found by fuzz_config. So every file an
 * @include names, nested ones too, must be a regular, readable file first.
 * A file that includes itself, directly or through others, is refused
 * here too: libconfig would read it again at every level down to its
 * depth limit, k^10 reads for k includes per file (a fuzz_config timeout). */
#include "app/config/config_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/base/text_shown.h"

/* libconfig's own limit (scanctx.c: MAX_INCLUDE_DEPTH). */
#define INCLUDE_MAX_DEPTH 10
#define INCLUDE_MEMO 64 /* files remembered as checked */

/* A file by identity (st_dev, st_ino), and the walk's state: the chain of
 * files open now (for cycles) and the files already checked, with the
 * depth they were checked at (a file reached again no deeper needs no
 * second look). */
typedef struct {
    dev_t dev;
    ino_t ino;
    int depth;
} file_id;

typedef struct {
    file_id chain[INCLUDE_MAX_DEPTH + 1];
    file_id done[INCLUDE_MEMO];
    int ndone;
} include_walk;

static int same_file(const file_id *a, const struct stat *st)
{
    return a->dev == st->st_dev && a->ino == st->st_ino;
}

static int include_error(char *err, size_t errlen, const char *file, int line, const char *name,
                         const char *why)
{
    char shown[256];
    snprintf(err, errlen, "%s:%d: @include \"%s\": %s", file, line,
             text_shown(name, sizeof shown, shown, sizeof shown), why);
    return -1;
}

/* The whole of file, malloc'd, NUL-terminated (it may hold NULs too);
 * NULL when it cannot be read. */
static char *slurp(const char *file, size_t *len)
{
    FILE *f = fopen(file, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *grown = realloc(buf, 2 * cap + 1);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    *len = n;
    return buf;
}

/* Check the includes of file (a config or an included file), depth deep.
 * An include is what libconfig's scanner takes for one: at the start of a
 * line, blanks, "@include", blanks, a quote, then the name up to the next
 * quote, newlines included; libconfig keeps the name as a C string, so a
 * NUL ends it. Names with a backslash (escapes) are refused. */
static int check_file(include_walk *w, const char *file, const char *dir, int depth, char *err,
                      size_t errlen);

/* The include lines of text (len bytes, file's), depth deep: check_file's
 * scan, for a file's text or a config given in memory. */
static int check_text(include_walk *w, const char *file, const char *text, size_t len,
                      const char *dir, int depth, char *err, size_t errlen)
{
    int rc = 0, lineno = 1;
    const char *end = text + len;
    for (const char *p = text; p < end && rc == 0; ++p) {
        if (p != text && p[-1] != '\n') continue;
        if (p != text) ++lineno;
        const char *q = p;
        while (q < end && (*q == ' ' || *q == '\t'))
            ++q;
        if (end - q < 8 || memcmp(q, "@include", 8) != 0) continue;
        q += 8;
        const char *r = q;
        while (r < end && (*r == ' ' || *r == '\t'))
            ++r;
        if (r == q || r == end || *r != '"') continue; /* not an include: a syntax error */
        ++r;
        const char *close = memchr(r, '"', (size_t)(end - r));
        if (!close) close = end; /* unterminated: checked all the same */
        if (memchr(r, '\\', (size_t)(close - r))) {
            rc = include_error(err, errlen, file, lineno, "...",
                               "a backslash in an include name is not supported");
            break;
        }
        char name[CFG_PATH_MAX];
        size_t n = 0;
        while (r + n < close && r[n] != '\0' && n + 1 < sizeof name) {
            name[n] = r[n];
            ++n;
        }
        name[n] = '\0';
        if (depth >= INCLUDE_MAX_DEPTH) continue; /* libconfig: "nesting too deep" */
        char resolved[2 * CFG_PATH_MAX + 2];
        if (name[0] == '/' || !dir[0])
            snprintf(resolved, sizeof resolved, "%s", name);
        else
            snprintf(resolved, sizeof resolved, "%s/%s", dir, name);
        struct stat st;
        if (stat(resolved, &st) != 0) continue; /* libconfig: "cannot open include file" */
        if (!S_ISREG(st.st_mode)) {
            rc = include_error(err, errlen, file, lineno, name,
                               S_ISDIR(st.st_mode) ? "is a directory, not a config file"
                                                   : "is not a regular file");
            break;
        }
        for (int i = 0; i <= depth && rc == 0; ++i)
            if (same_file(&w->chain[i], &st))
                rc = include_error(err, errlen, file, lineno, name,
                                   i == depth ? "the file includes itself"
                                              : "an include cycle (the file includes a file "
                                                "that includes it)");
        if (rc == 0) rc = check_file(w, resolved, dir, depth + 1, err, errlen);
    }
    return rc;
}

static int check_file(include_walk *w, const char *file, const char *dir, int depth, char *err,
                      size_t errlen)
{
    struct stat self;
    int known = stat(file, &self) == 0;
    if (!known) memset(&self, 0, sizeof self); /* inode 0: matches no file */
    for (int i = 0; known && i < w->ndone; ++i)
        if (same_file(&w->done[i], &self) && w->done[i].depth <= depth) return 0;
    w->chain[depth] = (file_id){self.st_dev, self.st_ino, depth};
    size_t len = 0;
    char *text = slurp(file, &len);
    if (!text) return 0; /* libconfig reports it (the config itself: checked by the caller) */
    int rc = check_text(w, file, text, len, dir, depth, err, errlen);
    free(text);
    if (rc == 0 && known && w->ndone < INCLUDE_MEMO)
        w->done[w->ndone++] = (file_id){self.st_dev, self.st_ino, depth};
    return rc;
}

int cfg_check_includes(const char *path, const char *dir, char *err, size_t errlen)
{
    include_walk *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int rc = check_file(w, path, dir ? dir : "", 0, err, errlen);
    free(w);
    if (rc == 0) return 0;
    cfg_one_line(err);
    return -1;
}

int cfg_check_includes_text(const char *name, const char *text, const char *dir, char *err,
                            size_t errlen)
{
    include_walk *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    /* The text is no file: inode 0 in the chain matches none. */
    int rc = check_text(w, name, text, strlen(text), dir ? dir : "", 0, err, errlen);
    free(w);
    if (rc == 0) return 0;
    cfg_one_line(err);
    return -1;
}
