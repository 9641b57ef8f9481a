/* log.c - see log.h. */
#include "io/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

int pmc_log_level__ = PMC_LOG_INFO;
static int log_fd = 2;
static int log_rank = -1;
static int log_erase_line; /* atomic: set by the master thread, read by all */

static const char *const level_names[] = {"fatal", "error", "warn", "info", "debug", "trace"};

void log_set_level(int level)
{
    if (level < PMC_LOG_FATAL)
        level = PMC_LOG_FATAL;
    if (level > PMC_LOG_TRACE)
        level = PMC_LOG_TRACE;
    __atomic_store_n(&pmc_log_level__, level, __ATOMIC_RELAXED);
}

int log_get_level(void)
{
    return __atomic_load_n(&pmc_log_level__, __ATOMIC_RELAXED);
}

void log_set_fd(int fd)
{
    log_fd = fd;
}

void log_set_erase_line(bool on)
{
    __atomic_store_n(&log_erase_line, on ? 1 : 0, __ATOMIC_RELAXED);
}

void log_set_rank(int rank)
{
    log_rank = rank;
}

void log_msg(int level, const char *fmt, ...)
{
    int saved = errno;
    char line[4096];
    if (level < PMC_LOG_FATAL || level > PMC_LOG_TRACE)
        level = PMC_LOG_ERROR;
    const char *erase = __atomic_load_n(&log_erase_line, __ATOMIC_RELAXED) ? "\r\033[K" : "";
    int n = log_rank >= 0 ? snprintf(line, sizeof line, "%s[%s] rank %d: ", erase,
                                     level_names[level], log_rank)
                          : snprintf(line, sizeof line, "%s[%s] ", erase, level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    if (len > 0 && line[len - 1] == '\n')
        len--;
    line[len++] = '\n';
    ssize_t w = write(log_fd, line, len);
    (void)w; /* nowhere left to report a failing log */
    errno = saved;
}
