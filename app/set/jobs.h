/* SPDX-License-Identifier: BSD-3-Clause */
/* Image-set expansion: the sweep block's Cartesian product, in the order of
 * docs/config.md (wavelength outermost, then defocus, focus_shift_um, then
 * each zernike entry in the order written, then each segment_zernike entry
 * in the order written, the last innermost), then the
 * rows of sweep.table, then the draws of sweep.random innermost (axes.h). */
#ifndef PSFSIM_JOBS_H
#define PSFSIM_JOBS_H

#include "app/config/config.h"
#include "app/set/axes.h"

/* What one image of the set is: its swept values and total coefficients.
 * The wavelength, defocus and focus shift are the image's listed value,
 * from whichever axis gives it (a swept list, the table's column, or for
 * the wavelength and focus shift the draw's choice; axes_init allows one). */
typedef struct {
    long long index;
    int nwl;                         /* wavelengths in this image (1 unless broadband) */
    const double *wl_nm;             /* [nwl] */
    const double *weights;           /* [nwl], sum 1 */
    double sweep_wavelength_nm;      /* listed value, or NAN when none is */
    double sweep_defocus;            /* listed value, or NAN */
    double sweep_focus_shift_um;     /* listed value, or NAN */
    const double *sweep_zernike;     /* [cfg->n_sweep_zernike] swept values */
    const double *sweep_seg_zernike; /* [cfg->n_sweep_seg_zernike] swept values of
                                        sweep.segment_zernike, NULL without */
    long long table_row;             /* the sweep.table data row (0-based), or -1 */
    long long draw;                  /* the draw index d of sweep.random, or -1 */
    const double *drawn;             /* [ax->nrandom] drawn values in the config's units
                                        (draw_zernike(seed, d, j, ...)), NULL without */
    long long field;                 /* the field position f (axes_field), or -1 */
} psf_image_params;

/* The set of modes (distinct (n, m) pairs) every image uses, in this order:
 * the config's terms as written, the swept terms not already there, then
 * Noll 4 (2, 0) when defocus or focus shift is swept and it is not there,
 * then the drawn terms (sweep.random.zernike as written, the spectrum's
 * j_min..j_max), the table's z<j> columns in column order, and Noll 4 when
 * the table lists defocus or focus shifts or the draws choose focus shifts
 * (each only when not already there), then the field model's terms
 * (field.zernike as written, field.table's z<j> in column order).
 * n, m, noll are malloc'd arrays of nterms (nterms may be 0); free with
 * jobs_modeset_free. Returns 0, or -1 with err on allocation failure (ms
 * then holds nothing). */
typedef struct {
    int nterms;
    int *n, *m;
    int *noll; /* Noll index of each mode, for headers */
} psf_modeset;

int jobs_modeset(const set_axes *ax, psf_modeset *ms, char *err, size_t errlen);
/* Free ms's arrays and zero it; a second call is harmless. */
void jobs_modeset_free(psf_modeset *ms);

/* Doubles of scratch jobs_image_params needs: the swept values (global and
 * segment terms) and the drawn ones. */
size_t jobs_scratch_size(const set_axes *ax);

/* Parameters of image k of ax's set (0 <= k < ax->nimages; a larger k
 * wraps around, a negative one reads as 0). Pointers point into the
 * config, the table, scratch (jobs_scratch_size doubles; may be NULL when
 * that is 0; sweep_zernike and drawn are NULL then) and, for a listed
 * wavelength, at a static weight 1.0: a listed wavelength is the image's
 * only wavelength, else the image has cfg's wavelengths and weights
 * (broadband). The draws are computed here from (seed, d, j) alone
 * (draws.h), so every thread, lane, backend, rank or resumed run gets
 * the same bits. */
void jobs_image_params(const set_axes *ax, long long k, double *scratch, psf_image_params *p);

/* Total RMS coefficient of each mode of ms for image p at wavelength
 * wl_nm, in waves: config terms + swept Zernike values + defocus (Noll 4)
 * + focus shift (converted per docs/design.md: wavefront_focus_shift_to_z4_um,
 * um -> nm; skipped without f_number) + the table row's z<j> cells + the
 * drawn values + the field position's model value (field_model.h), summed
 * in that order in the config's units,
 * then converted from cfg->zunits (waves as they are, nm / wl_nm).
 * out_waves has ms->nterms entries. Also fills out_units[ms->nterms] (may
 * be NULL) with the same totals in the config's units, for the FITS header
 * and the manifest (in "waves" units the focus shift's part is in waves at
 * wl_nm). No errors. */
void jobs_coefficients(const set_axes *ax, const psf_modeset *ms, const psf_image_params *p,
                       double wl_nm, double *out_waves, double *out_units);

#endif
