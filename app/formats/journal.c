/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/formats/journal.h"

#include "app/base/same_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int journal_create(journal *j, int dirfd, const char *dir, const char *name, const char *header,
                   char *const *keep, long long nkeep, char *err, size_t errlen)
{
    memset(j, 0, sizeof *j);
    j->dirfd = -1;
    if (atomic_open_at(&j->af, dirfd, dir, name, err, errlen) != 0) return -1;
    j->buf = malloc(JOURNAL_BUF_BYTES);
    if (j->buf) setvbuf(j->af.fp, j->buf, _IOFBF, JOURNAL_BUF_BYTES);
    fputs(header, j->af.fp);
    for (long long i = 0; i < nkeep; ++i)
        fputs(keep[i], j->af.fp);
    if (atomic_publish(&j->af, err, errlen) != 0) {
        free(j->buf);
        j->buf = NULL;
        return -1;
    }
    off_t pos = ftello(j->af.fp);
    j->good = pos > 0 ? (long long)pos : 0;
    j->dirfd = dirfd;
    return 0;
}

/* The file j appends to is still the one its name gives in the directory:
 * not unlinked (st_nlink 0) nor replaced. 1, or 0 (also when fstat fails). */
static int still_there(const journal *j)
{
    struct stat st;
    int fd = fileno(j->af.fp);
    if (fstat(fd, &st) != 0 || st.st_nlink == 0) return 0;
    return j->dirfd < 0 || same_file_named(j->dirfd, j->af.final_path + j->af.name_at, &st);
}

/* Lines reach the file (fflush): safe against the process being killed. */
int journal_flush(journal *j, char *err, size_t errlen)
{
    if (j->failed) {
        snprintf(err, errlen, "cannot write %s: an earlier write to it failed", j->af.final_path);
        return -1;
    }
    errno = 0;
    if (fflush(j->af.fp) != 0 || ferror(j->af.fp)) {
        int e = errno ? errno : EIO;
        /* Part of the lines may be in the file, a line cut anywhere: drop
         * the rest (__fpurge), cut the file back to its last whole line and
         * write nothing more, so it lists only what was logged before. A
         * shared file is not cut: other processes' lines may follow ours. */
        __fpurge(j->af.fp);
        int fd = fileno(j->af.fp);
        if (!j->shared &&
            (ftruncate(fd, (off_t)j->good) != 0 || lseek(fd, (off_t)j->good, SEEK_SET) < 0))
            e = errno; /* the file may now end in part of a line: say why */
        j->failed = 1;
        snprintf(err, errlen, "cannot write %s: %s", j->af.final_path, strerror(e));
        return -1;
    }
    off_t pos = ftello(j->af.fp);
    if (pos > 0) j->good = (long long)pos;
    if (j->af.fp && !still_there(j)) {
        j->failed = j->lost = 1;
        snprintf(err, errlen,
                 "cannot write %s: it was removed or replaced during the run (by another "
                 "process: rm?); the lines written since are lost",
                 j->af.final_path);
        return -1;
    }
    return 0;
}

int journal_close(journal *j, char *err, size_t errlen)
{
    int rc = 0;
    if (j->af.fp) {
        rc = journal_flush(j, err, errlen);
        if (j->failed) __fpurge(j->af.fp); /* lines added since: not written */
        if (fclose(j->af.fp) != 0 && rc == 0) {
            snprintf(err, errlen, "cannot write %s: %s", j->af.final_path, strerror(errno));
            rc = -1;
        }
        j->af.fp = NULL;
    }
    free(j->buf);
    j->buf = NULL;
    return rc;
}

FILE *journal_read_open(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "r");
    if (!f) close(fd);
    return f;
}

/* Lines of a file, malloc'd, each with its '\n'. */
static char **read_lines(int dirfd, const char *name, long long *n)
{
    FILE *f = journal_read_open(dirfd, name);
    if (!f) return NULL;
    char **lines = NULL, *line = NULL;
    size_t cap = 0;
    long long cnt = 0, alloc = 0;
    while (getline(&line, &cap, f) > 0) {
        if (cnt == alloc) {
            alloc = alloc ? 2 * alloc : 1024;
            char **grown = realloc(lines, (size_t)alloc * sizeof *lines);
            if (!grown) break;
            lines = grown;
        }
        lines[cnt++] = strdup(line);
    }
    free(line);
    fclose(f);
    *n = cnt;
    return lines;
}

static int is_data(const char *l)
{
    return l[0] >= '0' && l[0] <= '9';
}

static int by_index(const void *a, const void *b)
{
    long long x = atoll(*(char *const *)a), y = atoll(*(char *const *)b);
    return (x > y) - (x < y);
}

int journal_sort(int dirfd, const char *dir, const char *name, char *err, size_t errlen)
{
    long long n = 0;
    errno = 0;
    char **lines = read_lines(dirfd, name, &n);
    if (!lines || n < 1) {
        snprintf(err, errlen, "cannot read %s%s%s back: %s", dir ? dir : "", dir ? "/" : "", name,
                 strerror(errno ? errno : EIO));
        free(lines);
        return -1;
    }
    long long nd = 0; /* stable partition: data lines first (stay in place order) */
    char **data = malloc((size_t)n * sizeof *data), **rest = malloc((size_t)n * sizeof *rest);
    long long nr = 0;
    for (long long i = 1; data && rest && i < n; ++i) {
        if (is_data(lines[i]))
            data[nd++] = lines[i];
        else
            rest[nr++] = lines[i];
    }
    int rc = -1;
    atomic_file af;
    if (data && rest && atomic_open_at(&af, dirfd, dir, name, err, errlen) == 0) {
        qsort(data, (size_t)nd, sizeof *data, by_index);
        fputs(lines[0], af.fp);
        for (long long i = 0; i < nd; ++i)
            fputs(data[i], af.fp);
        for (long long i = 0; i < nr; ++i)
            fputs(rest[i], af.fp);
        rc = atomic_commit(&af, err, errlen);
    }
    for (long long i = 0; i < n; ++i)
        free(lines[i]);
    free(lines);
    free(data);
    free(rest);
    return rc;
}
