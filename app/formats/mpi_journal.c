/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/formats/mpi_journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int mpi_journal_append(journal *j, int dirfd, const char *dir, const char *name, char *err,
                       size_t errlen)
{
    if (j->af.fp && journal_close(j, err, errlen) != 0) return -1;
    memset(j, 0, sizeof *j);
    j->af.dirfd = -1;
    j->dirfd = dirfd; /* journal_flush checks the name through it */
    int n = snprintf(j->af.final_path, sizeof j->af.final_path, "%s/", dir);
    j->af.name_at = n > 0 && (size_t)n < sizeof j->af.final_path ? (size_t)n : 0;
    snprintf(j->af.final_path + j->af.name_at, sizeof j->af.final_path - j->af.name_at, "%s", name);
    int fd = openat(dirfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    FILE *fp = fd >= 0 ? fdopen(fd, "a") : NULL;
    if (!fp) {
        int e = errno;
        if (fd >= 0) close(fd);
        snprintf(err, errlen, "cannot append to %s: %s", j->af.final_path, strerror(e));
        return -1;
    }
    j->buf = malloc(JOURNAL_BUF_BYTES);
    if (j->buf) setvbuf(fp, j->buf, _IOFBF, JOURNAL_BUF_BYTES);
    j->af.fp = fp;
    j->shared = 1;
    return 0;
}
