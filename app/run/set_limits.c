/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory and disk limits checked before any work (set_limits.h). */
#include "app/run/set_limits.h"
#include "backend/cpu_count.h"

#include "app/set/set_detector.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/bytes.h"
#include "app/formats/h5set.h"
#include "app/select/backend_select.h"
#include "app/dataset/hdf5_writer.h"
#include "app/output/set_members.h"
#include "app/output/writer_pool.h"

#define KIB 1024ULL
#define MIB (1024ULL * KIB)

/* app/run/run_lanes.c: host memory of one batch of images (RUN_BATCH_BYTES), and the CPU's
 * batch. */
#define LIMITS_BATCH_BYTES ((unsigned long long)BACKEND_BATCH_BYTES)
/* Per writer thread beyond the PNG levels: zlib's deflate state (256 KiB at
 * the default memLevel and windowBits), libpng's rows, cfitsio's buffers. */
#define LIMITS_WRITER_STATE (1ULL * MIB)
#define LIMITS_BASE_BYTES (64ULL * MIB)
void limits_format_bytes(unsigned long long bytes, char *out, size_t outlen)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < KIB) {
        snprintf(out, outlen, "%llu bytes", bytes);
        return;
    }
    double v = (double)bytes / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        ++u;
    }
    snprintf(out, outlen, "%.1f %s", v, units[u]);
}

void limits_memory_need(const image_set *s, int nwriters, long long todo, limits_memory *m)
{
    memset(m, 0, sizeof *m);
    /* The backend's images: with detector.write = "both" its grids, s M. */
    const unsigned long long mpix = (unsigned long long)set_detector_backend_npix(s);
    const unsigned long long plane = mpix * mpix; /* <= 2^32 */
    const unsigned long long p =
        (unsigned long long)(s->pupil_npix > 0 ? s->pupil_npix : s->samp.npix);

    unsigned long long img_bytes = 4ULL * plane;
    unsigned long long b = LIMITS_BATCH_BYTES / (img_bytes ? img_bytes : 1);
    if (b > (unsigned long long)psf_backend_cpu.preferred_batch)
        b = (unsigned long long)psf_backend_cpu.preferred_batch;
    if (todo > 0 && b > (unsigned long long)todo) b = (unsigned long long)todo;
    if (b < 1) b = 1;
    b = (unsigned long long)hdf5_writer_batch(s, (int)b, todo); /* as run_start_backend makes it */
    m->batch = (int)b;
    m->images = bytes_mul((unsigned long long)WRITER_SLOTS * b, img_bytes);
    if (mpix != (unsigned long long)s->samp.npix) /* "both": the detector images made from them */
        m->images += bytes_mul((unsigned long long)WRITER_SLOTS * b,
                               4ULL * (unsigned long long)s->samp.npix * s->samp.npix);

    /* The backend's own figures: its transform, pupils and their build. */
    psf_problem problem;
    psf_memory_need need;
    char err[256];
    image_set_problem(s, m->batch, &problem);
    if (psf_backend_cpu.memory_need(&problem, NULL, &need, err, sizeof err) != 0)
        memset(&need, 0, sizeof need); /* create refuses it: its message says why */
    m->fft = need.transform;
    m->pupils = need.pupils;
    /* ... and the aperture grids the set keeps for it (app/set/image_set.c). */
    unsigned long long grids = bytes_mul(4ULL * p * p, (unsigned long long)problem.pupil_pitches);
    m->scratch = bytes_add(need.scratch, bytes_min(grids, IMAGE_SET_GRIDS_BYTES));

    m->nwriters = nwriters > 0 ? nwriters : 1;
    m->writers = bytes_mul((unsigned long long)m->nwriters,
                           bytes_add(2ULL * plane + mpix, LIMITS_WRITER_STATE));
    m->base = LIMITS_BASE_BYTES;
    m->hdf5 = hdf5_writer_memory_need(s, m->batch, 1);
    m->total = bytes_add(bytes_add(bytes_add(m->fft, m->images), bytes_add(m->pupils, m->scratch)),
                         bytes_add(bytes_add(m->writers, m->base), m->hdf5));
}

