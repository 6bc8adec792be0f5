/* SPDX-License-Identifier: BSD-3-Clause */
/* Monotonic wall clock for the timing log. */
#ifndef PSFSIM_CLOCK_H
#define PSFSIM_CLOCK_H

#include <time.h>

/* Microseconds on CLOCK_MONOTONIC. */
static inline double clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

#endif
