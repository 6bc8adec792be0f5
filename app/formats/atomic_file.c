/* Atomic file writes (atomic_file.h): a hidden temp file beside the final
 * name, flushed, then renamed over it. No fsync: rename is atomic, so a
 * process that is killed or crashes leaves the old file or the new one,
 * never half of one; each fsync cost 0.3-4 ms on the development machine,
 * more than encoding a 256x256 PNG. No file is synced, the manifest
 * neither, so after a power loss the manifest cannot list an image whose
 * data the disk lost before it (the filesystem's own ordering applies). */
#include "app/formats/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The process umask, read without changing it (umask(2) would race with
 * other threads creating files): Linux reports it in /proc/self/status.
 * Falls back to 022. */
static mode_t current_umask(void)
{
    mode_t mask = 022;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return mask;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        unsigned int m;
        if (sscanf(line, "Umask: %o", &m) == 1) {
            mask = (mode_t)(m & 0777u);
            break;
        }
    }
    fclose(f);
    return mask;
}

static void clear(atomic_file *af)
{
    af->final_path[0] = '\0';
    af->tmp_path[0] = '\0';
    af->fp = NULL;
}

/* Fill af->final_path and af->tmp_path ("<dir>/.<base>.tmp.XXXXXX") from
 * final_path. Returns 0, or -1 with err. */
static int make_names(atomic_file *af, const char *final_path, char *err, size_t errlen)
{
    clear(af);
    if (!final_path || !final_path[0]) {
        snprintf(err, errlen, "cannot write a file with an empty name");
        return -1;
    }
    size_t len = strlen(final_path);
    if (len >= sizeof af->final_path) {
        snprintf(err, errlen, "cannot write %.200s...: %s", final_path, strerror(ENAMETOOLONG));
        return -1;
    }
    const char *slash = strrchr(final_path, '/');
    const char *base = slash ? slash + 1 : final_path;
    if (!base[0]) {
        snprintf(err, errlen, "cannot write %s: the name is a directory", final_path);
        return -1;
    }
    int dirlen = slash ? (int)(slash - final_path) + 1 : 0; /* with the '/' */
    int n =
        snprintf(af->tmp_path, sizeof af->tmp_path, "%.*s.%s.tmp.XXXXXX", dirlen, final_path, base);
    if (n < 0 || (size_t)n >= sizeof af->tmp_path) {
        af->tmp_path[0] = '\0';
        snprintf(err, errlen, "cannot write %s: %s", final_path, strerror(ENAMETOOLONG));
        return -1;
    }
    memcpy(af->final_path, final_path, len + 1);
    return 0;
}

int atomic_open(atomic_file *af, const char *final_path, char *err, size_t errlen)
{
    if (make_names(af, final_path, err, errlen)) return -1;
    int fd = mkstemp(af->tmp_path);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot write %s: %s", af->final_path, strerror(e));
        clear(af);
        return -1;
    }
    /* mkstemp makes the file 0600; give it the mode an ordinary create would. */
    if (fchmod(fd, (mode_t)(0666 & ~current_umask())) != 0 || !(af->fp = fdopen(fd, "wb"))) {
        int e = errno;
        close(fd);
        unlink(af->tmp_path);
        snprintf(err, errlen, "cannot write %s: %s", af->final_path, strerror(e));
        clear(af);
        return -1;
    }
    return 0;
}

int atomic_commit(atomic_file *af, char *err, size_t errlen)
{
    if (!af->fp || !af->tmp_path[0]) {
        snprintf(err, errlen, "cannot write %s: no open temp file", af->final_path);
        atomic_abort(af);
        return -1;
    }
    FILE *fp = af->fp;
    af->fp = NULL;
    int e = 0;
    errno = 0;
    if (fflush(fp) != 0) e = errno ? errno : EIO;
    if (!e && ferror(fp)) e = EIO; /* an earlier write failed */
    errno = 0;
    if (fclose(fp) != 0 && !e) e = errno ? errno : EIO;
    if (!e && rename(af->tmp_path, af->final_path) != 0) e = errno;
    if (e) {
        unlink(af->tmp_path);
        snprintf(err, errlen, "cannot write %s: %s", af->final_path, strerror(e));
        clear(af);
        return -1;
    }
    clear(af);
    return 0;
}

int atomic_publish(atomic_file *af, char *err, size_t errlen)
{
    int e = 0;
    errno = 0;
    if (!af->fp)
        e = EBADF;
    else if (fflush(af->fp) != 0 || ferror(af->fp))
        e = errno ? errno : EIO;
    if (!e && rename(af->tmp_path, af->final_path) != 0) e = errno;
    if (e) {
        snprintf(err, errlen, "cannot write %s: %s", af->final_path, strerror(e));
        atomic_abort(af);
        return -1;
    }
    af->tmp_path[0] = '\0'; /* nothing left to remove: the file is in place */
    return 0;
}

void atomic_abort(atomic_file *af)
{
    if (af->fp) fclose(af->fp);
    if (af->tmp_path[0]) unlink(af->tmp_path);
    clear(af);
}

int atomic_reserve_path(atomic_file *af, const char *final_path, char *err, size_t errlen)
{
    if (make_names(af, final_path, err, errlen)) return -1;
    /* mkstemp proves the directory is writable and picks a name nobody
     * holds; the empty file is removed at once so the writer can create it
     * exclusively (cfitsio's fits_create_diskfile refuses an existing file,
     * so a name taken in between is an error, never a clobber). */
    int fd = mkstemp(af->tmp_path);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot write %s: %s", af->final_path, strerror(e));
        clear(af);
        return -1;
    }
    close(fd);
    unlink(af->tmp_path);
    return 0;
}

int atomic_commit_path(atomic_file *af, char *err, size_t errlen)
{
    if (!af->tmp_path[0]) {
        snprintf(err, errlen, "cannot write %s: no reserved temp file", af->final_path);
        clear(af);
        return -1;
    }
    int e = 0;
    if (access(af->tmp_path, F_OK) != 0) e = errno; /* the writer never made it */
    if (!e && rename(af->tmp_path, af->final_path) != 0) e = errno;
    if (e) {
        unlink(af->tmp_path);
        snprintf(err, errlen, "cannot write %s: %s", af->final_path, strerror(e));
        clear(af);
        return -1;
    }
    clear(af);
    return 0;
}
