#include "mpi_journal.h"

#include <errno.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

/* journal.c's buffer size: a batch's lines (at most ~1024 rows of ~250
 * bytes) fit, so a flush is one write(). */
#define MPI_JOURNAL_BUF (4 << 20)

int mpi_journal_append(journal *j, const char *path, char *err, size_t errlen)
{
    if (j->af.fp && journal_close(j, err, errlen) != 0) return -1;
    memset(j, 0, sizeof *j);
    snprintf(j->af.final_path, sizeof j->af.final_path, "%s", path);
    FILE *fp = fopen(path, "a");
    if (!fp) {
        snprintf(err, errlen, "cannot append to %s: %s", path, strerror(errno));
        return -1;
    }
    j->buf = malloc(MPI_JOURNAL_BUF);
    if (j->buf) setvbuf(fp, j->buf, _IOFBF, MPI_JOURNAL_BUF);
    j->af.fp = fp;
    return 0;
}

int mpi_journal_flush(journal *j, char *err, size_t errlen)
{
    if (j->failed) {
        snprintf(err, errlen, "cannot write %s: an earlier write to it failed", j->af.final_path);
        return -1;
    }
    errno = 0;
    if (fflush(j->af.fp) == 0 && !ferror(j->af.fp)) return 0;
    int e = errno ? errno : EIO;
    __fpurge(j->af.fp);
    j->failed = 1;
    snprintf(err, errlen, "cannot write %s: %s", j->af.final_path, strerror(e));
    return -1;
}
