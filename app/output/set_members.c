/* SPDX-License-Identifier: BSD-3-Clause */
/* The files of an image set in its directory (app/output/set_members.h). */
#include "app/output/set_members.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/formats/atomic_file.h"
#include "app/formats/h5set.h"
#include "app/formats/journal.h"

void outputs_image_name(const psf_config *cfg, long long k, long long nimages, const char *ext,
                        char *out, size_t outlen)
{
    int digits = 1;
    for (long long v = nimages - 1; v >= 10 && digits < 19; v /= 10)
        ++digits;
    snprintf(out, outlen, "%s_%0*lld.%s", cfg->name, digits, k, ext);
}

const char *outputs_set_file(const char *dir, const char *name, set_file f, char *out,
                             size_t outlen)
{
    const char *suffix = f == SET_MANIFEST ? "manifest.csv"
                         : f == SET_TIMING ? "timing.csv"
                                           : "cube.fits";
    if (f == SET_HDF5 || f == SET_SIDECAR) { /* NAME.h5, NAME.json: no '_' */
        const char *ext = f == SET_HDF5 ? "h5" : "json";
        if (dir)
            snprintf(out, outlen, "%s/%s.%s", dir, name, ext);
        else
            snprintf(out, outlen, "%s.%s", name, ext);
        return out;
    }
    if (dir)
        snprintf(out, outlen, "%s/%s_%s", dir, name, suffix);
    else
        snprintf(out, outlen, "%s_%s", name, suffix);
    return out;
}

#define PNG_BIT 1
#define FITS_BIT 2
#define WIDTH_MAX 18 /* digits of k read: every such k fits a long long */
/* Rows of a manifest with an index past this are none of a set's: no set
 * has more images (the config's limit). */
#define ROWS_MAX 10000000LL

/* The digits k has in the names of a set of nimages (outputs_image_name). */
static int digits_of(const psf_config *cfg, long long nimages)
{
    char b[SET_PATH_MAX];
    outputs_image_name(cfg, 0, nimages, "png", b, sizeof b);
    return (int)(strlen(b) - strlen(cfg->name) - strlen("_.png"));
}

/* file = NAME_<digits>.png or .fits: *k, *width (the digits' count) and
 * *bit (PNG_BIT or FITS_BIT). 1, or 0 when file is not of that form. */
static int image_name(const char *name, const char *file, long long *k, int *width, int *bit)
{
    size_t n = strlen(name);
    if (strncmp(file, name, n) != 0 || file[n] != '_') return 0;
    const char *d = file + n + 1, *e = d;
    long long v = 0;
    while (*e >= '0' && *e <= '9' && e - d < WIDTH_MAX)
        v = v * 10 + (*e++ - '0');
    if (e == d) return 0;
    if (!strcmp(e, ".png"))
        *bit = PNG_BIT;
    else if (!strcmp(e, ".fits"))
        *bit = FITS_BIT;
    else
        return 0;
    *k = v;
    *width = (int)(e - d);
    return 1;
}

/* One of the set's own files by name: manifest, timing log, cube, NAME.h5
 * and NAME.json (output.hdf5). */
static int fixed_file(const char *name, const char *file)
{
    char want[SET_PATH_MAX];
    for (int f = SET_MANIFEST; f <= SET_SIDECAR; ++f)
        if (!strcmp(file, outputs_set_file(NULL, name, (set_file)f, want, sizeof want))) return 1;
    return 0;
}

/* Note that the manifest's row k names cell (a PNG or FITS name), when
 * that is exactly this row's own file. 0, or -1 out of memory. */
static int note_cell(set_members *m, long long k, const char *cell)
{
    long long ck;
    int width, bit;
    if (!image_name(m->name, cell, &ck, &width, &bit) || ck != k) return 0;
    if (k >= m->nrows) {
        long long n = m->nrows ? m->nrows : 1024;
        while (n <= k)
            n *= 2;
        unsigned char *grown = realloc(m->rows, (size_t)n);
        if (!grown) return -1;
        memset(grown + m->nrows, 0, (size_t)(n - m->nrows));
        m->rows = grown;
        m->nrows = n;
    }
    unsigned char *r = &m->rows[k];
    if (*r && (*r >> 2) != width) return 0; /* another width for this k: the first row's */
    *r = (unsigned char)(*r | bit | width << 2);
    return 0;
}

/* The rows of the manifest f: index,png,fits,... */
static int read_rows(set_members *m, FILE *f)
{
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    for (long long n = 0; rc == 0 && getline(&line, &cap, f) > 0; ++n) {
        char *end, *png = strchr(line, ',');
        long long k = strtoll(line, &end, 10);
        char *fits = png ? strchr(png + 1, ',') : NULL;
        if (n == 0 || !fits || end != png || line[0] < '0' || line[0] > '9' || k < 0 ||
            k >= ROWS_MAX)
            continue; /* the header, or not a row of a set */
        *png++ = '\0';
        *fits++ = '\0';
        fits[strcspn(fits, ",\r\n")] = '\0';
        rc = note_cell(m, k, png);
        if (rc == 0) rc = note_cell(m, k, fits);
    }
    free(line);
    return rc;
}

int set_members_load(set_members *m, int dirfd, const psf_config *cfg, long long nimages)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", cfg->name);
    m->width = digits_of(cfg, nimages);
    m->nimages = nimages;
    char file[SET_PATH_MAX];
    FILE *f = journal_read_open(dirfd,
                                outputs_set_file(NULL, cfg->name, SET_MANIFEST, file, sizeof file));
    if (!f) return 0;
    m->manifest = 1;
    int rc = read_rows(m, f);
    fclose(f);
    if (rc != 0) {
        free(m->rows);
        m->rows = NULL;
        m->nrows = 0;
    }
    return rc;
}

/* file is the HDF5 writer's temp file of the set, .NAME.h5.part
 * (app/formats/h5set.h): a killed run's NAME.h5 in the making. */
static int hdf5_temp(const char *name, const char *file)
{
    char h5[SET_PATH_MAX], tmp[SET_PATH_MAX];
    outputs_set_file(NULL, name, SET_HDF5, h5, sizeof h5);
    return h5set_temp_name(h5, tmp, sizeof tmp) == 0 && !strcmp(file, tmp);
}

int set_members_has(const set_members *m, const char *file)
{
    if (fixed_file(m->name, file) || hdf5_temp(m->name, file)) return 1;
    long long k;
    int width, bit;
    if (!image_name(m->name, file, &k, &width, &bit)) return 0;
    if (!m->manifest) return width == m->width && k < m->nimages; /* what the set writes */
    return k < m->nrows && (m->rows[k] & bit) && (m->rows[k] >> 2) == width;
}

void set_members_free(set_members *m)
{
    free(m->rows);
    memset(m, 0, sizeof *m);
}

int set_members_own_temp(const psf_config *cfg, long long nimages, const char *file)
{
    /* ".F.tmp.XXXXXX": F is what lies between the dot and ".tmp." */
    size_t n = strlen(file);
    if (n < 1 + 1 + 11 || file[0] != '.') return 0;
    char final[SET_PATH_MAX];
    snprintf(final, sizeof final, "%.*s", (int)(n - 12), file + 1);
    if (!atomic_is_temp_of(file, final)) return 0;
    if (fixed_file(cfg->name, final)) return 1;
    long long k;
    int width, bit;
    return image_name(cfg->name, final, &k, &width, &bit) && width == digits_of(cfg, nimages) &&
           k < nimages;
}
