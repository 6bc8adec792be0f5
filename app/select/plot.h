/* SPDX-License-Identifier: BSD-3-Clause */
/* What psfsim draws with cairo (cairographics.org): the probe's plot
 * (psfsim --probe) and the segment numbers on a segmented aperture's picture
 * (psfsim --draw-aperture, docs/config.md "Segmented apertures"). Drawn by
 * the plot module, libpsfsim-plot.so (app/select/plot/), built when cairo is
 * found and loaded only when one is drawn (app/select/plot_loader.c, the
 * table plot_abi.h). */
#ifndef PSFSIM_PLOT_H
#define PSFSIM_PLOT_H

#include <stddef.h>

#include "app/select/probe.h"

/* The probe's plot: time per image against N, log-log, for the CPU and the
 * GPU at batch 1 and at the large batch, crossovers marked.
 * Write the plot to path (PNG, atomically), marking crossovers[0] and
 * crossovers[1], the crossover sizes N at batch 1 and at the large batch
 * (0: none marked), which the caller computes (probe_crossover). Returns 0;
 * 1 when built without cairo (no plot module) or when the module cannot be
 * loaded (reason in err: the plot is skipped); -1 with err on failure. */
int probe_plot(const probe_figures *f, const double crossovers[2], const char *path, char *err,
               size_t errlen);

/* One number and where its centre goes, in pixels: x along a row from the
 * left edge of column 0, y down the rows from the top edge of row 0 (the
 * centre of pixel (r, c) is (c + 0.5, r + 0.5)). */
typedef struct {
    double x, y;
    int number;
    int present; /* 1: drawn black (on an open segment); 0: grey (a left-out one) */
} segment_label;

/* Draw labels[0..n-1] onto gray (w x h 8-bit grey levels, row-major, row 0
 * the top row) in place, each number centred on its point, font_px high
 * (cairo's toy font, sans-serif bold). Returns 0; 1 when psfsim was built
 * without cairo or the plot module cannot be loaded (why in err: gray is
 * left as it was); -1 with err on failure. */
int plot_segment_numbers(unsigned char *gray, int w, int h, const segment_label *labels, int n,
                         double font_px, char *err, size_t errlen);

#endif
