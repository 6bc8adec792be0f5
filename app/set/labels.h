/* SPDX-License-Identifier: BSD-3-Clause */
/* The label terms of an image set: the Zernike terms that are non-zero
 * anywhere in the set, whose per-image totals the manifest's z<j> columns
 * (app/output/manifest.c) and the HDF5 writer's labels give. One list for both
 * writers, fixed at set init:
 *   a term counts when its aberrations.zernike value is non-zero, or any of
 *   its sweep.zernike values is, or any cell of its table column z<j> is,
 *   or its sweep.random width (sigma, half-width, the spectrum's sigma_j)
 *   is > 0, or its field model's value at any field position is;
 *   Z(2, 0) (index 4 in every convention) also counts when any
 *   sweep.defocus or sweep.focus_shift_um value, any cell of the table's
 *   defocus or focus_shift_um column, or any sweep.random.focus_shift_um
 *   value is non-zero.
 * The terms are in ascending j of the config's convention; term i's total
 * for an image is coeff_units[mode[i]] of its image_info (image_set.h),
 * the FITS header's Z<j>, in aberrations.units (focus shift included in
 * Z(2, 0), in waves at the image's wavelength with "waves" units). */
#ifndef PSFSIM_LABELS_H
#define PSFSIM_LABELS_H

#include <stddef.h>

#include "app/set/axes.h"
#include "app/set/jobs.h"

typedef struct {
    int nterms;
    int *j;    /* [nterms] ascending, in the config's convention */
    int *mode; /* [nterms] the term's index in the set's psf_modeset */
} set_labels;

/* The label terms of ax's set with modes ms (jobs_modeset(ax)). Returns 0,
 * or -1 with err (out of memory; l then holds nothing). */
int set_labels_init(set_labels *l, const set_axes *ax, const psf_modeset *ms, char *err,
                    size_t errlen);
/* Free l's arrays and zero it; a second call is harmless. */
void set_labels_free(set_labels *l);

/* Label i's total for an image whose totals in the config's units are
 * coeff_units[ms->nterms] (image_info.coeff_units). */
double set_labels_total(const set_labels *l, const double *coeff_units, int i);

#endif
