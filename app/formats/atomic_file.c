/* SPDX-License-Identifier: BSD-3-Clause */
/* Atomic file writes (atomic_file.h): a hidden temp file beside the final
 * name, flushed, then renamed over it. No fsync: rename is atomic, so a
 * process that is killed or crashes leaves the old file or the new one,
 * never half of one; each fsync cost 0.3-4 ms on the development machine,
 * more than encoding a 256x256 PNG. No file is synced, the manifest
 * neither, so after a power loss the manifest cannot list an image whose
 * data the disk lost before it (the filesystem's own ordering applies). */
#include "app/formats/atomic_file.h"

#include "app/base/same_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Names tried before giving up (each taken one means someone else holds
 * it: 62^6 names, so more than a few in a row is an attack or a bug). */
#define TEMP_TRIES 100
#define TEMP_SUFFIX "XXXXXX"

static const char letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

static void clear(atomic_file *af)
{
    af->final_path[0] = '\0';
    af->tmp_path[0] = '\0';
    af->name_at = af->tmp_at = 0;
    af->dirfd = -1;
    af->own_dirfd = 0;
    af->fp = NULL;
}

/* Close the directory when atomic_open opened it, then forget everything. */
static void release(atomic_file *af)
{
    if (af->own_dirfd && af->dirfd >= 0) close(af->dirfd);
    clear(af);
}

/* 6 random letters and digits into out (getrandom; a counter mixed with
 * the clock and the pid when it is not there). */
static void random_suffix(char out[7])
{
    unsigned char b[6];
    if (getrandom(b, sizeof b, GRND_NONBLOCK) != (ssize_t)sizeof b) {
        static atomic_uint_fast64_t counter;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t v = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^
                     (atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15ULL);
        for (int i = 0; i < 6; ++i, v >>= 8)
            b[i] = (unsigned char)v;
    }
    for (int i = 0; i < 6; ++i)
        out[i] = letters[b[i] % (sizeof letters - 1)];
    out[6] = '\0';
}

/* Fill af's names: final_path "DIR/NAME", tmp_path "DIR/.NAME.tmp.XXXXXX".
 * Returns 0, or -1 with err. */
static int make_names(atomic_file *af, const char *dir, const char *name, char *err, size_t errlen)
{
    clear(af);
    if (!dir) dir = "";
    int sep = dir[0] && dir[strlen(dir) - 1] != '/';
    if (!name || !name[0] || strchr(name, '/')) {
        snprintf(err, errlen, "cannot write %s%s%s: not a file name", dir, sep ? "/" : "",
                 name ? name : "");
        return -1;
    }
    int n = snprintf(af->final_path, sizeof af->final_path, "%s%s%s", dir, sep ? "/" : "", name);
    int t = snprintf(af->tmp_path, sizeof af->tmp_path, "%s%s.%s.tmp." TEMP_SUFFIX, dir,
                     sep ? "/" : "", name);
    if (n < 0 || t < 0 || (size_t)n >= sizeof af->final_path || (size_t)t >= sizeof af->tmp_path) {
        snprintf(err, errlen, "cannot write %.200s/%.200s...: %s", dir, name,
                 strerror(ENAMETOOLONG));
        clear(af);
        return -1;
    }
    af->name_at = (size_t)n - strlen(name);
    af->tmp_at = af->name_at;
    return 0;
}

