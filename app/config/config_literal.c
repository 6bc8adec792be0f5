/* SPDX-License-Identifier: BSD-3-Clause */
/* Integer literals libconfig cannot hold as written (see config_priv.h).
 * libconfig 1.5, as packaged, keeps an integer without the L suffix in 32
 * bits, silently: j = 4294967300 reads as 4, bits = 4294967304 as 8; with
 * the suffix (or, in later versions, past 32 bits) it is a 64-bit value,
 * saturated past 64 bits. The tree no longer shows what was written, so
 * the text is scanned as libconfig's lexer scans it (lib/scanner.l of
 * libconfig 1.5: its rules for comments, strings, @include, names and
 * numbers, longest match first) and the first literal out of its range is
 * refused. The k-th integer literal of a file is the k-th integer setting
 * from that file in the parsed tree (settings keep file order, and each
 * integer literal makes one), which names its key; a file without such
 * settings was not read (the include walk, config_include.c, also follows
 * @include lines inside comments and strings, which libconfig skips). */
#include "app/config/config_priv.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static int is_digit(int ch)
{
    return ch >= '0' && ch <= '9';
}

static int is_xdigit(int ch)
{
    return is_digit(ch) || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

static int xdigit_value(int ch)
{
    return is_digit(ch) ? ch - '0' : (ch | 0x20) - 'a' + 10;
}

/* scanner.l's {name}: [A-Za-z*][-A-Za-z0-9_*]* (ASCII, whatever the locale). */
static int is_name_start(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '*';
}

static int is_name_char(int ch)
{
    return is_name_start(ch) || is_digit(ch) || ch == '-' || ch == '_';
}

/* Past a quoted text that starts after the opening quote at i (a string or
 * an @include name: a backslash takes the next character with it). */
static size_t skip_quoted(const char *t, size_t len, size_t i)
{
    while (i < len && t[i] != '"')
        i += t[i] == '\\' && i + 1 < len ? 2 : 1;
    return i < len ? i + 1 : len;
}

/* Past "[ \t]*@include[ \t]+\"NAME\"" at a line start i, or i when none. */
static size_t skip_include(const char *t, size_t len, size_t i)
{
    size_t j = i;
    while (j < len && (t[j] == ' ' || t[j] == '\t'))
        ++j;
    if (len - j < 8 || memcmp(t + j, "@include", 8) != 0) return i;
    size_t k = j + 8;
    while (k < len && (t[k] == ' ' || t[k] == '\t'))
        ++k;
    if (k == j + 8 || k >= len || t[k] != '"') return i;
    return skip_quoted(t, len, k + 1);
}

/* 2^64 - 1 when the digits overflow it. */
static unsigned long long magnitude(const char *t, size_t from, size_t to, int base)
{
    unsigned long long m = 0;
    for (size_t i = from; i < to; ++i) {
        unsigned d = (unsigned)xdigit_value((unsigned char)t[i]);
        if (m > (ULLONG_MAX - d) / (unsigned)base) return ULLONG_MAX;
        m = m * (unsigned)base + d;
    }
    return m;
}

/* The low 32 (bits = 32) or 64 bits of u as a two's-complement value. */
static long long wrap(unsigned long long u, int bits)
{
    if (bits == 32) {
        u &= 0xffffffffULL;
        return u >= 0x80000000ULL ? (long long)u - 0x100000000LL : (long long)u;
    }
    return u > (unsigned long long)LLONG_MAX ? -(long long)(~u) - 1 : (long long)u;
}

/* The number token at i (scanner.l's {integer}, {integer64}, {hex},
 * {hex64}, {float}): its end in *end; 1 when it is an integer, its range
 * checked into lit (lit->bits = 0 when it fits). 0 for a float or a lone
 * sign. */
static int number(const char *t, size_t len, size_t i, size_t *end, cfg_wide_int *lit)
{
    size_t j = i, d0;
    int neg = t[j] == '-', hex = 0, bits = 32;
    unsigned long long m, limit;
    if (t[j] == '-' || t[j] == '+') ++j;
    if (j == i && j + 2 < len && t[j] == '0' && (t[j + 1] | 0x20) == 'x' && is_xdigit(t[j + 2])) {
        hex = 1;
        j += 2;
    }
    d0 = j;
    while (j < len && (hex ? is_xdigit(t[j]) : is_digit(t[j])))
        ++j;
    size_t d1 = j;
    int exp = !hex && j + 1 < len && (t[j] | 0x20) == 'e' &&
              (is_digit(t[j + 1]) ||
               ((t[j + 1] == '-' || t[j + 1] == '+') && j + 2 < len && is_digit(t[j + 2])));
    if (!hex && ((j < len && t[j] == '.') || (exp && d1 > d0))) { /* {float} */
        if (j < len && t[j] == '.')
            for (++j; j < len && is_digit(t[j]);)
                ++j;
        if (j + 1 < len && (t[j] | 0x20) == 'e') {
            size_t k = j + 1 + (t[j + 1] == '-' || t[j + 1] == '+');
            if (k < len && is_digit(t[k]))
                for (j = k; j < len && is_digit(t[j]);)
                    ++j;
        }
        *end = j;
        return 0;
    }
    if (d1 == d0) { /* a lone sign: garbage */
        *end = i + 1;
        return 0;
    }
    if (j < len && t[j] == 'L') {
        bits = 64;
        j += j + 1 < len && t[j + 1] == 'L' ? 2 : 1;
    }
    *end = j;
    m = magnitude(t, d0, d1, hex ? 16 : 10);
    limit = bits == 32 ? 0x7fffffffULL : (unsigned long long)LLONG_MAX;
    lit->bits = m <= limit + (unsigned long long)(neg && !hex) && m != ULLONG_MAX ? 0 : bits;
    if (hex) { /* strtoul / strtoull, saturated, then the low bits */
        lit->held[0] = lit->held[1] = wrap(m, bits);
    } else { /* atoll, saturated: kept whole (64 bits) or its low 32 bits */
        long long s;
        if (m > (unsigned long long)LLONG_MAX + (unsigned)neg)
            s = neg ? LLONG_MIN : LLONG_MAX;
        else
            s = !neg ? (long long)m : m == 0 ? 0 : -(long long)(m - 1) - 1;
        lit->held[0] = bits == 32 ? wrap((unsigned long long)s, 32) : s;
        lit->held[1] = s;
    }
    size_t n = j - i;
    if (n < sizeof lit->text)
        snprintf(lit->text, sizeof lit->text, "%.*s", (int)n, t + i);
    else
        snprintf(lit->text, sizeof lit->text, "%.*s...", (int)sizeof lit->text - 4, t + i);
    return 1;
}

int cfg_find_wide_int(const char *t, size_t len, cfg_wide_int *out)
{
    long long index = 0;
    for (size_t i = 0; i < len;) {
        if (i == 0 || t[i - 1] == '\n') {
            size_t after = skip_include(t, len, i);
            if (after != i) {
                i = after;
                continue;
            }
        }
        unsigned char ch = (unsigned char)t[i];
        if (ch == '/' && i + 1 < len && t[i + 1] == '*') {
            const char *close = NULL;
            for (size_t k = i + 2; k + 1 < len && !close; ++k)
                if (t[k] == '*' && t[k + 1] == '/') close = t + k;
            i = close ? (size_t)(close - t) + 2 : len;
        } else if (ch == '#' || (ch == '/' && i + 1 < len && t[i + 1] == '/')) {
            const char *nl = memchr(t + i, '\n', len - i);
            i = nl ? (size_t)(nl - t) : len;
        } else if (ch == '"') {
            i = skip_quoted(t, len, i + 1);
        } else if (is_name_start(ch)) {
            while (i < len && is_name_char((unsigned char)t[i]))
                ++i;
        } else if (is_digit(ch) || ch == '-' || ch == '+' || ch == '.') {
            size_t end;
            cfg_wide_int lit;
            if (number(t, len, i, &end, &lit)) {
                if (lit.bits) {
                    lit.offset = i;
                    lit.index = index;
                    lit.line = 1;
                    for (size_t k = 0; k < i; ++k)
                        lit.line += t[k] == '\n';
                    *out = lit;
                    return 1;
                }
                ++index;
            }
            i = end;
        } else {
            ++i;
        }
    }
    return 0;
}

typedef struct {
    const cfg_wide_site *site;
    long long seen; /* integer settings from the site's file so far */
    const config_setting_t *hit;
} wide_search;

/* The site's setting: the index-th integer setting from its file. */
static void search(const config_setting_t *s, wide_search *ws)
{
    int t = config_setting_type(s);
    if (t == CONFIG_TYPE_GROUP || t == CONFIG_TYPE_LIST || t == CONFIG_TYPE_ARRAY) {
        int n = config_setting_length(s);
        for (int i = 0; i < n && !ws->hit; ++i)
            search(config_setting_get_elem(s, (unsigned)i), ws);
        return;
    }
    if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64) return;
    const char *file = config_setting_source_file(s);
    if (ws->site->in_config ? file != NULL : !file || strcmp(file, ws->site->source) != 0) return;
    if (ws->seen++ == ws->site->lit.index) ws->hit = s;
}