/* A decimal number of bytes from the first line of path ("max" -> 0). */
static unsigned long long read_number_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[64] = "";
    unsigned long long v = 0;
    if (fgets(buf, sizeof buf, f) && buf[0] >= '0' && buf[0] <= '9') v = strtoull(buf, NULL, 10);
    fclose(f);
    return v;
}

/* MemAvailable from /proc/meminfo, bytes; 0 when absent. */
static unsigned long long mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return bytes_mul(kb, KIB);
}

/* What the process's memory cgroup still allows: memory.max minus
 * memory.current (cgroup v2, at the path /proc/self/cgroup names, else at
 * the root of /sys/fs/cgroup), or v1's limit_in_bytes minus
 * usage_in_bytes. 0 when there is no limit. */
static unsigned long long mem_cgroup(void)
{
    char rel[2048] = "";
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (f) {
        char line[2048];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "0::", 3) == 0) {
                snprintf(rel, sizeof rel, "%s", line + 3);
                rel[strcspn(rel, "\n")] = '\0';
                break;
            }
        }
        fclose(f);
    }
    const char *bases[2] = {rel, ""};
    for (int i = 0; i < 2; ++i) {
        char max[2100], cur[2100];
        snprintf(max, sizeof max, "/sys/fs/cgroup%s/memory.max", bases[i]);
        snprintf(cur, sizeof cur, "/sys/fs/cgroup%s/memory.current", bases[i]);
        unsigned long long lim = read_number_file(max);
        if (lim > 0) {
            unsigned long long used = read_number_file(cur);
            return lim > used ? lim - used : 1;
        }
    }
    unsigned long long lim = read_number_file("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    if (lim > 0 && lim < (1ULL << 62)) { /* v1 writes ~2^63 for "no limit" */
        unsigned long long used = read_number_file("/sys/fs/cgroup/memory/memory.usage_in_bytes");
        return lim > used ? lim - used : 1;
    }
    return 0;
}

/* dir, or its nearest existing ancestor ("." for a relative path whose
 * first component is missing), into out. */
static void existing_ancestor(const char *dir, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s", dir && dir[0] ? dir : ".");
    struct stat st;
    while (stat(out, &st) != 0) {
        char *slash = strrchr(out, '/');
        while (slash && slash > out && slash[1] == '\0') { /* trailing slashes */
            *slash = '\0';
            slash = strrchr(out, '/');
        }
        if (!slash) {
            snprintf(out, outlen, ".");
            return;
        }
        if (slash == out) {
            out[1] = '\0';
            return;
        }
        *slash = '\0';
    }
}

/* Bytes of the files of set cfg in dir (app/output/set_members.h: those --force
 * replaces or removes; another set's or the user's files are no credit).
 * NAME.h5's temp file is not counted here: limits_check counts it once
 * (hdf5_part). */
static unsigned long long set_bytes(const char *dir, const psf_config *cfg)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return 0;
    }
    set_members m;
    set_members_load(&m, fd, cfg, config_image_count(cfg));
    char h5[SET_PATH_MAX], part[SET_PATH_MAX] = "";
    outputs_set_file(NULL, cfg->name, SET_HDF5, h5, sizeof h5);
    if (h5set_temp_name(h5, part, sizeof part) != 0) part[0] = '\0';
    unsigned long long sum = 0;
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d)))
        if (set_members_has(&m, e->d_name) && strcmp(e->d_name, part) != 0 &&
            fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            sum = bytes_add(sum, (unsigned long long)st.st_size);
    set_members_free(&m);
    closedir(d);
    return sum;
}

