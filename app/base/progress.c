/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/base/progress.h"

#include <stdio.h>
#include <unistd.h>

#include "app/base/clock.h"

#define BAR_WIDTH 30

void progress_start(progress *p, long long total, int enabled)
{
    p->enabled = enabled && isatty(STDERR_FILENO);
    p->total = total;
    p->t_start = p->t_last = clock_us();
}

static void draw(const progress *p, long long done, double now)
{
    double secs = (now - p->t_start) * 1e-6, rate = secs > 0 ? done / secs : 0;
    double eta = rate > 0 ? (p->total - done) / rate : 0;
    int fill = p->total > 0 ? (int)(BAR_WIDTH * done / p->total) : BAR_WIDTH;
    char bar[BAR_WIDTH + 1];
    for (int i = 0; i < BAR_WIDTH; ++i)
        bar[i] = i < fill ? '=' : ' ';
    bar[BAR_WIDTH] = '\0';
    fprintf(stderr, "\r[%s] %lld/%lld images, %.0f img/s, ETA %.1f s ", bar, done, p->total, rate,
            eta);
    fflush(stderr);
}

void progress_update(progress *p, long long done)
{
    if (!p->enabled) return;
    double now = clock_us();
    if (now - p->t_last < 1e5) return;
    p->t_last = now;
    draw(p, done, now);
}

void progress_end(progress *p, long long done)
{
    if (!p->enabled) return;
    draw(p, done, clock_us());
    fputc('\n', stderr);
}
