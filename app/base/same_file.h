/* SPDX-License-Identifier: BSD-3-Clause */
/* Whether a name in a directory still is the file a descriptor refers to:
 * the one check before psfsim renames, removes or keeps trusting a file it
 * made (atomic temp files, the HDF5 temp file, the set's lock, the
 * journals). Another process that may write the directory can remove the
 * name, rename another file over it or put a symbolic link there; a write
 * through the descriptor then reaches no file of the set. Header-only: the
 * HDF5 module (which links nothing of psfsim) uses it too. */
#ifndef PSFSIM_SAME_FILE_H
#define PSFSIM_SAME_FILE_H

#include <fcntl.h>
#include <sys/stat.h>

/* 1 when name in the directory dirfd is a regular file (not a symbolic
 * link: not followed) with mine's device and inode; else 0 (also when
 * name is not there). mine: fstat of the file when it was made. */
static inline int same_file_named(int dirfd, const char *name, const struct stat *mine)
{
    struct stat now;
    return fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(now.st_mode) &&
           now.st_dev == mine->st_dev && now.st_ino == mine->st_ino;
}

/* same_file_named for the file the descriptor fd refers to now. */
static inline int same_file_fd(int dirfd, const char *name, int fd)
{
    struct stat mine;
    return fstat(fd, &mine) == 0 && same_file_named(dirfd, name, &mine);
}

#endif
