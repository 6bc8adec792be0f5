/* SPDX-License-Identifier: BSD-3-Clause */
/* Inside the plot module (app/select/plot/): the segment numbers drawn with
 * cairo, its table's numbers entry (plot_abi.h). */
#ifndef PSFSIM_SEGMENT_NUMBERS_DRAW_H
#define PSFSIM_SEGMENT_NUMBERS_DRAW_H

#include <stddef.h>

#include "app/select/plot.h"

/* plot_module_ops.numbers: plot_segment_numbers's contract (plot.h) with
 * cairo at hand. Returns 0, or -1 with err. */
int segment_numbers_draw(unsigned char *gray, int w, int h, const segment_label *labels, int n,
                         double font_px, char *err, size_t errlen);

#endif
