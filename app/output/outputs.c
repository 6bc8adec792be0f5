/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/output/outputs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/base/clock.h"
#include "app/base/log.h"
#include "app/output/fits_header.h"
#include "app/formats/fits.h"
#include "app/formats/png_io.h"
#include "app/set/measure.h"
#include "app/set/noise.h"
#include "app/set/set_detector.h"
#include "app/output/set_dir.h"
#include "app/output/set_members.h"

/* 0 when a file can be created in dir, else the reason (errno). access()
 * is not enough: root passes it on /proc, where nothing can be created.
 * An unnamed O_TMPFILE file shows it without a trace; on a filesystem
 * without O_TMPFILE (EOPNOTSUPP: /proc, NFS) a hidden probe file is made
 * and removed at once. */
static int can_create_in(const char *dir)
{
    if (access(dir, W_OK | X_OK) != 0) return errno;
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    int e = errno;
    if (e != EOPNOTSUPP && e != EISDIR && e != EINVAL) return e;
    char probe[CFG_PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/.psfsim-probe-XXXXXX", dir);
    fd = mkstemp(probe);
    if (fd < 0) return errno == ENOENT ? e : errno; /* /proc: ENOENT, not the reason */
    close(fd);
    unlink(probe);
    return 0;
}

/* ENOENT from stat(path): a symbolic link to nothing is one case of it,
 * which mkdir cannot create through (EEXIST). -1 with a message then. */
static int dangling_link(const char *dir, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) return 0;
    char to[CFG_PATH_MAX];
    ssize_t n = readlink(path, to, sizeof to - 1);
    to[n > 0 ? n : 0] = '\0';
    if (strcmp(dir, path) == 0)
        snprintf(err, errlen, "output directory %s: a symbolic link to %s, which does not exist",
                 dir, to);
    else
        snprintf(err, errlen,
                 "output directory %s: %s is a symbolic link to %s, which does not exist", dir,
                 path, to);
    return -1;
}

static int check_existing(const psf_config *cfg, const char *dir, int force, char *err,
                          size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "output directory %s: %s", dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    int found = 0;
    char first[256] = "";
    set_members m; /* only the set's own files count (app/output/set_members.h) */
    set_members_load(&m, dirfd(d), cfg, config_image_count(cfg));
    while ((e = readdir(d)))
        if (set_members_has(&m, e->d_name) && !found++)
            snprintf(first, sizeof first, "%s", e->d_name);
    set_members_free(&m);
    closedir(d);
    if (found && !force) {
        snprintf(err, errlen,
                 "output directory %s already holds image set \"%s\" (%s and %d more file(s)); "
                 "use --force to overwrite it or -o to choose another directory",
                 dir, cfg->name, first, found - 1);
        return -1;
    }
    int why = can_create_in(dir);
    if (why != 0) {
        snprintf(err, errlen, "output directory %s: not writable: %s", dir, strerror(why));
        return -1;
    }
    return 0;
}

/* The nearest existing ancestor of a directory that does not exist yet must
 * be a writable directory. */
static int check_creatable(const char *dir, char *err, size_t errlen)
{
    char path[CFG_PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    struct stat st;
    for (;;) {
        char *slash = strrchr(path, '/');
        while (slash && slash > path && slash[1] == '\0') { /* trailing slashes */
            *slash = '\0';
            slash = strrchr(path, '/');
        }
        if (!slash) {
            snprintf(path, sizeof path, ".");
        } else if (slash == path) {
            path[1] = '\0';
        } else {
            *slash = '\0';
        }
        if (stat(path, &st) == 0) break;
        int e = errno;
        if (e == ENOENT && dangling_link(dir, path, err, errlen) != 0) return -1;
        if (e != ENOENT || !strcmp(path, ".") || !strcmp(path, "/")) {
            snprintf(err, errlen, "output directory %s: cannot use %s: %s", dir, path, strerror(e));
            return -1;
        }
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "output directory %s: %s is not a directory", dir, path);
        return -1;
    }
    int e = can_create_in(path);
    if (e != 0) {
        snprintf(err, errlen, "output directory %s: cannot create it in %s: %s", dir, path,
                 strerror(e));
        return -1;
    }
    return 0;
}

