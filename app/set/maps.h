/* Map files named in a config: aperture transmission (shape = "file") and
 * OPD maps, read as PNG (8/16-bit grayscale) or FITS by file extension. */
#ifndef PSFSIM_MAPS_H
#define PSFSIM_MAPS_H

#include <stddef.h>

/* Load a transmission map: PNG grey levels / maxval, FITS values as they
 * are; values outside [0, 1] are an error. Returns 0 or -1 with err
 * naming the file. *data: malloc'd rows x cols, row 0 at y = -D/2 (the
 * PNG's top row, the FITS's first row). */
int maps_load_transmission(const char *path, float **data, int *rows, int *cols, char *err,
                           size_t errlen);

/* Load an OPD map: PNG grey levels or FITS values times scale (NaN in
 * FITS become 0). Returns 0 or -1 with err. */
int maps_load_opd(const char *path, double scale, float **data, int *rows, int *cols, char *err,
                  size_t errlen);

#endif
