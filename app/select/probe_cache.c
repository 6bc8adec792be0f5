/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/select/probe_cache.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fftw3.h>

#include "backend/cache_file.h"
#include "app/base/log.h"
#include "app/formats/atomic_file.h"
#include "app/select/gpu.h"
#include "app/base/make_dir.h"

#define CACHE_MAGIC "psfsim-probe 3"

static const char *const key_names[MACHINE_KEY_FIELDS] = {
    "machine.gpus", "machine.driver",  "machine.cudart", "machine.cufft",  "machine.fftw",
    "machine.cpu",  "machine.threads", "machine.psfsim", "machine.visible"};

/* Copy s into out, trimmed, with spaces and control characters made '_' so
 * a value is one token. */
static void token(char *out, size_t len, const char *s)
{
    while (*s && isspace((unsigned char)*s))
        ++s;
    size_t n = 0;
    for (; *s && n + 1 < len; ++s)
        out[n++] = isgraph((unsigned char)*s) ? *s : '_';
    while (n > 0 && out[n - 1] == '_')
        --n;
    out[n] = '\0';
}

/* For each of the n labels, the value after it on the first line of path
 * that starts with it, into out[i] (len[i] bytes), in one read of the file
 * (a GPU's information file is answered by the driver from the device on
 * each read); n <= READ_FIELDS_MAX. Returns the number of labels not
 * found, or -1 when path cannot be opened. */
#define READ_FIELDS_MAX 4
static int read_fields(const char *path, int n, const char *const *label, char *const *out,
                       const size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[512];
    int found[READ_FIELDS_MAX] = {0}, left = n < READ_FIELDS_MAX ? n : READ_FIELDS_MAX;
    while (left && fgets(line, sizeof line, f))
        for (int i = 0; i < n && i < READ_FIELDS_MAX; ++i) {
            size_t ll = strlen(label[i]);
            if (!found[i] && !strncmp(line, label[i], ll)) {
                token(out[i], len[i], line + ll);
                found[i] = 1;
                --left;
                break;
            }
        }
    fclose(f);
    return left;
}

/* The value after "label" on the first line of path that starts with it. */
static int read_field(const char *path, const char *label, char *out, size_t len)
{
    return read_fields(path, 1, &label, &out, &len) == 0 ? 0 : -1;
}

/* The first line of path as one token (token()) into out; 0, or -1 when
 * unreadable or empty. */
static int read_line(const char *path, char *out, size_t len)
{
    char line[256];
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!ok) return -1;
    token(out, len, line);
    return out[0] ? 0 : -1;
}

/* One GPU, bus the PCI address the driver lists it under: its PCI ids from
 * sysfs, "vendor:device:subvendor:subdevice@bus" (config space the kernel
 * holds: reading them costs microseconds, where the driver's information
 * file is answered from the device, 0.16 ms on an H200 and longer while a
 * CUDA process is being torn down); "model:uuid" from that file when sysfs
 * is not mounted. */
static void gpu_id(const char *bus, char *out, size_t len)
{
    static const char *const attr[4] = {"vendor", "device", "subsystem_vendor", "subsystem_device"};
    char v[4][32], path[512];
    int ok = 1;
    for (int i = 0; i < 4 && ok; ++i) {
        snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/%s", bus, attr[i]);
        ok = read_line(path, v[i], sizeof v[i]) == 0;
    }
    if (ok) {
        snprintf(out, len, "%s:%s:%s:%s@%s", v[0], v[1], v[2], v[3], bus);
        return;
    }
    char model[96] = "?", uuid[96] = "?";
    snprintf(path, sizeof path, "/proc/driver/nvidia/gpus/%s/information", bus);
    const char *labels[2] = {"Model:", "GPU UUID:"};
    char *outs[2] = {model, uuid};
    size_t lens[2] = {sizeof model, sizeof uuid};
    read_fields(path, 2, labels, outs, lens);
    snprintf(out, len, "%s:%s", model, uuid);
}

