/* SPDX-License-Identifier: BSD-3-Clause */
/* Status names, the version, messages and range checks (lib/psfsim.h). */
#include <stdarg.h>
#include <stdio.h>

#include "app/base/log.h"
#include "lib/set_priv.h"

const char *psfsim_status_name(int status)
{
    static const char *const names[] = {"ok",      "argument", "config", "range",     "buffer",
                                        "backend", "compute",  "memory", "cancelled", "busy"};
    return status >= 0 && status < (int)(sizeof names / sizeof *names) ? names[status] : "unknown";
}

const char *psfsim_version(void)
{
    return PSFSIM_VERSION;
}

int lib_fail(char *err, size_t errlen, int status, const char *fmt, ...)
{
    if (!err || errlen == 0) return status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return status;
}

int lib_enter(psfsim_set *s, const char *what, char *err, size_t errlen)
{
    if (!atomic_flag_test_and_set(&s->busy)) return PSFSIM_OK;
    return lib_fail(err, errlen, PSFSIM_ERR_BUSY,
                    "%s: the set is busy with another call (from another thread, or from its "
                    "progress callback): a set takes one call at a time; open one set per thread",
                    what);
}

void lib_leave(psfsim_set *s)
{
    atomic_flag_clear(&s->busy);
}

int lib_check_range(const psfsim_set *s, long long first, long long count, char *err, size_t errlen)
{
    long long k = s->e.set.nimages;
    if (first >= 0 && count >= 0 && first <= k && count <= k - first) return PSFSIM_OK;
    /* the last image first + count - 1, where it is a long long (count =
     * LLONG_MAX would overflow it: undefined behaviour) */
    long long c1, last;
    if (!__builtin_sub_overflow(count, 1, &c1) && !__builtin_add_overflow(first, c1, &last))
        return lib_fail(err, errlen, PSFSIM_ERR_RANGE,
                        "images %lld..%lld (first %lld, count %lld) are not in the set of %lld "
                        "(0..%lld)",
                        first, last, first, count, k, k - 1);
    return lib_fail(err, errlen, PSFSIM_ERR_RANGE,
                    "images from %lld, count %lld (the last index is outside the 64-bit range) are "
                    "not in the set of %lld (0..%lld)",
                    first, count, k, k - 1);
}

/* The handler the user set, read by the logger's sink on any thread. */
typedef struct {
    psfsim_message_fn fn;
    void *user;
} handler;

static _Atomic(handler *) g_handler;
static handler g_slots[2]; /* the one in use and the next: no free while in use */
static pthread_once_t g_sink_once = PTHREAD_ONCE_INIT;

static void sink(log_level level, const char *message, void *ctx)
{
    (void)ctx;
    handler *h = atomic_load(&g_handler);
    if (h && h->fn) h->fn((int)level, message, h->user);
}

/* The library never prints: from its first use every message goes to the
 * sink (the command's copy of the logger is another, its own). */
static void install_sink(void)
{
    log_set_sink(sink, NULL);
    log_set_level(LOG_QUIET);
}

void psfsim_set_message_handler(psfsim_message_fn fn, int max_level, void *user)
{
    pthread_once(&g_sink_once, install_sink);
    static int next;
    handler *h = &g_slots[next];
    next ^= 1;
    h->fn = fn;
    h->user = user;
    atomic_store(&g_handler, fn ? h : NULL);
    log_set_level(fn ? (log_level)(max_level < 0 ? 0 : max_level > 4 ? 4 : max_level) : LOG_QUIET);
}

void lib_messages_init(void)
{
    pthread_once(&g_sink_once, install_sink);
}
