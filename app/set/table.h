/* SPDX-License-Identifier: BSD-3-Clause */
/* A listed set's table (sweep.table): a CSV file, one image per row, read
 * with libcsv (RFC 4180 quoting; cells trimmed of spaces and tabs; LF,
 * CRLF or CR line ends; blank lines skipped; a leading UTF-8 byte order
 * mark skipped). The first row is the header
 * of column names; every other cell is a number (strtod over the whole
 * trimmed cell: decimal or hexadecimal, finite). Columns of a psfsim table
 * (table_check_columns): wavelength_nm, defocus, focus_shift_um,
 * field_x_px and field_y_px (labels: the PSF's detector position) and z<j>,
 * j an index of the config's Zernike convention (docs/config.md); in a
 * segmented aperture's set also s<segment>_z<j>
 * (table_check_segmented_columns). */
#ifndef PSFSIM_TABLE_H
#define PSFSIM_TABLE_H

#include <stddef.h>

#include "optics/zernike.h"

/* Limits, so that a wrong file name fails fast rather than filling memory:
 * at most 64 MiB of file (at most 256 MiB of doubles then), 10,000,000
 * rows, and 8192 columns (the Zernike terms to radial order 100 are 5151). */
#define TABLE_MAX_BYTES ((size_t)64 << 20)
#define TABLE_MAX_ROWS ((size_t)10000000)
#define TABLE_MAX_COLUMNS 8192

typedef struct {
    char *path;         /* the file as given to table_load, for messages */
    int ncols;          /* >= 1 */
    size_t nrows;       /* >= 1 */
    char **names;       /* [ncols] column names, as trimmed, distinct */
    double **cols;      /* [ncols][nrows]: cols[c][r] is row r's cell of column c */
    size_t *line;       /* [nrows]: each row's line in the file, 1-based */
    size_t header_line; /* the header's line: 1 unless blank lines precede it */
} psf_table;

/* Load path into a new table (*out; free with table_free). Follows
 * symlinks; refuses what is not a regular file (a FIFO, a device, a
 * directory) without blocking on it. Returns 0, or -1 with err (*out NULL),
 * one of (line L and column C 1-based, H the header's line; a column is named
 * by its number and its header name):
 *   PATH: cannot open: <strerror>          PATH: not a regular file
 *   PATH: larger than 64 MiB (the limit of a table file)
 *   PATH: empty file (a header row of column names is required)
 *   PATH: no header row (the file holds only blank lines)
 *   PATH: no data rows after the header (one image per row)
 *   PATH:H:C: "0.5" is a number; the first row must be the header (column names)
 *   PATH:H:C: empty column name            PATH:H:C: a NUL byte in the column name
 *   PATH:H: more than 8192 columns (the limit of a table)
 *   PATH:H:C (NAME): duplicate column name (also column C0)
 *   PATH:L:C (NAME): empty cell | "TEXT" is not a number | "TEXT" is not finite
 *   PATH:L:C (NAME): missing cell (the row has N of M cells)
 *   PATH:L:C: extra cell (the header has M columns)
 *   PATH:L: more than 10000000 rows (the limit of a table)
 *   PATH:L: malformed CSV (a quote inside an unquoted cell, or text after a closing quote)
 *   PATH:L: a quoted cell is not closed by the end of the file
 *   PATH: cannot read: <strerror>          PATH: out of memory
 * Untrusted text in messages shows control characters as '?'. */
int table_load(const char *path, psf_table **out, char *err, size_t errlen);

/* table_load with rows, what one data row is, in the "no data rows" message
 * instead of sweep.table's "one image per row" (field.table: "one measured
 * field point per row"):
 *   PATH: no data rows after the header (ROWS)
 * Every other message is table_load's. */
int table_load_rows(const char *path, const char *rows, psf_table **out, char *err, size_t errlen);

/* Free t and all it holds; NULL is harmless. */
void table_free(psf_table *t);

/* Index of the column named name, or -1. */
int table_column(const psf_table *t, const char *name);

/* j of a column name "z<j>": decimal digits without a sign or a leading
 * zero (so z4 and z04 cannot both name term 4), j an index of conv
 * (optics/zernike.h). Returns j, or -1 when name is not such a name. */
int table_zernike_index(const char *name, zernike_convention conv);

/* Whether a column name is allowed: 1 or 0. */
typedef int (*table_name_ok)(const char *name, void *ctx);

/* Every column name passes ok. Returns 0, or -1 with err
 *   PATH:H:C (NAME): unknown column (allowed: ALLOWED)
 * for the first that does not. */
int table_check_names(const psf_table *t, table_name_ok ok, void *ctx, const char *allowed,
                      char *err, size_t errlen);

/* table_check_names with psfsim's columns: wavelength_nm, defocus,
 * focus_shift_um, field_x_px, field_y_px, z<j> (table_zernike_index in conv). */
int table_check_columns(const psf_table *t, zernike_convention conv, char *err, size_t errlen);

/* j of a column name "s<segment>_z<j>" (a segmented aperture's segment
 * term, segterms.h), both decimal without a sign or leading zero, j an
 * index of conv; the segment into *segment (not checked against the
 * rings). Returns j, or -1 when name is not such a name. */
int table_segment_index(const char *name, zernike_convention conv, int *segment);

/* table_check_columns for a segmented aperture's set: the s<segment>_z<j>
 * columns too, and said so in the allowed list. */
int table_check_segmented_columns(const psf_table *t, zernike_convention conv, char *err,
                                  size_t errlen);

#endif
