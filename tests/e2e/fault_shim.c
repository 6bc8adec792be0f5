/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault injection for the end-to-end tests (e2e_faults.sh): an LD_PRELOAD
 * library that makes the file system fail under psfsim the way a full disk,
 * a directory taken away or a dying disk does, at a chosen moment, with no
 * race. It wraps the C library's file creation and syncing calls and
 * counts the files created under one directory; from the n-th on it fails
 * them. Controlled by the environment:
 *
 *   PSFSIM_FAULT_DIR=DIR     only files created under DIR (as psfsim names
 *                            them: give psfsim -o DIR with the same string)
 *                            count and fail. Without it the shim does nothing.
 *   PSFSIM_FAULT_FULL_AT=N   disk full from the N-th file created (1-based)
 *                            on: the file is created, but /dev/full stands
 *                            behind its descriptor, so every write to it
 *                            fails with ENOSPC, buffered or not.
 *   PSFSIM_FAULT_EACCES_AT=N from the N-th creation on, creating fails with
 *                            EACCES (the directory became unwritable).
 *   PSFSIM_FAULT_RMDIR_AT=N  just before the N-th creation, DIR and all in
 *                            it is removed (rm -rf), as by another process.
 *   PSFSIM_FAULT_FSYNC_AT=N  the N-th and later fsync/fdatasync of any file
 *                            fail with EIO (an I/O error surfacing late).
 *   PSFSIM_FAULT_RENAME_AT=N the N-th and later renames into DIR fail with
 *                            ENOSPC (a directory that cannot grow).
 *   PSFSIM_FAULT_LINK_AT=N   just before the N-th creation, a symbolic link
 *                            is planted at the very name being created,
 *                            pointing at PSFSIM_FAULT_LINK_TO/N (a name
 *                            outside DIR that does not exist), as another
 *                            user of a shared directory could: a writer that
 *                            follows it creates a file outside DIR.
 *   PSFSIM_FAULT_LINK_RENAME_AT=N  just before the N-th rename into DIR, the
 *                            final name is replaced by such a link (a writer
 *                            that opened the final name would write there).
 *   PSFSIM_FAULT_RMDIR_RENAME_AT=N just after the N-th rename into DIR, DIR
 *                            and all in it is removed (after the last image
 *                            is in place: nothing fails later by itself).
 *   PSFSIM_FAULT_SWAP_AT=N   just after the N-th creation, the file just
 *                            made is unlinked and a symbolic link to
 *                            PSFSIM_FAULT_LINK_TO/N put at its name: a
 *                            co-writer of the directory swapping a temp file
 *                            for a link before it is renamed into place.
 *   PSFSIM_FAULT_UNLINK_RENAME_AT=N just after the N-th rename into DIR,
 *                            every file in DIR is removed but DIR itself and
 *                            its subdirectories stay (an rm -rf that failed:
 *                            "Directory not empty", new files arriving).
 *   PSFSIM_FAULT_NAN_AT=N    the N-th FFT the CPU backend runs
 *                            (fftwf_execute_dft, counted over all threads)
 *                            leaves a NaN in its output: a garbage image,
 *                            which psfsim must refuse to write.
 *   PSFSIM_FAULT_DEFLATE_AT=N the N-th call of ISA-L's isal_deflate_stateless
 *                            (the PNG's deflate, counted over all threads)
 *                            returns an error without deflating;
 *                            PSFSIM_FAULT_DEFLATE_FROM=N the N-th and every
 *                            later one: a passing and a lasting failure.
 *   PSFSIM_FAULT_LOG=FILE    one line per injected fault ("full PATH", ...).
 *
 * "Creation" is mkstemp and friends (temp files made by name), fopen /
 * fopen64 in a writing mode (cfitsio creating a FITS file by name) and
 * open / open64 / openat with O_CREAT (psfsim's temp files, made through a
 * directory descriptor: a name relative to it is resolved through
 * /proc/self/fd to decide whether it lies under DIR). "Rename" is rename
 * and renameat. The set's lock file (.NAME.lock, app/output/set_dir.h) is left
 * alone: it holds no data, and the counts stay those of the set's files.
 * Counters are atomic: psfsim's writer threads create files
 * concurrently. Sources: dlsym(3) RTLD_NEXT for the real calls;
 * /dev/full(4) for ENOSPC on every write; proc(5) for /proc/self/fd. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Public for LD_PRELOAD: the wrapped calls (declared here, as the headers
 * may map some to their 64-bit names). */
int mkstemp(char *tmpl);
int mkstemp64(char *tmpl);
int mkostemp(char *tmpl, int flags);
int mkostemp64(char *tmpl, int flags);
FILE *fopen(const char *path, const char *mode);
FILE *fopen64(const char *path, const char *mode);
int open(const char *path, int flags, ...);
int open64(const char *path, int flags, ...);
int openat(int dirfd, const char *path, int flags, ...);
int fsync(int fd);
int fdatasync(int fd);
int rename(const char *from, const char *to);
int renameat(int fromfd, const char *from, int tofd, const char *to);
/* FFTW's, with its plan and complex arrays as opaque pointers (fftw3.h:
 * fftwf_plan, fftwf_complex = float[2]). */
void fftwf_execute_dft(void *plan, float (*in)[2], float (*out)[2]);
/* ISA-L's, with its stream opaque (isa-l/igzip_lib.h). */
int isal_deflate_stateless(void *stream);

static long env_long(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : 0;
}

static void *real(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "fault_shim: no %s in the C library\n", name);
        abort();
    }
    return f;
}

