/* SPDX-License-Identifier: BSD-3-Clause */
/* The batch loop (lib/engine/batch.h), with fake backends. One batch: run
 * or run_levels into the buffers the client's hook gives before each try;
 * a GPU that fails calls the client's fall-back once, with the backend's
 * message, and the batch runs again into the buffers given then; a second
 * failure is final; the hooks' own codes come back as they are.
 * engine_run: every image of the queue but those skipped is taken once,
 * over every lane and its slots; a lane the sink stops leaves the rest to
 * the others; a lane's failure reaches the sink's end and stops them; a
 * lane taking its batches ahead takes each image once too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "lib/engine/batch.h"

/* What the fake backends saw. */
static struct {
    int runs, levels_runs;
    const float *images;
    const unsigned short *levels;
    const double *measures;
    int njobs;
} seen;

static int run_ok(psf_backend *b, const psf_job *jobs, int njobs, float *images, char *err,
                  size_t errlen)
{
    (void)b, (void)jobs, (void)err, (void)errlen;
    seen.runs++;
    seen.images = images;
    seen.njobs = njobs;
    return 0;
}

static int run_fails(psf_backend *b, const psf_job *jobs, int njobs, float *images, char *err,
                     size_t errlen)
{
    (void)b, (void)jobs, (void)njobs, (void)images;
    seen.runs++;
    snprintf(err, errlen, "%s", "fake: the device went");
    return -1;
}

static int levels_ok(psf_backend *b, const psf_job *jobs, int njobs, unsigned short *levels,
                     double *measures, char *err, size_t errlen)
{
    (void)b, (void)jobs, (void)err, (void)errlen;
    seen.levels_runs++;
    seen.levels = levels;
    seen.measures = measures;
    seen.njobs = njobs;
    return 0;
}

static const psf_backend_ops gpu_ok = {.name = "gpu", .run = run_ok, .run_levels = levels_ok};
static const psf_backend_ops gpu_bad = {.name = "gpu", .run = run_fails};
static const psf_backend_ops other_ok = {.name = "other", .run = run_ok};
static const psf_backend_ops other_bad = {.name = "other", .run = run_fails};

static float buf_a[4], buf_b[4];
static unsigned short lev[4];
static double meas[4];

/* The client: its hooks' calls and what they do. */
typedef struct {
    int buffers, fall_backs;
    char why[256];
    const psf_backend_ops *next; /* the lane's ops after the fall-back */
    int buffer_rc, fall_back_rc; /* what the hooks return */
    int levels;                  /* the buffer hook asks for run_levels */
} client;

static int buffer(void *user, engine_lane *ln, engine_batch *b, char *err, size_t errlen)
{
    client *c = user;
    c->buffers++;
    if (c->buffer_rc) {
        snprintf(err, errlen, "%s", "no memory");
        return c->buffer_rc;
    }
    /* the first try into buf_a, after a fall-back into buf_b */
    b->images = ln->ops == &gpu_ok || ln->ops == &gpu_bad ? buf_a : buf_b;
    b->levels = lev;
    b->measures = meas;
    b->on_levels = c->levels;
    return 0;
}

static int fall_back(void *user, engine_lane *ln, const char *why, char *err, size_t errlen)
{
    client *c = user;
    c->fall_backs++;
    snprintf(c->why, sizeof c->why, "%s", why);
    if (c->fall_back_rc) {
        snprintf(err, errlen, "%s", "no CPU either");
        return c->fall_back_rc;
    }
    ln->ops = c->next;
    return 0;
}

static int run_batch(engine_lane *ln, client *c, double *us, char *err, size_t errlen)
{
    memset(&seen, 0, sizeof seen);
    psf_job jobs[3];
    engine_batch b = {.jobs = jobs, .n = 3};
    engine_batch_hooks h = {.buffer = buffer, .fall_back = fall_back, .user = c};
    return engine_lane_run_or_fall_back(ln, &b, &h, us, err, errlen);
}

static void test_runs_once(void **state)
{
    (void)state;
    engine_lane ln = {.ops = &gpu_ok};
    client c = {0};
    double us = -1;
    char err[256] = "";
    assert_int_equal(run_batch(&ln, &c, &us, err, sizeof err), 0);
    assert_int_equal(seen.runs, 1);
    assert_int_equal(seen.levels_runs, 0);
    assert_ptr_equal(seen.images, buf_a);
    assert_int_equal(seen.njobs, 3);
    assert_int_equal(c.buffers, 1);
    assert_int_equal(c.fall_backs, 0);
    assert_true(us >= 0);
}

static void test_levels(void **state)
{
    (void)state;
    engine_lane ln = {.ops = &gpu_ok};
    client c = {.levels = 1};
    char err[256] = "";
    assert_int_equal(run_batch(&ln, &c, NULL, err, sizeof err), 0);
    assert_int_equal(seen.runs, 0);
    assert_int_equal(seen.levels_runs, 1);
    assert_ptr_equal(seen.levels, lev);
    assert_ptr_equal(seen.measures, meas);
}