/* The ids of every GPU the driver lists, comma-separated. */
static void read_gpus(machine_key *k)
{
    char *out = k->value[0];
    size_t len = sizeof k->value[0], used = 0;
    out[0] = '\0';
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char id[400];
        gpu_id(e->d_name, id, sizeof id);
        used +=
            (size_t)snprintf(out + used, used < len ? len - used : 0, "%s%s", used ? "," : "", id);
        k->gpu_present = 1;
    }
    if (d) closedir(d);
    if (!k->gpu_present && access("/dev/nvidia0", F_OK) == 0) {
        k->gpu_present = 1;
        snprintf(out, len, "dev-nvidia0");
    }
    if (!out[0]) snprintf(out, len, "none");
}

void machine_key_read(machine_key *k)
{
    memset(k, 0, sizeof *k);
    read_gpus(k);
    /* The module's version from sysfs (static text); the driver's own
     * version file where sysfs is not mounted. */
    char ver[64];
    if (read_line("/sys/module/nvidia/version", ver, sizeof ver) == 0)
        snprintf(k->value[1], sizeof k->value[1], "nvidia-%s", ver);
    else if (read_field("/proc/driver/nvidia/version", "NVRM version:", k->value[1],
                        sizeof k->value[1]) != 0)
        snprintf(k->value[1], sizeof k->value[1], "none");
    /* cudart is static in the module and cuFFT ships with the toolkit: the
     * toolkit's version names both, and is known without loading anything. */
    snprintf(k->value[2], sizeof k->value[2], "cuda-%s", gpu_module_toolkit());
    snprintf(k->value[3], sizeof k->value[3], "cufft-of-cuda-%s", gpu_module_toolkit());
    token(k->value[4], sizeof k->value[4], fftwf_version);
    if (read_field("/proc/cpuinfo", "model name", k->value[5], sizeof k->value[5]) != 0)
        snprintf(k->value[5], sizeof k->value[5], "unknown");
    else
        memmove(k->value[5], k->value[5] + (k->value[5][0] == ':'), strlen(k->value[5]));
    token(k->value[5], sizeof k->value[5], k->value[5][0] == '_' ? k->value[5] + 1 : k->value[5]);
    snprintf(k->value[6], sizeof k->value[6], "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    snprintf(k->value[7], sizeof k->value[7], "%s", PSFSIM_VERSION);
    /* The devices CUDA shows (and their count, which the probe measured). */
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (vis)
        token(k->value[8], sizeof k->value[8], vis[0] ? vis : "empty");
    else
        snprintf(k->value[8], sizeof k->value[8], "unset");
}

const char *probe_cache_dir(char *buf, size_t len)
{
    const char *own = getenv("PSFSIM_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (own && *own)
        snprintf(buf, len, "%s", own);
    else if (xdg && *xdg == '/')
        snprintf(buf, len, "%s/psfsim", xdg);
    else if (home && *home)
        snprintf(buf, len, "%s/.cache/psfsim", home);
    else
        return NULL;
    return buf;
}

const char *probe_cache_dir_made(char *buf, size_t len)
{
    char err[512];
    if (!probe_cache_dir(buf, len) || make_dir(buf, err, sizeof err) != 0) return NULL;
    return buf;
}

/* The figures as (name, pointer) rows, so load and store share one list. */
typedef struct {
    char name[40];
    double *d;
    int *i;
} fig_row;

static int fig_rows(probe_figures *f, fig_row *rows)
{
    int n = 0;
#define ROW_D(label, ptr)                                                                          \
    (snprintf(rows[n].name, 40, "%s", label), rows[n].d = (ptr), rows[n++].i = NULL)
#define ROW_I(label, ptr)                                                                          \
    (snprintf(rows[n].name, 40, "%s", label), rows[n].i = (ptr), rows[n++].d = NULL)
    ROW_I("nsizes", &f->nsizes);
    ROW_I("cpu_threads", &f->cpu_threads);
    ROW_I("have_gpu", &f->have_gpu);
    ROW_D("gpu_start_us", &f->gpu_start_us);
    ROW_D("gpu_launch_us", &f->gpu_launch_us);
    ROW_D("gpu_h2d_us", &f->gpu_h2d_us);
    ROW_D("gpu_d2h_us", &f->gpu_d2h_us);
    ROW_D("gpu_d2h_gbs", &f->gpu_d2h_gbs);
    ROW_D("probe_us", &f->probe_us);
    ROW_D("png_us_per_mpix", &f->png_us_per_mpix);
    ROW_D("fits_us_per_mpix", &f->fits_us_per_mpix);
    ROW_I("gpu_count", &f->gpu_count);
    for (int d = 0; d < PROBE_MAX_GPUS; ++d) {
        char b[40];
        snprintf(b, sizeof b, "gpu_rel_speed.%d", d);
        ROW_D(b, &f->gpu_rel_speed[d]);
    }
    for (int s = 0; s < PROBE_NSIZES; ++s) {
        char b[40];
#define ROW_S(kind, label, ptr) (snprintf(b, sizeof b, "%s.%d", label, s), kind(b, ptr))
        ROW_S(ROW_I, "npix", &f->npix[s]);
        ROW_S(ROW_I, "big_batch", &f->big_batch[s]);
        ROW_S(ROW_D, "cpu_create_us", &f->cpu_create_us[s]);
        ROW_S(ROW_D, "cpu_us", &f->cpu_us[s]);
        ROW_S(ROW_D, "gpu_create_us", &f->gpu_create_us[s]);
        ROW_S(ROW_D, "gpu_b1_us", &f->gpu_b1_us[s]);
        ROW_S(ROW_D, "gpu_bb_us", &f->gpu_bb_us[s]);
    }
    return n;
}

#define FIG_ROWS_MAX (12 + PROBE_MAX_GPUS + 7 * PROBE_NSIZES)

#define PROBE_CACHE_FILE "probe.txt"
/* The figures take some 3 kB; a file past this is not theirs. */
#define PROBE_CACHE_MAX_BYTES ((size_t)1 << 20)

static void cache_path(const char *dir, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", dir, PROBE_CACHE_FILE);
}

/* Figures must be sane to be used: sizes as probed, times finite and > 0. */
static int figures_valid(const probe_figures *f)
{
    if (f->nsizes != PROBE_NSIZES || f->cpu_threads < 1) return 0;
    for (int s = 0; s < PROBE_NSIZES; ++s) {
        if (f->npix[s] < 8 || (s && f->npix[s] <= f->npix[s - 1]) || f->big_batch[s] < 2) return 0;
        if (!(f->cpu_us[s] > 0 && isfinite(f->cpu_us[s]) && f->cpu_create_us[s] >= 0)) return 0;
        if (f->have_gpu && !(f->gpu_b1_us[s] > 0 && f->gpu_bb_us[s] > 0 &&
                             isfinite(f->gpu_bb_us[s]) && f->gpu_create_us[s] >= 0))
            return 0;
    }
    for (int d = 0; d < PROBE_MAX_GPUS; ++d)
        if (!(f->gpu_rel_speed[d] >= 0 && isfinite(f->gpu_rel_speed[d]))) return 0;
    return !f->have_gpu || (f->gpu_start_us >= 0 && isfinite(f->gpu_start_us) &&
                            f->gpu_count >= 1 && f->gpu_count <= PROBE_MAX_GPUS);
}

/* Parse "name value" lines; every key field and figure must be there once. */
static int parse(FILE *fp, const machine_key *k, probe_figures *f, char *why, size_t whylen)
{
    char line[600];
    if (!fgets(line, sizeof line, fp) || strncmp(line, CACHE_MAGIC "\n", sizeof CACHE_MAGIC)) {
        snprintf(why, whylen, "not a psfsim probe cache (or an older format)");
        return -1;
    }
    fig_row rows[FIG_ROWS_MAX];
    int nrows = fig_rows(f, rows), seen_key = 0, seen_fig = 0, ended = 0;
    while (fgets(line, sizeof line, fp)) {
        char name[64], value[512];
        if (ended) { /* nothing may follow the end line */
            ended = 0;
            break;
        }
        if (!strcmp(line, "end\n")) {
            ended = 1;
            continue;
        }
        if (sscanf(line, "%63s %511s", name, value) != 2) {
            snprintf(why, whylen, "corrupt line \"%.40s\"", line);
            return -1;
        }
        for (int i = 0; i < MACHINE_KEY_FIELDS; ++i)
            if (!strcmp(name, key_names[i])) {
                if (strcmp(value, k->value[i])) {
                    snprintf(why, whylen, "figures are for another machine (%s differs)", name);
                    return -1;
                }
                seen_key |= 1 << i;
            }
        for (int i = 0; i < nrows; ++i)
            if (!strcmp(name, rows[i].name)) {
                char *end;
                double v = strtod(value, &end);
                if (*end) break;
                if (rows[i].d)
                    *rows[i].d = v;
                else
                    *rows[i].i = (int)v;
                seen_fig++;
            }
    }
    /* The end line proves the file was not cut short. */
    if (!ended || seen_key != (1 << MACHINE_KEY_FIELDS) - 1 || seen_fig != nrows ||
        !figures_valid(f)) {
        snprintf(why, whylen, "incomplete or corrupt figures");
        return -1;
    }
    return 0;
}

int probe_cache_load(const char *dir, const machine_key *k, probe_figures *f, char *why,
                     size_t whylen)
{
    char *text, reason[4400];
    size_t len;
    int rc = cache_file_read(dir, PROBE_CACHE_FILE, PROBE_CACHE_MAX_BYTES, &text, &len, reason,
                             sizeof reason);
    if (rc == 1)
        snprintf(reason, sizeof reason, "%s/%s: %s", dir, PROBE_CACHE_FILE, strerror(ENOENT));
    if (rc < 0) log_warn("%s; not used as the probe cache", reason);
    if (rc != 0) {
        snprintf(why, whylen, "no cached figures (%s)", reason);
        return -1;
    }
    memset(f, 0, sizeof *f);
    FILE *fp = len ? fmemopen(text, len, "r") : NULL; /* parse reads lines */
    rc = fp ? parse(fp, k, f, why, whylen) : -1;
    if (fp)
        fclose(fp);
    else
        snprintf(why, whylen, "not a psfsim probe cache (or an older format)");
    free(text);
    return rc;
}

int probe_cache_store(const char *dir, const machine_key *k, const probe_figures *f, char *err,
                      size_t errlen)
{
    if (make_dir(dir, err, errlen) != 0) return -1;
    char path[4200];
    cache_path(dir, path, sizeof path);
    atomic_file af;
    if (atomic_open(&af, path, err, errlen) != 0) return -1;
    fprintf(af.fp, "%s\n", CACHE_MAGIC);
    for (int i = 0; i < MACHINE_KEY_FIELDS; ++i)
        fprintf(af.fp, "%s %s\n", key_names[i], k->value[i]);
    probe_figures copy = *f;
    fig_row rows[FIG_ROWS_MAX];
    int nrows = fig_rows(&copy, rows);
    for (int i = 0; i < nrows; ++i) {
        if (rows[i].d)
            fprintf(af.fp, "%s %.17g\n", rows[i].name, *rows[i].d);
        else
            fprintf(af.fp, "%s %d\n", rows[i].name, *rows[i].i);
    }
    fputs("end\n", af.fp);
    return atomic_commit(&af, err, errlen);
}