void limits_probe(const char *dir, const psf_config *cfg, int force, limits_machine *mc)
{
    memset(mc, 0, sizeof *mc);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0)
        mc->mem_physical = bytes_mul((unsigned long long)pages, (unsigned long long)psize);
    mc->mem_available = mem_available();
    mc->mem_cgroup = mem_cgroup();
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        mc->mem_rlimit = (unsigned long long)rl.rlim_cur;

    existing_ancestor(dir, mc->fs_path, sizeof mc->fs_path);
    struct statvfs vfs;
    if (statvfs(mc->fs_path, &vfs) == 0 && vfs.f_blocks > 0) { /* 0 blocks: no figures (FUSE) */
        unsigned long long frsize = vfs.f_frsize ? vfs.f_frsize : vfs.f_bsize;
        mc->block = frsize >= 512 ? frsize : 512;
        mc->disk_free = bytes_mul((unsigned long long)vfs.f_bavail, frsize);
        if (mc->disk_free == 0) mc->disk_free = 1; /* known to be full, not unknown */
        if (vfs.f_files > 0) mc->inodes_free = vfs.f_favail > 0 ? vfs.f_favail : 1;
    }
    if (force && dir) mc->reclaim = set_bytes(dir, cfg);
}

/* "FILE:LINE: key: " for key in the config (where config_load found it; the
 * @include'd file when it comes from one), "FILE: key: " when the config
 * has no such key, "FILE: " without a key, into out. */
static void key_prefix(const psf_config *cfg, const char *key, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s: ", cfg->path);
    if (!key) return;
    config_key_where(cfg, key, out, outlen);
    size_t used = strlen(out);
    snprintf(out + used, outlen - used, ": %s: ", key);
    for (char *c = out; *c; ++c) /* one line, as config messages */
        if ((unsigned char)*c < 0x20) *c = ' ';
}

/* The smallest known memory bound and its description. */
static unsigned long long memory_bound(const limits_machine *mc, char *what, size_t len)
{
    char a[32], b[32];
    unsigned long long bound = mc->mem_available ? mc->mem_available : mc->mem_physical;
    limits_format_bytes(mc->mem_available, a, sizeof a);
    limits_format_bytes(mc->mem_physical, b, sizeof b);
    if (mc->mem_available)
        snprintf(what, len, "%s available (MemAvailable) of %s physical", a, b);
    else
        snprintf(what, len, "%s physical", b);
    if (mc->mem_cgroup && (!bound || mc->mem_cgroup < bound)) {
        bound = mc->mem_cgroup;
        limits_format_bytes(mc->mem_cgroup, a, sizeof a);
        size_t used = strlen(what);
        snprintf(what + used, len - used, "; %s left under the cgroup's memory limit", a);
    }
    if (mc->mem_rlimit && (!bound || mc->mem_rlimit < bound)) {
        bound = mc->mem_rlimit;
        limits_format_bytes(mc->mem_rlimit, a, sizeof a);
        size_t used = strlen(what);
        snprintf(what + used, len - used, "; address space limited to %s (ulimit -v)", a);
    }
    return bound;
}

