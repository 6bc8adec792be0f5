/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/set/field_grid.h"

#include <stdio.h>
#include <stdlib.h>

#include "app/set/field_model.h"

/* The one of the pair given without the other. */
static int check_pair(const set_axes *ax, char *err, size_t errlen)
{
    if ((ax->col_field_x < 0) == (ax->col_field_y < 0)) return 0;
    int has = ax->col_field_x >= 0 ? ax->col_field_x : ax->col_field_y;
    return axes_fail(ax->cfg, "sweep.table", err, errlen,
                     "%s:%zu:%d (%s): needs a %s column too (a detector position is a pair)",
                     ax->table->path, ax->table->header_line, has + 1, ax->table->names[has],
                     ax->col_field_x >= 0 ? "field_y_px" : "field_x_px");
}

/* Distinct positions: O(rows^2) over at most FIELD_GRID_MAX rows. */
static int check_distinct(const set_axes *ax, char *err, size_t errlen)
{
    const psf_table *t = ax->table;
    const double *x = t->cols[ax->col_field_x], *y = t->cols[ax->col_field_y];
    for (size_t r = 1; r < t->nrows; ++r)
        for (size_t q = 0; q < r; ++q)
            if (x[r] == x[q] && y[r] == y[q])
                return axes_fail(ax->cfg, "output.psf_grid", err, errlen,
                                 "%s:%zu: the position (%.17g, %.17g) repeats line %zu's: a grid "
                                 "holds one PSF per position",
                                 t->path, t->line[r], x[r], y[r], t->line[q]);
    return 0;
}

int field_grid_h(const set_axes *ax, long long k, double *hx, double *hy)
{
    long long f = axes_field(ax, k);
    if (f < 0) return 0;
    field_model_h(ax->cfg, f, hx, hy);
    return 1;
}

/* Positions a, b by (x, y), then by index (qsort_r: the field group is
 * the context, so sets opened on several threads sort apart). */
static int cmp_pos(const void *a, const void *b, void *ctx)
{
    const cfg_field *fd = ctx;
    long long i = *(const long long *)a, j = *(const long long *)b;
    if (fd->x_px[i] != fd->x_px[j]) return fd->x_px[i] < fd->x_px[j] ? -1 : 1;
    if (fd->y_px[i] != fd->y_px[j]) return fd->y_px[i] < fd->y_px[j] ? -1 : 1;
    return i < j ? -1 : (i > j);
}

/* output.psf_grid of a field set: one image per position, distinct
 * positions (sorted: O(n log n)), at most FIELD_GRID_MAX. */
static int field_set_grid_check(const set_axes *ax, char *err, size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    const cfg_field *fd = &cfg->field;
    if (!cfg->psf_grid) return 0;
    if (ax->ninner != 1)
        return axes_fail(cfg, "output.psf_grid", err, errlen,
                         "the other axes make %lld images per field position: their positions "
                         "repeat (a grid holds one PSF per position)",
                         ax->ninner);
    if (fd->npos > FIELD_GRID_MAX && cfg->fits_enabled && cfg->fits_cube)
        return axes_fail(cfg, "output.psf_grid", err, errlen,
                         "%lld field positions, more than the %d positions a FITS grid file "
                         "holds (DET_YX0 .. DET_YX99): give output.hdf5.enabled = true without "
                         "output.fits.cube (NAME.h5 holds any number)",
                         fd->npos, FIELD_GRID_MAX);
    long long *order = malloc((size_t)fd->npos * sizeof *order);
    if (!order) return axes_fail(cfg, "output.psf_grid", err, errlen, "out of memory");
    for (long long i = 0; i < fd->npos; ++i)
        order[i] = i;
    qsort_r(order, (size_t)fd->npos, sizeof *order, cmp_pos, (void *)fd);
    int rc = 0;
    for (long long i = 1; i < fd->npos && rc == 0; ++i) {
        long long a = order[i - 1], b = order[i];
        if (fd->x_px[a] == fd->x_px[b] && fd->y_px[a] == fd->y_px[b])
            rc = axes_fail(cfg, "output.psf_grid", err, errlen,
                           "the field position %lld (%.17g, %.17g) repeats position %lld: a grid "
                           "holds one PSF per position",
                           b, fd->x_px[b], fd->y_px[b], a);
    }
    free(order);
    return rc;
}

/* A table's field_x_px or field_y_px column with the field group: the
 * positions in one place. */
static int check_field_columns(const set_axes *ax, char *err, size_t errlen)
{
    int col = ax->col_field_x >= 0 ? ax->col_field_x : ax->col_field_y;
    if (!ax->cfg->field.enabled || col < 0) return 0;
    char where[CFG_PATH_MAX + 32];
    config_key_where(ax->cfg, "field", where, sizeof where);
    return axes_fail(ax->cfg, "sweep.table", err, errlen,
                     "%s:%zu:%d (%s): the positions are also given by field (%s); give the "
                     "detector positions in one place",
                     ax->table->path, ax->table->header_line, col + 1, ax->table->names[col],
                     where);
}

int field_grid_check(const set_axes *ax, char *err, size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    if (ax->table && (check_pair(ax, err, errlen) != 0 || check_field_columns(ax, err, errlen)))
        return -1;
    if (cfg->field.enabled) return field_set_grid_check(ax, err, errlen);
    if (!cfg->psf_grid) return 0;
    if (!ax->table || ax->col_field_x < 0)
        return axes_fail(cfg, "output.psf_grid", err, errlen,
                         "needs a sweep.table with field_x_px and field_y_px columns (each "
                         "row's detector position)");
    long long per_row = ax->ncart * ax->ndraws;
    if (per_row != 1)
        return axes_fail(cfg, "output.psf_grid", err, errlen,
                         "the other axes make %lld images per table row: their positions repeat "
                         "(a grid holds one PSF per position; give each image its own row)",
                         per_row);
    if (ax->table->nrows > FIELD_GRID_MAX)
        return axes_fail(cfg, "output.psf_grid", err, errlen,
                         "%s: %zu rows, more than the %d positions a grid file holds (DET_YX0 "
                         ".. DET_YX99)",
                         ax->table->path, ax->table->nrows, FIELD_GRID_MAX);
    return check_distinct(ax, err, errlen);
}

int field_grid_position(const set_axes *ax, long long k, double *x, double *y)
{
    long long f = axes_field(ax, k);
    if (f >= 0) {
        *x = ax->cfg->field.x_px[f];
        *y = ax->cfg->field.y_px[f];
        return 1;
    }
    if (!ax->table || ax->col_field_x < 0 || ax->col_field_y < 0) return 0;
    long long cart, row, draw;
    axes_split(ax, k, &cart, &row, &draw);
    *x = ax->table->cols[ax->col_field_x][row];
    *y = ax->table->cols[ax->col_field_y][row];
    return 1;
}
