/* SPDX-License-Identifier: BSD-3-Clause */
/* The logger: psfsim's one global. Messages go to stderr, prefixed "psfsim: ". */
#ifndef PSFSIM_LOG_H
#define PSFSIM_LOG_H

typedef enum { LOG_QUIET = 0, LOG_ERROR = 1, LOG_WARN = 2, LOG_INFO = 3, LOG_DEBUG = 4 } log_level;

/* Set the threshold: messages above it are dropped. Default LOG_WARN. */
void log_set_level(log_level level);
log_level log_get_level(void);

void log_msg(log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Where messages go instead of stderr: sink(level, message, ctx) with the
 * message as it would be printed, without the "psfsim: " prefix and the
 * newline; NULL restores stderr. The library (lib/psfsim.h) sets one, so
 * that it never prints; the command never does. Not thread-safe against
 * messages being logged: set it before any work starts. */
typedef void (*log_sink)(log_level level, const char *message, void *ctx);
void log_set_sink(log_sink sink, void *ctx);
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

/* Say text as a warning unless it was the last text said through this:
 * for psf_backend_options.warn, which every backend create of a run (or of
 * the probe's sizes) may call with the same news about a cache file. */
void log_warn_text(const char *text);

#endif
