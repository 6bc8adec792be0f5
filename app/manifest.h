/* NAME_manifest.csv: one row per image written, in the columns and order of
 * config-schema.md, then config_hash (the config's fingerprint, which
 * --resume checks). It is a journal (journal.h): rows are appended once an
 * image's files are in place and flushed after each batch, so at every
 * moment it lists only images whose files exist. */
#ifndef PSFSIM_MANIFEST_H
#define PSFSIM_MANIFEST_H

#include <stddef.h>

#include "app/set/image_set.h"
#include "app/formats/journal.h"
#include "app/image_result.h"

typedef struct {
    journal j;
    char hash[24];
    long long rows;
} manifest_writer;

/* The manifest's header line (with its newline). */
extern const char manifest_header[];

/* Create path with the header and the kept rows (from a resumed run).
 * hash: the config fingerprint put in every new row; captured: 1 when the
 * set's normalization is "pupil" (cfg->normalization == NORM_PUPIL), which
 * adds the column captured_fraction after config_hash (image_info's). 0 or
 * -1 with err. */
int manifest_open(manifest_writer *w, const char *path, const char *hash, int captured,
                  char *const *keep, long long nkeep, char *err, size_t errlen);

/* Append image k's row. 0 or -1 with err (a write error). */
int manifest_add(manifest_writer *w, const image_set *s, long long k, const image_info *info,
                 const image_result *res, char *err, size_t errlen);

/* After a batch: push the rows to disk. 0 or -1 with err. */
int manifest_flush(manifest_writer *w, char *err, size_t errlen);

/* Rewrite the manifest at path atomically with every row's fits cell set
 * to name (the FITS cube that holds all the images). 0 or -1 with err. */
int manifest_set_fits(const char *path, const char *name, char *err, size_t errlen);

/* Flush and close. 0 or -1 with err. */
int manifest_close(manifest_writer *w, char *err, size_t errlen);

/* Format v with %.10g, or "" for NaN (an empty CSV cell). */
void csv_number(char *out, size_t outlen, double v);

#endif
