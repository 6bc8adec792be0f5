/* SPDX-License-Identifier: BSD-3-Clause */
/* NAME_manifest.csv: one row per image written, in the columns and order of
 * docs/config.md, then config_hash (the config's fingerprint, which
 * --resume checks), then for a set with a table or random axis the label
 * columns: draw and seed (random sets), and z<j> per label term
 * (app/set/labels.h), in full precision (docs/config.md). It is a journal (journal.h): rows are
 * appended once an image's files are in place and flushed after each batch, so at every moment it
 * lists only images whose files exist. */
#ifndef PSFSIM_MANIFEST_H
#define PSFSIM_MANIFEST_H

#include <stddef.h>

#include "app/set/image_set.h"
#include "app/formats/journal.h"
#include "app/output/image_result.h"

/* A cell formatted once per value: the columns that keep one value for a
 * batch or the whole set cost no printf per row. */
typedef struct {
    double v;
    int set;
    char s[40];
} csv_cell;

/* c's text for v: csv_number's, or csv_fixed3's (fixed3 != 0), kept while
 * v stays the same value (bit for bit). */
const char *csv_cell_text(csv_cell *c, double v, int fixed3);

typedef struct {
    journal j;
    char hash[24];
    long long rows;
    csv_cell cells[6]; /* wavelength .. pixel_scale_um: one value per set or batch */
} manifest_writer;

/* The manifest's header line (with its newline) for a set without a table
 * or random axis. */
extern const char manifest_header[];

/* Create the file name in the directory dirfd (dir: for messages;
 * journal.h) with set s's header and the kept rows (from a resumed run).
 * hash: the config fingerprint put in every new row. The header's columns:
 * manifest_header's, a table or random set's label columns, then
 * captured_fraction (image_info's) when s's normalization is "pupil"
 * (docs/config.md). 0 or -1 with err. */
int manifest_open(manifest_writer *w, const image_set *s, int dirfd, const char *dir,
                  const char *name, const char *hash, char *const *keep, long long nkeep, char *err,
                  size_t errlen);

/* Bytes of a set's label cells' text (its NUL with it; 1 for a set with
 * no label cells): manifest_label_text's room. */
size_t manifest_label_bytes(const image_set *s);

/* The label cells of image info's row: ",draw,seed" (random sets), then
 * ",<total>" per label term (csv_exact; table and random sets), per
 * segment label term (segterms.h) and the table's field_x_px, field_y_px,
 * NUL-terminated; "" for a set with none, or outlen under
 * manifest_label_bytes(s). Needs
 * no writer: the image loop formats rows' cells side by side. */
void manifest_label_text(const image_set *s, const image_info *info, char *out, size_t outlen);

/* Append image k's row; labels: its label cells (manifest_label_text), or
 * NULL to format them here. 0 or -1 with err (a write error). */
int manifest_add(manifest_writer *w, const image_set *s, long long k, const image_info *info,
                 const image_result *res, const char *labels, char *err, size_t errlen);

/* After a batch: push the rows to disk. 0 or -1 with err. */
int manifest_flush(manifest_writer *w, char *err, size_t errlen);

/* Rewrite the manifest (the file name in dirfd; dir: for messages)
 * atomically with every row's fits cell set to cube (the FITS cube that
 * holds all the images). 0 or -1 with err. */
int manifest_set_fits(int dirfd, const char *dir, const char *name, const char *cube, char *err,
                      size_t errlen);

/* Flush and close. 0 or -1 with err. */
int manifest_close(manifest_writer *w, char *err, size_t errlen);

/* Format v with %.10g, or "" for NaN (an empty CSV cell). */
void csv_number(char *out, size_t outlen, double v);

#endif
