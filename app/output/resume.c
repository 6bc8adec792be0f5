/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/output/resume.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/base/log.h"
#include "app/base/text_shown.h"
#include "app/formats/fits_scan.h"
#include "app/formats/journal.h"
#include "app/output/cube_writer.h"
#include "app/output/outputs.h"
#include "app/output/set_dir.h"
#include "app/output/set_members.h"

/* Split a CSV line (no quoted commas in psfsim's manifest) in place. */
static int split(char *line, char **cells, int max)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line; n < max;) {
        cells[n++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = '\0';
        p = c + 1;
    }
    return n;
}

/* name is a regular file (not a link to one) in dirfd, and not empty. */
static int file_ok(int dirfd, const char *name)
{
    struct stat st;
    return name[0] && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
           st.st_size > 0;
}

static int keep(char ***rows, long long *n, const char *line)
{
    char **grown = realloc(*rows, (size_t)(*n + 1) * sizeof **rows);
    if (!grown) return -1;
    *rows = grown;
    grown[*n] = strdup(line);
    if (!grown[*n]) return -1;
    (*n)++;
    return 0;
}

/* Manifest columns through config_hash; label columns and captured_fraction may follow. */
#define NCOLS 17

/* 1 when row k's png and fits cells are exactly what this config writes
 * for image k: NAME_<k>.png, NAME_<k>.fits, or with a cube NAME_cube.fits
 * (empty until the cube is complete); empty for a format it does not
 * write. A row naming anything else ("../../etc/passwd", another file of
 * the directory) claims nothing. */
static int row_names_ok(const psf_config *cfg, long long nimages, long long k, const char *png,
                        const char *fits)
{
    char want[SET_PATH_MAX] = "";
    if (cfg->png_enabled) outputs_image_name(cfg, k, nimages, "png", want, sizeof want);
    if (strcmp(png, want) != 0) return 0;
    want[0] = '\0';
    if (cfg->fits_enabled && cfg->fits_cube) {
        outputs_set_file(NULL, cfg->name, SET_CUBE, want, sizeof want);
        return !fits[0] || !strcmp(fits, want);
    }
    if (cfg->fits_enabled) outputs_image_name(cfg, k, nimages, "fits", want, sizeof want);
    return !strcmp(fits, want);
}

/* Rows whose names were not the set's: how many, and the first's cells. */
typedef struct {
    long long n, k;
    char png[64], fits[64];
} untrusted_rows;

static void note_untrusted(untrusted_rows *u, long long k, const char *png, const char *fits)
{
    if (u->n++) return;
    u->k = k;
    text_shown(png, 48, u->png, sizeof u->png);
    text_shown(fits, 48, u->fits, sizeof u->fits);
}

static int read_manifest(const psf_config *cfg, int dirfd, const char *hash, resume_state *rs,
                         FILE *f, const char *path, char *err, size_t errlen)
{
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    untrusted_rows bad = {0};
    if (getline(&line, &cap, f) <= 0 || strncmp(line, "index,png,fits,", 15) != 0 ||
        !strstr(line, ",config_hash")) {
        snprintf(err, errlen, "%s: not a psfsim manifest; use --force to start the set over", path);
        free(line);
        return -1;
    }
    char *copy = NULL; /* a row, split: as long as the row (the swept terms' cells have no bound) */
    while (rc == 0 && getline(&line, &cap, f) > 0) {
        char *cells[NCOLS + 1];
        free(copy);
        if (!(copy = strdup(line))) {
            snprintf(err, errlen, "%s: out of memory", path);
            rc = -1;
            break;
        }
        /* A table or random set's label columns follow config_hash. */
        if (!strchr(line, '\n') || split(copy, cells, NCOLS + 1) < NCOLS) continue; /* cut short */
        char *end;
        long long k = strtoll(cells[0], &end, 10);
        if (*end || k < 0 || k >= rs->nimages || rs->done[k]) continue;
        if (strcmp(cells[NCOLS - 1], hash) != 0) {
            snprintf(err, errlen,
                     "%s was written for another config (fingerprint %s, now %s); use --force to "
                     "start the set over",
                     path, cells[NCOLS - 1], hash);
            rc = -1;
            break;
        }
        if (!row_names_ok(cfg, rs->nimages, k, cells[1], cells[2])) {
            note_untrusted(&bad, k, cells[1], cells[2]);
            continue;
        }
        if ((cfg->png_enabled && !file_ok(dirfd, cells[1])) ||
            (cfg->fits_enabled && !file_ok(dirfd, cells[2])))
            continue;
        rs->done[k] = 1;
        rs->ndone++;
        if (keep(&rs->manifest_rows, &rs->nmanifest, line) != 0) rc = -1;
    }
    free(line);
    free(copy);
    if (rc == 0 && bad.n)
        log_warn("%s: %lld row(s) name files that are not this set's (image %lld: png \"%s\", "
                 "fits \"%s\"); not trusted: those images are computed again",
                 path, bad.n, bad.k, bad.png, bad.fits);
    return rc;
}

