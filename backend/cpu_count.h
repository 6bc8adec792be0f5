/* SPDX-License-Identifier: BSD-3-Clause */
/* How many CPUs this process may run on: its affinity mask (taskset,
 * cpusets, a container's cores), not the machine's online count, so that
 * threads are not oversubscribed on a machine shared that way. */
#ifndef PSFSIM_CPU_COUNT_H
#define PSFSIM_CPU_COUNT_H

/* The CPUs of the calling thread's affinity mask (sched_getaffinity(2));
 * sysconf(_SC_NPROCESSORS_ONLN) where the mask cannot be read; at least
 * 1. No errors. */
int psf_cpu_count(void);

#endif
