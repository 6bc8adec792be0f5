#include "app/resume.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/outputs.h"

int config_fingerprint(const char *path, char out[24], char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    uint64_t h = 1469598103934665603ULL; /* FNV-1a 64 offset basis */
    int c;
    while ((c = fgetc(f)) != EOF)
        h = (h ^ (uint64_t)(unsigned char)c) * 1099511628211ULL;
    fclose(f);
    for (const char *v = PSFSIM_VERSION; *v; ++v)
        h = (h ^ (uint64_t)(unsigned char)*v) * 1099511628211ULL;
    snprintf(out, 24, "%016llx", (unsigned long long)h);
    return 0;
}

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

static int file_ok(const char *dir, const char *name)
{
    char path[8300];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return name[0] && stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
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

/* Manifest columns, config_hash last; normalization "pupil" adds one after it. */
#define NCOLS 17

static int read_manifest(const psf_config *cfg, const char *dir, const char *hash, resume_state *rs,
                         FILE *f, const char *path, char *err, size_t errlen)
{
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    if (getline(&line, &cap, f) <= 0 || strncmp(line, "index,png,fits,", 15) != 0 ||
        !strstr(line, ",config_hash")) {
        snprintf(err, errlen, "%s: not a psfsim manifest; use --force to start the set over", path);
        free(line);
        return -1;
    }
    while (rc == 0 && getline(&line, &cap, f) > 0) {
        char copy[4096], *cells[NCOLS + 2];
        snprintf(copy, sizeof copy, "%s", line);
        int nc = split(copy, cells, NCOLS + 2);
        if (!strchr(line, '\n') || nc != NCOLS + (cfg->normalization == NORM_PUPIL))
            continue; /* cut short */
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
        if ((cfg->png_enabled && !file_ok(dir, cells[1])) ||
            (cfg->fits_enabled && !file_ok(dir, cells[2])))
            continue;
        rs->done[k] = 1;
        rs->ndone++;
        if (keep(&rs->manifest_rows, &rs->nmanifest, line) != 0) rc = -1;
    }
    free(line);
    return rc;
}

static void read_timing(const resume_state *rs, const char *path, resume_state *out)
{
    FILE *f = fopen(path, "r");
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

int resume_load(const psf_config *cfg, const char *dir, long long nimages, const char *hash,
                resume_state *rs, char *err, size_t errlen)
{
    memset(rs, 0, sizeof *rs);
    rs->nimages = nimages;
    rs->done = calloc((size_t)nimages, 1);
    if (!rs->done) {
        snprintf(err, errlen, "cannot allocate the resume table of %lld images", nimages);
        return -1;
    }
    char path[SET_PATH_MAX];
    outputs_set_file(dir, cfg->name, SET_MANIFEST, path, sizeof path);
    FILE *f = fopen(path, "r");
    if (!f) return 0; /* nothing done yet */
    int rc = read_manifest(cfg, dir, hash, rs, f, path, err, errlen);
    fclose(f);
    if (rc != 0) return -1;
    outputs_set_file(dir, cfg->name, SET_TIMING, path, sizeof path);
    read_timing(rs, path, rs);
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

void resume_clean_temps(const char *dir, const char *name)
{
    DIR *d = opendir(dir);
    if (!d) return;
    size_t n = strlen(name);
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *s = e->d_name;
        if (s[0] != '.' || strncmp(s + 1, name, n) != 0 || s[n + 1] != '_' || !strstr(s, ".tmp."))
            continue;
        char path[8300];
        snprintf(path, sizeof path, "%s/%s", dir, s);
        unlink(path);
    }
    closedir(d);
}
