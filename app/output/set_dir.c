/* SPDX-License-Identifier: BSD-3-Clause */
/* The run's output directory and the set's lock (app/output/set_dir.h). */
#include "app/output/set_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/base/make_dir.h"
#include "app/base/same_file.h"

void set_dir_init(set_dir *d, const char *path)
{
    d->path = path;
    d->fd = -1;
    d->lock_fd = -1;
}

int set_dir_open(set_dir *d, int create, char *err, size_t errlen)
{
    if (d->fd >= 0) return 0;
    if (create && make_dir(d->path, err, errlen) != 0) return -1;
    d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->fd >= 0) return 0;
    if (!create && (errno == ENOENT || errno == ENOTDIR)) return 1;
    snprintf(err, errlen, "cannot open output directory %s: %s", d->path, strerror(errno));
    return -1;
}

/* A write lock on all of fd, both kinds: 0, or errno (EAGAIN or EACCES:
 * held). An open file description's lock (fcntl F_OFD_SETLK, Linux 3.15)
 * is held by this run's descriptor alone, not by the process, so no other
 * descriptor of the same file in this process (none is opened) could drop
 * it; it conflicts with POSIX record locks (lockf, fcntl F_SETLK) too. BSD
 * locks (flock(2), the flock(1) command) are another kind, which Linux
 * keeps apart from those: taking one as well makes a flock holder of the
 * file (a user's script serialising its runs) hold psfsim off too. */
static int lock_fd(int fd)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_OFD_SETLK, &fl) != 0 && errno != EINVAL) return errno; /* EINVAL: no OFD */
    return flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno == EWOULDBLOCK ? EAGAIN : errno;
}

/* What is at the lock's name instead of a regular file, for the message:
 * NULL when fd (or, fd < 0, the open's errno e) says nothing of the kind. */
static const char *not_a_lock_file(int fd, int e)
{
    struct stat st;
    if (fd < 0) return e == ELOOP ? "a symbolic link" : e == EISDIR ? "a directory" : NULL;
    if (fstat(fd, &st) != 0 || S_ISREG(st.st_mode)) return NULL;
    return S_ISDIR(st.st_mode) ? "a directory" : "not a regular file";
}

/* "psfsim pid P on host H" from the holder's lock file, or words true of
 * any holder: a process that is not psfsim (flock(1)) may hold the lock. */
static void holder(int fd, const char *file, char *out, size_t outlen)
{
    char buf[300];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    if (strncmp(buf, "psfsim pid ", 11) == 0)
        snprintf(out, outlen, "%s", buf);
    else
        snprintf(out, outlen, "another process (a psfsim run, or a holder of its lock file %s)",
                 file);
}

/* Say who holds the lock now (for the next run's message); a failure to
 * write it leaves the lock held, only the message poorer. */
static void write_holder(int fd)
{
    char host[256] = "", line[400];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = '\0';
    int n = snprintf(line, sizeof line, "psfsim pid %ld on host %s\n", (long)getpid(), host);
    if (ftruncate(fd, 0) == 0 && n > 0) (void)!pwrite(fd, line, (size_t)n, 0);
}

/* Tries before giving up: each retry means a run ended (removing its lock
 * file) between this run's open and lock. */
#define LOCK_TRIES 20

int set_dir_lock(set_dir *d, const char *name, int create, char *err, size_t errlen)
{
    if (d->lock_fd >= 0) return 0;
    snprintf(d->lock_name, sizeof d->lock_name, ".%s.lock", name);
    const char *file = d->lock_name;
    for (int i = 0; i < LOCK_TRIES; ++i) {
        /* O_NONBLOCK: a FIFO planted there must not hang the open. */
        int fd =
            openat(d->fd, file,
                   O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (create ? O_CREAT : 0), 0666);
        if (fd < 0 && !create && errno == ENOENT) return SET_DIR_NO_LOCK;
        const char *what = not_a_lock_file(fd, errno);
        if (what) { /* not psfsim's: refused as a set in use is, nothing touched */
            if (fd >= 0) close(fd);
            snprintf(err, errlen,
                     "set %s in %s cannot be locked: its lock file %s is %s, not psfsim's; "
                     "remove it if no run uses the set",
                     name, d->path, file, what);
            return SET_DIR_BUSY;
        }
        int e = fd < 0 ? errno : lock_fd(fd);
        if (fd >= 0 && (e == EAGAIN || e == EACCES)) {
            char who[400];
            holder(fd, file, who, sizeof who);
            close(fd);
            snprintf(err, errlen, "set %s in %s is in use by %s; wait until it ends", name, d->path,
                     who);
            return SET_DIR_BUSY;
        }
        if (e) {
            if (fd >= 0) close(fd);
            snprintf(err, errlen, "cannot lock set %s in %s (%s): %s", name, d->path, file,
                     strerror(e));
            return -1;
        }
        if (same_file_fd(d->fd, file, fd)) { /* not removed or replaced since opened */
            write_holder(fd);
            d->lock_fd = fd;
            return 0;
        }
        close(fd); /* its holder removed it as it ended: try the name again */
    }
    snprintf(err, errlen, "cannot lock set %s in %s (%s): it keeps being replaced", name, d->path,
             file);
    return -1;
}

int set_dir_gone(const set_dir *d)
{
    struct stat st;
    return d->fd >= 0 && fstat(d->fd, &st) == 0 && st.st_nlink == 0;
}

DIR *set_dir_entries(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0) close(fd);
    return d;
}

void set_dir_close(set_dir *d)
{
    if (d->lock_fd >= 0) { /* removed while held: see set_dir.h */
        unlinkat(d->fd, d->lock_name, 0);
        close(d->lock_fd); /* releases the lock */
    }
    if (d->fd >= 0) close(d->fd);
    d->fd = d->lock_fd = -1;
}
