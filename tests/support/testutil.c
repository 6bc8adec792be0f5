/* SPDX-License-Identifier: BSD-3-Clause */
#include "tests/support/testutil.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <unistd.h>

const char *tu_source_dir(void)
{
    const char *s = getenv("PSFSIM_SOURCE_DIR");
    return s ? s : ".";
}

char *tu_mkdtemp(const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/psfsim_%s_XXXXXX", tmp ? tmp : "/tmp", tag);
    if (!mkdtemp(buf)) return NULL;
    return strdup(buf);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void tu_rmtree(const char *dir)
{
    if (dir) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int tu_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int ok = fputs(text, f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

int tu_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) ++n;
    closedir(d);
    return n;
}

double tu_rel_l2(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; ++i) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

char *tu_format(const char *fmt, ...)
{
    static char buf[4][8192];
    static int slot;
    slot = (slot + 1) % 4;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf[slot], sizeof buf[slot], fmt, ap);
    va_end(ap);
    return buf[slot];
}
