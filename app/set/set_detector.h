/* SPDX-License-Identifier: BSD-3-Clause */
/* The config's detector group as the image set's computed grid and the
 * backends' psf_detector (docs/design.md, "Detector"). */
#ifndef PSFSIM_SET_DETECTOR_H
#define PSFSIM_SET_DETECTOR_H

#include <stddef.h>

#include "app/set/image_set.h"

/* After the propagation is chosen (image_set_init): with detector.oversample
 * s the set computes s M x s M pixels of the detector pixel over s (the FFT:
 * N' = s N from the same pupil, Q' = s Q; the MFT: s M pixels of pixel / s),
 * M the grid the config's sampling and output keys give (the detector's).
 * detector.write = "detector": samp.npix stays M and calc_div = s;
 * "oversampled": samp.npix = s M and the pixel fields are the grid's
 * (calc_div = 1). Fills s->detector: the jitter as detector pixels, from
 * milliarcseconds through the detector pixel's angle, or from lambda_ref/D;
 * refused when that conversion differs between the set's images (a
 * wavelength sweep with a pixel fixed in the other unit). Without the
 * group: calc_npix = samp.npix, calc_div = 1. Normalisation
 * (image_set_job): the detector image keeps the grid image's flux ("sum"
 * sums to 1, "pupil" the captured fraction); with "peak" a detector pixel
 * is its mean intensity, 1 = the unaberrated peak (the components' scale
 * over calc_div^2), so images of any s compare; info.ref_peak is the
 * unaberrated peak in the written image's units (strehl: the pixelated
 * Strehl ratio, the peak pixel's mean over the point peak). Returns 0, or -1 with
 * "FILE:LINE: key: ..." in err. */
int set_detector_init(image_set *s, char *err, size_t errlen);

#endif