static void note(const char *what, const char *path)
{
    const char *log = getenv("PSFSIM_FAULT_LOG");
    if (!log) return;
    FILE *(*ropen)(const char *, const char *) = real("fopen");
    FILE *f = ropen(log, "a");
    if (!f) return;
    fprintf(f, "%s %s\n", what, path ? path : "");
    fclose(f);
}

static int under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* path as an absolute name: as it is, or relative to the directory dirfd
 * (AT_FDCWD: the current one) as /proc/self/fd names it, " (deleted)"
 * dropped (a removed directory). */
static void absolute(int dirfd, const char *path, char *out, size_t outlen)
{
    if (path[0] == '/') {
        snprintf(out, outlen, "%s", path);
        return;
    }
    char base[4096] = "";
    if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof base)) base[0] = '\0';
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t n = readlink(link, base, sizeof base - 1);
        base[n > 0 ? n : 0] = '\0';
        char *del = strstr(base, " (deleted)");
        if (del && del[10] == '\0') *del = '\0';
    }
    snprintf(out, outlen, "%s/%s", base, path);
}

/* 1 when path (relative to dirfd) lies under PSFSIM_FAULT_DIR, as given or
 * with its symbolic links resolved. */
static int in_scope_at(int dirfd, const char *path)
{
    const char *dir = getenv("PSFSIM_FAULT_DIR");
    if (!dir || !*dir || !path) return 0;
    char full[8300], real_dir[4096];
    absolute(dirfd, path, full, sizeof full);
    if (under(path, dir) || under(full, dir)) return 1;
    return realpath(dir, real_dir) && under(full, real_dir);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

typedef enum { FAULT_NONE, FAULT_FULL, FAULT_EACCES, FAULT_SWAP } fault;

static long g_creations, g_fsyncs, g_renames;

/* Plant a symbolic link at path (relative to dirfd) to
 * PSFSIM_FAULT_LINK_TO/k, replacing what is there when replace is set. */
static void plant_link(int dirfd, const char *path, long k, int replace)
{
    const char *to = getenv("PSFSIM_FAULT_LINK_TO");
    if (!to || !*to) return;
    char target[4200];
    snprintf(target, sizeof target, "%s/%ld", to, k);
    if (replace) unlinkat(dirfd, path, 0);
    if (symlinkat(target, dirfd, path) == 0) note("link", path);
}

/* Count a creation of path (relative to dirfd) and say which fault it
 * meets; removes the directory first when PSFSIM_FAULT_RMDIR_AT says so,
 * or plants a link at path (PSFSIM_FAULT_LINK_AT). */
/* 1 for the set's lock file ".NAME.lock" (no directory part). */
static int is_lock_file(const char *path)
{
    size_t n = strlen(path);
    return path[0] == '.' && !strchr(path, '/') && n > 5 && !strcmp(path + n - 5, ".lock");
}

static fault on_create_at(int dirfd, const char *path)
{
    if (is_lock_file(path) || !in_scope_at(dirfd, path)) return FAULT_NONE;
    long k = __atomic_add_fetch(&g_creations, 1, __ATOMIC_SEQ_CST);
    long rmdir_at = env_long("PSFSIM_FAULT_RMDIR_AT");
    if (rmdir_at > 0 && k == rmdir_at) {
        note("rmdir", getenv("PSFSIM_FAULT_DIR"));
        nftw(getenv("PSFSIM_FAULT_DIR"), rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    if (env_long("PSFSIM_FAULT_LINK_AT") == k) plant_link(dirfd, path, k, 0);
    if (env_long("PSFSIM_FAULT_SWAP_AT") == k) return FAULT_SWAP;
    long eacces_at = env_long("PSFSIM_FAULT_EACCES_AT");
    if (eacces_at > 0 && k >= eacces_at) {
        note("eacces", path);
        return FAULT_EACCES;
    }
    long full_at = env_long("PSFSIM_FAULT_FULL_AT");
    if (full_at > 0 && k >= full_at) {
        note("full", path);
        return FAULT_FULL;
    }
    return FAULT_NONE;
}

static fault on_create(const char *path)
{
    return on_create_at(AT_FDCWD, path);
}

/* Put /dev/full behind fd (the file itself stays, empty). */
static void make_full(int fd)
{
    int (*ropen)(const char *, int, ...) = real("open");
    int full = ropen("/dev/full", O_WRONLY | O_CLOEXEC);
    if (full < 0) return;
    dup2(full, fd);
    close(full);
}

static int wrap_mkstemp(const char *name, char *tmpl, int flags, int with_flags)
{
    fault f = on_create(tmpl);
    if (f == FAULT_EACCES) {
        errno = EACCES;
        return -1;
    }
    int fd;
    if (with_flags) {
        int (*r)(char *, int) = real(name);
        fd = r(tmpl, flags);
    } else {
        int (*r)(char *) = real(name);
        fd = r(tmpl);
    }
    if (fd >= 0 && f == FAULT_FULL) make_full(fd);
    return fd;
}

int mkstemp(char *tmpl)
{
    return wrap_mkstemp("mkstemp", tmpl, 0, 0);
}
int mkstemp64(char *tmpl)
{
    return wrap_mkstemp("mkstemp64", tmpl, 0, 0);
}
int mkostemp(char *tmpl, int flags)
{
    return wrap_mkstemp("mkostemp", tmpl, flags, 1);
}
int mkostemp64(char *tmpl, int flags)
{
    return wrap_mkstemp("mkostemp64", tmpl, flags, 1);
}

static FILE *wrap_fopen(const char *name, const char *path, const char *mode)
{
    FILE *(*r)(const char *, const char *) = real(name);
    int writing = mode && (strchr(mode, 'w') || strchr(mode, 'a') || strchr(mode, '+'));
    fault f = writing ? on_create(path) : FAULT_NONE;
    if (f == FAULT_EACCES) {
        errno = EACCES;
        return NULL;
    }
    FILE *fp = r(path, mode);
    if (fp && f == FAULT_FULL) make_full(fileno(fp));
    return fp;
}

FILE *fopen(const char *path, const char *mode)
{
    return wrap_fopen("fopen", path, mode);
}
FILE *fopen64(const char *path, const char *mode)
{
    return wrap_fopen("fopen64", path, mode);
}

static int wrap_open(const char *name, int dirfd, const char *path, int flags, mode_t mode)
{
    fault f =
        (flags & O_CREAT) ? on_create_at(dirfd == -1000 ? AT_FDCWD : dirfd, path) : FAULT_NONE;
    if (f == FAULT_EACCES) {
        errno = EACCES;
        return -1;
    }
    int fd;
    if (dirfd == -1000) {
        int (*r)(const char *, int, ...) = real(name);
        fd = r(path, flags, mode);
    } else {
        int (*r)(int, const char *, int, ...) = real(name);
        fd = r(dirfd, path, flags, mode);
    }
    if (fd >= 0 && f == FAULT_FULL) make_full(fd);
    if (fd >= 0 && f == FAULT_SWAP) { /* the name becomes a link; fd keeps the file */
        note("swap", path);
        plant_link(dirfd == -1000 ? AT_FDCWD : dirfd, path, env_long("PSFSIM_FAULT_SWAP_AT"), 1);
    }
    return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return wrap_open("open", -1000, path, flags, m);
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return wrap_open("open64", -1000, path, flags, m);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return wrap_open("openat", dirfd, path, flags, m);
}

static int sync_fails(const char *name, int fd)
{
    long at = env_long("PSFSIM_FAULT_FSYNC_AT");
    if (at <= 0 || !getenv("PSFSIM_FAULT_DIR")) return 0;
    long k = __atomic_add_fetch(&g_fsyncs, 1, __ATOMIC_SEQ_CST);
    if (k < at) return 0;
    char fdname[32];
    snprintf(fdname, sizeof fdname, "%s fd %d", name, fd);
    note("eio", fdname);
    return 1;
}

int fsync(int fd)
{
    if (sync_fails("fsync", fd)) {
        errno = EIO;
        return -1;
    }
    int (*r)(int) = real("fsync");
    return r(fd);
}

int fdatasync(int fd)
{
    if (sync_fails("fdatasync", fd)) {
        errno = EIO;
        return -1;
    }
    int (*r)(int) = real("fdatasync");
    return r(fd);
}

/* A rename to to (relative to tofd) into DIR: count it; fail it
 * (PSFSIM_FAULT_RENAME_AT: -1), plant a link at to first
 * (PSFSIM_FAULT_LINK_RENAME_AT) or, after it, remove DIR
 * (PSFSIM_FAULT_RMDIR_RENAME_AT: 1) or the files in it
 * (PSFSIM_FAULT_UNLINK_RENAME_AT: 2). 0: rename as usual. */
static int on_rename(int tofd, const char *to)
{
    if (!in_scope_at(tofd, to)) return 0;
    long k = __atomic_add_fetch(&g_renames, 1, __ATOMIC_SEQ_CST);
    long at = env_long("PSFSIM_FAULT_RENAME_AT");
    if (at > 0 && k >= at) {
        note("rename", to);
        errno = ENOSPC;
        return -1;
    }
    if (env_long("PSFSIM_FAULT_LINK_RENAME_AT") == k) plant_link(tofd, to, k, 1);
    if (env_long("PSFSIM_FAULT_UNLINK_RENAME_AT") == k) return 2;
    return env_long("PSFSIM_FAULT_RMDIR_RENAME_AT") == k;
}

static int rm_file(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)ftw;
    return flag == FTW_DP || flag == FTW_D ? 0 : unlink(p);
}

/* After the rename: remove DIR (what 1), or every file in it (what 2),
 * when on_rename said so. */
static int after_rename(int rc, int what)
{
    if (what == 1) {
        note("rmdir", getenv("PSFSIM_FAULT_DIR"));
        nftw(getenv("PSFSIM_FAULT_DIR"), rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    } else if (what == 2) {
        note("unlink", getenv("PSFSIM_FAULT_DIR"));
        nftw(getenv("PSFSIM_FAULT_DIR"), rm_file, 16, FTW_DEPTH | FTW_PHYS);
    }
    return rc;
}

int rename(const char *from, const char *to)
{
    int what = on_rename(AT_FDCWD, to);
    if (what < 0) return -1;
    int (*r)(const char *, const char *) = real("rename");
    return after_rename(r(from, to), what);
}

int renameat(int fromfd, const char *from, int tofd, const char *to)
{
    int what = on_rename(tofd, to);
    if (what < 0) return -1;
    int (*r)(int, const char *, int, const char *) = real("renameat");
    return after_rename(r(fromfd, from, tofd, to), what);
}

static long g_ffts;

void fftwf_execute_dft(void *plan, float (*in)[2], float (*out)[2])
{
    void (*r)(void *, float(*)[2], float(*)[2]) = real("fftwf_execute_dft");
    r(plan, in, out);
    long at = env_long("PSFSIM_FAULT_NAN_AT");
    if (at > 0 && __atomic_add_fetch(&g_ffts, 1, __ATOMIC_SEQ_CST) == at) {
        note("nan", NULL);
        out[0][0] = __builtin_nanf("");
    }
}

static long g_deflates;

/* ISAL_INVALID_OPERATION (-9, igzip_lib.h): what igzip returns for a call it
 * refuses; any code but COMP_OK (0) is a failure to psfsim. */
int isal_deflate_stateless(void *stream)
{
    long k = __atomic_add_fetch(&g_deflates, 1, __ATOMIC_SEQ_CST);
    long at = env_long("PSFSIM_FAULT_DEFLATE_AT"), from = env_long("PSFSIM_FAULT_DEFLATE_FROM");
    if ((at > 0 && k == at) || (from > 0 && k >= from)) {
        note("deflate", NULL);
        return -9;
    }
    int (*r)(void *) = real("isal_deflate_stateless");
    return r(stream);
}
