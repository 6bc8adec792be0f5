/* SPDX-License-Identifier: BSD-3-Clause */
/* Test harness: compute image k of a config given as text, through the same
 * path psfsim takes (config_load -> image_set -> backend). */
#ifndef PSFSIM_PSF_HARNESS_H
#define PSFSIM_PSF_HARNESS_H

#include "backend/backend.h"
#include "app/set/image_set.h"

typedef struct {
    int npix;
    float *img;      /* npix * npix, malloc'd */
    double ref_peak; /* unaberrated peak in the image's units */
    double strehl, axial;
    double captured; /* image_info's captured_fraction (NAN unless "pupil") */
} psf_result;

/* Compute image k of the config text with backend ops (NULL = CPU).
 * Returns 0, or -1 after printing the error. Free with harness_free. */
int harness_compute(const char *cfg_text, long long k, const psf_backend_ops *ops, psf_result *out);
/* Compute all images of the config text into one malloc'd array
 * (nimages * npix * npix); *nimages and *npix set. NULL on error. */
float *harness_compute_all(const char *cfg_text, const psf_backend_ops *ops, long long *nimages,
                           int *npix);
void harness_free(psf_result *r);

/* The GPU backend when there is a device to test on; NULL with why (no
 * CUDA backend built, or "no CUDA device ...": the test skips). Any other
 * failure to create returns the backend, so that the tests fail on it. */
const psf_backend_ops *harness_gpu(char *why, size_t whylen);

#endif
