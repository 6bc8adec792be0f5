/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-segment Zernike terms of a segmented aperture's image set
 * (docs/config.md, "Segmented apertures"): the distinct segment modes the
 * set uses, each image's coefficients for every segment, and the label
 * terms (segment, j) of the manifest and HDF5.
 *
 * An image's segment coefficients are [nseg * nterms], segment s's mode t
 * at s * nterms + t (nseg = every segment of the rings, missing ones 0):
 * the layout the backends read after the global terms (backend/backend.h,
 * psf_component.coeff_waves). Its total for (s, j) is the sum of
 * optics.aperture.segments.zernike's (s, j), sweep.segment_zernike's
 * value of the image, the sweep.table row's s<s>_z<j> cell,
 * sweep.random.segment_zernike's draw of j for s and field.segment_zernike's
 * value at the image's field position (field_model.h), in that order, in
 * aberrations.units. */
#ifndef PSFSIM_SEGTERMS_H
#define PSFSIM_SEGTERMS_H

#include <stddef.h>
#include <stdint.h>

#include "app/set/axes.h"
#include "app/set/jobs.h"

/* Modes of radial order <= 4: 15. */
#define SEGTERMS_MAX_MODES 15

typedef struct {
    int nterms;                /* distinct segment modes; 0 = none (no segment terms) */
    int j[SEGTERMS_MAX_MODES]; /* in the config's convention, in order of first use */
    int n[SEGTERMS_MAX_MODES], m[SEGTERMS_MAX_MODES];
    int nseg;                             /* segments of the rings (aperture_segment_count) */
    int ntable;                           /* the table's s<k>_z<j> columns */
    int *table_col, *table_seg, *table_j; /* [ntable] column, segment, j */
    /* Label terms: (segment, j) non-zero somewhere in the set, by segment then j. */
    int nlabels;
    int *label_segment, *label_j; /* [nlabels] */
    int *label_index;             /* [nlabels] index into the image's coefficients */
} set_segterms;

/* The segment terms of ax's set (fixed, swept, table columns, drawn), in
 * that order of first use. Returns 0, or -1 with err: out of memory, or
 * "CFG:LINE: sweep.table: PATH:H:C (s7_z1): ..." for a table column of a
 * segment outside the rings or left out, a j of radial order > 4, one
 * also in sweep.segment_zernike, or a cell past the coefficient bound
 * (docs/config.md, "sweep.table"). st holds nothing after an error. */
int segterms_init(set_segterms *st, const set_axes *ax, char *err, size_t errlen);
void segterms_free(set_segterms *st);

/* Coefficients per image: nseg * nterms (0 without segment terms). */
size_t segterms_count(const set_segterms *st);

/* Image p's segment coefficients at wavelength wl_nm: out_waves[segterms_count]
 * in waves, out_units (may be NULL) the same in aberrations.units. drawn:
 * p's segment draws (segterms_draw), NULL without. */
void segterms_coefficients(const set_axes *ax, const set_segterms *st, const psf_image_params *p,
                           const double *drawn, double wl_nm, double *out_waves, double *out_units);

/* The draws of sweep.random.segment_zernike for draw d: drawn[segterms_count]
 * (segment s's mode t at s * nterms + t; 0 for missing segments and modes
 * not drawn). Value of term j for segment s: draw_value({seed, d,
 * s * 256 + j, DRAW_SEGMENT_ZERNIKE}, dist, width) (draws.h). */
void segterms_draw(const set_axes *ax, const set_segterms *st, uint64_t d, double *drawn);

#endif
