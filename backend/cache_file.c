/* SPDX-License-Identifier: BSD-3-Clause */
/* Cache files read without blocking or following links, and replaced
 * through a temp file of an unguessable name (backend/cache_file.h). */
#include "backend/cache_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* "a FIFO", "a directory", ...: what stands at a cache file's name. */
static const char *file_kind(mode_t mode)
{
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a plain file";
}

/* fd's bytes into *text (malloc'd, NUL-terminated), at most cap of them;
 * hint is fstat's size (the file may change while it is read, so the read
 * goes on to the end). Returns 0, or an errno value (EFBIG past cap). */
static int read_capped(int fd, size_t cap, size_t hint, char **text, size_t *len)
{
    size_t size = (hint < cap ? hint : cap) + 1, n = 0; /* + 1: room to see the end */
    char *b = malloc(size + 1);
    if (!b) return ENOMEM;
    for (;;) {
        if (n == size && size > cap) {
            free(b);
            return EFBIG;
        }
        if (n == size) {
            size = size > cap / 2 ? cap + 1 : 2 * size;
            char *grown = realloc(b, size + 1);
            if (!grown) {
                free(b);
                return ENOMEM;
            }
            b = grown;
        }
        ssize_t r = read(fd, b + n, size - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(b);
            return e;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    b[n] = '\0';
    *text = b;
    *len = n;
    return 0;
}

int cache_file_read(const char *dir, const char *name, size_t cap, char **text, size_t *len,
                    char *why, size_t whylen)
{
    *text = NULL;
    *len = 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return 1;
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP)
            snprintf(why, whylen, "%s: a symbolic link (not followed)", path);
        else
            snprintf(why, whylen, "%s: cannot open: %s", path, strerror(e));
        return -1;
    }
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : 0;
    if (!e && !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "%s: not a regular file (%s)", path, file_kind(st.st_mode));
        close(fd);
        return -1;
    }
    if (!e) e = read_capped(fd, cap, st.st_size > 0 ? (size_t)st.st_size : 0, text, len);
    close(fd);
    if (e == EFBIG && cap >= (1u << 20))
        snprintf(why, whylen, "%s: larger than %zu MiB", path, cap >> 20);
    else if (e == EFBIG)
        snprintf(why, whylen, "%s: larger than %zu bytes", path, cap);
    else if (e)
        snprintf(why, whylen, "%s: cannot read: %s", path, strerror(e));
    return e ? -1 : 0;
}

/* ".NAME.tmp.XXXXXX" with six random letters or digits (getrandom; the
 * clock, the pid and a count when it fails). */
static void temp_name(const char *name, char *out, size_t len)
{
    static const char digits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static _Atomic unsigned count;
    unsigned char r[6];
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                     ((uint64_t)getpid() << 40) ^ (uint64_t)++count * 0x9E3779B97F4A7C15ULL;
        for (size_t i = 0; i < sizeof r; ++i, x >>= 8)
            r[i] = (unsigned char)x;
    }
    char s[sizeof r + 1];
    for (size_t i = 0; i < sizeof r; ++i)
        s[i] = digits[r[i] % (sizeof digits - 1)];
    s[sizeof r] = '\0';
    snprintf(out, len, ".%s.tmp.%s", name, s);
}

/* Write len bytes to fd: 0 or an errno value. */
static int write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, data, len);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return errno;
        data += w;
        len -= (size_t)w;
    }
    return 0;
}

int cache_file_replace(const char *dir, const char *name, const void *data, size_t len, char *err,
                       size_t errlen)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        snprintf(err, errlen, "cannot write %s/%s: %s", dir, name, strerror(errno));
        return -1;
    }
    char tmp[300];
    int fd = -1, e = 0;
    for (int tries = 0; fd < 0 && tries < 64; ++tries) { /* a name taken: another one */
        temp_name(name, tmp, sizeof tmp);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        e = fd < 0 ? errno : 0;
        if (fd < 0 && e != EEXIST) break;
    }
    if (fd >= 0) {
        e = write_all(fd, data, len);
        if (close(fd) != 0 && !e) e = errno;
        if (!e && renameat(dfd, tmp, dfd, name) != 0) e = errno;
        if (e) unlinkat(dfd, tmp, 0);
    }
    close(dfd);
    if (e) snprintf(err, errlen, "cannot write %s/%s: %s", dir, name, strerror(e));
    return e ? -1 : 0;
}
