/* SPDX-License-Identifier: BSD-3-Clause */
/* The config's fingerprint (config.h, config_fingerprint): the manifest's
 * config_hash and the FITS CFGHASH, in the command and the library alike. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/config/config.h"

/* FNV-1a 64 (Fowler, Noll, Vo) of n more bytes, from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ c[i]) * 1099511628211ULL;
    return h;
}

/* The fingerprint so far, and where a failure's message goes. */
typedef struct {
    uint64_t h;
    char *err;
    size_t errlen;
} fingerprint;

/* Add a count (8 bytes, little-endian) to fp; then n bytes after their
 * count: the files after the config are each delimited. */
static void add_length(fingerprint *fp, uint64_t n)
{
    unsigned char len[8];
    for (int i = 0; i < 8; ++i)
        len[i] = (unsigned char)(n >> (8 * i));
    fp->h = fnv(fp->h, len, sizeof len);
}

static void add_counted(fingerprint *fp, const void *p, size_t n)
{
    add_length(fp, n);
    fp->h = fnv(fp->h, p, n);
}

/* Add the bytes of the file at path (a map, the sweep table) to fp
 * (add_counted). A file that is not regular (a FIFO: reading it here would
 * leave nothing for its loader; opened O_NONBLOCK, so it cannot hang the
 * open) is refused. 0 or -1 with fp->err. */
static int add_file(fingerprint *fp, const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        snprintf(fp->err, fp->errlen, "%s: %s", path, strerror(errno));
        if (f)
            fclose(f);
        else if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(fp->err, fp->errlen, "%s: not a regular file", path);
        fclose(f);
        return -1;
    }
    add_length(fp, (uint64_t)st.st_size);
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fp->h = fnv(fp->h, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) snprintf(fp->err, fp->errlen, "%s: cannot read it", path);
    return bad ? -1 : 0;
}

/* Add a map given in memory (config.h, cfg_map_array), none when it has
 * no values: its rows and cols, then its float32 values' bytes counted. */
static void add_array(fingerprint *fp, const cfg_map_array *a)
{
    if (!a->values) return;
    add_length(fp, (uint64_t)a->rows);
    add_length(fp, (uint64_t)a->cols);
    add_counted(fp, a->values, (size_t)a->rows * (size_t)a->cols * sizeof *a->values);
}

static int add_include(const char *file, const char *text, size_t len, void *arg)
{
    (void)file;
    add_counted(arg, text, len);
    return 0;
}

int config_fingerprint(const psf_config *cfg, char out[24], char *err, size_t errlen)
{
    fingerprint fp = {.h = 1469598103934665603ULL, .err = err, .errlen = errlen}; /* FNV basis */
    fp.h = fnv(fp.h, cfg->text, cfg->text_len); /* the bytes parsed: -c - and FIFOs too */
    if (config_for_each_include(cfg, add_include, &fp, err, errlen) != 0) return -1;
    if (cfg->aperture.shape == APERTURE_FILE && cfg->aperture_file[0] &&
        add_file(&fp, cfg->aperture_file) != 0)
        return -1;
    add_array(&fp, &cfg->aperture_array);
    if (cfg->opd_file[0] && add_file(&fp, cfg->opd_file) != 0) return -1;
    add_array(&fp, &cfg->opd_array);
    /* The table's rows are images: one replaced before --resume must not
     * pass for the same set. */
    if (cfg->table_file[0] && add_file(&fp, cfg->table_file) != 0) return -1;
    if (cfg->field.table_file[0] && add_file(&fp, cfg->field.table_file) != 0) return -1;
    fp.h = fnv(fp.h, PSFSIM_VERSION, strlen(PSFSIM_VERSION));
    snprintf(out, 24, "%016llx", (unsigned long long)fp.h);
    return 0;
}
