/* Image-set expansion: the sweep block's Cartesian product, in the order of
 * config-schema.md (wavelength outermost, then defocus, focus_shift_um, then
 * each zernike entry in the order written, the last innermost). */
#ifndef PSFSIM_JOBS_H
#define PSFSIM_JOBS_H

#include "app/config/config.h"

/* What one image of the set is: its swept values and total coefficients. */
typedef struct {
    long long index;
    int nwl;                     /* wavelengths in this image (1 unless broadband) */
    const double *wl_nm;         /* [nwl] */
    const double *weights;       /* [nwl], sum 1 */
    double sweep_wavelength_nm;  /* swept value, or NAN when not swept */
    double sweep_defocus;        /* swept value, or NAN */
    double sweep_focus_shift_um; /* swept value, or NAN */
    const double *sweep_zernike; /* [cfg->n_sweep_zernike] swept values */
} psf_image_params;

/* The set of modes (distinct (n, m) pairs) every image uses, in this order:
 * the config's terms as written, the swept terms not already there, then
 * Noll 4 (2, 0) when defocus or focus shift is swept and it is not there.
 * n, m, noll are malloc'd arrays of nterms (nterms may be 0); free with
 * jobs_modeset_free. Returns 0, or -1 with err on allocation failure (ms
 * then holds nothing). */
typedef struct {
    int nterms;
    int *n, *m;
    int *noll; /* Noll index of each mode, for headers */
} psf_modeset;

int jobs_modeset(const psf_config *cfg, psf_modeset *ms, char *err, size_t errlen);
/* Free ms's arrays and zero it; a second call is harmless. */
void jobs_modeset_free(psf_modeset *ms);

/* Parameters of image k (0 <= k < config_image_count; a larger k wraps
 * around, a negative one reads as 0). Pointers point into cfg, into scratch
 * (at least n_sweep_zernike doubles; may be NULL when there are none;
 * sweep_zernike is NULL then) and, for a swept wavelength, at a static
 * weight 1.0: a swept wavelength is the image's only wavelength, else the
 * image has cfg's wavelengths and weights (broadband). */
void jobs_image_params(const psf_config *cfg, long long k, double *scratch, psf_image_params *p);

/* Total RMS coefficient of each mode of ms for image p at wavelength
 * wl_nm, in waves: config terms + sweep defocus (Noll 4) + focus shift
 * (converted per design.md: wavefront_focus_shift_to_z4_um, um -> nm;
 * skipped without f_number) + swept Zernike values, converted from
 * cfg->zunits (waves as they are, nm / wl_nm). out_waves has ms->nterms
 * entries. Also fills out_units[ms->nterms] (may be NULL) with the same
 * totals in the config's units, for the FITS header (in "waves" units the
 * focus shift's part is in waves at wl_nm). No errors. */
void jobs_coefficients(const psf_config *cfg, const psf_modeset *ms, const psf_image_params *p,
                       double wl_nm, double *out_waves, double *out_units);

#endif