int outputs_check(const psf_config *cfg, const char *dir, int force, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "output directory %s: exists and is not a directory", dir);
            return -1;
        }
        return check_existing(cfg, dir, force, err, errlen);
    }
    int e = errno;
    if (e != ENOENT && e != ENOTDIR) {
        snprintf(err, errlen, "output directory %s: %s", dir, strerror(e));
        return -1;
    }
    char bare[CFG_PATH_MAX]; /* without trailing slashes, which lstat follows */
    snprintf(bare, sizeof bare, "%s", dir);
    for (size_t n = strlen(bare); n > 1 && bare[n - 1] == '/'; --n)
        bare[n - 1] = '\0';
    if (e == ENOENT && dangling_link(dir, bare, err, errlen) != 0) return -1;
    return check_creatable(dir, err, errlen);
}

/* 1 when name is a file this set (cfg, nimages) writes. */
static int in_this_set(const psf_config *cfg, long long nimages, const char *name)
{
    char want[512];
    outputs_set_file(NULL, cfg->name, SET_CUBE, want, sizeof want);
    if (!strcmp(name, want)) return cfg->fits_enabled && cfg->fits_cube;
    for (set_file f = SET_HDF5; f <= SET_SIDECAR; ++f)
        if (!strcmp(name, outputs_set_file(NULL, cfg->name, f, want, sizeof want)))
            return cfg->hdf5_enabled;
    const char *digits = name + strlen(cfg->name) + 1, *ext = strrchr(name, '.');
    char *end;
    long long k = strtoll(digits, &end, 10);
    if (end != ext || end == digits || k < 0 || k >= nimages) return 0;
    int png = !strcmp(ext, ".png"), fits = !strcmp(ext, ".fits");
    if (!(png && cfg->png_enabled) && !(fits && cfg->fits_enabled && !cfg->fits_cube)) return 0;
    outputs_image_name(cfg, k, nimages, ext + 1, want, sizeof want);
    return !strcmp(name, want);
}

void outputs_remove_stale(const psf_config *cfg, int dirfd, const char *dir,
                          const set_members *earlier, long long nimages)
{
    DIR *d = set_dir_entries(dirfd);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *ext = strrchr(e->d_name, '.');
        if (!set_members_has(earlier, e->d_name) || !ext || !strcmp(ext, ".csv")) continue;
        if (in_this_set(cfg, nimages, e->d_name)) continue;
        if (unlinkat(dirfd, e->d_name, 0) == 0)
            log_info("removed %s/%s, left by the earlier set", dir, e->d_name);
    }
    closedir(d);
}

/* Image k's FITS file: the primary image, and with detector.noise its
 * NOISY extension (app/set/noise.h: drawn here, on the writer's thread, a
 * pure function of the seed, k and the pixel). */
static int write_fits(const image_set *s, int dirfd, const char *dir, const char *name, long long k,
                      const float *img, const fits_kv *kvs, int nkv, char *err, size_t errlen)
{
    int npix = s->samp.npix;
    if (!s->cfg->noise.enabled)
        return psf_fits_write_image_at(dirfd, dir, name, img, npix, kvs, nkv, err, errlen);
    size_t n = (size_t)npix * npix;
    uint16_t *adu = malloc(n * sizeof *adu);
    if (!adu) {
        snprintf(err, errlen, "cannot write %s/%s: out of memory for the noisy image", dir, name);
        return -1;
    }
    noise_image(&s->cfg->noise, (uint32_t)k, img, n, adu);
    fits_kv ekvs[FITS_NOISE_KEYS];
    int nekv = fits_header_noise(s->cfg, k, ekvs);
    int rc = psf_fits_write_image_u16ext_at(dirfd, dir, name, img, npix, kvs, nkv, adu, ekvs, nekv,
                                            err, errlen);
    free(adu);
    return rc;
}

