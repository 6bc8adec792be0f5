/* SPDX-License-Identifier: BSD-3-Clause */
/* Aperture transmission and OPD maps, read as PNG or FITS by extension. */
#include "app/set/maps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "app/base/log.h"
#include "app/formats/fits.h"
#include "app/formats/fits_scan.h"
#include "app/formats/png_io.h"

typedef enum { MAP_UNKNOWN, MAP_PNG, MAP_FITS } map_format;

static int ext_is(const char *ext, size_t len, const char *name)
{
    return len == strlen(name) && !strncasecmp(ext, name, len);
}

/* By the extension after the last '.' of the file name, case-insensitive;
 * a FITS extension then .gz is gzip-compressed FITS (cfitsio and fits_scan
 * read it inflated). */
static map_format map_format_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot) return MAP_UNKNOWN;
    const char *ext = dot + 1;
    size_t len = strlen(ext);
    const int gz = ext_is(ext, len, "gz");
    if (gz) { /* the extension before .gz */
        const char *prev = dot;
        while (prev > base && prev[-1] != '.')
            --prev;
        if (prev == base) return MAP_UNKNOWN;
        len = (size_t)(dot - prev);
        ext = prev;
    }
    if (!gz && ext_is(ext, len, "png")) return MAP_PNG;
    if (ext_is(ext, len, "fits") || ext_is(ext, len, "fit") || ext_is(ext, len, "fts"))
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
                 "%s: unknown map file type (expected .png, .fits, .fit or .fts, any case; "
                 "FITS also gzip-compressed: .fits.gz)",
                 path);
        return -1;
    }
}

const char *maps_name(const char *file, const cfg_map_array *array)
{
    return array->values ? MAPS_ARRAY_LABEL : file;
}

int maps_is_fits(const char *path)
{
    return map_format_of(path) == MAP_FITS;
}

static void give_up(float **data, int *rows, int *cols)
{
    free(*data);
    *data = NULL;
    *rows = *cols = 0;
}

/* A map covers D x D whatever its shape (optics/map_sample.h samples it
 * so): a non-square one is stretched, which is worth a word. */
static void warn_if_stretched(const char *path, int rows, int cols)
{
    if (rows != cols)
        log_warn("%s: the map is %d rows x %d columns, not square: it is stretched over D x D "
                 "(a pixel D/%d wide and D/%d high)",
                 path, rows, cols, cols, rows);
}

/* A map given in memory (config.h, cfg_map_array) copied into *data, as
 * map_read leaves a FITS map (maxval 0). */
static int map_copy(const cfg_map_array *a, const char *label, float **data, int *rows, int *cols,
                    char *err, size_t errlen)
{
    const size_t n = (size_t)a->rows * (size_t)a->cols;
    *data = malloc(n * sizeof **data);
    if (!*data) {
        *rows = *cols = 0;
        snprintf(err, errlen, "%s: out of memory for %d x %d pixels", label, a->cols, a->rows);
        return -1;
    }
    memcpy(*data, a->values, n * sizeof **data);
    *rows = a->rows;
    *cols = a->cols;
    return 0;
}

/* The transmission of a map read into *data (maxval: map_read's); path
 * names it. stretched: warn when non-square. */
