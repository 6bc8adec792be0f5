/* SPDX-License-Identifier: BSD-3-Clause */
/* Segment numbers drawn onto a picture of a segmented aperture (psfsim
 * --draw-aperture, docs/config.md "Segmented apertures"), with cairo
 * through the plot module (plot_module.h) when psfsim has it. */
#ifndef PSFSIM_SEGMENT_NUMBERS_H
#define PSFSIM_SEGMENT_NUMBERS_H

#include <stddef.h>

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
