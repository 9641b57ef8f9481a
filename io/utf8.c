/* utf8.c - see utf8.h. */
#include "io/utf8.h"

#include <stdlib.h>
#include <string.h>

size_t utf8_sequence(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    /* the length and the range of the second byte (RFC 3629, section 4) */
    size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4
                                          : 0;
    unsigned lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    unsigned hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    if (len == 0 || n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

bool utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t k; n > 0; p += k, n -= k)
        if ((k = utf8_sequence(p, n)) == 0)
            return false;
    return true;
}

char *utf8_lossy(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *o = out; /* each bad byte grows to 3 */
    if (!out)
        return NULL;
    while (n > 0) {
        size_t k = utf8_sequence(p, n);
        if (k == 0) {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
            k = 1;
        } else {
            memcpy(o, p, k);
            o += k;
        }
        p += k;
        n -= k;
    }
    *o = '\0';
    return out;
}
