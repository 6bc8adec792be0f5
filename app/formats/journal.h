/* SPDX-License-Identifier: BSD-3-Clause */
/* A CSV log that is always true on disk (the manifest, the timing log): it
 * appears atomically with its header (and, when resuming, the rows kept
 * from before), then grows by whole lines, flushed after each batch, so a
 * crash leaves it listing only what was finished (a write-ahead log in the
 * manner of SQLite's journal). */
#ifndef PSFSIM_JOURNAL_H
#define PSFSIM_JOURNAL_H

#include <stddef.h>
#include <stdio.h>

#include "app/formats/atomic_file.h"

typedef struct {
    atomic_file af;
    char *buf;      /* stdio buffer: a batch's lines go out in one write */
    long long good; /* bytes of whole lines in the file after the last good flush */
    int failed;     /* a flush failed: the file was cut back to good; no more writes */
    int shared;     /* other processes append to the file too (MPI ranks,
                       app/formats/mpi_journal.h): a failed flush never cuts it back */
    int dirfd;      /* the directory it is in (the caller's descriptor), -1: unknown */
    int lost;       /* the file was removed or replaced under the run (journal_flush) */
} journal;

/* The stdio buffer of a journal's stream: a batch's lines (at most ~1024
 * rows of ~250 bytes) fit, so a flush is one write(). */
#define JOURNAL_BUF_BYTES (4 << 20)

/* Create the file name in the directory dirfd (dir: its name for
 * messages; atomic_file.h) with header and keep[0..nkeep) lines (each
 * ending in '\n'). dirfd must stay open while the journal is (each flush
 * checks the name through it). Returns 0, or -1 with err; nothing is left
 * on failure. */
int journal_create(journal *j, int dirfd, const char *dir, const char *name, const char *header,
                   char *const *keep, long long nkeep, char *err, size_t errlen);

/* The stream to append lines to. */
static inline FILE *journal_fp(journal *j)
{
    return j->af.fp;
}

/* Push appended lines to the file (fflush: safe against the process being
 * killed; no fsync, see atomic_file.c). 0, or -1 with err. Then the file
 * must still be there: its descriptor's link count above 0 and its name in
 * the directory still this file (a failed rm -rf of the directory unlinks
 * it while images keep arriving; appends would go to a file nobody can
 * open): else j->lost is set, -1 says "... was removed or replaced during
 * the run", and the journal takes no more lines. When the write
 * fails (a full disk: ENOSPC; EFBIG), the lines since the last good flush
 * are dropped and the file is cut back to the end of the last whole line
 * written before them, so it never ends in part of a line; the journal
 * then takes no more lines (later flushes and close return -1). */
int journal_flush(journal *j, char *err, size_t errlen);

/* Flush and close. 0, or -1 with err. Safe on a journal never created. */
int journal_close(journal *j, char *err, size_t errlen);

/* Rewrite the file name in dirfd (dir: for messages) atomically with its
 * data lines sorted by the integer in their first column (summary lines,
 * whose first cell is not a number, stay at the end in their order). A
 * symbolic link there is not followed (ELOOP). 0, or -1 with err. */
int journal_sort(int dirfd, const char *dir, const char *name, char *err, size_t errlen);

/* Open the file name in dirfd for reading, refusing a symbolic link
 * (O_NOFOLLOW): NULL with errno when it cannot be. */
FILE *journal_read_open(int dirfd, const char *name);

#endif
