/* SPDX-License-Identifier: BSD-3-Clause */
/* The host pool (app/base/host_pool.h) does every item of a run exactly once,
 * in parts, whatever the helpers, the size of the run, or another thread
 * running at the same time (that one then does its run itself): each item
 * counts its visits, and every count must be 1 after each run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/host_pool.h"

typedef struct {
    atomic_int *visits;
    atomic_int parts;
} run_ctx;

static void visit(void *arg, int begin, int end)
{
    run_ctx *c = arg;
    assert_true(begin < end);
    for (int i = begin; i < end; ++i)
        atomic_fetch_add(&c->visits[i], 1);
    atomic_fetch_add(&c->parts, 1);
}

/* One run of n items on p: each item once; returns the parts it took. */
static int run_once(host_pool *p, int n)
{
    run_ctx c;
    c.visits = calloc((size_t)(n > 0 ? n : 1), sizeof *c.visits);
    assert_non_null(c.visits);
    atomic_init(&c.parts, 0);
    host_pool_run(p, n, visit, &c);
    for (int i = 0; i < n; ++i)
        assert_int_equal(atomic_load(&c.visits[i]), 1);
    free(c.visits);
    return atomic_load(&c.parts);
}

static void test_each_item_once(void **state)
{
    (void)state;
    const int helpers[] = {0, 1, 3, 7};
    const int sizes[] = {0, 1, 15, 16, 31, 32, 33, 64, 1000, 1024, 4097};
    for (size_t h = 0; h < sizeof helpers / sizeof helpers[0]; ++h) {
        host_pool *p = host_pool_create(helpers[h]);
        assert_non_null(p);
        for (int rep = 0; rep < 20; ++rep)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
                int parts = run_once(p, sizes[s]);
                /* parts of at least 16 items, at most one per thread */
                int most = sizes[s] / 16 < helpers[h] + 1 ? sizes[s] / 16 : helpers[h] + 1;
                assert_int_equal(parts, sizes[s] == 0 ? 0 : most < 2 ? 1 : most);
            }
        host_pool_destroy(p);
    }
    assert_int_equal(run_once(NULL, 100), 1); /* no pool: all on the caller */
}

static void *lane(void *arg)
{
    for (int rep = 0; rep < 200; ++rep)
        run_once(arg, 1024 + rep);
    return NULL;
}

static void test_two_lanes(void **state)
{
    (void)state;
    host_pool *p = host_pool_create(3);
    assert_non_null(p);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, lane, p), 0);
    lane(p);
    pthread_join(t, NULL);
    host_pool_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_item_once),
        cmocka_unit_test(test_two_lanes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
