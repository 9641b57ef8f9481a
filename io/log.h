/* log.h - PMC's log: "[level] text" lines on stderr.
 *
 * Levels, most severe first: fatal, error, warn, info, debug, trace (PMC
 * manual "Logging").  The default is info; each -v raises and each -q lowers
 * it.  Each message is written with a single write(2), so lines from
 * different threads and ranks never interleave inside a line.
 *
 * Thread-safety: every function may be called from any thread; the level is
 * an atomic set once at start-up.
 */
#ifndef PMC_LOG_H
#define PMC_LOG_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

enum pmc_log_level {
    PMC_LOG_FATAL = 0,
    PMC_LOG_ERROR = 1,
    PMC_LOG_WARN = 2,
    PMC_LOG_INFO = 3,
    PMC_LOG_DEBUG = 4,
    PMC_LOG_TRACE = 5,
};

/* Set the level; values outside fatal..trace are clamped. */
void log_set_level(int level);
int log_get_level(void);

/* Redirect the log to fd (default 2).  The fd is not closed by the log. */
void log_set_fd(int fd);

/* When on, each line starts with "\r\033[K" (carriage return, erase to the
 * end of the line): it replaces a progress line that a terminal shows
 * instead of being appended to it.  Off by default. */
void log_set_erase_line(bool on);

/* Add "rank R: " after the level tag; -1 (the default) adds nothing. */
void log_set_rank(int rank);

static inline bool log_enabled(int level)
{
    extern int pmc_log_level__;
    return level <= __atomic_load_n(&pmc_log_level__, __ATOMIC_RELAXED);
}

/* Write one line "[level] text\n"; a trailing newline in fmt is not needed.
 * Lines longer than 4 KiB are cut. */
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define PMC_LOG__(lvl, ...)                                                                        \
    do {                                                                                           \
        if (log_enabled(lvl))                                                                      \
            log_msg(lvl, __VA_ARGS__);                                                             \
    } while (0)
#define log_fatal(...) PMC_LOG__(PMC_LOG_FATAL, __VA_ARGS__)
#define log_error(...) PMC_LOG__(PMC_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) PMC_LOG__(PMC_LOG_WARN, __VA_ARGS__)
#define log_info(...) PMC_LOG__(PMC_LOG_INFO, __VA_ARGS__)
#define log_debug(...) PMC_LOG__(PMC_LOG_DEBUG, __VA_ARGS__)
#define log_trace(...) PMC_LOG__(PMC_LOG_TRACE, __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif
