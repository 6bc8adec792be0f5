/* SPDX-License-Identifier: BSD-3-Clause */
/* The bytes of a config (see config_priv.h): read once, into memory, with a
 * cap, so that libconfig parses what was checked. A FIFO or a device must
 * not block the open (a FIFO without a writer) nor be read without end
 * (/dev/zero); a pipe can be read only once. */
#include "app/config/config_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/base/interrupt.h"

#define READ_CHUNK (1 << 16)
/* A stream is waited for in slices of this, so that SIGINT/SIGTERM end
 * the wait at once (the handler only sets a flag, interrupt.h). */
#define POLL_MS 100

/* Append up to READ_CHUNK bytes read from fd to t (capacity *cap). Returns
 * the count read, 0 at end of file, -1 with errno (EAGAIN: nothing yet). */
static ssize_t read_chunk(int fd, cfg_text *t, size_t *cap)
{
    if (*cap - t->len < READ_CHUNK) {
        size_t want = *cap ? 2 * *cap : 2 * READ_CHUNK;
        char *grown = realloc(t->text, want + 1);
        if (!grown) {
            errno = ENOMEM;
            return -1;
        }
        t->text = grown;
        *cap = want;
    }
    ssize_t n = read(fd, t->text + t->len, READ_CHUNK);
    if (n > 0) t->len += (size_t)n;
    return n;
}

/* Read fd to its end into t, keeping at most max + 1 bytes (one past the
 * cap tells an oversized input). A stream (pipe, FIFO, device) is waited
 * for with poll, so that a FIFO opened without blocking waits for its
 * writer and data. Returns 0, or -1 with errno (EINTR: a signal,
 * interrupt_pending). */
static int read_to_end(int fd, int stream, size_t max, cfg_text *t)
{
    size_t cap = 0;
    for (;;) {
        if (interrupt_pending()) {
            errno = EINTR;
            return -1;
        }
        if (stream) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            int r = poll(&p, 1, POLL_MS);
            if (r == 0 || (r < 0 && errno == EINTR)) continue;
            if (r < 0) return -1;
        }
        ssize_t n = read_chunk(fd, t, &cap);
        if (n == 0 || t->len > max) break;
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) return -1;
    }
    if (!t->text) t->text = malloc(1);
    if (!t->text) {
        errno = ENOMEM;
        return -1;
    }
    t->text[t->len] = '\0';
    return 0;
}

int cfg_text_read(const char *path, const char *shown, size_t max, cfg_text *t, char *err,
                  size_t errlen)
{
    memset(t, 0, sizeof *t);
    int std_in = strcmp(path, "-") == 0;
    int fd = std_in ? STDIN_FILENO : open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0 && !std_in) close(fd);
        snprintf(err, errlen, "%s: cannot read: %s", shown, strerror(e));
        return -1;
    }
    int e = 0;
    if (S_ISDIR(st.st_mode)) {
        e = EISDIR;
    } else if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > max) {
        snprintf(err, errlen,
                 "%s: cannot read: larger than the %zu MiB cap on a config (%lld bytes)", shown,
                 max >> 20, (long long)st.st_size);
        if (!std_in) close(fd);
        return -1;
    } else {
        t->stream = !S_ISREG(st.st_mode);
        t->dev = st.st_dev;
        t->ino = st.st_ino;
        if (read_to_end(fd, t->stream, max, t) != 0) e = errno;
    }
    if (!std_in) close(fd);
    if (!e && t->len > max) {
        snprintf(err, errlen, "%s: cannot read: larger than the %zu MiB cap on a config%s", shown,
                 max >> 20, t->stream ? " (read as a stream, stopped at the cap)" : "");
        e = -1;
    } else if (e == EINTR && interrupt_pending()) {
        snprintf(err, errlen, "%s: interrupted while loading the config", shown);
    } else if (e) {
        snprintf(err, errlen, "%s: cannot read: %s", shown, strerror(e));
    }
    if (e) cfg_text_free(t);
    return e ? -1 : 0;
}

int cfg_text_copy(const char *text, const char *shown, size_t max, cfg_text *t, char *err,
                  size_t errlen)
{
    memset(t, 0, sizeof *t);
    size_t len = strlen(text);
    if (len > max) {
        snprintf(err, errlen, "%s: larger than the %zu MiB cap on a config (%zu bytes)", shown,
                 max >> 20, len);
        return -1;
    }
    t->text = malloc(len + 1);
    if (!t->text) {
        snprintf(err, errlen, "%s: out of memory", shown);
        return -1;
    }
    memcpy(t->text, text, len + 1);
    t->len = len;
    return 0;
}

void cfg_text_free(cfg_text *t)
{
    free(t->text);
    memset(t, 0, sizeof *t);
}
