/* SPDX-License-Identifier: BSD-3-Clause */
/* The benchmarks' clock and the comparison their medians sort with. */
#ifndef PSFSIM_BENCH_TIME_H
#define PSFSIM_BENCH_TIME_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC. */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* qsort's comparison of doubles, ascending. */
static inline int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