static void read_timing(const resume_state *rs, int dirfd, const char *name, resume_state *out)
{
    FILE *f = journal_read_open(dirfd, name);
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    if (getline(&line, &cap, f) > 0)
        while (getline(&line, &cap, f) > 0) {
            char *end;
            long long k = strtoll(line, &end, 10);
            if (end != line && *end == ',' && k >= 0 && k < rs->nimages && rs->done[k] &&
                strchr(line, '\n'))
                keep(&out->timing_rows, &out->ntiming, line);
        }
    free(line);
    fclose(f);
}

int resume_load(const psf_config *cfg, int dirfd, const char *dir, long long nimages,
                const char *hash, resume_state *rs, char *err, size_t errlen)
{
    memset(rs, 0, sizeof *rs);
    rs->nimages = nimages;
    rs->done = calloc((size_t)nimages, 1);
    if (!rs->done) {
        snprintf(err, errlen, "cannot allocate the resume table of %lld images", nimages);
        return -1;
    }
    if (dirfd < 0) return 0; /* no directory: nothing done yet */
    char path[SET_PATH_MAX], name[SET_PATH_MAX];
    outputs_set_file(dir, cfg->name, SET_MANIFEST, path, sizeof path);
    FILE *f = journal_read_open(dirfd,
                                outputs_set_file(NULL, cfg->name, SET_MANIFEST, name, sizeof name));
    if (!f) return 0; /* nothing done yet */
    int rc = read_manifest(cfg, dirfd, hash, rs, f, path, err, errlen);
    fclose(f);
    if (rc != 0) return -1;
    read_timing(rs, dirfd, outputs_set_file(NULL, cfg->name, SET_TIMING, name, sizeof name), rs);
    return 0;
}

static void free_rows(char **rows, long long n)
{
    for (long long i = 0; i < n; ++i)
        free(rows[i]);
    free(rows);
}

void resume_free(resume_state *rs)
{
    free(rs->done);
    free_rows(rs->manifest_rows, rs->nmanifest);
    free_rows(rs->timing_rows, rs->ntiming);
    memset(rs, 0, sizeof *rs);
}

/* Keep the rows whose leading index is done. */
static void filter_rows(const resume_state *rs, char **rows, long long *n)
{
    long long kept = 0;
    for (long long i = 0; i < *n; ++i) {
        long long k = strtoll(rows[i], NULL, 10);
        if (k >= 0 && k < rs->nimages && rs->done[k])
            rows[kept++] = rows[i];
        else
            free(rows[i]);
    }
    *n = kept;
}

void resume_require(resume_state *rs, const unsigned char *also)
{
    if (!rs->done) return;
    for (long long k = 0; k < rs->nimages; ++k)
        if (rs->done[k] && !also[k]) {
            rs->done[k] = 0;
            rs->ndone--;
        }
    filter_rows(rs, rs->manifest_rows, &rs->nmanifest);
    filter_rows(rs, rs->timing_rows, &rs->ntiming);
}

/* Nothing is done: every image is computed again. */
static void forget_all(resume_state *rs)
{
    memset(rs->done, 0, (size_t)rs->nimages);
    rs->ndone = 0;
    filter_rows(rs, rs->manifest_rows, &rs->nmanifest);
    filter_rows(rs, rs->timing_rows, &rs->ntiming);
}

