/* SPDX-License-Identifier: BSD-3-Clause */
/* NAME_timing.csv: one row per image with its stage times in microseconds
 * (compute: its share of the backend batch; metrics; png and fits encode +
 * write), then run-summary rows whose index cell names the quantity
 * (config_load_us, backend_create_us, wall_us, backend, stage totals and
 * shares of the wall time, ...), its value in total_us or note. A journal
 * like the manifest (journal.h). */
#ifndef PSFSIM_TIMING_H
#define PSFSIM_TIMING_H

#include <stddef.h>

#include "app/formats/journal.h"
#include "app/output/manifest.h"

typedef struct {
    journal j;
    csv_cell cells[3]; /* compute_us (one per batch), png_us, fits_us */
} timing_writer;

typedef struct {
    double compute_us, metrics_us, png_us, fits_us;
} image_timing;

/* Create the file name in the directory dirfd (dir: for messages;
 * journal.h) with the header and the kept rows (from a resumed run). */
int timing_open(timing_writer *w, int dirfd, const char *dir, const char *name, char *const *keep,
                long long nkeep, char *err, size_t errlen);
extern const char timing_header[];
void timing_add(timing_writer *w, long long k, const char *backend, const image_timing *t);
/* A summary row: name, a value in microseconds (NaN = none) and a note. */
void timing_summary(timing_writer *w, const char *name, double value_us, const char *note);
int timing_flush(timing_writer *w, char *err, size_t errlen);
int timing_close(timing_writer *w, char *err, size_t errlen);

#endif
