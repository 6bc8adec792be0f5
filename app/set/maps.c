/* Aperture transmission and OPD maps, read as PNG or FITS by extension. */
#include "app/set/maps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "app/formats/fits_io.h"
#include "app/formats/png_io.h"

typedef enum { MAP_UNKNOWN, MAP_PNG, MAP_FITS } map_format;

/* By the extension after the last '.' of the file name, case-insensitive. */
static map_format map_format_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot) return MAP_UNKNOWN;
    const char *ext = dot + 1;
    if (!strcasecmp(ext, "png")) return MAP_PNG;
    if (!strcasecmp(ext, "fits") || !strcasecmp(ext, "fit") || !strcasecmp(ext, "fts"))
        return MAP_FITS;
    return MAP_UNKNOWN;
}

/* Read path as PNG or FITS; *maxval is the PNG's maximum grey level, or 0
 * for FITS. */
static int map_read(const char *path, float **data, int *rows, int *cols, int *maxval, char *err,
                    size_t errlen)
{
    *data = NULL;
    *rows = *cols = 0;
    *maxval = 0;
    switch (map_format_of(path)) {
    case MAP_PNG:
        return psf_png_read_gray(path, data, rows, cols, maxval, err, errlen);
    case MAP_FITS:
        return psf_fits_read_image(path, data, rows, cols, err, errlen);
    default:
        snprintf(err, errlen,
                 "%s: unknown map file type (expected .png, .fits, .fit or .fts, any case)", path);
        return -1;
    }
}

static void give_up(float **data, int *rows, int *cols)
{
    free(*data);
    *data = NULL;
    *rows = *cols = 0;
}

int maps_load_transmission(const char *path, float **data, int *rows, int *cols, char *err,
                           size_t errlen)
{
    int maxval = 0;
    if (map_read(path, data, rows, cols, &maxval, err, errlen)) return -1;
    float *t = *data;
    const size_t n = (size_t)*rows * (size_t)*cols;
    if (maxval > 0) {
        const double inv = 1.0 / maxval;
        for (size_t i = 0; i < n; ++i)
            t[i] = (float)(t[i] * inv);
        return 0;
    }
    for (size_t i = 0; i < n; ++i) {
        if (isnan(t[i])) {
            t[i] = 0.0f;
        } else if (!(t[i] >= 0.0f && t[i] <= 1.0f)) {
            snprintf(err, errlen,
                     "%s: transmission %.9g at row %zu, column %zu is outside [0, 1] (row 0 is "
                     "the first stored row)",
                     path, (double)t[i], i / (size_t)*cols, i % (size_t)*cols);
            give_up(data, rows, cols);
            return -1;
        }
    }
    return 0;
}

int maps_load_opd(const char *path, double scale, float **data, int *rows, int *cols, char *err,
                  size_t errlen)
{
    *data = NULL;
    *rows = *cols = 0;
    if (!isfinite(scale)) {
        snprintf(err, errlen, "%s: OPD scale %g is not finite", path, scale);
        return -1;
    }
    int maxval = 0;
    if (map_read(path, data, rows, cols, &maxval, err, errlen)) return -1;
    float *o = *data;
    const size_t n = (size_t)*rows * (size_t)*cols;
    for (size_t i = 0; i < n; ++i) {
        if (isnan(o[i])) {
            o[i] = 0.0f;
        } else {
            const float v = (float)((double)o[i] * scale);
            if (!isfinite(v)) {
                snprintf(err, errlen,
                         "%s: OPD value %g at row %zu, column %zu is not finite (times scale %g)",
                         path, (double)o[i], i / (size_t)*cols, i % (size_t)*cols, scale);
                give_up(data, rows, cols);
                return -1;
            }
            o[i] = v;
        }
    }
    return 0;
}
