/* SPDX-License-Identifier: BSD-3-Clause */
/* An image set ready to compute: the config's sampling, aperture (with its
 * map loaded), OPD map and Zernike modes, the propagation (FFT, or the MFT
 * onto the output grid), and for each image k its psf_job (components,
 * coefficients, normalisation) and metadata. */
#ifndef PSFSIM_IMAGE_SET_H
#define PSFSIM_IMAGE_SET_H

#include <stddef.h>

#include "backend/backend.h"
#include "app/config/config.h"
#include "app/set/image_set_types.h"

/* Bytes of aperture grids a set keeps for its backend (IMAGE_SET_GRIDS_BYTES:
 * one 4096x4096 grid; app/run/set_limits.c counts them). */
#define IMAGE_SET_GRIDS_BYTES (64ULL << 20)

/* Load the table (axes_init) and the maps the config names and fix
 * sampling, modes, labels and the propagation: the FFT unless output.npix / output.pixel_scale[_um]
 * define a grid other than the FFT's (npix != N, or the pixel differs from n/N lambda_ref/D by more
 * than 1e-12 relative for some image), or cfg->mft_force; then the MFT (README, "Conventions").
 * Returns 0, or -1 with a message naming the file (maps) or key in err; a set with a table or
 * random axis and FITS output also refuses more than the 256 terms a FITS header holds ("CFG:LINE:
 * KEY: the set has N Zernike terms, ..."). */
int image_set_init(image_set *s, const psf_config *cfg, char *err, size_t errlen);
void image_set_free(image_set *s);

/* The backend's view of the set: the problem, for max_batch images per run(),
 * with what its jobs span (pupil samples, pitches, MFT matrices) for the
 * backends' memory_need. */
void image_set_problem(const image_set *s, int max_batch, psf_problem *problem);

/* Doubles of storage image_set_job needs per image (coefficients of every
 * component, the totals in config units, sweep scratch). */
size_t image_set_storage(const image_set *s);

/* Fill job and info for image k, using storage (image_set_storage doubles,
 * alive as long as job and info are used); info's pixel fields are computed
 * here once, so the writers only format them. The components' scale makes the
 * image "peak"- or "sum"-normalised (docs/design.md): with S1 = sum A and
 * S2 = sum A^2 of a component's pupil on the N x N grid, Parseval gives
 * sum |F|^2 = N^2 S2 and the unaberrated peak |F(0)|^2 = S1^2 (Goodman,
 * Fourier Optics, 2.1), so scale = w / (N^2 S2), divided by the
 * unaberrated peak sum_c w_c S1_c^2 / (N^2 S2_c) for "peak"; "pupil" keeps
 * the scale of "sum" (unit power through the pupil). Broadband
 * components share one angular pixel: pitch dx_c = (D/n) lambda_c/lambda_min.
 * MFT: every component has pitch dx = D/n and the output pixel p (rad) =
 * pixel_ld lambda_ref/D, pixel_um / (f_number D), or pixel_rad; N above becomes
 * N_c = lambda_c / (dx p), the number of pixels in one period of the
 * sampled pupil's transform, so each component still carries energy w_c
 * over a period and the axis pixel is S1^2 exactly; "sum" is then made
 * exact by image_set_finish_image. Returns 0 or -1 with err (the aperture
 * grid could not be built). */
int image_set_job(image_set *s, long long k, double *storage, psf_job *job, image_info *info,
                  char *err, size_t errlen);

/* Before any work (after the machine's limits are checked: it fills the
 * aperture grid of every pupil pitch, as the first image would): the
 * aperture sums of image 0, which has every pitch of the set, so that a
 * fully closed aperture (an obscuration or spiders covering it at this
 * sampling) is refused up front. Returns 0, or -1 with "FILE:LINE:
 * optics.aperture: no sample of the NxN pupil grid ... is open: ..." in
 * err. */
int image_set_check_open(image_set *s, char *err, size_t errlen);

/* After the backend, before metrics and writers: "sum" normalisation of an
 * MFT image, which must sum to 1 over its finite field (Parseval no longer
 * gives it): img[npix * npix] (samp.npix) is divided by its sum, accumulated
 * in double, and info->ref_peak with it. Does nothing for FFT sets and
 * "peak" (their scale is exact already), nor for an all-zero image.
 * "pupil": the image is left as image_set_job's scale made it (unit power
 * through the pupil: the FFT's N x N field, a whole period, sums to 1; an MFT
 * window of M x M pixels to the fraction it captures) and its sum, in
 * double, goes to info->captured_fraction. */
void image_set_finish_image(const image_set *s, image_info *info, float *img);

/* The image's wavelength as every output labels it (FITS WAVELEN, the
 * manifest's, NAME.h5's, the cube's and the library's wavelength_nm), nm:
 * one wavelength's own; broadband the weighted mean sum w_c lambda_c over
 * its components (POPPY's WAVELEN), not the shortest (info->wavelength_nm,
 * the pixel scale's reference, FITS REFWAVE). */
double image_info_wavelength_nm(const image_info *info);

/* 1 when the images take their wavelengths one each (sweep.wavelength_nm,
 * sweep.random.wavelength_nm, a table's wavelength_nm column: they replace
 * optics.wavelength_nm), so that the pixel scale in lambda/D or on the sky
 * is the image's own (its record's); else 0. */
int image_set_wavelength_per_image(const image_set *s);

/* The set's wavelengths as every writer states them (NAME.h5's
 * wavelengths_nm attribute, the sidecar's set object, the library's
 * psfsim_info) and the cost model counts them: the one place that knows
 * where they come from, so the writers cannot diverge (they did, c06c188:
 * NAME.h5 and the sidecar stated optics.wavelength_nm for sets whose draws
 * replace it). The sidecar's config object (app/dataset/config_json.h)
 * records the keys as given instead. */
typedef struct {
    /* 1: each image takes its own wavelength (image_set_wavelength_per_image:
     * sweep.wavelength_nm, sweep.random.wavelength_nm or a table's
     * wavelength_nm column), in its record; the set then has no list, and
     * no pixel of its own. */
    int per_image;
    /* Without per_image, optics.wavelength_nm or optics.wavelengths_nm,
     * nm, and their weights (sum 1): the n components summed into every
     * image (n = 1: monochromatic). With per_image n = 0 and both NULL. */
    int n;
    const double *nm;
    const double *weights;
} set_wavelength_list;

/* Fill w for set s (no allocation: w points into s->cfg, valid while it
 * is). */
void image_set_wavelengths(const image_set *s, set_wavelength_list *w);

/* The record of what every image of the set shares (the FITS cube's
 * header): no swept values, coeff_units NULL, wavelength_nm the shortest of
 * optics.wavelength_nm (without one: the first listed wavelength, 500 when
 * there is none) and the pixel fields at it. */
void image_set_common_info(const image_set *s, image_info *info);

#endif
