/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/output/cube_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/output/fits_header.h"
#include "app/output/outputs.h"
#include "app/set/field_grid.h"
#include "app/set/set_detector.h"

static void add_col(cube_writer *w, const char *name, const char *unit)
{
    if (w->ncols >= CUBE_MAX_COLS) return; /* not reached: fits_header_check */
    snprintf(w->names[w->ncols], sizeof w->names[0], "%.23s", name);
    w->units[w->ncols++] = unit;
}

int cube_writer_common_keys(const image_set *s, fits_kv *kvs, char (*zkeys)[12])
{
    image_info info;
    image_set_common_info(s, &info);
    image_result res = {.backend = "-"};
    double zero[FITS_HEADER_MAX] = {0}; /* the coefficients go in the table */
    info.coeff_units = zero;
    fits_kv all[FITS_HEADER_MAX];
    int n = fits_header_build(s, &info, &res, all, zkeys), m = 0;
    static const char *const per_plane[] = {
        "WAVELEN", "PIXELSCL", "PIXSCLUM", "STREHL", "AXIALINT", "BACKEND", "CDELT1", "CDELT2",
        "DIFFLMT", "FOV",      "REFWAVE",  "FIELDX", "FIELDY",   "FIELDHX", "FIELDHY"};
    for (int i = 0; i < n; ++i) {
        int skip = all[i].key[0] == 'Z' && all[i].key[1] >= '0' && all[i].key[1] <= '9';
        for (size_t j = 0; j < sizeof per_plane / sizeof *per_plane; ++j)
            skip |= !strcmp(all[i].key, per_plane[j]);
        if (!skip) kvs[m++] = all[i];
    }
    return m;
}

/* What a PSF grid's planes are multiplied by: s^2 for oversampled planes
 * (detector.write = "oversampled", s > 1) of a flux normalisation (sum,
 * pupil), else 1. photutils' GriddedPSFModel takes an oversampled ePSF
 * in surface brightness units, its array summing to s^2 times the
 * detector pixels' (its docs, "Notes"), and WebbPSF's psf_grid (stpsf)
 * multiplies by oversample^2 for it; "peak" is such a unit already (a
 * pixel's mean intensity over the unaberrated peak, at any sampling). */
static float cube_grid_gain(const image_set *s)
{
    float div = (float)set_detector_written_div(s->cfg);
    return s->cfg->psf_grid && s->cfg->normalization != NORM_PEAK ? div * div : 1.0f;
}

/* BUNIT of a grid whose planes cube_grid_gain scaled. */
static void grid_bunit(const image_set *s, fits_kv *kvs, int n)
{
    for (int i = 0; i < n; ++i)
        if (!strcmp(kvs[i].key, "BUNIT"))
            kvs[i].s = s->cfg->normalization == NORM_SUM
                           ? "relative: each PSF sums to OVERSAMP^2 (photutils' ePSF)"
                           : "relative: OVERSAMP^2 x the pupil's power per pixel (ePSF)";
}

/* output.psf_grid: the keywords photutils' GriddedPSFModel reads (its
 * "webbpsf" format, WebbPSF's psf_grid) beside OVERSAMP, which
 * fits_header_build writes (the written image's), NUM_PSFS, FOVPIXEL and
 * DET_YX<i> = '(y, x)', plane i's detector position, appended to kvs[n..]
 * (keys and texts kept in grid). Returns the new count. */
static int grid_keys(const image_set *s, fits_kv *kvs, int n, cube_grid_text *grid)
{
    kvs[n++] = (fits_kv){.key = "NUM_PSFS",
                         .type = FITS_KV_INT,
                         .i = s->nimages,
                         .comment = "the number of fiducial PSFs"};
    kvs[n++] = (fits_kv){.key = "FOVPIXEL",
                         .type = FITS_KV_INT,
                         .i = s->samp.npix,
                         .comment = "field of view of each PSF [pixels]"};
    for (long long k = 0; k < s->nimages && k < FIELD_GRID_MAX; ++k) {
        double x = 0.0, y = 0.0;
        field_grid_position(&s->axes, k, &x, &y);
        snprintf(grid->keys[k], sizeof grid->keys[k], "DET_YX%lld", k);
        snprintf(grid->values[k], sizeof grid->values[k], "(%.17g, %.17g)", y, x);
        kvs[n++] = (fits_kv){.key = grid->keys[k],
                             .type = FITS_KV_STRING,
                             .s = grid->values[k],
                             .comment = "(y,x) detector pixel position of this PSF"};
    }
    return n;
}