static void test_falls_back_once(void **state)
{
    (void)state;
    engine_lane ln = {.ops = &gpu_bad};
    client c = {.next = &other_ok};
    double us = -1;
    char err[256] = "";
    assert_int_equal(run_batch(&ln, &c, &us, err, sizeof err), 0);
    assert_int_equal(c.fall_backs, 1);
    assert_string_equal(c.why, "fake: the device went");
    assert_int_equal(c.buffers, 2);       /* again after the fall-back */
    assert_int_equal(seen.runs, 2);       /* the GPU's, then the other's */
    assert_ptr_equal(seen.images, buf_b); /* into the buffer given then */
    assert_ptr_equal(ln.ops, &other_ok);
    assert_true(us >= 0);
}

static void test_second_failure_final(void **state)
{
    (void)state;
    engine_lane ln = {.ops = &gpu_bad};
    client c = {.next = &other_bad};
    char err[256] = "";
    assert_int_equal(run_batch(&ln, &c, NULL, err, sizeof err), ENGINE_RUN_FAILED);
    assert_int_equal(c.fall_backs, 1);
    assert_int_equal(seen.runs, 2);
    assert_string_equal(err, "fake: the device went");
}

static void test_hook_codes(void **state)
{
    (void)state;
    engine_lane ln = {.ops = &gpu_ok};
    client c = {.buffer_rc = 7};
    char err[256] = "";
    assert_int_equal(run_batch(&ln, &c, NULL, err, sizeof err), 7); /* nothing run */
    assert_int_equal(seen.runs, 0);
    assert_string_equal(err, "no memory");

    ln.ops = &gpu_bad;
    c = (client){.fall_back_rc = 5};
    assert_int_equal(run_batch(&ln, &c, NULL, err, sizeof err), 5);
    assert_int_equal(c.fall_backs, 1);
    assert_int_equal(seen.runs, 1);
    assert_string_equal(err, "no CPU either");
}

/* engine_run's sink: each image's takes, each lane's batches and end. */
#define QN 200
#define QLANES 3
typedef struct {
    atomic_int taken[QN];
    atomic_int batches[QLANES], images;
    int end_rc[QLANES], ended[QLANES];
    char end_err[QLANES][64];
    int stop_lane; /* done returns 1 on this lane (-1: none) */
    int fail_lane; /* this lane's job fails with 9 (-1: none) */
    int ahead;     /* lanes of two slots take their next batch ahead */
    int job_fails; /* image k's job fails with 7 (0: none) */
    pthread_t lane_thread[QLANES];
    atomic_int jobs_elsewhere; /* jobs made off the lane's own thread */
    float img[QLANES][2][8];
} qsink;

static int q_slots(void *user, int l)
{
    /* taking ahead, every lane two (lane 0, on the caller's thread, takes
     * batches whatever the others' threads' start) */
    return l == 0 && !((const qsink *)user)->ahead ? 1 : 2;
}

static int q_next(void *user, int l, int q, int *cap, char *err, size_t errlen)
{
    (void)q;
    qsink *c = user;
    if (l == c->fail_lane) { /* before its first batch, whatever the others took */
        snprintf(err, errlen, "lane %d: no slot", l);
        return 9;
    }
    *cap = 4 + l;                       /* 4, 5, 6 images a batch */
    c->lane_thread[l] = pthread_self(); /* the lane's own: next runs there, no take meanwhile */
    return 0;
}

static int q_job(void *user, int l, int q, int i, long long k, char *err, size_t errlen)
{
    (void)q, (void)i;
    qsink *c = user;
    if (c->job_fails && k == c->job_fails) {
        snprintf(err, errlen, "job %lld: bad", k);
        return 7;
    }
    atomic_fetch_add(&c->taken[k], 1);
    if (!pthread_equal(pthread_self(), c->lane_thread[l])) atomic_fetch_add(&c->jobs_elsewhere, 1);
    return 0;
}

static int q_ahead(void *user, int l)
{
    (void)l;
    return ((qsink *)user)->ahead;
}

static int q_buffer(void *user, int l, int q, long long k0, engine_batch *b, char *err,
                    size_t errlen)
{
    (void)k0, (void)err, (void)errlen;
    qsink *c = user;
    b->images = c->img[l][q];
    return 0;
}

static int q_done(void *user, int l, int q, long long k0, int n, double run_us, double us,
                  char *err, size_t errlen)
{
    (void)q, (void)k0, (void)err, (void)errlen;
    qsink *c = user;
    assert_true(run_us >= 0 && us >= run_us);
    atomic_fetch_add(&c->batches[l], 1);
    atomic_fetch_add(&c->images, n);
    return l == c->stop_lane ? 1 : 0;
}

static void q_end(void *user, int l, int rc, const char *err)
{
    qsink *c = user;
    c->ended[l]++;
    c->end_rc[l] = rc;
    snprintf(c->end_err[l], sizeof c->end_err[l], "%s", err);
}

static const unsigned char *skips(void)
{
    static unsigned char skip[QN];
    for (int k = 0; k < QN; ++k)
        skip[k] = k % 7 == 3;
    return skip;
}

