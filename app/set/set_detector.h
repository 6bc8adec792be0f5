/* SPDX-License-Identifier: BSD-3-Clause */
/* The config's detector group as the image set's computed grid and the
 * backends' psf_detector (docs/design.md, "Detector"). */
#ifndef PSFSIM_SET_DETECTOR_H
#define PSFSIM_SET_DETECTOR_H

#include <stddef.h>

#include "app/set/image_set_types.h"

/* After the propagation is chosen (image_set_init): with detector.oversample
 * s the set computes s M x s M pixels of the detector pixel over s (the FFT:
 * N' = s N from the same pupil, Q' = s Q; the MFT: s M pixels of pixel / s),
 * M the grid the config's sampling and output keys give (the detector's).
 * detector.write = "detector": samp.npix stays M and calc_div = s;
 * "oversampled": samp.npix = s M and the pixel fields are the grid's
 * (calc_div = 1). Fills s->detector but its jitter (set_detector_jitter,
 * the next step). Without the group: calc_npix = samp.npix, calc_div = 1.
 * Normalisation (image_set_job): the detector image keeps the grid image's
 * flux ("sum" sums to 1, "pupil" the captured fraction); with "peak" a
 * detector pixel is its mean intensity, 1 = the unaberrated peak (the
 * components' scale over calc_div^2), so images of any s compare;
 * info.ref_peak is the unaberrated peak in the written image's units
 * (strehl: the pixelated Strehl ratio, the peak pixel's mean over the point
 * peak). Returns 0, or -1 with "FILE:LINE: key: ..." in err. */
int set_detector_init(image_set *s, char *err, size_t errlen);

/* After set_detector_init (image_set_init's next step): s->detector's
 * jitter as detector pixels, from milliarcseconds through the detector
 * pixel's angle, or from lambda_ref/D, at common, the set's common image
 * (image_set_common_info of s as set_detector_init left it: its pixel
 * fields are the written grid's). Refused when that conversion differs
 * between the set's images (a wavelength sweep with a pixel fixed in the
 * other unit). Without the group or a jitter: nothing. Returns 0, or -1
 * with "FILE:LINE: key: ..." in err. Apart from set_detector_init so that
 * this room needs image_set's types alone (image_set_types.h), not its
 * functions. */
int set_detector_jitter(image_set *s, const image_info *common, char *err, size_t errlen);

/* The written image's pixels per detector pixel: s when it is the
 * oversampled grid (detector.write = "oversampled", and the view
 * set_detector_oversampled_view makes of "both"), whose pixel is the
 * output keys' over s (set_detector_init divides the set's pixel by it);
 * else 1. */
int set_detector_written_div(const psf_config *cfg);

/* detector.write = "both" (docs/config.md, "detector"): the set is the
 * detector set (samp.npix = M, calc_div = s) but the backends return the
 * convolved grid, unsampled (s->detector.sample = 0): run()'s images are
 * set_detector_backend_npix(s) square, calc_npix (s M); else samp.npix. */
int set_detector_backend_npix(const image_set *s);

/* "both": view = s as "oversampled" would have set it (samp.npix = s M,
 * the pixel fields over s, the FFT's padding times s, calc_div 1), cfg a
 * copy of s->cfg with write = "oversampled" (the FITS keywords of the
 * OVERSAMP HDU). A shallow copy: it shares s's pointers and is never
 * freed; valid while s and cfg are. */
void set_detector_oversampled_view(const image_set *s, psf_config *cfg, image_set *view);

/* "both", on a backend image grid (calc_npix^2, row-major): det[M^2] =
 * the detector image, psf_detector_sample's s^2 grid[i s + o][j s + o]
 * (backend/detector.c: the same float arithmetic as the backends', so it
 * equals a "detector" run's image); then grid becomes the "oversampled"
 * run's image: times s^2 with normalization = "peak" (1 = the
 * unaberrated peak of the grid, set_detector_init), else as it is. */
void set_detector_split(const image_set *s, float *grid, float *det);

/* "both": info (image k's, from image_set_job on s, before
 * image_set_measure) made the oversampled image's: the pixel fields over
 * s, sampling_q the "oversampled" set's (Q s for the FFT), ref_peak per
 * grid pixel (over s^2, but with "peak" where it is 1 in both). */
void set_detector_oversampled_info(const image_set *s, image_info *info);

#endif
