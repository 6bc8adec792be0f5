/* SPDX-License-Identifier: BSD-3-Clause */
/* Messages, typed getters, range checks and file paths for config loading
 * (see config_priv.h). */
#include "app/config/config_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file setting s comes from, as messages name it: the config as given,
 * or an @include'd file (libconfig keeps its name relative to the include
 * directory, the config's), joined into buf. */
static const char *setting_file(const cfg_ctx *c, const config_setting_t *s, char *buf, size_t len)
{
    const char *file = s ? config_setting_source_file(s) : NULL;
    if (!file || strcmp(file, c->file) == 0) return c->file;
    if (file[0] == '/' || !c->dir[0]) return file;
    snprintf(buf, len, "%s/%s", c->dir, file);
    return buf;
}

int cfg_error(cfg_ctx *c, const config_setting_t *s, const char *key, const char *fmt, ...)
{
    if (!c->err || c->errlen == 0) return -1;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    unsigned line = s ? config_setting_source_line(s) : 0;
    char inc[CFG_PATH_MAX + 8];
    const char *file = setting_file(c, s, inc, sizeof inc);
    if (line > 0)
        snprintf(c->err, c->errlen, "%s:%u: %s: %s", file, line, key, msg);
    else
        snprintf(c->err, c->errlen, "%s: %s: %s", c->file, key, msg);
    cfg_one_line(c->err);
    return -1;
}

int cfg_record_key(cfg_ctx *c, psf_config *cfg, const config_setting_t *s, const char *key)
{
    unsigned line = config_setting_source_line(s);
    if (line == 0) return 0;
    if ((cfg->nkeys & (cfg->nkeys - 1)) == 0) { /* 0, 1, 2, 4, ...: grow to twice */
        cfg_key_where *grown =
            realloc(cfg->keys, (size_t)(cfg->nkeys ? 2 * cfg->nkeys : 1) * sizeof *grown);
        if (!grown) return cfg_error(c, s, key, "out of memory");
        cfg->keys = grown;
    }
    char inc[2 * CFG_PATH_MAX + 2];
    const char *file = setting_file(c, s, inc, sizeof inc);
    size_t len = strlen(file) + 16;
    cfg_key_where *k = &cfg->keys[cfg->nkeys];
    k->key = strdup(key);
    k->where = malloc(len);
    if (!k->key || !k->where) {
        free(k->key);
        free(k->where);
        return cfg_error(c, s, key, "out of memory");
    }
    snprintf(k->where, len, "%s:%u", file, line);
    cfg->nkeys++;
    return 0;
}

void cfg_one_line(char *msg)
{
    for (; *msg; ++msg)
        if ((unsigned char)*msg < 0x20 || *msg == 0x7f) *msg = ' ';
}

int cfg_missing(cfg_ctx *c, const char *key, const char *note)
{
    return cfg_error(c, NULL, key, "required key missing%s%s", note ? " " : "", note ? note : "");
}

const char *cfg_type_name(int type)
{
    switch (type) {
    case CONFIG_TYPE_GROUP:
        return "a group";
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        return "an integer";
    case CONFIG_TYPE_FLOAT:
        return "a float";
    case CONFIG_TYPE_STRING:
        return "a string";
    case CONFIG_TYPE_BOOL:
        return "a boolean";
    case CONFIG_TYPE_ARRAY:
        return "an array";
    case CONFIG_TYPE_LIST:
        return "a list";
    default:
        return "nothing";
    }
}

void cfg_fmt_double(double v, char *buf, size_t n)
{
    snprintf(buf, n, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, n, "%.17g", v);
}

const config_setting_t *cfg_get(const cfg_ctx *c, const char *path)
{
    return config_lookup(&c->lc, path);
}

int cfg_is_integer(const config_setting_t *s)
{
    return s->type == CONFIG_TYPE_INT || s->type == CONFIG_TYPE_INT64;
}

int cfg_is_number(const config_setting_t *s)
{
    return cfg_is_integer(s) || s->type == CONFIG_TYPE_FLOAT;
}

long long cfg_integer(const config_setting_t *s)
{
    if (s->type == CONFIG_TYPE_INT64) return config_setting_get_int64(s);
    return config_setting_get_int(s);
}

double cfg_number(const config_setting_t *s)
{
    if (s->type == CONFIG_TYPE_FLOAT) return config_setting_get_float(s);
    return (double)cfg_integer(s);
}

/* "must be > 0 (got -1)" and friends for a float. */
static int float_range(cfg_ctx *c, const config_setting_t *s, const char *key, double v, double lo,
                       int lo_open)
{
    char got[64], bound[64];
    cfg_fmt_double(v, got, sizeof got);
    if (!isfinite(v)) return cfg_error(c, s, key, "must be a finite number (got %s)", got);
    if (lo == -HUGE_VAL) return 0;
    if (lo_open ? v > lo : v >= lo) return 0;
    cfg_fmt_double(lo, bound, sizeof bound);
    return cfg_error(c, s, key, "must be %s %s (got %s)", lo_open ? ">" : ">=", bound, got);
}

