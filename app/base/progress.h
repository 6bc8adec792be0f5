/* SPDX-License-Identifier: BSD-3-Clause */
/* A one-line progress bar on stderr (images done, rate, ETA), drawn only
 * when stderr is a terminal and not with -q, at most ten times a second. */
#ifndef PSFSIM_PROGRESS_H
#define PSFSIM_PROGRESS_H

typedef struct {
    int enabled;
    long long total;
    double t_start, t_last;
} progress;

/* enabled: the caller's wish (not -q); the bar shows only on a terminal. */
void progress_start(progress *p, long long total, int enabled);
void progress_update(progress *p, long long done);
/* Final redraw and newline. */
void progress_end(progress *p, long long done);

#endif
