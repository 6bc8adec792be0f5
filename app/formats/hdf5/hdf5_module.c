/* SPDX-License-Identifier: BSD-3-Clause */
/* The HDF5 module, libpsfsim-hdf5.so: an image set as one HDF5 file. Its
 * one export is the table of app/formats/hdf5_abi.h, which psfsim calls
 * through (app/formats/hdf5_loader.c); each function has the contract of the
 * h5set.h function of the same name with the h5set_ prefix. The file's
 * layout and its crash safety are described in h5set.h. The parameters are
 * checked in hdf5_params.c, the layout made and checked in hdf5_layout.c,
 * blocks written in hdf5_chunks.c; this file handles the temp file:
 * created, locked, resumed, removed, renamed. */
#include "app/formats/hdf5_abi.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/base/module_loader.h"
#include "app/base/same_file.h"
#include "app/formats/h5set.h"
#include "app/formats/hdf5/hdf5_layout.h"

/* An error "cannot write SHOWN: WHAT: strerror(e)". */
static void sys_error(const h5set *s, const char *what, int e, char *err, size_t errlen)
{
    snprintf(err, errlen, "cannot write %s: %s: %s", s->shown, what, strerror(e));
}

/* Open the directory of name (relative to dir_fd) once, and fill base and
 * tmp. 0, or -1 with err. */
static int open_dir(h5set *s, int dir_fd, const char *name, char *err, size_t errlen)
{
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    size_t len = strlen(base);
    /* Its temp name, H5SET_TEMP_FORMAT (".NAME.h5.part"), must fit a file
     * name too: the config's name bound (app/config/config.c) keeps it so. */
    int too_long = len + sizeof H5SET_TEMP_FORMAT - 3 > NAME_MAX;
    if (!len || !strcmp(base, ".") || !strcmp(base, "..") || too_long) {
        snprintf(err, errlen, "cannot write %s: %s", s->shown,
                 too_long ? strerror(ENAMETOOLONG) : "the name is not a file name");
        return -1;
    }
    char dir[4096];
    int dirlen = slash ? (int)(slash - name) + 1 : 0;
    if (snprintf(dir, sizeof dir, "%.*s", dirlen, name) >= (int)sizeof dir) {
        sys_error(s, "the directory", ENAMETOOLONG, err, errlen);
        return -1;
    }
    s->dir_fd = openat(dir_fd, dirlen ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->dir_fd < 0) {
        sys_error(s, "cannot open its directory", errno, err, errlen);
        return -1;
    }
    memcpy(s->base, base, len + 1);
    snprintf(s->tmp, sizeof s->tmp, H5SET_TEMP_FORMAT, base);
    return 0;
}

