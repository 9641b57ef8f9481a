/* error.c - see error.h. */
#include "io/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int pmc_errorf(struct pmc_error *err, const char *fmt, ...)
{
    int saved = errno;
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        va_end(ap);
    }
    errno = saved;
    return -1;
}