int cfg_read_float(cfg_ctx *c, const char *path, double lo, int lo_open, double *v)
{
    const config_setting_t *s = cfg_get(c, path);
    if (!s) return 0;
    double x = cfg_number(s);
    if (float_range(c, s, path, x, lo, lo_open)) return -1;
    *v = x;
    return 1;
}

int cfg_read_int(cfg_ctx *c, const char *path, long long lo, long long hi, long long *v)
{
    const config_setting_t *s = cfg_get(c, path);
    if (!s) return 0;
    long long x = cfg_integer(s);
    if (x < lo) return cfg_error(c, s, path, "must be >= %lld (got %lld)", lo, x);
    if (x > hi) return cfg_error(c, s, path, "must be <= %lld (got %lld)", hi, x);
    *v = x;
    return 1;
}

int cfg_read_bool(cfg_ctx *c, const char *path, int *v)
{
    const config_setting_t *s = cfg_get(c, path);
    if (!s) return 0;
    *v = config_setting_get_bool(s) ? 1 : 0;
    return 1;
}

int cfg_read_string(cfg_ctx *c, const char *path, char *buf, size_t maxlen)
{
    const config_setting_t *s = cfg_get(c, path);
    if (!s) return 0;
    const char *str = config_setting_get_string(s);
    size_t len = str ? strlen(str) : 0;
    if (len == 0) return cfg_error(c, s, path, "must not be empty");
    if (len >= maxlen)
        return cfg_error(c, s, path, "must be at most %zu characters (got %zu)", maxlen - 1, len);
    memcpy(buf, str, len + 1);
    return 1;
}

int cfg_read_enum(cfg_ctx *c, const char *path, const char *const *names, int count, int dflt,
                  int *v)
{
    const config_setting_t *s = cfg_get(c, path);
    *v = dflt;
    if (!s) return 0;
    const char *str = config_setting_get_string(s);
    for (int i = 0; i < count; ++i) {
        if (strcmp(str, names[i]) == 0) {
            *v = i;
            return 1;
        }
    }
    char list[256] = "";
    size_t used = 0;
    for (int i = 0; i < count && used < sizeof list; ++i) {
        int w = snprintf(list + used, sizeof list - used, "%s\"%s\"",
                         i == 0 ? "" : (i == count - 1 ? " or " : ", "), names[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    return cfg_error(c, s, path, "must be %s (got \"%s\")", list, str);
}

int cfg_read_numbers(cfg_ctx *c, const char *path, int positive, double **out, int *n)
{
    const config_setting_t *s = cfg_get(c, path);
    if (!s) return 0;
    int len = config_setting_length(s);
    if (len <= 0) return cfg_error(c, s, path, "must hold at least one value");
    double *v = malloc((size_t)len * sizeof *v);
    if (!v) return cfg_error(c, s, path, "out of memory");
    for (int i = 0; i < len; ++i) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        char key[256];
        snprintf(key, sizeof key, "%s[%d]", path, i);
        v[i] = cfg_number(e);
        if (float_range(c, e, key, v[i], positive ? 0.0 : -HUGE_VAL, 1)) {
            free(v);
            return -1;
        }
    }
    *out = v;
    *n = len;
    return 1;
}

int cfg_resolve_file(cfg_ctx *c, const config_setting_t *s, const char *key, const char *given,
                     char *resolved, size_t len)
{
    int w;
    if (given[0] == '/' || c->dir[0] == '\0')
        w = snprintf(resolved, len, "%s", given);
    else
        w = snprintf(resolved, len, "%s/%s", c->dir, given);
    if (w < 0 || (size_t)w >= len)
        return cfg_error(c, s, key, "path too long (more than %zu characters)", len - 1);
    /* O_NONBLOCK: a FIFO without a writer must not stop the open (it is
     * refused below, as not a regular file). */
    int fd = open(resolved, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return cfg_error(c, s, key, "cannot read %s: %s", resolved, strerror(errno));
    struct stat st;
    int rc = fstat(fd, &st), e = errno;
    close(fd);
    if (rc != 0) return cfg_error(c, s, key, "cannot read %s: %s", resolved, strerror(e));
    if (S_ISDIR(st.st_mode))
        return cfg_error(c, s, key, "cannot read %s: %s", resolved, strerror(EISDIR));
    if (!S_ISREG(st.st_mode))
        return cfg_error(c, s, key,
                         "cannot read %s: not a regular file (a FIFO, a device or a "
                         "socket)",
                         resolved);
    return 0;
}