static int check_memory(const image_set *s, const limits_memory *m, const limits_machine *mc,
                        char *err, size_t errlen)
{
    char what[512];
    unsigned long long bound = memory_bound(mc, what, sizeof what);
    if (!bound || m->total <= bound) return 0;
    const psf_config *cfg = s->cfg;
    char prefix[4400], total[32], fft[32], img[32], pup[32], scr[32], wr[32];
    key_prefix(cfg, "sampling.pupil_samples", prefix, sizeof prefix);
    limits_format_bytes(m->total, total, sizeof total);
    limits_format_bytes(m->fft, fft, sizeof fft);
    limits_format_bytes(m->images, img, sizeof img);
    limits_format_bytes(m->pupils, pup, sizeof pup);
    limits_format_bytes(m->scratch, scr, sizeof scr);
    limits_format_bytes(m->writers, wr, sizeof wr);
    char grid[160];
    if (s->mft)
        snprintf(grid, sizeof grid, "%d x %d images by MFT from a %d x %d pupil grid", s->samp.npix,
                 s->samp.npix, s->pupil_npix, s->pupil_npix);
    else
        snprintf(grid, sizeof grid, "a %d x %d FFT grid (pupil_samples %d, padding %.4g)",
                 s->fft_npix > 0 ? s->fft_npix : s->samp.npix,
                 s->fft_npix > 0 ? s->fft_npix : s->samp.npix, s->samp.pupil_samples,
                 s->samp.padding);
    char h5[64] = "";
    if (m->hdf5) {
        char b[32];
        limits_format_bytes(m->hdf5, b, sizeof b);
        snprintf(h5, sizeof h5, ", HDF5 writer %s", b);
    }
    snprintf(err, errlen,
             "%s%s needs %s of memory on the CPU backend (%s %s, images %s in %d batches of "
             "%d, pupils %s, scratch %s, %d writer thread(s) %s%s), more than this machine can "
             "give: %s; lower sampling.pupil_samples or sampling.padding",
             prefix, grid, total, s->mft ? "MFT" : "FFT buffers", fft, img, WRITER_SLOTS, m->batch,
             pup, scr, m->nwriters, wr, h5, what);
    return -1;
}

static int check_disk(const image_set *s, const char *dir, const limits_disk *d,
                      const limits_machine *mc, long long todo, char *err, size_t errlen)
{
    const psf_config *cfg = s->cfg;
    int space =
        mc->disk_free && d->total > bytes_add(bytes_add(mc->disk_free, mc->reclaim), mc->hdf5_part);
    int inodes = mc->inodes_free && d->files > mc->inodes_free;
    if (!space && !inodes) return 0;
    char prefix[4400], kinds[64] = "";
    const char *key = cfg->n_sweep_wavelength || cfg->n_sweep_defocus || cfg->n_sweep_focus_shift ||
                              cfg->n_sweep_zernike || axes_is_dataset(&s->axes)
                          ? "sweep"
                          : "sampling.pupil_samples";
    key_prefix(cfg, key, prefix, sizeof prefix);
    if (cfg->png_enabled) snprintf(kinds, sizeof kinds, "PNG %d-bit", cfg->png_bits);
    if (cfg->fits_enabled) {
        size_t used = strlen(kinds);
        snprintf(kinds + used, sizeof kinds - used, "%s%s", used ? " + " : "",
                 cfg->fits_cube ? "FITS cube" : "FITS");
    }
    if (cfg->hdf5_enabled) {
        size_t used = strlen(kinds);
        snprintf(kinds + used, sizeof kinds - used, "%sHDF5 %s", used ? " + " : "",
                 cfg->hdf5_dtype == HDF5_UINT16 ? "uint16" : "float32");
    }
    if (space) {
        char need[32], have[32], back[64] = "";
        limits_format_bytes(d->total, need, sizeof need);
        limits_format_bytes(mc->disk_free, have, sizeof have);
        if (mc->reclaim) {
            char r[32];
            limits_format_bytes(mc->reclaim, r, sizeof r);
            snprintf(back, sizeof back, " (and %s in the set it replaces)", r);
        }
        snprintf(err, errlen,
                 "%s%lld image(s) of %d x %d (%s) need up to %s in %s, but its file system "
                 "(%s) has %s free%s",
                 prefix, todo, s->samp.npix, s->samp.npix, kinds, need, dir, mc->fs_path, have,
                 back);
    } else {
        snprintf(err, errlen,
                 "%s%lld image(s) (%s) need %llu files in %s, but its file system (%s) has "
                 "%llu free inodes",
                 prefix, todo, kinds, d->files, dir, mc->fs_path, mc->inodes_free);
    }
    return -1;
}