/* detector.write = "both": the OVERSAMP image (over, of the view
 * set_detector_oversampled_view made, measured) as the primary HDU,
 * WebbPSF's order, and the detector image img as the extension DET_SAMP. */
static int write_fits_both(const image_set *s, const image_set *view, int dirfd, const char *dir,
                           const char *name, const image_info *info, const float *img,
                           const image_result *res, const image_over *over, char *err,
                           size_t errlen)
{
    image_result ores = *res;
    ores.strehl = over->strehl;
    ores.axial_intensity = over->axial_intensity;
    fits_kv okvs[FITS_HEADER_MAX], kvs[FITS_HEADER_MAX];
    char okeys[FITS_HEADER_MAX][12], zkeys[FITS_HEADER_MAX][12];
    int nokv = fits_header_build(view, over->info, &ores, okvs, okeys);
    int nkv = fits_header_build(s, info, res, kvs, zkeys);
    return psf_fits_write_image_f32ext_at(dirfd, dir, name, over->img, view->samp.npix, okvs, nokv,
                                          img, s->samp.npix, kvs, nkv, err, errlen);
}

int outputs_write_image(const image_set *s, int dirfd, const char *dir, long long k,
                        const image_info *info, const float *img, image_result *res, double *png_us,
                        double *fits_us, char *err, size_t errlen)
{
    return outputs_write_images(s, NULL, dirfd, dir, k, info, img, NULL, res, png_us, fits_us, err,
                                errlen);
}

int outputs_write_levels(const image_set *s, int dirfd, const char *dir, long long k,
                         const unsigned short *levels, image_result *res, double *png_us, char *err,
                         size_t errlen)
{
    const psf_config *cfg = s->cfg;
    *png_us = 0.0;
    if (!cfg->png_enabled) return 0;
    double t0 = clock_us();
    char name[512];
    outputs_image_name(cfg, k, s->nimages, "png", name, sizeof name);
    if (psf_png_write_levels_at(dirfd, dir, name, levels, s->samp.npix, cfg->png_bits,
                                cfg->png_compression, err, errlen) != 0)
        return -1;
    snprintf(res->png, sizeof res->png, "%s", name);
    *png_us = clock_us() - t0;
    return 0;
}

int outputs_write_images(const image_set *s, const image_set *view, int dirfd, const char *dir,
                         long long k, const image_info *info, const float *img,
                         const image_over *over, image_result *res, double *png_us, double *fits_us,
                         char *err, size_t errlen)
{
    const psf_config *cfg = s->cfg;
    char name[512];
    *png_us = *fits_us = 0.0;
    if (cfg->png_enabled) {
        double t0 = clock_us();
        outputs_image_name(cfg, k, s->nimages, "png", name, sizeof name);
        if (psf_png_write_image_at(dirfd, dir, name, img, s->samp.npix, cfg->png_bits,
                                   cfg->png_stretch, cfg->png_dynamic_range, cfg->png_compression,
                                   err, errlen) != 0)
            return -1;
        snprintf(res->png, sizeof res->png, "%s", name);
        *png_us = clock_us() - t0;
    }
    if (cfg->fits_enabled && !cfg->fits_cube) {
        double t0 = clock_us();
        outputs_image_name(cfg, k, s->nimages, "fits", name, sizeof name);
        fits_kv kvs[FITS_HEADER_MAX];
        char zkeys[FITS_HEADER_MAX][12];
        int nkv = over ? 0 : fits_header_build(s, info, res, kvs, zkeys);
        int bad =
            over ? write_fits_both(s, view, dirfd, dir, name, info, img, res, over, err, errlen)
                 : write_fits(s, dirfd, dir, name, k, img, kvs, nkv, err, errlen);
        if (bad) {
            /* An image is in the set with all its files or not at all. */
            if (res->png[0]) {
                unlinkat(dirfd, res->png, 0);
                res->png[0] = '\0';
            }
            return -1;
        }
        snprintf(res->fits, sizeof res->fits, "%s", name);
        *fits_us = clock_us() - t0;
    }
    return 0;
}