/* engine_run over three fake lanes; returns the queue's failed. */
static int run_queue(qsink *c)
{
    engine_lane ln[QLANES] = {{.ops = &gpu_ok}, {.ops = &gpu_ok}, {.ops = &gpu_ok}};
    engine_lane *lanes[QLANES] = {&ln[0], &ln[1], &ln[2]};
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    engine_queue q = {.mu = &mu, .next = 10, .end = QN, .skip = skips()};
    atomic_init(&q.failed, 0);
    engine_sink sink = {.slots = q_slots,
                        .next = q_next,
                        .job = q_job,
                        .buffer = q_buffer,
                        .done = q_done,
                        .end = q_end,
                        .ahead = q_ahead,
                        .user = c};
    engine_run(lanes, QLANES, &q, &sink);
    return atomic_load(&q.failed);
}

/* Every image of the queue from 10 on but those skipped taken once, and
 * run: the images done. */
static void assert_each_taken_once(qsink *c)
{
    int want = 0;
    for (int k = 0; k < QN; ++k) {
        int expect = k >= 10 && k % 7 != 3;
        want += expect;
        assert_int_equal(atomic_load(&c->taken[k]), expect);
    }
    assert_int_equal(atomic_load(&c->images), want);
}

static void test_run_queue(void **state)
{
    (void)state;
    static qsink c;
    memset(&c, 0, sizeof c);
    c.stop_lane = c.fail_lane = -1;
    assert_int_equal(run_queue(&c), 0);
    assert_each_taken_once(&c);
    for (int l = 0; l < QLANES; ++l) {
        assert_int_equal(c.ended[l], 1);
        assert_int_equal(c.end_rc[l], 0);
    }
}

static void test_run_lane_stops(void **state)
{
    (void)state;
    static qsink c;
    memset(&c, 0, sizeof c);
    c.stop_lane = 1;
    c.fail_lane = -1;
    assert_int_equal(run_queue(&c), 0);
    assert_true(atomic_load(&c.batches[1]) <= 1); /* one batch at most, then it stops */
    int want = 0;
    for (int k = 10; k < QN; ++k)
        want += k % 7 != 3;
    assert_int_equal(atomic_load(&c.images), want); /* the others took the rest */
    assert_int_equal(c.end_rc[1], 0);
}

static void test_run_lane_fails(void **state)
{
    (void)state;
    static qsink c;
    memset(&c, 0, sizeof c);
    c.stop_lane = -1;
    c.fail_lane = 0;
    assert_int_equal(run_queue(&c), 1);
    assert_int_equal(c.ended[0], 1);
    assert_int_equal(c.end_rc[0], 9);
    assert_string_equal(c.end_err[0], "lane 0: no slot");
    assert_int_equal(atomic_load(&c.batches[0]), 0);
    for (int l = 1; l < QLANES; ++l) {
        assert_int_equal(c.ended[l], 1);
        assert_int_equal(c.end_rc[l], 0); /* stopped, not failed */
    }
}

/* Lanes of two slots taking their next batch ahead: every image once, the
 * jobs made on another thread; a job failing there reaches the lane's end
 * with its message; a lane that stops drops the batch it took ahead. */
static void test_run_ahead(void **state)
{
    (void)state;
    static qsink c;
    memset(&c, 0, sizeof c);
    c.stop_lane = c.fail_lane = -1;
    c.ahead = 1;
    assert_int_equal(run_queue(&c), 0);
    assert_each_taken_once(&c);
    assert_true(atomic_load(&c.jobs_elsewhere) > 0);

    memset(&c, 0, sizeof c);
    c.stop_lane = c.fail_lane = -1;
    c.ahead = 1;
    c.job_fails = 151; /* not one the queue skips (k % 7 == 3) */
    assert_int_equal(run_queue(&c), 1);
    int failed = 0;
    for (int l = 0; l < QLANES; ++l) {
        assert_int_equal(c.ended[l], 1);
        if (c.end_rc[l] == 7) {
            failed++;
            assert_string_equal(c.end_err[l], "job 151: bad");
        }
    }
    assert_int_equal(failed, 1);

    memset(&c, 0, sizeof c);
    c.stop_lane = 1;
    c.fail_lane = -1;
    c.ahead = 1;
    assert_int_equal(run_queue(&c), 0);
    assert_true(atomic_load(&c.batches[1]) <= 1); /* one batch at most, then it stops */
    assert_int_equal(c.end_rc[1], 0);
    int taken = 0;
    for (int k = 0; k < QN; ++k)
        taken += atomic_load(&c.taken[k]);
    int dropped = taken - atomic_load(&c.images); /* lane 1's batch taken ahead: 5 at most */
    assert_true(dropped >= 0 && dropped <= 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_once),       cmocka_unit_test(test_levels),
        cmocka_unit_test(test_falls_back_once), cmocka_unit_test(test_second_failure_final),
        cmocka_unit_test(test_hook_codes),      cmocka_unit_test(test_run_queue),
        cmocka_unit_test(test_run_lane_stops),  cmocka_unit_test(test_run_lane_fails),
        cmocka_unit_test(test_run_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
