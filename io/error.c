/* error.c - see error.h. */
#include "io/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int pmc_verrorf(struct pmc_error *err, const char *fmt, va_list ap)
{
    int saved = errno;
    if (err)
        vsnprintf(err->text, sizeof err->text, fmt, ap);
    errno = saved;
    return -1;
}

int pmc_errorf(struct pmc_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pmc_verrorf(err, fmt, ap);
    va_end(ap);
    return -1;
}
