/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static log_level g_level = LOG_WARN;
static log_sink g_sink;
static void *g_sink_ctx;

void log_set_level(log_level level)
{
    g_level = level;
}
log_level log_get_level(void)
{
    return g_level;
}

void log_set_sink(log_sink sink, void *ctx)
{
    g_sink = sink;
    g_sink_ctx = ctx;
}

void log_msg(log_level level, const char *fmt, ...)
{
    if (level > g_level || level == LOG_QUIET) return;
    /* The whole line in one write: MPI ranks share one stderr, and the
     * lanes' threads log too; pieces written apart interleave. */
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(line, sizeof line, "psfsim: ");
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = m < 0 ? (size_t)n : (size_t)n + (size_t)m;
    if (len > sizeof line - 2) len = sizeof line - 2; /* cut: keep the newline */
    line[len++] = '\n';
    if (g_sink) {
        line[len - 1] = '\0';
        g_sink(level, line + n, g_sink_ctx);
        return;
    }
    fwrite(line, 1, len, stderr);
}

void log_warn_text(const char *text)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static char last[1024];
    pthread_mutex_lock(&mu);
    int again = strncmp(last, text, sizeof last - 1) == 0;
    if (!again) snprintf(last, sizeof last, "%s", text);
    pthread_mutex_unlock(&mu);
    if (!again) log_warn("%s", text);
}
