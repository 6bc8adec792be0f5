/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared by the fuzz targets: a private scratch directory per fuzzing
 * process and the input written to a file in it (psfsim's readers take
 * paths, as psfsim gives them). Header-only: each target is one program. */
#ifndef PSFSIM_FUZZ_UTIL_H
#define PSFSIM_FUZZ_UTIL_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The scratch directory ($TMPDIR or /tmp, psfsim_fuzz_XXXXXX), made on
 * first use and removed at exit. Aborts when it cannot be made: a fuzz
 * run without it would test nothing. */
static char fuzz_dir_buf[4096];

static inline int fuzz_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static inline void fuzz_cleanup(void)
{
    if (fuzz_dir_buf[0]) nftw(fuzz_dir_buf, fuzz_rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static inline const char *fuzz_dir(void)
{
    if (fuzz_dir_buf[0]) return fuzz_dir_buf;
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_dir_buf, sizeof fuzz_dir_buf, "%s/psfsim_fuzz_XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(fuzz_dir_buf)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(fuzz_cleanup);
    return fuzz_dir_buf;
}

/* Write data[0..size) to fuzz_dir()/name; returns the path (static buffer,
 * valid until the next call). Aborts on an I/O error (the disk, not the
 * code under test, failed). */
static inline const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror("fuzz: writing the input file");
        abort();
    }
    return path;
}

/* An error message must be one non-empty line of printable text that names
 * the file (psfsim prints it as it is). Aborts (a finding) otherwise. */
static inline void fuzz_check_message(const char *err, const char *must_contain)
{
    if (!err[0]) {
        fprintf(stderr, "fuzz: an error without a message\n");
        abort();
    }
    for (const char *c = err; *c; ++c) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f) {
            fprintf(stderr, "fuzz: control character 0x%02x in the message: %s\n",
                    (unsigned)(unsigned char)*c, err);
            abort();
        }
    }
    if (must_contain && !strstr(err, must_contain)) {
        fprintf(stderr, "fuzz: the message does not name %s: %s\n", must_contain, err);
        abort();
    }
}

/* A finding that is not a memory error: print and abort (libFuzzer saves
 * the input). */
#define FUZZ_REQUIRE(cond, ...)                                                                    \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz: %s:%d: %s: ", __FILE__, __LINE__, #cond);                       \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
