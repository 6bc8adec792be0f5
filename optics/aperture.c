/* Aperture validation and the pupil transmission grid. The per-sample
 * formulas live in aperture_geom.h and map_sample.h, shared with the GPU
 * kernels; this file only checks the description and loops over the grid. */
#include "optics/aperture.h"
#include "optics/aperture_geom.h"
#include "optics/map_sample.h"

#include <math.h>
#include <stdio.h>

static int fail(char *err, size_t errlen, const char *msg, double got)
{
    if (err && errlen) snprintf(err, errlen, "aperture: %s (got %g)", msg, got);
    return -1;
}

int aperture_check(const psf_aperture *a, char *err, size_t errlen)
{
    if (!a) return fail(err, errlen, "no aperture given", 0.0);
    if (a->shape != APERTURE_CIRCULAR && a->shape != APERTURE_HEXAGON && a->shape != APERTURE_FILE)
        return fail(err, errlen, "unknown shape", (double)a->shape);
    if (a->edge != EDGE_GREY && a->edge != EDGE_BINARY)
        return fail(err, errlen, "unknown edge mode", (double)a->edge);
    if (!(a->diameter_m > 0.0) || !isfinite(a->diameter_m))
        return fail(err, errlen, "diameter_m must be > 0", a->diameter_m);
    if (!(a->obscuration >= 0.0 && a->obscuration < 1.0))
        return fail(err, errlen, "obscuration must be in [0, 1)", a->obscuration);
    if (a->spider_count < 0)
        return fail(err, errlen, "spider count must be >= 0", (double)a->spider_count);
    if (a->spider_count > 0) {
        if (!(a->spider_width_m >= 0.0) || !isfinite(a->spider_width_m))
            return fail(err, errlen, "spider width_m must be >= 0", a->spider_width_m);
        if (!isfinite(a->spider_angle_deg))
            return fail(err, errlen, "spider angle_deg must be finite", a->spider_angle_deg);
    }
    if (a->shape == APERTURE_FILE && (!a->map || a->map_rows < 1 || a->map_cols < 1))
        return fail(err, errlen, "shape \"file\" needs a transmission map, rows x cols >= 1",
                    (double)a->map_rows);
    return 0;
}

int aperture_fill(const psf_aperture *a, int npix, double dx_m, float *amp, char *err,
                  size_t errlen)
{
    if (aperture_check(a, err, errlen)) return -1;
    if (npix < 1) return fail(err, errlen, "grid size N must be >= 1", (double)npix);
    if (!(dx_m > 0.0) || !isfinite(dx_m))
        return fail(err, errlen, "pupil pitch dx must be > 0", dx_m);
    if (!amp) return fail(err, errlen, "no output buffer", 0.0);
    psf_aperture_geom g;
    aperture_geom_init(a, &g);
    const int c = npix / 2;
    for (int i = 0; i < npix; ++i) {
        double y = (double)(i - c) * dx_m;
        float *row = amp + (size_t)i * npix;
        for (int j = 0; j < npix; ++j) {
            double x = (double)(j - c) * dx_m;
            float t = aperture_sample_index(&g, i - c, j - c, dx_m);
            if (a->shape == APERTURE_FILE && t != 0.0f)
                t *= map_bilinear(a->map, a->map_rows, a->map_cols, a->diameter_m, x, y);
            row[j] = t;
        }
    }
    return 0;
}
