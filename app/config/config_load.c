/* SPDX-License-Identifier: BSD-3-Clause */
/* config_load and config_load_text: the config's bytes read once (config_text.c),
 * its @include walk checked (config_include.c) and its integer literals
 * (config_literal.c), parsed by libconfig from memory, then every section
 * read (config.c); config_free, and where a key was written. */
#include "app/config/config_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/interrupt.h"

/* libconfig's parse error as "FILE:LINE: syntax error: TEXT". */
static int syntax_error(cfg_ctx *c)
{
    const char *file = config_error_file(&c->lc) ? config_error_file(&c->lc) : c->file;
    char inc[CFG_PATH_MAX + 8];
    if (strcmp(file, c->file) != 0 && file[0] != '/' && c->dir[0]) {
        snprintf(inc, sizeof inc, "%s/%s", c->dir, file); /* an @include'd file */
        file = inc;
    }
    const char *text = config_error_text(&c->lc) ? config_error_text(&c->lc) : "";
    int line = config_error_line(&c->lc);
    if (config_error_type(&c->lc) == CONFIG_ERR_FILE_IO) {
        snprintf(c->err, c->errlen, "%s: cannot read: %s", file, text);
        return -1;
    }
    const char *hint = strstr(text, "mismatched element type")
                           ? " (an array [ ] holds one type: write every number of it with a "
                             "decimal point, e.g. 450.0 for 450, or use a list ( ))"
                           : "";
    if (strcmp(text, "syntax error") == 0)
        snprintf(c->err, c->errlen, "%s:%d: syntax error", file, line);
    else
        snprintf(c->err, c->errlen, "%s:%d: syntax error: %s%s", file, line, text, hint);
    cfg_one_line(c->err);
    return -1;
}

/* Parse the config's bytes: through a memory stream, so that libconfig
 * sees them as it would the file (NULs included). 1 = parsed, 0 = a
 * syntax error (in c->lc), -1 = no memory (message written). */
static int parse(cfg_ctx *c, const cfg_text *t)
{
    if (t->len == 0) return config_read_string(&c->lc, "") == CONFIG_TRUE;
    FILE *f = fmemopen(t->text, t->len, "r");
    if (!f) return cfg_error(c, NULL, "config", "out of memory");
    int ok = config_read(&c->lc, f) == CONFIG_TRUE;
    fclose(f);
    return ok;
}

/* The rest of a load once the config's bytes are in *t (taken: kept in
 * cfg->text for a fingerprint, or freed) and c names the config and its
 * directory: the @include walk with its caps, the parse, the integer
 * literals out of range, every section read and checked. The same for a
 * file, standard input and a config given as text. 0 or -1 (c->err). */
static int load_bytes(cfg_ctx *c, psf_config *cfg, cfg_text *t)
{
    cfg_wide_site *wide = malloc(sizeof *wide);
    if (!wide) {
        snprintf(c->err, c->errlen, "%s: out of memory", c->file);
        cfg_text_free(t);
        return -1;
    }
    if (cfg_check_includes(c->file, t, c->dir, wide, c->err, c->errlen) != 0) {
        free(wide);
        cfg_text_free(t);
        return -1;
    }
    config_init(&c->lc);
    if (c->dir[0]) config_set_include_dir(&c->lc, c->dir);
    int parsed = parse(c, t);
    int rc = -1;
    if (parsed >= 0 && interrupt_pending()) /* during the parse (16 MiB at most) */
        snprintf(c->err, c->errlen, "%s: interrupted while loading the config", c->file);
    else if (parsed == 0)
        rc = syntax_error(c);
    else if (parsed == 1 && !(wide->found && cfg_wide_int_check(c, wide) != 0))
        rc = cfg_read_all(c, cfg); /* no integer read wrapped: one out of range was refused */
    config_destroy(&c->lc);
    free(wide);
    cfg->text = t->text; /* kept: the bytes loaded, for a fingerprint */
    cfg->text_len = t->len;
    cfg->text_dev = (unsigned long long)t->dev;
    cfg->text_ino = (unsigned long long)t->ino;
    snprintf(cfg->include_dir, sizeof cfg->include_dir, "%s", c->dir);
    return rc;
}

