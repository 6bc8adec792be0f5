/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim --draw-aperture (draw_aperture.h). */
#include "app/run/draw_aperture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/log.h"
#include "app/config/config.h"
#include "app/formats/png_io.h"
#include "app/select/plot.h"
#include "app/set/image_set.h"
#include "optics/aperture.h"

/* The numbers of a segmented aperture's segments at their centres, in the
 * PNG's pixels (sample j at x = (j - n/2) dx has its pixel centre at j +
 * 0.5). Returns the count, or -1 (out of memory). *labels malloc'd. */
static int segment_labels(const psf_aperture *a, int n, double dx, segment_label **labels)
{
    *labels = NULL;
    if (a->shape != APERTURE_SEGMENTED) return 0;
    const int count = aperture_segment_count(a->seg.rings);
    segment_label *l = malloc((size_t)count * sizeof *l);
    if (!l) return -1;
    for (int k = 0; k < count; ++k) {
        double x = 0, y = 0;
        aperture_segment_center(&a->seg, k, &x, &y);
        l[k].x = x / dx + n / 2 + 0.5;
        l[k].y = y / dx + n / 2 + 0.5;
        l[k].number = k;
        l[k].present = !((a->seg.missing[k / 64] >> (k % 64)) & 1ULL);
    }
    *labels = l;
    return count;
}

/* Draw the numbers onto levels (n x n) when the aperture is segmented. */
static int draw_numbers(const psf_aperture *a, int n, double dx, unsigned short *levels,
                        draw_aperture_info *info, char *err, size_t errlen)
{
    segment_label *labels = NULL;
    int count = segment_labels(a, n, dx, &labels);
    if (count < 0) {
        snprintf(err, errlen, "out of memory for the segment numbers");
        return -1;
    }
    if (count == 0) return 0;
    unsigned char *gray = malloc((size_t)n * n);
    if (!gray) {
        free(labels);
        snprintf(err, errlen, "out of memory for the segment numbers");
        return -1;
    }
    for (size_t i = 0; i < (size_t)n * n; ++i)
        gray[i] = (unsigned char)levels[i];
    /* Three digits fit across a segment's flats at 0.3 flat-to-flat. */
    const double font = 0.3 * a->seg.flat_to_flat_m / dx;
    char why[sizeof info->note];
    int rc = plot_segment_numbers(gray, n, n, labels, count, font, why, sizeof why);
    if (rc == 0) {
        for (size_t i = 0; i < (size_t)n * n; ++i)
            levels[i] = gray[i];
        info->nsegments = count;
    } else if (rc == 1) {
        snprintf(info->note, sizeof info->note, "%.540s: the segment numbers are not drawn", why);
    } else {
        snprintf(err, errlen, "%s", why);
    }
    free(gray);
    free(labels);
    return rc < 0 ? -1 : 0;
}

static int draw_set(const image_set *s, const char *png_path, draw_aperture_info *info, char *err,
                    size_t errlen)
{
    /* n + 1 samples hold the whole of D: those at -n/2 and +n/2 (even n)
     * are the rims' (pupil_samples alone would cut the +x and +y rims). */
    const int n = s->samp.pupil_samples + 1;
    const double dx = s->samp.dx_m;
    info->npix = n;
    info->dx_m = dx;
    float *t = malloc((size_t)n * n * sizeof *t);
    unsigned short *levels = malloc((size_t)n * n * sizeof *levels);
    int rc = -1;
    if (!t || !levels) {
        snprintf(err, errlen, "out of memory for a %d x %d aperture picture", n, n);
    } else if (aperture_fill(&s->aperture, n, dx, t, err, errlen) == 0) {
        for (size_t i = 0; i < (size_t)n * n; ++i)
            levels[i] = (unsigned short)lround(255.0 * t[i]);
        rc = draw_numbers(&s->aperture, n, dx, levels, info, err, errlen);
        if (rc == 0) rc = psf_png_write_levels(png_path, levels, n, 8, 6, err, errlen);
    }
    free(t);
    free(levels);
    return rc;
}

int draw_aperture(const char *config_path, const char *png_path, draw_aperture_info *info,
                  char *err, size_t errlen)
{
    memset(info, 0, sizeof *info);
    psf_config cfg;
    image_set s;
    memset(&s, 0, sizeof s);
    int rc = config_load(config_path, &cfg, err, errlen);
    if (rc == 0) rc = image_set_init(&s, &cfg, err, errlen);
    if (rc == 0) rc = draw_set(&s, png_path, info, err, errlen);
    image_set_free(&s);
    config_free(&cfg);
    return rc;
}

int draw_aperture_command(const char *config_path, const char *png_path)
{
    draw_aperture_info info;
    char err[8192];
    if (draw_aperture(config_path, png_path, &info, err, sizeof err) != 0) {
        log_error("%s", err);
        return 2;
    }
    if (info.note[0]) log_warn("%s", info.note);
    log_info(
        "wrote %s: the aperture's transmission, %d x %d pixels of %g m (sampling.pupil_samples "
        "across D)%s",
        png_path, info.npix, info.npix, info.dx_m,
        info.nsegments ? ", segment numbers at their centres" : "");
    return 0;
}
