/* The output directory of a run, opened once (README, "Outputs"): every
 * file of the set is made, renamed, read back and removed through this
 * descriptor (atomic_file.h), never by a path, so a symbolic link that
 * appears inside the directory, or the directory's path being pointed
 * elsewhere mid-run, cannot send a write outside it. The directory itself
 * may be a symbolic link: it is resolved once, when opened. */
#ifndef PSFSIM_SET_DIR_H
#define PSFSIM_SET_DIR_H

#include <stddef.h>

typedef struct {
    const char *path; /* as given (-o or output.dir), for messages */
    int fd;           /* open(path, O_DIRECTORY), -1 when not open */
} set_dir;

/* d closed (fd = -1) for path. */
void set_dir_init(set_dir *d, const char *path);

/* Open d's directory, first creating it (and its parents: make_dir) when
 * create is set. Returns 0; 1 when it does not exist and create is 0;
 * -1 with err naming the path. */
int set_dir_open(set_dir *d, int create, char *err, size_t errlen);

/* Close the descriptor (safe when closed). */
void set_dir_close(set_dir *d);

#endif
