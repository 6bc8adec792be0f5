/* SPDX-License-Identifier: BSD-3-Clause */
/* The check of a computed batch (app/run/run_sink.c), in a file of its own. */
#ifndef PSFSIM_RUN_CHECK_H
#define PSFSIM_RUN_CHECK_H

#include <stddef.h>

#include "app/run/run_state.h"

/* Every image of slot s's nb finite and non-negative (|F|^2 and sums of
 * it with weights >= 0 are): else none of the batch goes to the writers
 * and the run fails (exit 3) naming the first bad image, so no file holds
 * garbage and the manifest lists only good images. A levels batch
 * (run_slot.on_levels) is judged by the counts its backend measured
 * (PSF_MEASURE_NAN, _INF, _NEG), the same counts the message gives for a
 * float batch, whose first bad image first_bad (nb for none) the measure
 * pass found (image_set_measure's flag: app/run/run_sink.c); the message counts
 * that image's pixels. Returns 0 or -1 with err. */
int run_check_images(run_state *r, int s, int nb, int first_bad, char *err, size_t errlen);

#endif
