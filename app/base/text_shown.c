/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/base/text_shown.h"

const char *text_shown(const char *s, size_t max, char *buf, size_t len)
{
    size_t i = 0;
    for (; i < max && s[i] && i + 1 < len; ++i)
        buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    buf[i] = '\0';
    return buf;
}
