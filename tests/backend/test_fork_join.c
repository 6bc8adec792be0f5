/* SPDX-License-Identifier: BSD-3-Clause */
/* psf_fork_join (backend/fork_join.h) runs every part exactly once, with
 * its own part, part 0 and a lone part on the caller, and a part whose
 * thread cannot start on the caller too: pthread_create is interposed
 * here (this executable's definition comes before the C library's) to
 * refuse chosen starts. The parts' sums, added in part order, are the
 * same bits as the same parts run one after another on one thread, whichever
 * threads started. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "backend/fork_join.h"

/* Starts (counted from the last reset) to refuse: start c fails with
 * EAGAIN when bit c of refuse_bits is set. */
static atomic_ullong refuse_bits;
static atomic_int starts;

static void refuse(unsigned long long bits)
{
    atomic_store(&refuse_bits, bits);
    atomic_store(&starts, 0);
}

int pthread_create(pthread_t *restrict thread, const pthread_attr_t *restrict attr,
                   void *(*fn)(void *), void *restrict arg)
{
    typedef int (*create_fn)(pthread_t *restrict, const pthread_attr_t *restrict, void *(*)(void *),
                             void *restrict);
    int c = atomic_fetch_add(&starts, 1);
    if (c < 64 && (atomic_load(&refuse_bits) >> c & 1)) return EAGAIN;
    create_fn real;
    void *sym = dlsym(RTLD_NEXT, "pthread_create");
    memcpy(&real, &sym, sizeof real); /* (an object pointer to a function's: POSIX) */
    return real(thread, attr, fn, arg);
}

#define MAX_PARTS 100

typedef struct {
    int index;        /* where the test put it */
    const void *self; /* the argument fn got, set by fn */
    atomic_int runs;  /* fn's calls with this part */
    pthread_t thread; /* the thread that ran it */
    const double *x;  /* its values x[lo, hi) */
    size_t lo, hi;
    double sum; /* their sum, in order */
} part;

static void *run_part(void *arg)
{
    part *p = arg;
    p->self = arg;
    p->thread = pthread_self();
    double s = 0;
    for (size_t i = p->lo; i < p->hi; ++i)
        s += p->x[i];
    p->sum = s;
    atomic_fetch_add(&p->runs, 1);
    return NULL;
}

static void parts_init(part *parts, int n, const double *x, size_t nx)
{
    for (int i = 0; i < n; ++i) {
        memset(&parts[i], 0, sizeof parts[i]);
        parts[i].index = i;
        atomic_init(&parts[i].runs, 0);
        parts[i].x = x;
        parts[i].lo = nx * (size_t)i / (size_t)n;
        parts[i].hi = nx * (size_t)(i + 1) / (size_t)n;
    }
}

/* One call over n parts with the starts in bits refused: each part ran
 * once, with itself; part 0, the refused and those past PSF_FORK_JOIN_MAX
 * on this thread, the others not; the count returned is of the others. */
static void check_call(int n, unsigned long long bits)
{
    static part parts[MAX_PARTS];
    static const double x[1] = {0};
    parts_init(parts, n, x, 0);
    refuse(bits);
    int on_own = psf_fork_join(run_part, parts, sizeof parts[0], n);
    refuse(0);
    pthread_t me = pthread_self();
    int expect = 0;
    for (int i = 0; i < n; ++i) {
        assert_int_equal(atomic_load(&parts[i].runs), 1);
        assert_ptr_equal(parts[i].self, &parts[i]);
        assert_int_equal(parts[i].index, i);
        /* start i - 1 is part i's (parts 1 .. n - 1 started in order) */
        int here = i == 0 || i >= PSF_FORK_JOIN_MAX || (bits >> (i - 1) & 1);
        assert_int_equal(pthread_equal(parts[i].thread, me) != 0, here);
        expect += !here;
    }
    assert_int_equal(on_own, expect);
}

static void test_each_part_once(void **state)
{
    (void)state;
    const int sizes[] = {0, 1, 2, 3, 8, 63, 64, 65, MAX_PARTS};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s)
        check_call(sizes[s], 0);
}

static void test_lone_part_on_caller(void **state)
{
    (void)state;
    part p;
    parts_init(&p, 1, NULL, 0);
    refuse(0);
    assert_int_equal(psf_fork_join(run_part, &p, sizeof p, 1), 0);
    assert_int_equal(atomic_load(&starts), 0); /* no thread was asked for */
    assert_int_equal(atomic_load(&p.runs), 1);
    assert_true(pthread_equal(p.thread, pthread_self()));
}

static void test_refused_on_caller(void **state)
{
    (void)state;
    check_call(2, 1);           /* the one thread refused */
    check_call(8, 0x7f);        /* all refused: everything here */
    check_call(8, 0x55);        /* every other one */
    check_call(8, 0x40);        /* the last */
    check_call(MAX_PARTS, 0x3); /* the first two, and parts past the most */
}

/* Values of very different sizes, so that another order of addition gives
 * other bits. */
#define NX 10007
static double xs[NX];

static void test_sums_reproducible(void **state)
{
    (void)state;
    for (size_t i = 0; i < NX; ++i)
        xs[i] = sin((double)i) * pow(10.0, (double)(i % 17));
    static part parts[8], ref[8];
    const unsigned long long patterns[] = {0, 0x55, 0x7f, 0x2};
    for (int n = 1; n <= 8; ++n) {
        parts_init(ref, n, xs, NX);
        for (int i = 0; i < n; ++i) /* the reference: one thread, in order */
            run_part(&ref[i]);
        double want = 0;
        for (int i = 0; i < n; ++i)
            want += ref[i].sum;
        for (int rep = 0; rep < 20; ++rep) {
            parts_init(parts, n, xs, NX);
            refuse(patterns[rep % 4]);
            psf_fork_join(run_part, parts, sizeof parts[0], n);
            refuse(0);
            double got = 0;
            for (int i = 0; i < n; ++i) {
                assert_memory_equal(&parts[i].sum, &ref[i].sum, sizeof(double));
                got += parts[i].sum;
            }
            assert_memory_equal(&got, &want, sizeof got);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_part_once),
        cmocka_unit_test(test_lone_part_on_caller),
        cmocka_unit_test(test_refused_on_caller),
        cmocka_unit_test(test_sums_reproducible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