int atomic_open_at(atomic_file *af, int dirfd, const char *dir, const char *name, char *err,
                   size_t errlen)
{
    if (make_names(af, dir, name, err, errlen)) return -1;
    af->dirfd = dirfd;
    char *suffix = af->tmp_path + strlen(af->tmp_path) - 6;
    int fd = -1, e = EEXIST;
    for (int i = 0; i < TEMP_TRIES && fd < 0 && e == EEXIST; ++i) {
        random_suffix(suffix);
        fd = openat(dirfd, af->tmp_path + af->tmp_at,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        e = fd < 0 ? errno : 0;
    }
    if (fd >= 0 && (fstat(fd, &af->made) != 0 || !(af->fp = fdopen(fd, "wb")))) {
        e = errno;
        close(fd);
        unlinkat(dirfd, af->tmp_path + af->tmp_at, 0);
        fd = -1;
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot write %s: %s", af->final_path, strerror(e));
        clear(af);
        return -1;
    }
    return 0;
}

int atomic_open(atomic_file *af, const char *final_path, char *err, size_t errlen)
{
    clear(af);
    if (!final_path || !final_path[0]) {
        snprintf(err, errlen, "cannot write a file with an empty name");
        return -1;
    }
    size_t len = strlen(final_path);
    if (len >= sizeof af->final_path) {
        snprintf(err, errlen, "cannot write %.200s...: %s", final_path, strerror(ENAMETOOLONG));
        return -1;
    }
    const char *slash = strrchr(final_path, '/');
    const char *base = slash ? slash + 1 : final_path;
    if (!base[0]) {
        snprintf(err, errlen, "cannot write %s: the name is a directory", final_path);
        return -1;
    }
    char dir[4096] = "";
    if (slash) /* "/x": the root; "a/x": a */
        snprintf(dir, sizeof dir, "%.*s", slash == final_path ? 1 : (int)(slash - final_path),
                 final_path);
    int dirfd = open(dir[0] ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        snprintf(err, errlen, "cannot write %s: %s", final_path, strerror(errno));
        return -1;
    }
    if (atomic_open_at(af, dirfd, dir, base, err, errlen) != 0) {
        close(dirfd);
        return -1;
    }
    af->own_dirfd = 1;
    return 0;
}

/* Our temp name was replaced (removed, or another file or a link put
 * there): the errno rename_into_place gives for it. */
#define NOT_OURS (-1)

/* Rename the temp file over the final name in the directory: 0, errno, or
 * NOT_OURS when the temp name is no longer the file made (nothing renamed:
 * a link there would become the final name, a dangling one say). */
static int rename_into_place(const atomic_file *af)
{
    if (!same_file_named(af->dirfd, af->tmp_path + af->tmp_at, &af->made)) return NOT_OURS;
    if (renameat(af->dirfd, af->tmp_path + af->tmp_at, af->dirfd, af->final_path + af->name_at) !=
        0)
        return errno ? errno : EIO;
    return 0;
}

/* "cannot write FINAL: REASON" for e (an errno or NOT_OURS). */
static void fail_message(const atomic_file *af, int e, char *err, size_t errlen)
{
    if (e == NOT_OURS)
        snprintf(err, errlen,
                 "cannot write %s: its temp file %s was replaced or removed by another process "
                 "(is someone else writing in the directory?)",
                 af->final_path, af->tmp_path);
    else
        snprintf(err, errlen, "cannot write %s: %s", af->final_path, strerror(e));
}

int atomic_commit(atomic_file *af, char *err, size_t errlen)
{
    if (!af->fp || !af->tmp_path[0]) {
        snprintf(err, errlen, "cannot write %s: no open temp file", af->final_path);
        atomic_abort(af);
        return -1;
    }
    FILE *fp = af->fp;
    af->fp = NULL;
    int e = 0;
    errno = 0;
    if (fflush(fp) != 0) e = errno ? errno : EIO;
    if (!e && ferror(fp)) e = EIO; /* an earlier write failed */
    errno = 0;
    if (fclose(fp) != 0 && !e) e = errno ? errno : EIO;
    if (!e) e = rename_into_place(af);
    if (e) {
        if (e != NOT_OURS) unlinkat(af->dirfd, af->tmp_path + af->tmp_at, 0);
        fail_message(af, e, err, errlen);
        release(af);
        return -1;
    }
    release(af);
    return 0;
}

int atomic_publish(atomic_file *af, char *err, size_t errlen)
{
    int e = 0;
    errno = 0;
    if (!af->fp)
        e = EBADF;
    else if (fflush(af->fp) != 0 || ferror(af->fp))
        e = errno ? errno : EIO;
    if (!e) e = rename_into_place(af);
    if (e) {
        fail_message(af, e, err, errlen);
        if (e == NOT_OURS) af->tmp_path[0] = '\0'; /* not ours to remove */
        atomic_abort(af);
        return -1;
    }
    af->tmp_path[0] = '\0';              /* nothing left to remove: the file is in place */
    if (af->own_dirfd) close(af->dirfd); /* appends go through fp */
    af->own_dirfd = 0;
    af->dirfd = -1;
    return 0;
}

void atomic_abort(atomic_file *af)
{
    if (af->fp) fclose(af->fp);
    if (af->tmp_path[0]) unlinkat(af->dirfd, af->tmp_path + af->tmp_at, 0);
    release(af);
}

int atomic_write_all(atomic_file *af, const void *p, size_t n, char *err, size_t errlen)
{
    errno = 0;
    if (af->fp && n > 0 && fwrite(p, 1, n, af->fp) != n) {
        int e = errno ? errno : EIO; /* the reason, which ferror alone would not keep */
        snprintf(err, errlen, "cannot write %s: %s", af->final_path, strerror(e));
        atomic_abort(af);
        return -1;
    }
    return atomic_commit(af, err, errlen);
}

int atomic_is_temp_of(const char *name, const char *final)
{
    size_t n = strlen(final);
    if (name[0] != '.' || strncmp(name + 1, final, n) != 0 || strncmp(name + 1 + n, ".tmp.", 5))
        return 0;
    const char *s = name + 1 + n + 5;
    if (strlen(s) != 6) return 0;
    for (; *s; ++s)
        if (!strchr(letters, *s)) return 0;
    return 1;
}