static int same_inode(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* The temp name in the directory still names our file (nobody replaced it). */
static int still_ours(const h5set *s)
{
    return same_file_fd(s->dir_fd, s->tmp, s->fd);
}

/* "/proc/self/fd/N" for s->fd into path: HDF5 opens by name, and this
 * name is the file s->fd is, whatever happens to the directory entry.
 * 0, or -1 with err when /proc is not there. */
static int fd_path(const h5set *s, char *path, size_t pathlen, char *err, size_t errlen)
{
    struct stat a, b;
    snprintf(path, pathlen, "/proc/self/fd/%d", s->fd);
    if (fstat(s->fd, &a) == 0 && stat(path, &b) == 0 && same_inode(&a, &b)) return 0;
    snprintf(err, errlen, "cannot write %s: HDF5 output needs /proc/self/fd (is /proc mounted?)",
             s->shown);
    return -1;
}

/* The temp file, opened by us (flags of openat) and flock'ed: the fd, -1
 * with errno (EWOULDBLOCK: another process holds it), or -2 when it is no
 * regular file. */
static int open_locked(const h5set *s, int flags)
{
    int fd = openat(s->dir_fd, s->tmp, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0666);
    if (fd < 0) return -1;
    struct stat st;
    int e = 0, rc = fd;
    if (fstat(fd, &st) != 0)
        e = errno;
    else if (!S_ISREG(st.st_mode))
        rc = -2;
    else if (flock(fd, LOCK_EX | LOCK_NB) != 0)
        e = errno;
    if (e || rc == -2) {
        close(fd);
        errno = e;
        return e ? -1 : -2;
    }
    return fd;
}

static void temp_error(const h5set *s, int rc, char *err, size_t errlen)
{
    char what[320];
    if (rc == -2) {
        snprintf(err, errlen, "cannot write %s: %s is not a regular file", s->shown, s->tmp);
        return;
    }
    int e = errno;
    if (e == EWOULDBLOCK) {
        snprintf(err, errlen, "cannot write %s: %s is locked: another run is writing it", s->shown,
                 s->tmp);
        return;
    }
    snprintf(what, sizeof what, "cannot open %s", s->tmp);
    sys_error(s, what, e, err, errlen);
}

/* Remove a temp file left behind (not one another process holds).
 * 1 when one was removed, 0 when there was none, -1 with err. */
static int remove_temp(h5set *s, char *err, size_t errlen)
{
    int fd = open_locked(s, O_RDONLY);
    if (fd == -1 && errno == ENOENT) return 0;
    if (fd == -1 && errno == ELOOP) { /* a symbolic link: remove the link itself */
        if (unlinkat(s->dir_fd, s->tmp, 0) == 0) return 1;
        sys_error(s, s->tmp, errno, err, errlen);
        return -1;
    }
    if (fd < 0) {
        temp_error(s, fd, err, errlen);
        return -1;
    }
    int keep = s->fd;
    s->fd = fd;
    int rc = still_ours(s) && unlinkat(s->dir_fd, s->tmp, 0) != 0 ? -1 : 1;
    if (rc < 0) sys_error(s, "cannot remove its temp file", errno, err, errlen);
    close(fd);
    s->fd = keep;
    return rc;
}

/* Close the HDF5 file (ids first). 0, or -1 when HDF5 fails to. */
static int close_file(h5set *s)
{
    h5l_close_ids(s);
    int rc = s->file >= 0 && H5Fclose(s->file) < 0 ? -1 : 0;
    s->file = H5I_INVALID_HID;
    return rc;
}

/* Make a new temp file with O_CREAT|O_EXCL and lay it out. 0 or -1. */
static int create_temp(h5set *s, char *err, size_t errlen)
{
    char path[64];
    s->fd = open_locked(s, O_RDWR | O_CREAT | O_EXCL);
    if (s->fd < 0) {
        temp_error(s, s->fd, err, errlen);
        s->fd = -1;
        return -1;
    }
    if (fd_path(s, path, sizeof path, err, errlen)) goto fail;
    hid_t fapl = h5l_fapl();
    s->file = fapl < 0 ? -1 : H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    if (s->file < 0) {
        h5l_error(s, "cannot create the HDF5 file", err, errlen);
        goto fail;
    }
    if (h5l_create(s, err, errlen)) goto fail;
    if (h5l_flush(s)) {
        h5l_error(s, "cannot flush", err, errlen);
        goto fail;
    }
    return 0;
fail:
    close_file(s);
    if (still_ours(s)) unlinkat(s->dir_fd, s->tmp, 0);
    close(s->fd);
    s->fd = -1;
    return -1;
}

/* Read uint8 dataset d of n values into out. 0 or -1. */
static int read_u8(hid_t d, long long n, unsigned char *out)
{
    hid_t sp = H5Dget_space(d);
    hssize_t have = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
    if (sp >= 0) H5Sclose(sp);
    if (have != n) return -1;
    return H5Dread(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0 ? -1 : 0;
}

/* Images are written in whole chunks, so a chunk flagged only in part
 * (which the writer never leaves) is taken as not written: its flags are
 * cleared in the file before anything else is written. 0 or -1. */
static int clear_partial_chunks(h5set *s)
{
    for (long long q = 0; q < s->nchunks; ++q) {
        long long a = q * s->chunk, b = a + s->chunk < s->nimages ? a + s->chunk : s->nimages,
                  n = 0;
        for (long long k = a; k < b; ++k)
            n += s->flags[k];
        if (n == 0 || n == b - a) continue;
        memset(s->flags + a, 0, (size_t)(b - a));
        if (h5l_write_u8(s->written, a, b - a, s->flags + a)) return -1;
    }
    return 0;
}

/* Reopen the temp file of an interrupted run. 1 when it is resumed, 0
 * when there is none or it is unusable (info->note says why), -1 with err. */
static int try_resume(h5set *s, h5set_info *info, char *err, size_t errlen)
{
    char path[64], why[240] = "";
    s->fd = open_locked(s, O_RDWR);
    if (s->fd == -1 && (errno == ENOENT || errno == ELOOP)) {
        if (errno == ELOOP) snprintf(why, sizeof why, "it is a symbolic link");
        s->fd = -1;
        goto unusable;
    }
    if (s->fd < 0) {
        temp_error(s, s->fd, err, errlen);
        s->fd = -1;
        return -1;
    }
    if (fd_path(s, path, sizeof path, err, errlen)) return -1;
    hid_t fapl = h5l_fapl();
    s->file = fapl < 0 ? -1 : H5Fopen(path, H5F_ACC_RDWR, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    unsigned char flushing = 1;
    if (s->file < 0) {
        char text[200];
        h5l_error_text(text, sizeof text);
        snprintf(why, sizeof why, "HDF5 cannot open it (%s)", text);
    } else if (!h5l_check(s, why, sizeof why)) {
        if (read_u8(s->flushing, 1, &flushing) || read_u8(s->written, s->nimages, s->flags))
            snprintf(why, sizeof why, "its flags cannot be read");
        else if (flushing)
            snprintf(why, sizeof why, "it was interrupted while HDF5 wrote its metadata");
        for (long long k = 0; !why[0] && k < s->nimages; ++k)
            if (s->flags[k] > 1) snprintf(why, sizeof why, "its written flags are damaged");
        if (!why[0] && clear_partial_chunks(s)) snprintf(why, sizeof why, "it cannot be written");
    }
    if (!why[0]) {
        memcpy(s->given, s->flags, (size_t)s->nimages);
        return 1;
    }
    H5Eclear2(H5E_DEFAULT);
    close_file(s);
    memset(s->flags, 0, (size_t)s->nimages);
    close(s->fd);
    s->fd = -1;
unusable:
    if (why[0])
        snprintf(info->note, sizeof info->note,
                 "the temp file %.210s was not resumed: %.240s; starting afresh", s->tmp, why);
    return 0;
}

/* h5set_check_complete: NAME.h5 opened read-only through our own
 * descriptor (no link followed), its layout, key, attributes and flags. */
static int check_complete(const h5set_params *p, char *why, size_t whylen)
{
    h5l_quiet();
    char err[1024], path[64];
    why[0] = '\0';
    h5set *s = h5p_new(p, err, sizeof err);
    if (!s) {
        snprintf(why, whylen, "%s", err);
        return 0;
    }
    struct stat st;
    unsigned char flushing = 1;
    if (open_dir(s, p->dir_fd, p->name, err, sizeof err)) {
        snprintf(why, whylen, "%s", err);
        goto done;
    }
    s->fd = openat(s->dir_fd, s->base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (s->fd < 0 || fstat(s->fd, &st) != 0) {
        snprintf(why, whylen, "it cannot be opened (%s)", strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "it is not a regular file");
        goto done;
    }
    if (fd_path(s, path, sizeof path, err, sizeof err)) {
        snprintf(why, whylen, "%s", err);
        goto done;
    }
    hid_t fapl = h5l_fapl();
    s->file = fapl < 0 ? -1 : H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    if (s->file < 0) {
        char text[200];
        h5l_error_text(text, sizeof text);
        snprintf(why, whylen, "HDF5 cannot open it (%s)", text);
    } else if (!h5l_check_complete(s, why, whylen)) {
        if (read_u8(s->flushing, 1, &flushing) || read_u8(s->written, s->nimages, s->flags))
            snprintf(why, whylen, "its flags cannot be read");
        else if (flushing)
            snprintf(why, whylen, "it was interrupted while HDF5 wrote its metadata");
        for (long long k = 0; !why[0] && k < s->nimages; ++k)
            if (s->flags[k] != 1) snprintf(why, whylen, "image %lld is not in it", k);
    }
done:
    H5Eclear2(H5E_DEFAULT);
    close_file(s);
    h5p_free(s);
    return !why[0];
}

static h5set *set_open(const h5set_params *p, h5set_mode mode, h5set_info *info, char *err,
                       size_t errlen)
{
    h5l_quiet();
    h5set_info unused;
    if (!info) info = &unused;
    memset(info, 0, sizeof *info);
    h5set *s = h5p_new(p, err, errlen);
    if (!s) return NULL;
    if (open_dir(s, p->dir_fd, p->name, err, errlen)) goto fail;
    int r = mode == H5SET_RESUME ? try_resume(s, info, err, errlen) : 0;
    if (r < 0) goto fail;
    if (r == 0) {
        int removed = remove_temp(s, err, errlen);
        if (removed < 0) goto fail;
        if (removed && !info->note[0])
            snprintf(info->note, sizeof info->note, "an earlier temp file %s was removed", s->tmp);
        if (create_temp(s, err, errlen)) goto fail;
    }
    info->resumed = r;
    for (long long k = 0; k < s->nimages; ++k)
        info->nwritten += s->flags[k];
    return s;
fail:
    close_file(s);
    h5p_free(s);
    return NULL;
}

/* Everything in: attributes, the flush, close, rename to NAME.h5. */
static int complete(h5set *s, char *err, size_t errlen)
{
    long long have = 0;
    for (long long k = 0; k < s->nimages; ++k)
        have += s->flags[k];
    if (s->failed || have < s->nimages) {
        snprintf(err, errlen, "cannot write %s: %s; %s is kept", s->shown,
                 s->failed ? "an earlier write failed" : "not every image was given", s->tmp);
        if (!s->failed)
            snprintf(err + strlen(err), errlen - strlen(err), " (%lld of %lld written)", have,
                     s->nimages);
        return -1;
    }
    if (h5l_write_attrs(s, err, errlen)) return -1;
    if (h5l_flush(s) || close_file(s)) {
        h5l_error(s, "cannot close the file", err, errlen);
        return -1;
    }
    if (!still_ours(s)) {
        snprintf(err, errlen, "cannot write %s: its temp file %s was replaced", s->shown, s->tmp);
        return -1;
    }
    if (renameat(s->dir_fd, s->tmp, s->dir_fd, s->base) != 0) {
        sys_error(s, "cannot rename its temp file", errno, err, errlen);
        return -1;
    }
    return 0;
}

static int set_close(h5set *s, h5set_close_mode mode, char *err, size_t errlen)
{
    if (!s) return 0;
    h5l_quiet();
    int rc = 0;
    if (mode == H5SET_COMPLETE) rc = complete(s, err, errlen);
    /* A file kept for a resume (H5SET_KEEP, or H5SET_COMPLETE that failed):
     * what a failed write left in the metadata cache is written inside
     * the flush marks, not by H5Fclose. */
    if (mode != H5SET_DISCARD && s->file >= 0 && h5l_flush(s) && !rc) {
        h5l_error(s, "cannot flush", err, errlen);
        rc = -1;
    }
    if (close_file(s) && !rc) {
        h5l_error(s, "cannot close the file", err, errlen);
        rc = -1;
    }
    if (mode == H5SET_DISCARD && still_ours(s) && unlinkat(s->dir_fd, s->tmp, 0) != 0 && !rc) {
        sys_error(s, "cannot remove its temp file", errno, err, errlen);
        rc = -1;
    }
    h5p_free(s); /* closes the descriptor: the lock goes after the rename */
    return rc;
}

static int set_write(h5set *s, long long first, int count, const h5set_rows *rows, char *err,
                     size_t errlen)
{
    h5l_quiet();
    return h5c_write_block(s, first, count, rows, err, errlen);
}

static const unsigned char *set_written(const h5set *s)
{
    return s->flags;
}

static int set_chunk_images(const h5set *s)
{
    return s->chunk;
}

static int thread_safe(void)
{
    hbool_t ts = 0;
    return H5is_library_threadsafe(&ts) >= 0 && ts;
}

static void library_version(char *out, size_t outlen)
{
    unsigned maj = 0, min = 0, rel = 0;
    if (H5get_libversion(&maj, &min, &rel) < 0) maj = min = rel = 0;
    snprintf(out, outlen, "%u.%u.%u", maj, min, rel);
}

PSFSIM_MODULE_EXPORT const hdf5_module_ops psf_hdf5_module_entry = {
    .abi = HDF5_MODULE_ABI,
    .size = sizeof(hdf5_module_ops),
    .open = set_open,
    .written = set_written,
    .chunk_images = set_chunk_images,
    .write = set_write,
    .close = set_close,
    .thread_safe = thread_safe,
    .library_version = library_version,
    .check_complete = check_complete,
};
