#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static log_level g_level = LOG_WARN;

void log_set_level(log_level level)
{
    g_level = level;
}
log_level log_get_level(void)
{
    return g_level;
}

void log_msg(log_level level, const char *fmt, ...)
{
    if (level > g_level || level == LOG_QUIET) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("psfsim: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
