/* SPDX-License-Identifier: BSD-3-Clause */
/* The axes of an image set beyond the config's Cartesian lists: the listed
 * set's table (sweep.table, loaded and checked here) and the random set's
 * terms (sweep.random, the spectrum expanded into per-term sigmas). The
 * image index k splits as
 *     k = ((f * ncart + c) * nrows + r) * ndraws + d
 * f the field position (the field group's, the outermost axis; 0 without),
 * c the Cartesian index (jobs.h: wavelength outermost .. the last
 * sweep.segment_zernike entry), r the table row, d the draw, the innermost
 * (docs/config.md, "Axis order"). */
#ifndef PSFSIM_AXES_H
#define PSFSIM_AXES_H

#include <stddef.h>

#include "app/config/config.h"
#include "app/set/draws.h"
#include "app/set/table.h"

/* A drawn term: sweep.random.zernike as written, then the spectrum's. */
typedef struct {
    int j, n, m;    /* j in the config's convention */
    draw_dist dist; /* the spectrum's terms are normal */
    double width;   /* sigma or half-width, in the config's units */
} axes_random_term;

/* A segment's term over the field (field_model.h). */
typedef struct {
    int segment, j, n, m; /* j in the config's convention */
    int col;              /* its field.table column, or -1 (field.segment_zernike) */
} axes_field_segterm;

/* A z<j> column of the table. */
typedef struct {
    int col;     /* its column in the table */
    int j, n, m; /* j in the config's convention */
} axes_table_term;

typedef struct {
    const psf_config *cfg;
    long long ncart;  /* images of the Cartesian lists (1 without) */
    psf_table *table; /* NULL without sweep.table */
    long long nrows;  /* the table's data rows; 1 without */
    int col_wavelength, col_defocus, col_focus_shift; /* table columns, -1: absent */
    int col_field_x, col_field_y; /* field_x_px, field_y_px: labels, -1: absent */
    int nzcols;
    axes_table_term *zcols; /* [nzcols], in column order */
    long long ndraws;       /* sweep.random.count; 1 without */
    int nrandom;
    axes_random_term *random; /* [nrandom] */
    /* The field axis (cfg->field, the outermost): position f's terms
     * fvalues[f * nfterms + i], term fterms[i], in the config's units
     * (app/set/field_model.h's field_model_init evaluates the model once,
     * image_set_init's step right after axes_init; 0 terms until then). */
    long long nfield; /* cfg->field.npos; 1 without the field group */
    long long ninner; /* ncart * nrows * ndraws: the images of one position */
    int nfterms;
    axes_table_term *fterms; /* [nfterms] (col unused: -1) */
    double *fvalues;         /* [nfield * nfterms] */
    /* Segment terms over the field: field.table's s<segment>_z<j> columns
     * (col >= 0), then field.segment_zernike's polynomials (col -1, in
     * the order written); position f's values fsegvalues[f * nfsegs + i],
     * config units (NULL without). */
    int nfsegs;
    axes_field_segterm *fsegs; /* [nfsegs] */
    double *fsegvalues;        /* [nfield * nfsegs] */
    long long nimages;         /* nfield * ncart * nrows * ndraws */
} set_axes;

/* Build ax for cfg (kept by pointer: it must outlive ax): load and check
 * the table, expand the spectrum (draw_spectrum_sigma). Returns 0, or -1
 * with one message, "CFG:LINE: KEY: WHY" (CFG:LINE where the key is
 * written, config_key_where), among them:
 *   sweep.table: PATH:L:C (NAME): ...     table_load's and table_check_columns'
 *     (table_check_segmented_columns' for a segmented aperture)
 *   sweep.table: PATH:H:C (NAME): the column is also given by KEY (CFG:LINE); ...
 *     (wavelength_nm with sweep.wavelength_nm or sweep.random.wavelength_nm,
 *     defocus with sweep.defocus, focus_shift_um with sweep.focus_shift_um or
 *     sweep.random.focus_shift_um, z<j> with sweep.zernike's j)
 *   sweep.table: PATH:H:C (wavelength_nm): cannot be used with optics.wavelengths_nm ...
 *   sweep.table: PATH:H:C (focus_shift_um): needs optics.f_number ...
 *   sweep.table: PATH:L:C (NAME): must be in [LO, HI] (WHY) (got X)
 *     (every cell of wavelength_nm, defocus, focus_shift_um and z<j> within
 *     the bounds of the config's keys: CFG_MIN_WAVELENGTH_NM ..
 *     CFG_MAX_WAVELENGTH_NM, config_coeff_limit, config_focus_shift_limit
 *     at axes_shortest_wavelength; "must be >= LO" for a wavelength)
 *   sweep.table: PATH: N rows make M images with the other axes, more than the limit ...
 *   optics.wavelength_nm: required key missing (... or a wavelength_nm column in sweep.table)
 * ax holds nothing after an error (axes_free is harmless). The field
 * columns' pair and output.psf_grid are field_grid_check's, which reads ax
 * (image_set_init calls it next). */
int axes_init(set_axes *ax, const psf_config *cfg, char *err, size_t errlen);
void axes_free(set_axes *ax);

/* "CFG:LINE: key: " then fmt into err (CFG:LINE where cfg writes key,
 * config_key_where). Returns -1. */
__attribute__((format(printf, 5, 6))) int axes_fail(const psf_config *cfg, const char *key,
                                                    char *err, size_t errlen, const char *fmt, ...);

/* Whether the set has a table or a random axis (its manifest then has the
 * label columns: docs/config.md, "NAME_manifest.csv"). */
int axes_is_dataset(const set_axes *ax);

/* k -> (Cartesian index, table row or -1, draw or -1); k in 0..nimages-1
 * (a negative k reads as 0; the field position is axes_field's). */
void axes_split(const set_axes *ax, long long k, long long *cart, long long *row, long long *draw);

/* Image k's field position f (0..nfield-1; cfg->field.x_px[f]), or -1
 * without the field group (a k past the set wraps; a negative k reads
 * as 0). */
long long axes_field(const set_axes *ax, long long k);

/* Row r's cell of the table's column col within [lo, hi], as the config's
 * keys are held (cfg_check_bounds' wording): 0, or -1 with "CFG:LINE:
 * sweep.table: PATH:L:C (NAME): must be in [LO, HI] (WHY) (got V)" (">= LO"
 * or "<= HI" when lo != -hi). */
int axes_cell_bound(const set_axes *ax, int col, size_t r, double lo, double hi, const char *why,
                    char *err, size_t errlen);

/* The shortest wavelength of the set, nm: config_wavelength_span's, or
 * the table's wavelength_nm column's when shorter (HUGE_VAL when neither
 * gives one). ax built by axes_init (or its table loaded). */
double axes_shortest_wavelength(const set_axes *ax);

/* The wavelengths the images take one each, nm: sweep.wavelength_nm,
 * sweep.random.wavelength_nm or the table's column, *n values (a table's
 * column repeats values); NULL (and *n = 0) when every image has the
 * config's optics wavelengths. */
const double *axes_image_wavelengths(const set_axes *ax, long long *n);

#endif