/* output.hdf5: one image must fit in one chunk, under 4 GiB (HDF5 stores
 * a chunk's size in 32 bits; app/formats/hdf5_params.c). */
static int check_hdf5_image(const image_set *s, char *err, size_t errlen)
{
    unsigned long long image = hdf5_writer_image_bytes(s), over = hdf5_writer_over_bytes(s);
    if (!s->cfg->hdf5_enabled || (image <= 0xffffffffULL && over <= 0xffffffffULL)) return 0;
    int big = over > 0xffffffffULL; /* "both": the oversampled image */
    int m = big ? set_detector_backend_npix(s) : s->samp.npix;
    char prefix[4400], size[32];
    key_prefix(s->cfg,
               big                ? "detector.oversample"
               : s->cfg->out_npix ? "output.npix"
                                  : "sampling.pupil_samples",
               prefix, sizeof prefix);
    limits_format_bytes(big ? over : image, size, sizeof size);
    int u16 = s->cfg->hdf5_dtype == HDF5_UINT16;
    snprintf(err, errlen,
             "%san%s image of %d x %d %s is %s, more than one HDF5 chunk holds (under 4 GiB): "
             "%s, or turn output.hdf5 off",
             prefix, big ? " oversampled" : "", m, m, u16 ? "uint16" : "float32", size,
             u16 ? "make the images smaller"
                 : "use output.hdf5.dtype = \"uint16\", smaller images");
    return -1;
}

/* output.hdf5.chunk_images: c images of the largest image dataset in one
 * chunk, under 4 GiB too. */
static int check_hdf5_chunk(const image_set *s, char *err, size_t errlen)
{
    unsigned long long image = hdf5_writer_image_bytes(s), over = hdf5_writer_over_bytes(s);
    unsigned long long big = over > image ? over : image, c = hdf5_writer_chunk_images(s);
    if (!s->cfg->hdf5_enabled || c <= 0xffffffffULL / big) return 0;
    char prefix[4400], size[32];
    key_prefix(s->cfg, "output.hdf5.chunk_images", prefix, sizeof prefix);
    limits_format_bytes(big, size, sizeof size);
    snprintf(err, errlen,
             "%s%llu images of %s are more than one HDF5 chunk holds (under 4 GiB): "
             "at most %llu",
             prefix, c, size, 0xffffffffULL / big);
    return -1;
}

int limits_evaluate(const image_set *s, const char *dir, const limits_options *o, long long todo,
                    const limits_machine *mc, char *err, size_t errlen)
{
    if (check_hdf5_image(s, err, errlen) != 0 || check_hdf5_chunk(s, err, errlen) != 0) return -1;
    int nwriters = o && o->writers > 0 ? o->writers : 0;
    if (nwriters == 0) {
        nwriters = psf_cpu_count();
    }
    limits_memory m;
    limits_memory_need(s, nwriters, todo, &m);
    if (check_memory(s, &m, mc, err, errlen) != 0) return -1;
    limits_disk d;
    limits_disk_need(s, todo, mc->block ? mc->block : 4096, &d);
    return check_disk(s, dir, &d, mc, todo, err, errlen);
}

int limits_check(const image_set *s, const char *dir, const limits_options *o, long long todo,
                 char *err, size_t errlen)
{
    limits_machine mc;
    limits_probe(dir, s->cfg, o && o->force, &mc);
    char h5[SET_PATH_MAX], tmp[SET_PATH_MAX];
    struct stat st;
    outputs_set_file(dir, s->cfg->name, SET_HDF5, h5, sizeof h5);
    if (s->cfg->hdf5_enabled && h5set_temp_name(h5, tmp, sizeof tmp) == 0 && lstat(tmp, &st) == 0 &&
        S_ISREG(st.st_mode))
        mc.hdf5_part = (unsigned long long)st.st_size;
    return limits_evaluate(s, dir, o, todo, &mc, err, errlen);
}
