/* SPDX-License-Identifier: BSD-3-Clause */
/* Files kept in the cache directory (psf_backend_options.cache_dir: the
 * latency probe's figures, written by app/formats/atomic_file.c; the CPU
 * kept FFTW wisdom there before its plans were estimated, issue 26). A
 * cache file is only a hint, and its directory may be shared or another
 * user's: whatever sits at its name (a FIFO, a device, a symbolic link, a
 * file of gigabytes) must neither block psfsim, nor be followed, nor be
 * read whole; it is then "no cache". In backend/ so that a backend may
 * keep a file there too. */
#ifndef PSFSIM_CACHE_FILE_H
#define PSFSIM_CACHE_FILE_H

#include <stddef.h>

/* Read dir/name whole into *text (malloc'd, NUL-terminated after its *len
 * bytes; free it), at most cap bytes. Opened O_RDONLY | O_NONBLOCK |
 * O_NOFOLLOW | O_CLOEXEC, so a FIFO opens at once and a symbolic link is
 * refused; fstat must then show a regular file. Returns 0; 1 when there is
 * no such file (a cache not made yet: nothing in why); -1 with why naming
 * the file ("DIR/NAME: not a regular file (a FIFO)", "DIR/NAME: a symbolic
 * link (not followed)", "DIR/NAME: larger than 16 MiB", an I/O error). */
int cache_file_read(const char *dir, const char *name, size_t cap, char **text, size_t *len,
                    char *why, size_t whylen);

#endif
