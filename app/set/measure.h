/* SPDX-License-Identifier: BSD-3-Clause */
/* After the backend: an image finished and measured, the same for the
 * psfsim command (app/run/run_sink.c) and the library (lib/compute.c). */
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
 * of the image written. Returns 1 when every pixel is in [0, FLT_MAX]
 * (finite and non-negative, as |F|^2 and sums of it with weights >= 0 are),
 * 0 when one is not (NaN, infinite or negative: checked in the peak's pass,
 * so the command's check of a batch costs no pass of its own); the results
 * are then whatever the pixels give (a NaN image gives NaN). */
int image_set_measure(const image_set *s, image_info *info, float *img, double *strehl,
                      double *axial);

/* image_set_measure with the peak pass's results known: scan (the backend's,
 * psf_job.done), or NULL for the pass. The scan stands for the pass only
 * where finishing leaves the image as it is (not an MFT "sum" set). */
int image_set_measure_scanned(const image_set *s, image_info *info, float *img,
                              const psf_image_scan *scan, double *strehl, double *axial);

/* Whether set s's levels and image_set_measure's results can be made from
 * a levels run (psf_backend_ops.run_levels, issue 17) without the image:
 * no detector stage (its images are M x M, and "both" splits the grid
 * image on the host), no MFT "sum" normalisation (it rescales the image
 * by its sum before the stretch). Then 1, with *out the levels output
 * (output.png's bits, stretch and dynamic range, which output.hdf5's
 * uint16 levels and the library's psfsim_compute_u16 use too; rotate_180
 * for output.orientation "poppy", the turn image_set_measure makes); else
 * 0 with *out zeroed. */
int image_set_levels_stretch(const image_set *s, psf_levels_out *out);

/* image_set_levels_stretch for a set whose files need nothing but levels:
 * every image output is levels (output.png, output.hdf5 dtype uint16: at
 * least one of them), none needs the floats (no FITS file or cube, no
 * detector.noise, drawn from the float image; no float32 HDF5). 1 with
 * *out, or 0 with *out zeroed. */
int image_set_levels_out(const image_set *s, psf_levels_out *out);

/* image_set_measure from a levels run's measures m[PSF_MEASURES]
 * (backend/levels.h) instead of the image: the same Strehl ratio and axis
 * value (from the same float peak and pixel), and for normalization
 * "pupil" the captured fraction from m's total (the CPU's is the same
 * pixel-order sum; the GPU's sums in another order, which can change its
 * last bits). For sets image_set_levels_out accepts. */
void image_set_measure_levels(const image_set *s, image_info *info, const double *m, double *strehl,
                              double *axial);

#endif
