/* Internals of config loading, shared by config.c (the sections and their
 * ranges), config_schema.c (the table of known keys, the tree walk that
 * rejects unknown keys and wrong types, the nearest-key suggestion) and
 * config_read.c (messages, typed getters, range checks, file paths).
 * Not part of the public interface: include config.h instead. */
#ifndef PSFSIM_CONFIG_PRIV_H
#define PSFSIM_CONFIG_PRIV_H

#include <libconfig.h>
#include <stddef.h>

#include "app/config/config.h"

/* Limits of the contract (config-schema.md) and of this implementation. */
#define CFG_MAX_PUPIL_SAMPLES 65536
#define CFG_MAX_FFT_SIZE 65536
#define CFG_MAX_SPIDERS 1000
#define CFG_MAX_IMAGES 10000000LL

/* One load in progress: the parsed tree and where messages go. */
typedef struct {
    const char *file;       /* the config path as given, for messages */
    char dir[CFG_PATH_MAX]; /* its directory, "" when the path has no '/' */
    config_t lc;
    char *err;
    size_t errlen;
} cfg_ctx;

/* What a key holds (config_schema.c checks it before anything reads it). */
typedef enum {
    CFG_K_GROUP,   /* { ... } */
    CFG_K_INT,     /* integer (32- or 64-bit literal) */
    CFG_K_FLOAT,   /* any number; integers accepted */
    CFG_K_STRING,  /* "..." */
    CFG_K_BOOL,    /* true | false */
    CFG_K_NUMBERS, /* [a, b, ...] or (a, b, ...) of numbers */
    CFG_K_PAIRS    /* ( (j, x), ... ): elements checked by the reader */
} cfg_kind;

/* ---- config_read.c ---- */

/* Write "FILE:LINE: key: message" to c->err (FILE:LINE from s, or just
 * "FILE: key: message" when s is NULL). Always returns -1. */
int cfg_error(cfg_ctx *c, const config_setting_t *s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Record in cfg->keys where key, the setting s, is written ("FILE:LINE",
 * FILE as cfg_error names it); nothing for a setting without a line.
 * Returns 0, or -1 with a message (out of memory). */
int cfg_record_key(cfg_ctx *c, psf_config *cfg, const config_setting_t *s, const char *key);
/* Replace control characters (a string value's "\n", say) by spaces, so a
 * message stays one line. */
void cfg_one_line(char *msg);
/* "FILE: key: required key missing" plus an optional note; returns -1. */
int cfg_missing(cfg_ctx *c, const char *key, const char *note);
/* "an integer", "a float", "a string", ... for a libconfig type. */
const char *cfg_type_name(int type);
/* Shortest text that reads back as v (%.15g, else %.17g). */
void cfg_fmt_double(double v, char *buf, size_t n);

/* The setting at a dotted path, or NULL when absent. */
const config_setting_t *cfg_get(const cfg_ctx *c, const char *path);
/* Value of a number setting (int, int64 or float) as a double. */
double cfg_number(const config_setting_t *s);
/* Value of an integer setting (int or int64). */
long long cfg_integer(const config_setting_t *s);
int cfg_is_number(const config_setting_t *s);
int cfg_is_integer(const config_setting_t *s);

/* Typed reads of an optional key that config_schema.c has type-checked.
 * Return 1 when present (value stored), 0 when absent (value untouched),
 * -1 on a range error (message written). */
/* Float: finite, and lo < v (lo_open) or lo <= v; no lower bound when
 * lo = -HUGE_VAL. */
int cfg_read_float(cfg_ctx *c, const char *path, double lo, int lo_open, double *v);
int cfg_read_int(cfg_ctx *c, const char *path, long long lo, long long hi, long long *v);
int cfg_read_bool(cfg_ctx *c, const char *path, int *v);
/* String of 1..maxlen-1 bytes copied to buf. */
int cfg_read_string(cfg_ctx *c, const char *path, char *buf, size_t maxlen);
/* One of names[0..count-1] (exact match): stores its index, or dflt when
 * the key is absent. */
int cfg_read_enum(cfg_ctx *c, const char *path, const char *const *names, int count, int dflt,
                  int *v);
/* Non-empty list of finite numbers, each > 0 when positive is set; *out is
 * malloc'd (caller frees), *n its length. -1 also on allocation failure. */
int cfg_read_numbers(cfg_ctx *c, const char *path, int positive, double **out, int *n);

/* Resolve a path written in the config against the config's directory and
 * check the file exists, is a regular file and can be opened for reading.
 * s/key name the setting for messages. Returns 0, or -1 with a message
 * naming the resolved path and the system's reason. */
int cfg_resolve_file(cfg_ctx *c, const config_setting_t *s, const char *key, const char *given,
                     char *resolved, size_t len);

/* ---- config_include.c ---- */

/* Check every file an @include line of path names (nested ones too, up to
 * libconfig's depth of 10), resolved against dir ("" = as written) as
 * libconfig resolves them: each must be a regular file, since libconfig
 * 1.5 exits the process (flex's "input in flex scanner failed") when one
 * is a directory. Returns 0, or -1 with "FILE:LINE: @include \"NAME\": is a
 * directory, not a config file" (or "is not a regular file") in err.
 * Missing files are left to libconfig ("cannot open include file"). */
int cfg_check_includes(const char *path, const char *dir, char *err, size_t errlen);
/* The same for a config given as text (config_load_text), name naming it
 * in messages. */
int cfg_check_includes_text(const char *name, const char *text, const char *dir, char *err,
                            size_t errlen);

/* ---- config_sweep.c ---- */

/* The aberrations block (convention, units, Zernike terms, OPD map) and the
 * sweep block (after aberrations: swept terms use its convention, and after
 * the optics block: the focus shift needs f_number). Each returns 0 or -1
 * with a message; what they allocate is in cfg for config_free. */
int cfg_read_aberrations(cfg_ctx *c, psf_config *cfg);
int cfg_read_sweep(cfg_ctx *c, psf_config *cfg);

/* ---- config_schema.c ---- */

/* Walk the whole tree: every key must be in the schema table for its place
 * and hold the kind of value the table says (numbers lists: every element a
 * number); each is recorded in cfg->keys (cfg_record_key). Returns 0, or -1
 * with the first offence in file order. */
int cfg_schema_check(cfg_ctx *c, psf_config *cfg);

/* Optimal-string-alignment edit distance (insertions, deletions,
 * substitutions and swaps of adjacent characters each cost 1), ASCII case
 * ignored. Exposed for the tests. */
int cfg_edit_distance(const char *a, const char *b);

#endif
