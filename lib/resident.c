/* SPDX-License-Identifier: BSD-3-Clause */
/* lib_resident (lib/set_priv.h): is the caller's buffer in memory. */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/set_priv.h"

/* Whether the page holding address a is resident. */
static int page_resident(uintptr_t a, uintptr_t page)
{
    unsigned char v = 0;
    return mincore((void *)(a & ~(page - 1)), 1, &v) == 0 && (v & 1);
}

int lib_resident(const void *p, size_t bytes)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (!p || bytes == 0 || page == 0 || (page & (page - 1)) != 0) return 0;
    uintptr_t lo = (uintptr_t)p;
    return page_resident(lo, page) && page_resident(lo + bytes - 1, page);
}
