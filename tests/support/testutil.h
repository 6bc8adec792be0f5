/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the cmocka tests. */
#ifndef PSFSIM_TESTUTIL_H
#define PSFSIM_TESTUTIL_H

#include <stddef.h>

/* The source tree (PSFSIM_SOURCE_DIR, set by ctest), or "." */
const char *tu_source_dir(void);
/* A fresh empty directory under the system temp dir; caller frees the string. */
char *tu_mkdtemp(const char *tag);
/* Remove a directory tree made by tu_mkdtemp. */
void tu_rmtree(const char *dir);
/* Write text to path (creating it). Returns 0 on success. */
int tu_write_file(const char *path, const char *text);
/* Number of entries in dir, not counting . and .. (-1 if dir is missing). */
int tu_count_entries(const char *dir);
/* Relative L2 difference ||a - b|| / ||b||, accumulated in double. */
double tu_rel_l2(const float *a, const float *b, size_t n);
/* printf into one of 4 rotating static buffers of 8 KiB (config text and
 * messages built inline); valid until the 4th call after. */
char *tu_format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
