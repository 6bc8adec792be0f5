/* NAME_timing.csv: one row per image with its stage times in microseconds
 * (compute: its share of the backend batch; metrics; png and fits encode +
 * write), then run-summary rows whose index cell names the quantity
 * (config_load_us, backend_create_us, wall_us, backend, ...), its value in
 * total_us or note. Written through a temp file like the manifest. */
#ifndef PSFSIM_TIMING_H
#define PSFSIM_TIMING_H

#include <stddef.h>

#include "atomic_file.h"

typedef struct {
    atomic_file af;
} timing_writer;

typedef struct {
    double compute_us, metrics_us, png_us, fits_us;
} image_timing;

int timing_open(timing_writer *w, const char *path, char *err, size_t errlen);
void timing_add(timing_writer *w, long long k, const char *backend, const image_timing *t);
/* A summary row: name, a value in microseconds (NaN = none) and a note. */
void timing_summary(timing_writer *w, const char *name, double value_us, const char *note);
int timing_close(timing_writer *w, char *err, size_t errlen);

#endif
