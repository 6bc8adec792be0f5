/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/set/field_grid.h"

#include <stdio.h>

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

int field_grid_check(const set_axes *ax, char *err, size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    if (ax->table && check_pair(ax, err, errlen) != 0) return -1;
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
    if (!ax->table || ax->col_field_x < 0 || ax->col_field_y < 0) return 0;
    long long cart, row, draw;
    axes_split(ax, k, &cart, &row, &draw);
    *x = ax->table->cols[ax->col_field_x][row];
    *y = ax->table->cols[ax->col_field_y][row];
    return 1;
}
