/* The run's output directory (app/set_dir.h). */
#include "app/set_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/base/make_dir.h"

void set_dir_init(set_dir *d, const char *path)
{
    d->path = path;
    d->fd = -1;
}

int set_dir_open(set_dir *d, int create, char *err, size_t errlen)
{
    if (d->fd >= 0) return 0;
    if (create && make_dir(d->path, err, errlen) != 0) return -1;
    d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->fd >= 0) return 0;
    if (!create && (errno == ENOENT || errno == ENOTDIR)) return 1;
    snprintf(err, errlen, "cannot open output directory %s: %s", d->path, strerror(errno));
    return -1;
}

void set_dir_close(set_dir *d)
{
    if (d->fd >= 0) close(d->fd);
    d->fd = -1;
}
