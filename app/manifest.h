/* NAME_manifest.csv: one row per image written, in the columns and order of
 * config-schema.md. Rows go to a temp file as images complete; closing
 * renames it into place, so the manifest is always complete and lists
 * exactly the images whose files exist. */
#ifndef PSFSIM_MANIFEST_H
#define PSFSIM_MANIFEST_H

#include <stddef.h>

#include "atomic_file.h"
#include "image_set.h"
#include "outputs.h"

typedef struct {
    atomic_file af;
    long long rows;
} manifest_writer;

/* Open the temp file for path and write the header. 0 or -1 with err. */
int manifest_open(manifest_writer *w, const char *path, char *err, size_t errlen);

/* Append image k's row. 0 or -1 with err (a write error). */
int manifest_add(manifest_writer *w, const image_set *s, long long k, const image_info *info,
                 const image_result *res, char *err, size_t errlen);

/* Flush and rename into place. 0 or -1 with err. */
int manifest_close(manifest_writer *w, char *err, size_t errlen);

/* Format v with %.10g, or "" for NaN (an empty CSV cell). */
void csv_number(char *out, size_t outlen, double v);

#endif
