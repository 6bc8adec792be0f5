/* SPDX-License-Identifier: BSD-3-Clause */
/* Saturating byte counts for memory needs (psf_backend_ops.memory_need,
 * app/run/set_limits.c): products of sizes can pass 2^64 (10^7 images of
 * 65536^2 floats), so a sum or product that would overflow stays at
 * UINT64_MAX instead of wrapping to a small number. */
#ifndef PSFSIM_BYTES_H
#define PSFSIM_BYTES_H

#include <stdint.h>

static inline unsigned long long bytes_add(unsigned long long a, unsigned long long b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static inline unsigned long long bytes_mul(unsigned long long a, unsigned long long b)
{
    if (a == 0 || b == 0) return 0;
    return a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static inline unsigned long long bytes_min(unsigned long long a, unsigned long long b)
{
    return a < b ? a : b;
}

#endif
