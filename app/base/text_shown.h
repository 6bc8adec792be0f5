/* SPDX-License-Identifier: BSD-3-Clause */
/* Untrusted text (a command-line argument, an include name) as a message
 * shows it: one line, control characters as '?'. */
#ifndef PSFSIM_TEXT_SHOWN_H
#define PSFSIM_TEXT_SHOWN_H

#include <stddef.h>

/* The first max bytes of s (fewer at a NUL, at most len - 1) into buf
 * (len >= 1 bytes), each control character (< 0x20, 0x7f) as '?'.
 * Returns buf. */
const char *text_shown(const char *s, size_t max, char *buf, size_t len);

#endif