static int transmission_values(const char *path, int stretched, int maxval, float **data, int *rows,
                               int *cols, char *err, size_t errlen)
{
    float *t = *data;
    const size_t n = (size_t)*rows * (size_t)*cols;
    if (maxval > 0) {
        const double inv = 1.0 / maxval;
        for (size_t i = 0; i < n; ++i)
            t[i] = (float)(t[i] * inv);
        if (stretched) warn_if_stretched(path, *rows, *cols);
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
    if (stretched) warn_if_stretched(path, *rows, *cols);
    return 0;
}

/* maps_load_transmission; stretched: warn when non-square. */
static int load_transmission(const char *path, int stretched, float **data, int *rows, int *cols,
                             char *err, size_t errlen)
{
    int maxval = 0;
    if (map_read(path, data, rows, cols, &maxval, err, errlen)) return -1;
    return transmission_values(path, stretched, maxval, data, rows, cols, err, errlen);
}

int maps_transmission_array(const cfg_map_array *a, const char *label, int stretched, float **data,
                            int *rows, int *cols, char *err, size_t errlen)
{
    if (map_copy(a, label, data, rows, cols, err, errlen)) return -1;
    return transmission_values(label, stretched, 0, data, rows, cols, err, errlen);
}

int maps_load_transmission(const char *path, float **data, int *rows, int *cols, char *err,
                           size_t errlen)
{
    return load_transmission(path, 1, data, rows, cols, err, errlen);
}

int maps_load_transmission_placed(const char *path, float **data, int *rows, int *cols, char *err,
                                  size_t errlen)
{
    return load_transmission(path, 0, data, rows, cols, err, errlen);
}

/* An OPD unit a FITS map's BUNIT may name: value x factor = OPD in units. */
typedef struct {
    const char *names; /* the accepted spellings, '|'-separated */
    const char *unit;  /* how -v and the timing log name it */
    double factor;
    zernike_units units;
} opd_unit;

#define TWO_PI 6.283185307179586
static const opd_unit opd_unit_table[] = {
    {"m|meter|meters|metre|metres", "m", 1e9, ZUNITS_NM},
    {"um|micron|microns|micrometer|micrometers|micrometre|micrometres", "um", 1e3, ZUNITS_NM},
    {"nm|nanometer|nanometers|nanometre|nanometres", "nm", 1.0, ZUNITS_NM},
    {"rad|radian|radians", "rad", 1.0 / TWO_PI, ZUNITS_WAVES},
    {"wave|waves", "waves", 1.0, ZUNITS_WAVES},
};

/* The entry naming text (case-insensitive), or NULL. */
static const opd_unit *opd_unit_named(const char *text)
{
    size_t len = strlen(text);
    for (size_t k = 0; k < sizeof opd_unit_table / sizeof *opd_unit_table; ++k) {
        for (const char *p = opd_unit_table[k].names; *p;) {
            size_t n = strcspn(p, "|");
            if (n == len && !strncasecmp(p, text, n)) return &opd_unit_table[k];
            p += n + (p[n] == '|');
        }
    }
    return NULL;
}

/* The unit of an OPD map's values: the FITS image's BUNIT, or fallback
 * when it has none (or a blank one). *factor: value x factor is in
 * u->units. Returns 0, or -1 with err. */
static int opd_unit_of(const char *path, zernike_units fallback, double *factor, maps_opd_units *u,
                       char *err, size_t errlen)
{
    *factor = 1.0;
    u->units = fallback;
    const char *config = fallback == ZUNITS_WAVES ? "waves" : "nm";
    if (map_format_of(path) != MAP_FITS) {
        snprintf(u->what, sizeof u->what, "%s (aberrations.opd_map.units; a PNG has no BUNIT)",
                 config);
        return 0;
    }
    fits_scan_result r;
    if (fits_scan_image(path, &r, err, errlen)) return -1;
    if (r.bunit < 0) {
        snprintf(err, errlen,
                 "%s: BUNIT is not a quoted string (an OPD map's BUNIT is one of m, um, nm, "
                 "rad, waves, or their names: meter, micron, nanometer, radian, wave)",
                 path);
        return -1;
    }
    if (r.bunit == 0 || strspn(r.bunit_text, " ") == strlen(r.bunit_text)) {
        snprintf(u->what, sizeof u->what, "%s (aberrations.opd_map.units; the map has %s)", config,
                 r.bunit ? "a blank BUNIT" : "no BUNIT");
        return 0;
    }
    const char *text = r.bunit_text + strspn(r.bunit_text, " ");
    const opd_unit *k = opd_unit_named(text);
    if (!k) {
        snprintf(err, errlen,
                 "%s: BUNIT = '%.40s' is not a unit of OPD psfsim knows (m, um, nm, rad, waves, "
                 "or their names: meter, micron, nanometer, radian, wave; plural too)",
                 path, text);
        return -1;
    }
    *factor = k->factor;
    u->units = k->units;
    snprintf(u->what, sizeof u->what, "%s (the map's BUNIT = '%.40s')", k->unit, text);
    return 0;
}

/* maps_load_opd, of the file at path or (path NULL) of the array a,
 * named label; stretched: warn when non-square. */
static int load_opd(const char *path, const cfg_map_array *a, const char *label, int stretched,
                    double scale, zernike_units fallback, float **data, int *rows, int *cols,
                    maps_opd_units *units, char *err, size_t errlen)
{
    *data = NULL;
    *rows = *cols = 0;
    memset(units, 0, sizeof *units);
    if (!isfinite(scale)) {
        snprintf(err, errlen, "%s: OPD scale %g is not finite", label, scale);
        return -1;
    }
    int maxval = 0;
    if (path ? map_read(path, data, rows, cols, &maxval, err, errlen)
             : map_copy(a, label, data, rows, cols, err, errlen))
        return -1;
    if (maxval > 0 && maxval != 65535) { /* 1, 2, 4 or 8 bits */
        snprintf(err, errlen,
                 "%s: an OPD map PNG must be 16-bit grayscale (this one has 8 bits or fewer: at "
                 "most 256 levels, too coarse for an OPD); write it with 16 bits, or as FITS",
                 path);
        give_up(data, rows, cols);
        return -1;
    }
    double factor = 1.0;
    if (!path) { /* an array has no header: the config's unit */
        units->units = fallback;
        snprintf(units->what, sizeof units->what,
                 "%s (aberrations.opd_map.units; an array has no BUNIT)",
                 fallback == ZUNITS_WAVES ? "waves" : "nm");
    } else if (opd_unit_of(path, fallback, &factor, units, err, errlen)) {
        give_up(data, rows, cols);
        return -1;
    }
    const double k = scale * factor; /* = scale for nm and waves */
    float *o = *data;
    const size_t n = (size_t)*rows * (size_t)*cols;
    for (size_t i = 0; i < n; ++i) {
        if (isnan(o[i])) {
            o[i] = 0.0f;
        } else {
            const float v = (float)((double)o[i] * k);
            if (!isfinite(v)) {
                char unit[80] = "";
                if (factor != 1.0) snprintf(unit, sizeof unit, ", x %g for its unit", factor);
                snprintf(err, errlen,
                         "%s: OPD value %g at row %zu, column %zu is not finite (times scale %g%s)",
                         label, (double)o[i], i / (size_t)*cols, i % (size_t)*cols, scale, unit);
                give_up(data, rows, cols);
                return -1;
            }
            o[i] = v;
        }
    }
    log_info("%s: OPD map of %d x %d pixels, OPD = %g x value in %s", label, *rows, *cols, scale,
             units->what);
    if (stretched) warn_if_stretched(label, *rows, *cols);
    return 0;
}

int maps_load_opd(const char *path, double scale, zernike_units fallback, float **data, int *rows,
                  int *cols, maps_opd_units *units, char *err, size_t errlen)
{
    return load_opd(path, NULL, path, 1, scale, fallback, data, rows, cols, units, err, errlen);
}

int maps_load_opd_placed(const char *path, double scale, zernike_units fallback, float **data,
                         int *rows, int *cols, maps_opd_units *units, char *err, size_t errlen)
{
    return load_opd(path, NULL, path, 0, scale, fallback, data, rows, cols, units, err, errlen);
}

int maps_opd_array(const cfg_map_array *a, const char *label, int stretched, double scale,
                   zernike_units fallback, float **data, int *rows, int *cols,
                   maps_opd_units *units, char *err, size_t errlen)
{
    return load_opd(NULL, a, label, stretched, scale, fallback, data, rows, cols, units, err,
                    errlen);
}
