/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPUs a process may run on (backend/cpu_count.h). */
#include "backend/cpu_count.h"

#include <sched.h>
#include <unistd.h>

int psf_cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
