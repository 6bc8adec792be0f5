/* SPDX-License-Identifier: BSD-3-Clause */
/* Atomic file writes: write to a hidden temp file in the destination's
 * directory, flush, then rename over the final name, so a crash or an error
 * leaves either the complete new file or nothing (as SQLite's journal does).
 * On any error the temp file is removed.
 *
 * Every file is made through a descriptor of its directory: the temp with
 * openat(O_CREAT | O_EXCL | O_NOFOLLOW) under a fresh random name (a name
 * someone else holds, a symbolic link planted there included, is never
 * opened: another name is drawn), renamed with renameat within that
 * directory. A run opens its output directory once (app/output/set_dir.h) and
 * every file of the set goes through that descriptor, so nothing is
 * written outside it whatever links appear in it meanwhile. */
#ifndef PSFSIM_ATOMIC_FILE_H
#define PSFSIM_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

typedef struct {
    char final_path[4096]; /* the file as messages name it: DIR/NAME (NAME without a DIR) */
    char tmp_path[4096];   /* its temp file likewise: DIR/.NAME.tmp.XXXXXX */
    size_t name_at;        /* the final name in the directory: final_path + name_at */
    size_t tmp_at;         /* the temp's name in the directory: tmp_path + tmp_at */
    int dirfd;             /* the directory's descriptor (-1: none) */
    int own_dirfd;         /* 1: atomic_open opened dirfd and closes it */
    FILE *fp;              /* write here between open and commit */
    struct stat made;      /* the temp file as made (fstat): the rename checks that
                              its name still is this file (app/base/same_file.h) */
} atomic_file;

/* Open a temp file ".NAME.tmp.XXXXXX" (XXXXXX: 6 random letters and
 * digits) in the directory dirfd for the final name NAME (a plain name: no
 * '/'), with an ordinary file's mode (0666 less the umask). dir: the
 * directory as messages name it (NULL or "": NAME alone). dirfd stays the
 * caller's. Returns 0, or -1 with a message naming DIR/NAME and strerror. */
int atomic_open_at(atomic_file *af, int dirfd, const char *dir, const char *name, char *err,
                   size_t errlen);

/* atomic_open_at in the directory of final_path (opened here, following a
 * symbolic link there; closed with the file). Returns 0, or -1 with a
 * message naming the path and strerror in err. */
int atomic_open(atomic_file *af, const char *final_path, char *err, size_t errlen);

/* Close, check every write succeeded (ferror, fclose), and rename into
 * place. Before the rename the temp name must still be the file made (a
 * regular file of the same device and inode, not a symbolic link someone
 * who may write the directory put in its place): else nothing is renamed
 * and -1 says "its temp file ... was replaced". Returns 0, or -1 with err;
 * the temp file is gone either way (a name that is no longer ours is left
 * to its maker). */
int atomic_commit(atomic_file *af, char *err, size_t errlen);

/* Flush what was written, rename the temp file into place (checked as
 * atomic_commit checks it), and
 * keep af->fp open for appending to the now-final file (a journal: its
 * first state is published atomically, later appends are whole lines).
 * Returns 0, or -1 with err (the temp file is removed, fp closed). */
int atomic_publish(atomic_file *af, char *err, size_t errlen);

/* Close and remove the temp file without touching the final name. Safe
 * after a failed open or commit; af may also be all-zero. */
void atomic_abort(atomic_file *af);

/* Write n bytes at p to af's temp file and commit it (the encoded FITS
 * files: app/formats/fits_loader.c). 0, or -1 with err (nothing left). */
int atomic_write_all(atomic_file *af, const void *p, size_t n, char *err, size_t errlen);

/* 1 when name is a temp file atomic_open_at made for final: exactly
 * ".FINAL.tmp." and 6 letters or digits (resume.h: a set's leftovers). */
int atomic_is_temp_of(const char *name, const char *final);

#endif
