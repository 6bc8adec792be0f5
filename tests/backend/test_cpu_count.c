/* SPDX-License-Identifier: BSD-3-Clause */
/* psf_cpu_count (backend/cpu_count.h) follows the affinity mask: pinned to
 * one CPU the count is 1, to two it is 2 (where the machine has two), and
 * back to the whole mask it equals CPU_COUNT of that mask. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sched.h>

#include "backend/cpu_count.h"

/* The first CPU of mask at or after cpu, or -1. */
static int next_cpu(const cpu_set_t *mask, int cpu)
{
    for (; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, mask)) return cpu;
    return -1;
}

static void test_follows_mask(void **state)
{
    (void)state;
    cpu_set_t all, one;
    assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
    assert_int_equal(psf_cpu_count(), CPU_COUNT(&all));
    int c0 = next_cpu(&all, 0);
    assert_true(c0 >= 0);
    CPU_ZERO(&one);
    CPU_SET(c0, &one);
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    assert_int_equal(psf_cpu_count(), 1);
    int c1 = next_cpu(&all, c0 + 1);
    if (c1 >= 0) {
        CPU_SET(c1, &one);
        assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
        assert_int_equal(psf_cpu_count(), 2);
    }
    assert_int_equal(sched_setaffinity(0, sizeof all, &all), 0);
    assert_int_equal(psf_cpu_count(), CPU_COUNT(&all));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_follows_mask)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
