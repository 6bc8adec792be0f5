/* SPDX-License-Identifier: BSD-3-Clause */
/* The @include lines of a config, checked before libconfig reads it (see
 * config_priv.h). libconfig 1.5 opens an include with fopen, which
 * succeeds on a directory (`@include ""` or `@include "."` names the
 * config's own directory); the first read then fails and its flex scanner
 * calls exit(2) from inside config_read_file ("input in flex scanner
 * failed", no file, no line). Found by fuzz_config. So every file an
 * @include names, nested ones too, must be a regular, readable file first.
 * A file that includes itself, directly or through others, is refused
 * here too: libconfig would read it again at every level down to its
 * depth limit, k^10 reads for k includes per file (a fuzz_config timeout).
 *
 * libconfig inlines each @include: a file included twice is read twice,
 * and without a cycle ten files of ten includes each still make 10^9
 * reads (hours). So the walk counts what libconfig would read and refuses
 * a config past the caps of config_priv.h: CFG_MAX_INCLUSIONS inclusions,
 * CFG_MAX_TEXT_BYTES bytes in all (the config's own and every inclusion's)
 * and CFG_MAX_INCLUDED_FILES distinct files. The walk itself is linear:
 * each distinct file is read once (its include lines kept), and what one
 * inclusion of a file makes libconfig read is remembered for the next. */
#include "app/config/config_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/base/interrupt.h"
#include "app/base/text_shown.h"

/* libconfig's own limit (scanctx.c: MAX_INCLUDE_DEPTH). */
#define INCLUDE_MAX_DEPTH 10

typedef struct {
    int line;      /* 1-based */
    size_t offset; /* of its line in the file */
    char *name;    /* as written; NULL: it holds a backslash */
    int target;    /* the file it includes (include_walk.files), -1: none opened */
} include_line;

/* A distinct file (by st_dev, st_ino) and what the walk knows of it. */
typedef struct {
    dev_t dev;
    ino_t ino;
    size_t len; /* its bytes */
    char *text; /* kept for config_for_each_include (owned; NULL: the config's, or not kept) */
    include_line *inc;
    int ninc;
    int on_chain; /* being walked: an include of it is a cycle */
    int depth;    /* the least depth it was walked at, -1 = not yet */
    /* Walked with nothing beneath it that stops libconfig (a missing file,
     * nesting too deep): then what its includes make libconfig read per
     * inclusion of it is known. */
    int complete;
    long long below_inclusions;
    unsigned long long below_bytes;
    int has_wide; /* its first integer literal out of range (config_literal.c) */
    cfg_wide_int wide;
} include_file;

typedef struct {
    const char *config; /* its name for messages */
    const char *dir;
    include_file files[CFG_MAX_INCLUDED_FILES + 1]; /* [0]: the config */
    int nfiles;
    long long inclusions;     /* what libconfig reads, in walk order, */
    unsigned long long bytes; /* up to the point it would stop */
    int stopped;
    cfg_wide_site *wide; /* the first literal out of range, in reading order */
    int keep_text;       /* config_for_each_include: keep each included file's bytes */
} include_walk;

static int include_error(char *err, size_t errlen, const char *file, int line, const char *name,
                         const char *why)
{
    char shown[256];
    snprintf(err, errlen, "%s:%d: @include \"%s\": %s", file, line,
             text_shown(name, sizeof shown, shown, sizeof shown), why);
    return -1;
}

/* Append one include line to f. 0, or -1 when out of memory. */
static int add_line(include_file *f, int line, size_t offset, const char *name, size_t n)
{
    include_line *grown = realloc(f->inc, (size_t)(f->ninc + 1) * sizeof *grown);
    if (!grown) return -1;
    f->inc = grown;
    char *copy = NULL;
    if (name) {
        copy = malloc(n + 1);
        if (!copy) return -1;
        memcpy(copy, name, n);
        copy[n] = '\0';
    }
    f->inc[f->ninc++] = (include_line){line, offset, copy, -1};
    return 0;
}

/* The include lines of a file's text, in order, into f. An include is what
 * libconfig's scanner takes for one: at the start of a line, blanks,
 * "@include", blanks, a quote, then the name up to the next quote,
 * newlines included; libconfig keeps the name as a C string, so a NUL ends
 * it. A name with a backslash (escapes) is kept as NULL, refused when the
 * walk reaches it. 0, or -1 when out of memory. */
static int scan_includes(include_file *f, const char *text, size_t len)
{
    int lineno = 1;
    const char *end = text + len;
    for (const char *p = text; p < end; ++p) {
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
        size_t n = 0;
        while (r + n < close && r[n] != '\0' && n + 1 < CFG_PATH_MAX)
            ++n;
        int bad = memchr(r, '\\', (size_t)(close - r)) != NULL;
        if (add_line(f, lineno, (size_t)(p - text), bad ? NULL : r, n) != 0) return -1;
        if (bad) break; /* the walk stops there */
    }
    return 0;
}

/* The file of identity st among those seen, or -1. */
static int find_file(const include_walk *w, const struct stat *st)
{
    for (int i = 0; i < w->nfiles; ++i)
        if (w->files[i].dev == st->st_dev && w->files[i].ino == st->st_ino) return i;
    return -1;
}