/* cfg at its defaults and *err "" before a load; a NULL err (or errlen 0)
 * becomes dummy, a byte nobody reads. */
static void load_begin(psf_config *cfg, char **err, size_t *errlen, char *dummy)
{
    memset(cfg, 0, sizeof *cfg);
    cfg_set_defaults(cfg);
    if (!*err || *errlen == 0) {
        *err = dummy;
        *errlen = 1;
    }
    (*err)[0] = '\0';
}

static int load_file(const char *path, cfg_ctx *c0, psf_config *cfg, char *err, size_t errlen);
static int load_text(const char *text, const char *name, const char *base_dir, cfg_ctx *c0,
                     psf_config *cfg, char *err, size_t errlen);

/* The keys a map in memory may stand for (config_load_maps). */
static const char *const map_keys[] = {"optics.aperture.file", "aberrations.opd_map.file"};

int cfg_check_maps(cfg_ctx *c)
{
    for (int i = 0; i < c->nmaps; ++i) {
        const cfg_map_input *m = &c->maps[i];
        const char *key = m->key ? m->key : "(NULL)";
        int known = 0;
        for (size_t k = 0; k < sizeof map_keys / sizeof *map_keys; ++k)
            known |= m->key && strcmp(m->key, map_keys[k]) == 0;
        if (!known)
            return cfg_error(c, NULL, key,
                             "takes no array (a map in memory stands for optics.aperture.file or "
                             "aberrations.opd_map.file)");
        for (int j = 0; j < i; ++j)
            if (strcmp(c->maps[j].key, m->key) == 0)
                return cfg_error(c, NULL, key, "given twice as an array (maps %d and %d)", j, i);
        if (!m->values) return cfg_error(c, NULL, key, "the array has no values (NULL)");
        if (m->rows < 1 || m->cols < 1 || (long long)m->rows * m->cols > CFG_MAX_MAP_PIXELS)
            return cfg_error(c, NULL, key,
                             "an array of %d x %d pixels is empty or too large (a map holds 1 to "
                             "%lld pixels)",
                             m->rows, m->cols, CFG_MAX_MAP_PIXELS);
    }
    return 0;
}

const cfg_map_input *cfg_map_for(const cfg_ctx *c, const char *key)
{
    for (int i = 0; i < c->nmaps; ++i)
        if (strcmp(c->maps[i].key, key) == 0) return &c->maps[i];
    return NULL;
}

int cfg_take_map(cfg_ctx *c, const config_setting_t *s, const char *key, cfg_map_array *out)
{
    const cfg_map_input *m = cfg_map_for(c, key);
    if (!m) return 0;
    if (s)
        return cfg_error(c, s, key,
                         "given both as a file in the config and as an array; give one (leave "
                         "the key out of the config to use the array)");
    size_t n = (size_t)m->rows * (size_t)m->cols;
    out->values = malloc(n * sizeof *out->values);
    if (!out->values) return cfg_error(c, NULL, key, "out of memory for the array");
    memcpy(out->values, m->values, n * sizeof *out->values);
    out->rows = m->rows;
    out->cols = m->cols;
    return 0;
}

int config_load(const char *path, psf_config *cfg, char *err, size_t errlen)
{
    cfg_ctx c0 = {0};
    return load_file(path, &c0, cfg, err, errlen);
}

/* config_load of path with c's maps. */
static int load_file(const char *path, cfg_ctx *c0, psf_config *cfg, char *err, size_t errlen)
{
    char dummy[1];
    load_begin(cfg, &err, &errlen, dummy);
    if (!path || !path[0]) {
        snprintf(err, errlen, "config: no file given");
        return -1;
    }
    /* "-": standard input, named so in messages. */
    cfg_ctx c = {.file = strcmp(path, "-") ? path : "<stdin>",
                 .err = err,
                 .errlen = errlen,
                 .maps = c0->maps,
                 .nmaps = c0->nmaps};
    size_t len = strlen(c.file);
    if (len >= CFG_PATH_MAX) {
        snprintf(err, errlen, "%.64s...: path too long (more than %d characters)", path,
                 CFG_PATH_MAX - 1);
        return -1;
    }
    memcpy(cfg->path, c.file, len + 1);
    cfg_text t;
    if (cfg_text_read(path, c.file, CFG_MAX_TEXT_BYTES, &t, err, errlen) != 0) return -1;
    /* A stream (standard input, a pipe, a FIFO) has no directory of its
     * own: its @include and file names resolve against the current one. */
    const char *slash = t.stream ? NULL : strrchr(path, '/');
    if (slash) {
        size_t dl = slash == path ? 1 : (size_t)(slash - path);
        memcpy(c.dir, path, dl);
        c.dir[dl] = '\0';
    }
    return load_bytes(&c, cfg, &t);
}

