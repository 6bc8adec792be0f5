/* The logger: psfsim's one global. Messages go to stderr, prefixed "psfsim: ". */
#ifndef PSFSIM_LOG_H
#define PSFSIM_LOG_H

typedef enum { LOG_QUIET = 0, LOG_ERROR = 1, LOG_WARN = 2, LOG_INFO = 3, LOG_DEBUG = 4 } log_level;

/* Set the threshold: messages above it are dropped. Default LOG_WARN. */
void log_set_level(log_level level);
log_level log_get_level(void);

void log_msg(log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

/* Say text as a warning unless it was the last text said through this:
 * for psf_backend_options.warn, which every backend create of a run (or of
 * the probe's sizes) may call with the same news about a cache file. */
void log_warn_text(const char *text);

#endif
