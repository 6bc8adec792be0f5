/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/base/make_dir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int make_dir(const char *dir, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1;; ++p) {
        int end = (*p == '\0');
        if (*p == '/' || end) {
            *p = '\0';
            if (mkdir(path, 0777) != 0 && errno != EEXIST) {
                snprintf(err, errlen, "cannot create output directory %s: %s", path,
                         strerror(errno));
                return -1;
            }
            if (end) break;
            *p = '/';
        }
    }
    return 0;
}
