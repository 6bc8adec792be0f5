/* SPDX-License-Identifier: BSD-3-Clause */
/* The image set's types (image_set, image_info, aperture_sums), apart from
 * its functions (image_set.h). image_set_init's steps in rooms of their own
 * (set_detector: the detector group; set_checks: the maps' checks and the
 * warnings) fill or read an image_set, so they include these types and
 * image_set.c calls them: the rooms go one way, image_set -> set_detector,
 * set_checks -> image_set_types. */
#ifndef PSFSIM_IMAGE_SET_TYPES_H
#define PSFSIM_IMAGE_SET_TYPES_H

#include "backend/backend.h"
#include "app/config/config.h"
#include "app/set/axes.h"
#include "app/set/jobs.h"
#include "app/set/maps.h"
#include "app/set/labels.h"
#include "app/set/segterms.h"
#include "optics/aperture_cache.h"
#include "optics/sampling.h"

typedef struct {
    double dx_m;
    double sum_a;  /* sum of the transmission over the grid */
    double sum_a2; /* sum of its square: the pupil's energy */
} aperture_sums;

typedef struct {
    const psf_config *cfg;
    /* samp.npix is the size of every image (npix x npix, axis at npix/2):
     * the FFT size N, or output.npix with the MFT; the other fields are the
     * config's pupil sampling (samp.padding = N/n even with the MFT). The
     * pixel scale is in image_info (image_set_job): sampling_pixscale_*(&samp)
     * hold only for the FFT. */
    psf_sampling samp;
    int fft_npix;   /* N = floor(padding n + 0.5), the FFT size */
    int mft;        /* 1: every image by MFT (the output grid differs from the FFT's) */
    int pupil_npix; /* the grid the pupil is sampled on: N, or n + 4 with the MFT */
    int half_pixel; /* output.orientation = "poppy" with an even computed grid (s M): the MFT's grid
                       has its axis between pixels (psf_problem.half_pixel) */
    double pixel_ld; /* MFT: output pixel in lambda_ref/D (output.pixel_scale, default
                        n/N); 0 when pixel_um or pixel_rad gives it */
    double pixel_um; /* MFT: output.pixel_scale_um, focal-plane um; 0 = not used */

    /* MFT: output.pixel_scale_arcsec as an angle (rad); 0 = not used. */
    double pixel_rad;
    /* The detector group (app/set/set_detector.h): the backends compute a
     * calc_npix x calc_npix grid whose pixel is the written image's over
     * calc_div (oversample for detector images, 1 for oversampled ones),
     * and run detector's stage; without the group calc_npix = samp.npix,
     * calc_div = 1 and detector is all zero. */
    int calc_npix, calc_div;
    psf_detector detector;
    /* When the set was opened, UTC "YYYY-MM-DDThh:mm:ss" (the FITS DATE):
     * SOURCE_DATE_EPOCH (seconds since 1970, the reproducible-builds
     * convention) when set and valid, else the clock. */
    char date_utc[24];
    /* The manifest's config_hash (the config's fingerprint), for the FITS
     * CFGHASH; "" until the caller fills it (app/run/run.c, after image_set_init). */
    char config_hash[24];
    /* The command line that runs the set, for the FITS HISTORY; "" = none
     * (the library), until the caller fills it (app/run/run.c). */
    char command[1024];
    set_axes axes;         /* the table and random axes; axes.nimages = nimages */
    psf_modeset modes;     /* jobs_modeset(&axes) */
    set_labels labels;     /* the label terms (labels.h): the manifest's and HDF5's z<j> */
    set_segterms segterms; /* segmented apertures' per-segment terms (segterms.h) */
    psf_aperture aperture; /* cfg's, with the map attached for shape = file */
    float *aperture_map;
    int map_rows, map_cols;
    float *opd_map; /* NULL without aberrations.opd_map */
    int opd_rows, opd_cols;
    double opd_width_m, opd_height_m; /* its extent when placed at a pixel scale, else 0 (D) */
    maps_opd_units opd_units;         /* opd_map's unit (nm or waves) and its source */
    long long nimages;
    int nsums;
    aperture_sums sums[PSF_MAX_COMPONENTS];
    aperture_cache *grids; /* the aperture grids filled for the sums, which the CPU
                              backend's pupils reuse (psf_problem.aperture_grids);
                              NULL: none kept */
} image_set;

/* What the writers and the manifest need to know of image k. */
typedef struct {
    psf_image_params params;
    double wavelength_nm; /* the image's reference wavelength; broadband: the
                             shortest, the one the pixel scale in lambda/D refers
                             to (FITS REFWAVE); its label is image_info_wavelength_nm */
    double ref_peak;      /* peak of the unaberrated image in the image's units */
    double *coeff_units;  /* [modes.nterms] total coefficients in the config's units */
    double *seg_units;    /* [segterms_count] each segment's totals in the config's units
                             (segterms.h's layout); NULL without segment terms */
    /* The image grid's pixel (the FFT's, or the MFT's output grid), at
     * wavelength_nm: FFT (n/N) lambda_ref/D as sampling.h; MFT the output
     * grid's (output.pixel_scale, output.pixel_scale_um / (F lambda), or
     * output.pixel_scale_arcsec, the same angle at every wavelength). */
    double pixel_lambda_d; /* lambda/D */
    double pixel_arcsec;   /* arcseconds on the sky */
    double pixel_um;       /* focal-plane micrometres; NAN without f_number */
    double sampling_q;     /* Q = (lambda/D) / pixel: N/n (samp.padding) for the FFT,
                              1 / pixel_lambda_d (what an FFT would need) for the MFT */

    /* normalization = "pupil": the image's sum, the fraction of the pupil's
     * power its field captures (image_set_finish_image); NAN otherwise. */
    double captured_fraction;
} image_info;

#endif
