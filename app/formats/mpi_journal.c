#include "app/formats/mpi_journal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
    j->buf = malloc(JOURNAL_BUF_BYTES);
    if (j->buf) setvbuf(fp, j->buf, _IOFBF, JOURNAL_BUF_BYTES);
    j->af.fp = fp;
    j->shared = 1;
    return 0;
}