int resume_whole_cube(resume_state *rs, const psf_config *cfg)
{
    if (!cfg->fits_enabled || !cfg->fits_cube || !rs->done || rs->ndone == 0 ||
        rs->ndone == rs->nimages)
        return 0;
    forget_all(rs);
    return 1;
}

/* "why" when the layout is not what cube_writer writes for s (fits_cube.c:
 * the planes as float32, NAXIS3 = the image count, then the PLANES table of
 * one double a column and a row a plane, nothing after), under hash. */
static int cube_layout_ok(const image_set *s, const char *hash, const fits_scan_layout *l,
                          char *why, size_t whylen)
{
    const fits_scan_hdu *p = &l->hdus[0], *t = &l->hdus[1];
    const long long npix = s->samp.npix, cols = cube_writer_columns(s);
    if (l->total > l->size)
        snprintf(why, whylen, "it is cut short: %lld bytes, its HDUs %lld (FITS 4.0 sec. 3)",
                 l->size, l->total);
    else if (l->nhdus != 2)
        snprintf(why, whylen, "it has %d HDU(s), not 2 (the planes, the PLANES table)", l->nhdus);
    else if (p->bitpix != -32 || p->naxis != 3)
        snprintf(why, whylen, "its primary HDU has BITPIX = %lld and NAXIS = %lld, not -32 and 3",
                 p->bitpix, p->naxis);
    else if (p->naxes[0] != npix || p->naxes[1] != npix || p->naxes[2] != s->nimages)
        snprintf(why, whylen, "its planes are %lld x %lld x %lld, not %lld x %lld x %lld",
                 p->naxes[0], p->naxes[1], p->naxes[2], npix, npix, s->nimages);
    else if (p->named != 1)
        snprintf(why, whylen, "it has no CFGHASH string (this config's is %s)", hash);
    else if (strcmp(p->named_text, hash) != 0)
        snprintf(why, whylen, "its CFGHASH is not this config's %s", hash);
    else if (strcmp(t->xtension, "BINTABLE") != 0 || t->extname != 1 ||
             strcmp(t->extname_text, "PLANES") != 0)
        snprintf(why, whylen, "its second HDU is not the PLANES binary table");
    else if (t->bitpix != 8 || t->naxis != 2 || t->naxes[0] != 8 * cols ||
             t->naxes[1] != s->nimages || t->pcount != 0 || t->gcount != 1)
        snprintf(why, whylen, "its PLANES table is not %lld rows of %lld columns", s->nimages,
                 cols);
    else if (!l->exact)
        snprintf(why, whylen, "it is %lld bytes, its HDUs %lld (FITS 4.0 sec. 3)", l->size,
                 l->total);
    else
        return 1;
    return 0;
}

int resume_cube_check(resume_state *rs, const image_set *s, int dirfd, const char *hash)
{
    const psf_config *cfg = s->cfg;
    if (!cfg->fits_enabled || !cfg->fits_cube || !rs->done || rs->ndone != rs->nimages) return 0;
    char name[SET_PATH_MAX], why[600] = "";
    outputs_set_file(NULL, cfg->name, SET_CUBE, name, sizeof name);
    /* O_NONBLOCK: a FIFO put in its place does not stall the open. */
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    fits_scan_layout l;
    if (fd < 0)
        snprintf(why, sizeof why, "%s", errno == ELOOP ? "it is a symbolic link" : strerror(errno));
    else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        snprintf(why, sizeof why, "it is not a regular file");
    else if (fits_scan_layout_fd(fd, name, "CFGHASH", &l, why, sizeof why) == 0 &&
             cube_layout_ok(s, hash, &l, why, sizeof why))
        why[0] = '\0';
    if (fd >= 0) close(fd);
    if (!why[0]) return 0;
    log_warn("resuming: %s is not kept (%s); every image is computed again", name, why);
    forget_all(rs);
    return 1;
}

void resume_clean_temps(int dirfd, const psf_config *cfg, long long nimages)
{
    DIR *d = set_dir_entries(dirfd);
    if (!d) return;
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d)))
        if (set_members_own_temp(cfg, nimages, e->d_name) &&
            fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            unlinkat(dirfd, e->d_name, 0);
    closedir(d);
}