/* The key of s as messages write it: "a.b", list elements "a.b[i]". */
static void key_of(const config_setting_t *s, char *buf, size_t len)
{
    const config_setting_t *parent = config_setting_parent(s);
    buf[0] = '\0';
    if (!parent) return; /* the root */
    key_of(parent, buf, len);
    size_t used = strlen(buf);
    if (config_setting_type(parent) == CONFIG_TYPE_GROUP)
        snprintf(buf + used, len - used, "%s%s", used ? "." : "", config_setting_name(s));
    else
        snprintf(buf + used, len - used, "[%d]", config_setting_index(s));
}

int cfg_wide_int_check(cfg_ctx *c, const cfg_wide_site *site)
{
    const cfg_wide_int *lit = &site->lit;
    wide_search ws = {.site = site};
    search(config_root_setting(&c->lc), &ws);
    if (!ws.hit) return 0; /* not read: its @include line is in a comment or a string */
    char why[256];
    if (lit->bits == 32)
        snprintf(why, sizeof why,
                 "integer %s is out of the 32-bit range -2147483648..2147483647 (a 64-bit "
                 "integer is written with an L suffix)",
                 lit->text);
    else
        snprintf(why, sizeof why,
                 "integer %s is out of the 64-bit range -9223372036854775808..9223372036854775807",
                 lit->text);
    long long v = cfg_integer(ws.hit);
    if (v == lit->held[0] || v == lit->held[1]) { /* the two scans agree: its key */
        char key[512];
        key_of(ws.hit, key, sizeof key);
        return cfg_error(c, ws.hit, key, "%s", why);
    }
    if (site->in_config || site->source[0] == '/' || !c->dir[0])
        snprintf(c->err, c->errlen, "%s:%d: %s", site->in_config ? c->file : site->source,
                 lit->line, why);
    else
        snprintf(c->err, c->errlen, "%s/%s:%d: %s", c->dir, site->source, lit->line, why);
    cfg_one_line(c->err);
    return -1;
}
