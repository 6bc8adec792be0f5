/* SPDX-License-Identifier: BSD-3-Clause */
/* After the backend: an image finished and measured, the same for the
 * psfsim command (app/run_loop.c) and the library (lib/compute.c). */
#ifndef PSFSIM_MEASURE_H
#define PSFSIM_MEASURE_H

#include "app/set/image_set.h"

/* Finish image img[npix * npix] of set s (image_set_finish_image: the MFT
 * "sum" normalisation, which rescales info->ref_peak too), then its Strehl
 * ratio, the image peak over the unaberrated peak info->ref_peak, into
 * *strehl, and the axis pixel (npix/2, npix/2) over the same peak into
 * *axial (docs/design.md, "Normalisation"; the manifest's strehl and
 * axial_intensity). With output.orientation = "poppy" both are measured
 * first, then img is turned 180 degrees in place (docs/conventions.md): the
 * axis pixel measured is the computed grid's (npix/2, npix/2), half a pixel
 * from the axis along both axes for even npix, pixel (npix/2 - 1, npix/2 - 1)
 * of the image written. No errors: a NaN image gives NaN. */
void image_set_measure(const image_set *s, image_info *info, float *img, double *strehl,
                       double *axial);

#endif
