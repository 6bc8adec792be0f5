/* SPDX-License-Identifier: BSD-3-Clause */
/* Directories psfsim creates: the output directory, the cache directory. */
#ifndef PSFSIM_MAKE_DIR_H
#define PSFSIM_MAKE_DIR_H

#include <stddef.h>

/* mkdir -p dir (mode 0777 less the umask). Returns 0, or -1 with err naming
 * the component that could not be created. */
int make_dir(const char *dir, char *err, size_t errlen);

#endif
