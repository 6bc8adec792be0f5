/* Atomic file writes: write to a hidden temp file in the destination's
 * directory, flush, then rename over the final name, so a crash or an error
 * leaves either the complete new file or nothing (as SQLite's journal does).
 * On any error the temp file is removed. */
#ifndef PSFSIM_ATOMIC_FILE_H
#define PSFSIM_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    char final_path[4096];
    char tmp_path[4096];
    FILE *fp; /* write here between open and commit */
} atomic_file;

/* Open a temp file ".<basename>.tmp.XXXXXX" beside final_path.
 * Returns 0, or -1 with a message naming the path and strerror in err. */
int atomic_open(atomic_file *af, const char *final_path, char *err, size_t errlen);

/* Close, check every write succeeded (ferror, fclose), and rename into
 * place. Returns 0, or -1 with err; the temp file is gone either way. */
int atomic_commit(atomic_file *af, char *err, size_t errlen);

/* Flush what was written, rename the temp file into place, and
 * keep af->fp open for appending to the now-final file (a journal: its
 * first state is published atomically, later appends are whole lines).
 * Returns 0, or -1 with err (the temp file is removed, fp closed). */
int atomic_publish(atomic_file *af, char *err, size_t errlen);

/* Close and remove the temp file without touching final_path. Safe after a
 * failed open/commit and after atomic_reserve_path (removes the reserved
 * name if the writer created it); af may also be all-zero. */
void atomic_abort(atomic_file *af);

/* Produce a unique temp name beside final_path for writers that need a
 * path rather than a FILE* (cfitsio): fills af->tmp_path, fp = NULL.
 * The name is free when this returns (the writer must create it, and
 * must refuse an existing file, as fits_create_diskfile does). Commit with
 * atomic_commit_path (rename; on error the temp is removed) or give
 * up with atomic_abort. Both return 0 or -1 with err naming final_path. */
int atomic_reserve_path(atomic_file *af, const char *final_path, char *err, size_t errlen);
int atomic_commit_path(atomic_file *af, char *err, size_t errlen);

#endif
