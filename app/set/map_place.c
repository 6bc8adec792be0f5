/* SPDX-License-Identifier: BSD-3-Clause */
/* A map's pixel scale (config key or FITS header) and its placement on the
 * entrance pupil (map_place.h). */
#include "app/set/map_place.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "app/base/log.h"
#include "app/formats/fits_scan.h"
#include "app/set/maps.h"

/* PIXUNIT naming metres (POPPY writes 'meter' for pupil planes). */
static int is_metre(const char *u)
{
    static const char *const names[] = {"m", "meter", "meters", "metre", "metres"};
    for (size_t k = 0; k < sizeof names / sizeof *names; ++k)
        if (!strcasecmp(u, names[k])) return 1;
    return 0;
}

static int bad_scale(const char *path, const char *key, const fits_scan_scale *s, char *err,
                     size_t errlen)
{
    if (s->seen > 0)
        snprintf(err, errlen, "%s: %s = %g is not a pixel scale (metres per pixel, > 0)", path, key,
                 s->value);
    else
        snprintf(err, errlen, "%s: %s is not a number (a pixel scale: metres per pixel, > 0)", path,
                 key);
    return -1;
}

int map_pixel_scale(const char *path, double config_scale_m, const char *scale_key,
                    map_placement *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    double *scale_m = &out->scale_m;
    char *source = out->source;
    const size_t sourcelen = sizeof out->source;
    if (config_scale_m > 0.0) {
        *scale_m = config_scale_m;
        snprintf(source, sourcelen, "%s", scale_key);
        return 0;
    }
    if (!maps_is_fits(path)) return 0;
    fits_scan_result r;
    if (fits_scan_image(path, &r, err, errlen)) return -1;
    if (r.puplscal.seen) {
        if (!(r.puplscal.seen > 0 && r.puplscal.value > 0.0))
            return bad_scale(path, "PUPLSCAL", &r.puplscal, err, errlen);
        *scale_m = r.puplscal.value;
        snprintf(source, sourcelen, "the map's PUPLSCAL");
        return 0;
    }
    if (r.pixelscl.seen && r.pixunit > 0 && is_metre(r.pixunit_text)) {
        if (!(r.pixelscl.seen > 0 && r.pixelscl.value > 0.0))
            return bad_scale(path, "PIXELSCL", &r.pixelscl, err, errlen);
        *scale_m = r.pixelscl.value;
        snprintf(source, sourcelen, "the map's PIXELSCL (PIXUNIT = metres)");
    }
    return 0;
}

int map_place(const psf_config *cfg, const char *file_key, const char *scale_key, const char *path,
              double config_scale_m, int rows, int cols, map_placement *out, char *err,
              size_t errlen)
{
    if (out->scale_m == 0.0) return 0;
    const double s = out->scale_m, d = cfg->aperture.diameter_m;
    out->width_m = cols * s;
    out->height_m = rows * s;
    const char *key = config_scale_m > 0.0 ? scale_key : file_key;
    char where[CFG_PATH_MAX + 32];
    config_key_where(cfg, key, where, sizeof where);
    if (!isfinite(out->width_m) || !isfinite(out->height_m)) {
        snprintf(err, errlen,
                 "%.4200s: %s: %.900s: %d x %d pixels of %g m do not make a finite extent", where,
                 key, path, cols, rows, s);
        return -1;
    }
    /* The D x D square holds every open sample; the sample at -D/2 sits on
     * its edge, hence the 1e-9 allowance map_bilinear_wh makes too. */
    const double need = d * (1.0 - 1e-9);
    if (out->width_m < need || out->height_m < need) {
        snprintf(err, errlen,
                 "%.4200s: %s: %.900s: the map covers %.6g m x %.6g m (%d x %d pixels of %g m, "
                 "from %s), the aperture needs %.6g m (optics.aperture.diameter_m): a map placed "
                 "at its pixel scale must cover the D x D square centred on the axis",
                 where, key, path, out->width_m, out->height_m, cols, rows, s, out->source, d);
        return -1;
    }
    log_info("%s: placed at %g m per pixel (%s): %d x %d pixels cover %g m x %g m, centred on "
             "the axis",
             path, s, out->source, cols, rows, out->width_m, out->height_m);
    return 0;
}
