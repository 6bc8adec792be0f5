/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/select/gpu_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/text_shown.h"

void gpu_list_all(gpu_list *l)
{
    memset(l, 0, sizeof *l);
    l->all = 1;
}

/* One entry of the comma list: digits only, 0..999. */
static int parse_index(const char *b, size_t len, int *out)
{
    if (len == 0 || len > 3) return -1;
    int v = 0;
    for (size_t i = 0; i < len; ++i) {
        if (b[i] < '0' || b[i] > '9') return -1;
        v = v * 10 + (b[i] - '0');
    }
    *out = v;
    return 0;
}

int gpu_list_parse(const char *s, gpu_list *l, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    if (!strcmp(s, "all")) {
        l->all = 1;
        return 0;
    }
    for (const char *p = s;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int d;
        if (parse_index(p, len, &d) != 0) {
            char shown[41]; /* at most 40 bytes of the entry */
            snprintf(err, errlen,
                     "--gpus: expected \"all\" or device indices like 0,2 (bad entry \"%s\")",
                     text_shown(p, len, shown, sizeof shown));
            return -1;
        }
        for (int i = 0; i < l->n; ++i)
            if (l->dev[i] == d) {
                snprintf(err, errlen, "--gpus: device %d listed twice", d);
                return -1;
            }
        if (l->n == GPU_LIST_MAX) {
            snprintf(err, errlen, "--gpus: at most %d devices", GPU_LIST_MAX);
            return -1;
        }
        l->dev[l->n++] = d;
        if (!comma) return 0;
        p = comma + 1;
    }
}

int gpu_list_resolve(const gpu_list *l, int count, int *dev, int *n, char *err, size_t errlen)
{
    *n = 0;
    if (l->all) {
        for (int d = 0; d < count && d < GPU_LIST_MAX; ++d)
            dev[(*n)++] = d;
        return 0;
    }
    for (int i = 0; i < l->n; ++i) {
        if (l->dev[i] >= count) {
            snprintf(err, errlen, "--gpus: device %d asked for, but %d %s visible (0..%d)",
                     l->dev[i], count, count == 1 ? "is" : "are", count - 1);
            *n = 0;
            return -1;
        }
        dev[(*n)++] = l->dev[i];
    }
    return 0;
}

const char *gpu_list_format(const int *dev, int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < len; ++i)
        used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? "," : "", dev[i]);
    return buf;
}
