/* SPDX-License-Identifier: BSD-3-Clause */
/* Which GPUs of the host a run uses: `--gpus all|0,2,...` (issue 7). The
 * indices are CUDA device indices as the process sees them, so
 * CUDA_VISIBLE_DEVICES applies first (CUDA_VISIBLE_DEVICES=2,3 with
 * --gpus 1 is physical GPU 3). Each device gets its own backend (streams,
 * plans, pinned buffers) and takes batches from the run's one queue. */
#ifndef PSFSIM_GPU_LIST_H
#define PSFSIM_GPU_LIST_H

#include <stddef.h>

#define GPU_LIST_MAX 16 /* devices one process drives */

typedef struct {
    int all; /* "all" (the default): every visible device */
    int n;   /* else the n devices listed, in order */
    int dev[GPU_LIST_MAX];
} gpu_list;

/* The default: every visible device. */
void gpu_list_all(gpu_list *l);

/* Parse "all" or a comma list of distinct device indices 0..999 ("0,2").
 * Returns 0, or -1 with err naming the bad entry (empty, not a number,
 * repeated, more than GPU_LIST_MAX). */
int gpu_list_parse(const char *s, gpu_list *l, char *err, size_t errlen);

/* The devices to drive, given count visible (>= 1): every one for "all"
 * (at most GPU_LIST_MAX), else the listed ones. Writes *n indices to dev
 * (GPU_LIST_MAX entries). Returns 0, or -1 with err when a listed device
 * is not visible ("--gpus: device 2 asked for, but 2 are visible (0..1)"). */
int gpu_list_resolve(const gpu_list *l, int count, int *dev, int *n, char *err, size_t errlen);

/* "0,1" into buf (for messages and the timing log); returns buf. */
const char *gpu_list_format(const int *dev, int n, char *buf, size_t len);

#endif
