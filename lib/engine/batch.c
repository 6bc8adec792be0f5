/* SPDX-License-Identifier: BSD-3-Clause */
/* One batch on a lane (lib/engine/batch.h). */
#include "lib/engine/batch.h"

#include <stdio.h>

#include "app/base/clock.h"

#define BATCH_ERRLEN 1024

int engine_lane_run(engine_lane *ln, const engine_batch *b, char *err, size_t errlen)
{
    int rc = b->on_levels ? ln->ops->run_levels(ln->backend, b->jobs, b->n, b->levels, b->measures,
                                                err, errlen)
                          : ln->ops->run(ln->backend, b->jobs, b->n, b->images, err, errlen);
    return rc == 0 ? 0 : ENGINE_RUN_FAILED;
}

/* h->buffer, then the run, timed. */
static int try_run(engine_lane *ln, engine_batch *b, const engine_batch_hooks *h, double *run_us,
                   char *err, size_t errlen)
{
    int rc = h->buffer ? h->buffer(h->user, ln, b, err, errlen) : 0;
    if (rc != 0) return rc;
    double t0 = clock_us();
    if (engine_lane_run(ln, b, err, errlen) != 0) return ENGINE_RUN_FAILED;
    if (run_us) *run_us = clock_us() - t0;
    return 0;
}

int engine_lane_run_or_fall_back(engine_lane *ln, engine_batch *b, const engine_batch_hooks *h,
                                 double *run_us, char *err, size_t errlen)
{
    int rc = try_run(ln, b, h, run_us, err, errlen);
    if (rc != ENGINE_RUN_FAILED || ln->ops == &psf_backend_cpu) return rc;
    char why[BATCH_ERRLEN];
    snprintf(why, sizeof why, "%s", err);
    rc = h->fall_back(h->user, ln, why, err, errlen);
    if (rc != 0) return rc;
    return try_run(ln, b, h, run_us, err, errlen);
}