/* Record a file (its include lines from text). Its index, or -1. */
static int add_file(include_walk *w, dev_t dev, ino_t ino, const char *text, size_t len)
{
    include_file *f = &w->files[w->nfiles];
    memset(f, 0, sizeof *f);
    f->dev = dev;
    f->ino = ino;
    f->len = len;
    f->depth = -1;
    f->has_wide = cfg_find_wide_int(text, len, &f->wide);
    if (scan_includes(f, text, len) != 0) return -1;
    return w->nfiles++;
}

/* Add one inclusion of file g (and, when known, what its includes read)
 * to the counts, and hold them to the caps. 0, or -1 with the message. */
static int count(include_walk *w, const include_file *g, int below, const char *file, int line,
                 const char *name, char *err, size_t errlen)
{
    if (w->stopped) return 0;
    w->inclusions += 1 + (below ? g->below_inclusions : 0);
    w->bytes += g->len + (below ? g->below_bytes : 0);
    char why[CFG_PATH_MAX + 200];
    if (w->inclusions > CFG_MAX_INCLUSIONS)
        snprintf(why, sizeof why,
                 "more than %d inclusions in all (the cap for one config, %s; libconfig reads "
                 "a file again at each @include of it)",
                 CFG_MAX_INCLUSIONS, w->config);
    else if (w->bytes > CFG_MAX_TEXT_BYTES)
        snprintf(why, sizeof why,
                 "more than %zu MiB read in all (the cap for one config, %s, with every "
                 "inclusion; libconfig reads a file again at each @include of it)",
                 CFG_MAX_TEXT_BYTES >> 20, w->config);
    else
        return 0;
    return include_error(err, errlen, file, line, name, why);
}

/* The file an include names, as libconfig opens it (the include directory
 * is put before every name, an absolute one too), seen by the walk: its
 * index in *gi, or -1 when libconfig cannot open it. 0, or -1 with the
 * message (not a regular file, past a cap, out of memory). */
static int open_include(include_walk *w, const char *name, const char *file, int line, int *gi,
                        char *err, size_t errlen)
{
    char resolved[2 * CFG_PATH_MAX + 2];
    snprintf(resolved, sizeof resolved, "%s%s%s", w->dir, w->dir[0] ? "/" : "", name);
    struct stat st;
    *gi = -1;
    if (stat(resolved, &st) != 0) return 0; /* libconfig: "cannot open include file" */
    if (!S_ISREG(st.st_mode))
        return include_error(err, errlen, file, line, name,
                             S_ISDIR(st.st_mode) ? "is a directory, not a config file"
                                                 : "is not a regular file");
    *gi = find_file(w, &st);
    if (*gi >= 0) return 0;
    char why[200];
    if (w->nfiles > CFG_MAX_INCLUDED_FILES) {
        snprintf(why, sizeof why, "more than %d distinct files included (the cap for one config)",
                 CFG_MAX_INCLUDED_FILES);
        return include_error(err, errlen, file, line, name, why);
    }
    if ((unsigned long long)st.st_size > CFG_MAX_TEXT_BYTES) {
        snprintf(why, sizeof why, "larger than the %zu MiB cap on a config (%lld bytes)",
                 CFG_MAX_TEXT_BYTES >> 20, (long long)st.st_size);
        return include_error(err, errlen, file, line, name, why);
    }
    cfg_text t;
    char rerr[64];
    if (cfg_text_read(resolved, name, CFG_MAX_TEXT_BYTES, &t, rerr, sizeof rerr) != 0) {
        if (!interrupt_pending()) return 0; /* libconfig reports it */
        snprintf(err, errlen, "%s: interrupted while loading the config", w->config);
        return -1;
    }
    if (t.stream) { /* replaced since the stat */
        cfg_text_free(&t);
        return include_error(err, errlen, file, line, name, "is not a regular file");
    }
    *gi = add_file(w, st.st_dev, st.st_ino, t.text, t.len);
    if (*gi >= 0 && w->keep_text)
        w->files[*gi].text = t.text; /* owned by the walk now */
    else
        cfg_text_free(&t);
    if (*gi < 0) return include_error(err, errlen, file, line, name, "out of memory");
    return 0;
}

/* Note f's literal out of range as the first in reading order, when it
 * comes before offset (that of an include line) and none came before it.
 * source: f's name as its @include writes it, NULL for the config. */
static void note_wide(include_walk *w, const include_file *f, const char *source, size_t offset)
{
    if (w->wide->found || !f->has_wide || f->wide.offset >= offset) return;
    w->wide->found = 1;
    w->wide->in_config = source == NULL;
    snprintf(w->wide->source, sizeof w->wide->source, "%s", source ? source : "");
    w->wide->lit = f->wide;
}

/* Walk the includes of file fi (named file in messages, source as
 * note_wide has it), depth deep. */