int cube_writer_open(cube_writer *w, const image_set *s, int dirfd, const char *dir, char *err,
                     size_t errlen)
{
    memset(w, 0, sizeof *w);
    outputs_set_file(NULL, s->cfg->name, SET_CUBE, w->name, sizeof w->name);
    add_col(w, "INDEX", "");
    add_col(w, "WAVELEN", "m");
    add_col(w, "DEFOCUS", s->cfg->zunits == ZUNITS_NM ? "nm" : "waves");
    add_col(w, "FOCUSSHF", "um");
    add_col(w, "PIXELSCL", "arcsec");
    add_col(w, "STREHL", "");
    add_col(w, "AXIALINT", "");
    for (int i = 0; i < s->cfg->n_sweep_zernike; ++i) {
        char nm[24];
        snprintf(nm, sizeof nm, "ZSWEEP%d", s->cfg->sweep_zernike[i].j);
        add_col(w, nm, s->cfg->zunits == ZUNITS_NM ? "nm" : "waves");
    }
    fits_kv kvs[FITS_HEADER_MAX];
    char zkeys[FITS_HEADER_MAX][12];
    int nkv = cube_writer_common_keys(s, kvs, zkeys);
    for (int t = 0; t < s->modes.nterms && w->ncols < CUBE_MAX_COLS; ++t)
        add_col(w, zkeys[t], s->cfg->zunits == ZUNITS_NM ? "nm" : "waves");
    double fx, fy;
    if (field_grid_position(&s->axes, 0, &fx, &fy)) {
        add_col(w, "FIELDX", "pixel");
        add_col(w, "FIELDY", "pixel");
    }
    if (field_grid_h(&s->axes, 0, &fx, &fy)) { /* the field group's (hx, hy) */
        add_col(w, "FIELDHX", "");
        add_col(w, "FIELDHY", "");
    }
    cube_grid_text grid;
    if (s->cfg->psf_grid) nkv = grid_keys(s, kvs, nkv, &grid);
    w->plane_gain = cube_grid_gain(s);
    if (w->plane_gain != 1.0f) {
        grid_bunit(s, kvs, nkv);
        w->scaled = malloc((size_t)s->samp.npix * s->samp.npix * sizeof *w->scaled);
        if (!w->scaled) {
            snprintf(err, errlen, "cannot allocate the cube's plane (%d x %d)", s->samp.npix,
                     s->samp.npix);
            cube_writer_abort(w);
            return -1;
        }
    }
    for (int i = 0; i < w->ncols; ++i) {
        w->cols[i] = calloc((size_t)s->nimages, sizeof(double));
        if (!w->cols[i]) {
            snprintf(err, errlen, "cannot allocate the cube's table (%lld planes)", s->nimages);
            cube_writer_abort(w);
            return -1;
        }
    }
    w->cube =
        psf_fits_cube_open_at(dirfd, dir, w->name, s->samp.npix, s->nimages, kvs, nkv, err, errlen);
    if (!w->cube) {
        cube_writer_abort(w);
        return -1;
    }
    return 0;
}

int cube_writer_columns(const image_set *s)
{
    double x, y;
    int n = 7 + s->cfg->n_sweep_zernike + s->modes.nterms +
            2 * field_grid_position(&s->axes, 0, &x, &y) + 2 * field_grid_h(&s->axes, 0, &x, &y);
    return n < CUBE_MAX_COLS ? n : CUBE_MAX_COLS;
}

int cube_writer_add(cube_writer *w, const image_set *s, const image_info *info,
                    const image_result *res, const float *img, char *err, size_t errlen)
{
    long long k = info->params.index;
    if (w->scaled) { /* cube_grid_gain: s^2, exact in float */
        size_t n = (size_t)s->samp.npix * s->samp.npix;
        for (size_t i = 0; i < n; ++i)
            w->scaled[i] = img[i] * w->plane_gain;
        img = w->scaled;
    }
    if (psf_fits_cube_write_plane(w->cube, k, img, err, errlen) != 0) return -1;
    const psf_image_params *p = &info->params;
    double v[7] = {(double)k,           image_info_wavelength_nm(info) / 1e9,
                   p->sweep_defocus,    p->sweep_focus_shift_um,
                   info->pixel_arcsec,  res->strehl,
                   res->axial_intensity};
    int c = 0;
    for (; c < 7; ++c)
        w->cols[c][k] = v[c];
    for (int i = 0; i < s->cfg->n_sweep_zernike; ++i)
        w->cols[c++][k] = p->sweep_zernike[i];
    for (int t = 0; t < s->modes.nterms && c < w->ncols; ++t)
        w->cols[c++][k] = info->coeff_units[t];
    double fx, fy;
    if (c + 2 <= w->ncols && field_grid_position(&s->axes, k, &fx, &fy)) {
        w->cols[c++][k] = fx;
        w->cols[c++][k] = fy;
    }
    if (c + 2 <= w->ncols && field_grid_h(&s->axes, k, &fx, &fy)) {
        w->cols[c++][k] = fx;
        w->cols[c++][k] = fy;
    }
    return 0;
}

static void free_cols(cube_writer *w)
{
    for (int i = 0; i < w->ncols; ++i)
        free(w->cols[i]);
    memset(w->cols, 0, sizeof w->cols);
    free(w->scaled);
    w->scaled = NULL;
}

int cube_writer_commit(cube_writer *w, char *err, size_t errlen)
{
    const char *names[CUBE_MAX_COLS];
    for (int i = 0; i < w->ncols; ++i)
        names[i] = w->names[i];
    int rc = psf_fits_cube_commit(w->cube, w->ncols, names, w->units, w->cols, err, errlen);
    w->cube = NULL;
    free_cols(w);
    return rc;
}

void cube_writer_abort(cube_writer *w)
{
    psf_fits_cube_abort(w->cube);
    w->cube = NULL;
    free_cols(w);
}
