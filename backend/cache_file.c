/* SPDX-License-Identifier: BSD-3-Clause */
/* Cache files read without blocking or following links
 * (backend/cache_file.h). */
#include "backend/cache_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
