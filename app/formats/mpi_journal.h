/* SPDX-License-Identifier: BSD-3-Clause */
/* Journals (journal.h) shared by the ranks of an MPI run: rank 0 creates
 * the manifest and the timing log as always (atomically, with the kept rows
 * on --resume); then every rank, rank 0 included, appends to the same file
 * through its own stream opened with O_APPEND (fopen "a") and the journal's
 * large stdio buffer, so each per-batch flush is one write() of whole lines
 * at the file's end. Linux holds the inode's lock for the whole of such a
 * write on a local file system (ext4, xfs, tmpfs, ...), so the lines of
 * different ranks never tear or interleave, and the manifest stays true at
 * every moment, also when a rank dies. NFS gives no atomic O_APPEND: the
 * output directory of an MPI run must not be on it (README). */
#ifndef PSFSIM_MPI_JOURNAL_H
#define PSFSIM_MPI_JOURNAL_H

#include <stddef.h>

#include "app/formats/journal.h"

/* Point j at the file name in the directory dirfd (dir: for messages) for
 * appending: close j's stream if it has one (flushing it: j is then the
 * creator's journal, already published), open the file with O_APPEND (it
 * must exist; a symbolic link there is refused, O_NOFOLLOW) and give it the
 * journal's buffer.
 * The journal is marked shared: journal_flush then never cuts the file back
 * after a failed write (other ranks' lines may follow this rank's last good
 * one); a write cut short by a full disk may leave part of one line, which
 * the next rank's line then continues (--resume skips such a line unless
 * its cells still look whole: README).
 * Returns 0, or -1 with err naming the path; j then holds no stream. */
int mpi_journal_append(journal *j, int dirfd, const char *dir, const char *name, char *err,
                       size_t errlen);

#endif
