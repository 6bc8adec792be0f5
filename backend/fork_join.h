/* SPDX-License-Identifier: BSD-3-Clause */
/* Fork-join: one function over an array of parts, part 0 on the calling
 * thread and each other part on a thread started for the call, all done
 * when the call returns. A part whose thread cannot start (pthread_create
 * fails: the process's thread limit, its memory) runs on the caller
 * instead, so every part runs exactly once and what the parts compute
 * never depends on thread creation succeeding, only how long it takes.
 * Below every caller: the CPU backend's MFT, the library's finishing of
 * images and its gradients, the fit's loss, the HDF5 module's deflate. */
#ifndef PSFSIM_FORK_JOIN_H
#define PSFSIM_FORK_JOIN_H

#include <stddef.h>

/* The most parts of one call that get a thread of their own. */
#define PSF_FORK_JOIN_MAX 64

/* fn(parts + i * part_bytes) once for each i in [0, nparts): part 0 on
 * this thread, parts 1 .. nparts - 1 each on its own thread; then, in
 * order of i, each thread is joined, or its part run here when its
 * thread did not start (as are parts from PSF_FORK_JOIN_MAX on). fn's
 * return value is ignored; a part that must report fails through its
 * part. Returns the parts that ran on a thread of their own,
 * 0 .. nparts - 1 (0 for nparts < 2, when nothing is started). */
int psf_fork_join(void *(*fn)(void *), void *parts, size_t part_bytes, int nparts);

#endif