static int walk(include_walk *w, int fi, const char *file, const char *source, int depth, char *err,
                size_t errlen)
{
    include_file *f = &w->files[fi];
    f->on_chain = 1;
    if (f->depth < 0 || depth < f->depth) f->depth = depth;
    long long inclusions0 = w->inclusions;
    unsigned long long bytes0 = w->bytes;
    for (int i = 0; i < f->ninc; ++i) {
        const include_line *e = &f->inc[i];
        note_wide(w, f, source, e->offset);
        if (!e->name)
            return include_error(err, errlen, file, e->line, "...",
                                 "a backslash in an include name is not supported");
        if (depth >= INCLUDE_MAX_DEPTH) { /* libconfig: "nesting too deep" */
            w->stopped = 1;
            continue;
        }
        int gi;
        if (open_include(w, e->name, file, e->line, &gi, err, errlen) != 0) return -1;
        f->inc[i].target = gi;
        if (gi < 0) {
            w->stopped = 1;
            continue;
        }
        include_file *g = &w->files[gi];
        if (g->on_chain)
            return include_error(err, errlen, file, e->line, e->name,
                                 gi == fi ? "the file includes itself"
                                          : "an include cycle (the file includes a file "
                                            "that includes it)");
        if (count(w, g, g->complete, file, e->line, e->name, err, errlen) != 0) return -1;
        if (g->complete || (g->depth >= 0 && g->depth <= depth + 1)) continue;
        char resolved[2 * CFG_PATH_MAX + 2];
        snprintf(resolved, sizeof resolved, "%s%s%s", w->dir, w->dir[0] ? "/" : "", e->name);
        if (walk(w, gi, resolved, e->name, depth + 1, err, errlen) != 0) return -1;
    }
    note_wide(w, f, source, (size_t)-1);
    f->on_chain = 0;
    if (!w->stopped) {
        f->complete = 1;
        f->below_inclusions = w->inclusions - inclusions0;
        f->below_bytes = w->bytes - bytes0;
    }
    return 0;
}

/* What config_for_each_include calls, with its argument. */
typedef struct {
    int (*fn)(const char *file, const char *text, size_t len, void *arg);
    void *arg;
} include_visit;

/* Visit every inclusion below file fi in the order libconfig reads them
 * (an include, then its own includes). Bounded: the walk that came before
 * held the inclusions to CFG_MAX_INCLUSIONS. */
static int visit_below(const include_walk *w, int fi, const include_visit *v)
{
    const include_file *f = &w->files[fi];
    for (int i = 0; i < f->ninc; ++i) {
        const include_line *e = &f->inc[i];
        if (e->target < 0) continue; /* not opened: libconfig refused the config */
        const include_file *g = &w->files[e->target];
        char resolved[2 * CFG_PATH_MAX + 2];
        snprintf(resolved, sizeof resolved, "%s%s%s", w->dir, w->dir[0] ? "/" : "", e->name);
        if (v->fn(resolved, g->text, g->len, v->arg) != 0) return -1;
        if (visit_below(w, e->target, v) != 0) return -1;
    }
    return 0;
}

/* The walk of cfg_check_includes, then (v not NULL) the visits. */
static int check_and_visit(const char *config, const cfg_text *t, const char *dir,
                           cfg_wide_site *wide, const include_visit *v, char *err, size_t errlen)
{
    wide->found = 0;
    include_walk *w = calloc(1, sizeof *w);
    int rc = -1;
    if (!w || add_file(w, t->dev, t->ino, t->text, t->len) != 0) {
        snprintf(err, errlen, "%s: out of memory", config);
    } else {
        w->config = config;
        w->dir = dir ? dir : "";
        w->bytes = t->len;
        w->wide = wide;
        w->keep_text = v != NULL;
        rc = walk(w, 0, config, NULL, 0, err, errlen);
        if (rc == 0 && v && visit_below(w, 0, v) != 0) rc = -2; /* visit's own message */
    }
    for (int i = 0; w && i < w->nfiles; ++i) {
        for (int k = 0; k < w->files[i].ninc; ++k)
            free(w->files[i].inc[k].name);
        free(w->files[i].inc);
        free(w->files[i].text);
    }
    free(w);
    if (rc == 0) return 0;
    if (rc == -1) cfg_one_line(err);
    return -1;
}

int cfg_check_includes(const char *config, const cfg_text *t, const char *dir, cfg_wide_site *wide,
                       char *err, size_t errlen)
{
    return check_and_visit(config, t, dir, wide, NULL, err, errlen);
}

int config_for_each_include(const psf_config *cfg,
                            int (*visit)(const char *file, const char *text, size_t len, void *arg),
                            void *arg, char *err, size_t errlen)
{
    cfg_text t = {.text = cfg->text,
                  .len = cfg->text_len,
                  .dev = (dev_t)cfg->text_dev,
                  .ino = (ino_t)cfg->text_ino};
    cfg_wide_site *wide = malloc(sizeof *wide);
    if (!wide) {
        snprintf(err, errlen, "%s: out of memory", cfg->path);
        return -1;
    }
    include_visit v = {visit, arg};
    int rc = check_and_visit(cfg->path, &t, cfg->include_dir, wide, &v, err, errlen);
    free(wide);
    return rc;
}
