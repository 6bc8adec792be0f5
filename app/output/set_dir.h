/* SPDX-License-Identifier: BSD-3-Clause */
/* The output directory of a run, opened once (README, "Outputs"): every
 * file of the set is made, renamed, read back and removed through this
 * descriptor (atomic_file.h), never by a path, so a symbolic link that
 * appears inside the directory, or the directory's path being pointed
 * elsewhere mid-run, cannot send a write outside it. The directory itself
 * may be a symbolic link: it is resolved once, when opened.
 *
 * The set's lock: one run at a time writes a set. The run holds advisory
 * locks of both kinds Linux keeps apart (fcntl F_OFD_SETLK, a write lock on
 * the whole file, and flock LOCK_EX), so a holder of either kind (another
 * psfsim, lockf, the flock command) keeps it off, on .NAME.lock in the
 * directory from
 * before it reads or touches anything of the set until it ends (with MPI,
 * rank 0 holds it for all ranks). The file names its holder ("psfsim pid
 * P on host H") for the message another run gives, and is removed when the
 * run ends (docs/config.md, "Files written to output.dir"); one a killed
 * run left is not locked and is taken over. A run that locked a file
 * checks that the name still refers to it (a run ending in between may
 * have removed it: the next run would make a new one) and else tries
 * again, so two runs never hold locks on two different files. */
#ifndef PSFSIM_SET_DIR_H
#define PSFSIM_SET_DIR_H

#include <dirent.h>
#include <stddef.h>

typedef struct {
    const char *path; /* as given (-o or output.dir), for messages */
    int fd;           /* open(path, O_DIRECTORY), -1 when not open */
    int lock_fd;      /* .NAME.lock, locked; -1 when not held */
    char lock_name[300];
} set_dir;

/* set_dir_lock's results besides 0 (held) and -1 (an error, in err). */
#define SET_DIR_NO_LOCK 1 /* create = 0 and there is no lock file yet */
#define SET_DIR_BUSY                                                                               \
    2 /* another run holds it (err names the holder), or the lock's                                \
         name is not a regular file (a link, a directory: not                                      \
         psfsim's, refused untouched as a set in use is) */

/* d closed (fd = -1) for path. */
void set_dir_init(set_dir *d, const char *path);

/* Open d's directory, first creating it (and its parents: make_dir) when
 * create is set. Returns 0; 1 when it does not exist and create is 0;
 * -1 with err naming the path. */
int set_dir_open(set_dir *d, int create, char *err, size_t errlen);

/* A listing of the directory dirfd (closedir it): opened afresh through
 * the descriptor ("."), so it starts at the first entry whoever read the
 * directory before (a dup would share the read position). NULL with
 * errno when it cannot be. */
DIR *set_dir_entries(int dirfd);

/* Take the lock of set name in d's open directory (held already: 0).
 * create: make .NAME.lock when missing (else SET_DIR_NO_LOCK). Returns 0,
 * SET_DIR_NO_LOCK, SET_DIR_BUSY with "set NAME in DIR is in use by psfsim
 * pid P on host H; wait until it ends" in err ("... by another process (a
 * psfsim run, or a holder of its lock file .NAME.lock) ..." when the lock
 * file does not name a psfsim run: flock(1) holds it), or -1 with err. A symbolic link at the
 * lock's name, a directory or anything but a regular file there is SET_DIR_BUSY (its message says
 * what it is). */
int set_dir_lock(set_dir *d, const char *name, int create, char *err, size_t errlen);

/* 1 when d's directory was removed since it was opened (rm -rf: its link
 * count is 0; a directory made again under its name is another one). */
int set_dir_gone(const set_dir *d);

/* Remove the lock file and release the lock, close the descriptors (safe
 * when closed). */
void set_dir_close(set_dir *d);

#endif
