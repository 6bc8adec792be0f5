/* An image set ready to compute: the config's sampling, aperture (with its
 * map loaded), OPD map and Zernike modes, and for each image k its
 * psf_job (components, coefficients, normalisation) and metadata. */
#ifndef PSFSIM_IMAGE_SET_H
#define PSFSIM_IMAGE_SET_H

#include <stddef.h>

#include "backend.h"
#include "config.h"
#include "jobs.h"
#include "optics/sampling.h"

typedef struct {
    double dx_m;
    double sum_a;  /* sum of the transmission over the grid */
    double sum_a2; /* sum of its square: the pupil's energy */
} aperture_sums;

typedef struct {
    const psf_config *cfg;
    psf_sampling samp;
    psf_modeset modes;
    psf_aperture aperture; /* cfg's, with the map attached for shape = file */
    float *aperture_map;
    int map_rows, map_cols;
    float *opd_map;        /* NULL without aberrations.opd_map */
    int opd_rows, opd_cols;
    long long nimages;
    int nsums;
    aperture_sums sums[PSF_MAX_COMPONENTS];
} image_set;

/* What the writers and the manifest need to know of image k. */
typedef struct {
    psf_image_params params;
    double wavelength_nm; /* the image's wavelength; broadband: the shortest,
                             the one the pixel scale in lambda/D refers to */
    double ref_peak;      /* peak of the unaberrated image in the image's units */
    double *coeff_units;  /* [modes.nterms] total coefficients in the config's units */
} image_info;

/* Load the maps the config names and fix sampling and modes. Returns 0, or
 * -1 with a message naming the file (maps) or key in err. */
int image_set_init(image_set *s, const psf_config *cfg, char *err, size_t errlen);
void image_set_free(image_set *s);

/* The backend's view of the set. */
void image_set_desc(const image_set *s, int max_batch, psf_set_desc *desc);

/* Doubles of storage image_set_job needs per image (coefficients of every
 * component, the totals in config units, sweep scratch). */
size_t image_set_storage(const image_set *s);

/* Fill job and info for image k, using storage (image_set_storage doubles,
 * alive as long as job and info are used). The components' scale makes the
 * image "peak"- or "sum"-normalised (design.md): with S1 = sum A and
 * S2 = sum A^2 of a component's pupil on the N x N grid, Parseval gives
 * sum |F|^2 = N^2 S2 and the unaberrated peak |F(0)|^2 = S1^2 (Goodman,
 * Fourier Optics, 2.1), so scale = w / (N^2 S2), divided by the
 * unaberrated peak sum_c w_c S1_c^2 / (N^2 S2_c) for "peak". Broadband
 * components share one angular pixel: pitch dx_c = (D/n) lambda_c/lambda_min.
 * Returns 0 or -1 with err (the aperture grid could not be built). */
int image_set_job(image_set *s, long long k, double *storage, psf_job *job, image_info *info,
                  char *err, size_t errlen);

#endif
