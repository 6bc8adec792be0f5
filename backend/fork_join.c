/* SPDX-License-Identifier: BSD-3-Clause */
/* Parts of a job on threads, those that cannot start on the caller
 * (backend/fork_join.h). */
#include "backend/fork_join.h"

#include <pthread.h>

int psf_fork_join(void *(*fn)(void *), void *parts, size_t part_bytes, int nparts)
{
    pthread_t threads[PSF_FORK_JOIN_MAX];
    int started[PSF_FORK_JOIN_MAX] = {0}, n = 0;
    char *part = parts;
    int nthreads = nparts < PSF_FORK_JOIN_MAX ? nparts : PSF_FORK_JOIN_MAX;
    for (int i = 1; i < nthreads; ++i)
        started[i] = pthread_create(&threads[i], NULL, fn, part + (size_t)i * part_bytes) == 0;
    if (nparts > 0) fn(part);
    for (int i = 1; i < nparts; ++i) {
        if (i < nthreads && started[i]) {
            pthread_join(threads[i], NULL);
            ++n;
        } else {
            fn(part + (size_t)i * part_bytes);
        }
    }
    return n;
}