int config_load_text(const char *text, const char *name, const char *base_dir, psf_config *cfg,
                     char *err, size_t errlen)
{
    cfg_ctx c0 = {0};
    return load_text(text, name, base_dir, &c0, cfg, err, errlen);
}

/* config_load_text with c's maps. */
static int load_text(const char *text, const char *name, const char *base_dir, cfg_ctx *c0,
                     psf_config *cfg, char *err, size_t errlen)
{
    char dummy[1];
    load_begin(cfg, &err, &errlen, dummy);
    if (!name || !name[0]) name = "<config>";
    if (strlen(name) >= CFG_PATH_MAX || (base_dir && strlen(base_dir) >= CFG_PATH_MAX)) {
        snprintf(err, errlen, "%.64s...: name or base directory too long (more than %d characters)",
                 name, CFG_PATH_MAX - 1);
        return -1;
    }
    if (!text) {
        snprintf(err, errlen, "%s: no config text given", name);
        return -1;
    }
    snprintf(cfg->path, sizeof cfg->path, "%s", name);
    cfg_ctx c = {
        .file = cfg->path, .err = err, .errlen = errlen, .maps = c0->maps, .nmaps = c0->nmaps};
    if (base_dir) snprintf(c.dir, sizeof c.dir, "%s", base_dir);
    cfg_text t;
    if (cfg_text_copy(text, name, CFG_MAX_TEXT_BYTES, &t, err, errlen) != 0) return -1;
    return load_bytes(&c, cfg, &t);
}

int config_load_maps(const char *path, const char *text, const char *name, const char *base_dir,
                     const cfg_map_input *maps, int nmaps, psf_config *cfg, char *err,
                     size_t errlen)
{
    cfg_ctx c = {.maps = maps, .nmaps = maps && nmaps > 0 ? nmaps : 0};
    return path ? load_file(path, &c, cfg, err, errlen)
                : load_text(text, name, base_dir, &c, cfg, err, errlen);
}

void config_free(psf_config *cfg)
{
    if (!cfg) return;
    free(cfg->text);
    free(cfg->aperture_array.values);
    free(cfg->opd_array.values);
    free(cfg->wavelengths_nm);
    free(cfg->weights);
    free(cfg->zernike);
    free(cfg->sweep_wavelength_nm);
    free(cfg->sweep_defocus);
    free(cfg->sweep_focus_shift_um);
    if (cfg->sweep_zernike)
        for (int i = 0; i < cfg->n_sweep_zernike; ++i)
            free(cfg->sweep_zernike[i].values);
    free(cfg->sweep_zernike);
    free(cfg->seg_zernike);
    if (cfg->sweep_seg_zernike)
        for (int i = 0; i < cfg->n_sweep_seg_zernike; ++i)
            free(cfg->sweep_seg_zernike[i].values);
    free(cfg->sweep_seg_zernike);
    cfg_free_random(&cfg->random);
    for (int i = 0; cfg->keys && i < cfg->nkeys; ++i) {
        free(cfg->keys[i].key);
        free(cfg->keys[i].where);
    }
    free(cfg->keys);
    cfg_field_free(&cfg->field);
    memset(cfg, 0, sizeof *cfg);
}

int config_key_where(const psf_config *cfg, const char *key, char *out, size_t outlen)
{
    for (int i = 0; key && i < cfg->nkeys; ++i) {
        if (strcmp(cfg->keys[i].key, key) != 0) continue;
        snprintf(out, outlen, "%s", cfg->keys[i].where);
        return 1;
    }
    snprintf(out, outlen, "%s", cfg->path);
    return 0;
}
