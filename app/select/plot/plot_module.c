/* SPDX-License-Identifier: BSD-3-Clause */
/* The plot module, libpsfsim-plot.so: the --probe plot drawn with cairo,
 * built only when cairo is found. Its one export is the table of
 * app/select/plot_abi.h, which psfsim calls through
 * (app/select/plot_loader.c), so only --probe and --draw-aperture map cairo;
 * the segment numbers are drawn in segment_numbers_draw.c. */
#include "app/select/plot_abi.h"

#include <cairo.h>
#include <math.h>
#include <stdio.h>

#include "app/formats/atomic_file.h"
#include "app/base/module_loader.h"
#include "app/select/plot/segment_numbers_draw.h"

#define W 800
#define H 520
#define L 90 /* plot area margins, pixels */
#define R 30
#define T 40
#define B 60

typedef struct {
    double xmin, xmax, ymin, ymax; /* log10 ranges */
} axes;

static double px(const axes *a, double n)
{
    return L + (log10(n) - a->xmin) / (a->xmax - a->xmin) * (W - L - R);
}
static double py(const axes *a, double us)
{
    return H - B - (log10(us) - a->ymin) / (a->ymax - a->ymin) * (H - T - B);
}

static void ranges(const probe_figures *f, axes *a)
{
    double lo = f->cpu_us[0], hi = f->cpu_us[0];
    for (int i = 0; i < f->nsizes; ++i) {
        double v[3] = {f->cpu_us[i], f->gpu_b1_us[i], f->gpu_bb_us[i] / f->big_batch[i]};
        for (int k = 0; k < (f->have_gpu ? 3 : 1); ++k)
            lo = fmin(lo, v[k]), hi = fmax(hi, v[k]);
    }
    a->xmin = log10(f->npix[0]) - 0.1;
    a->xmax = log10(f->npix[f->nsizes - 1]) + 0.1;
    a->ymin = floor(log10(lo));
    a->ymax = ceil(log10(hi));
    if (a->ymax <= a->ymin) a->ymax = a->ymin + 1;
}

static void frame(cairo_t *cr, const probe_figures *f, const axes *a)
{
    char s[32];
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, L, T, W - L - R, H - T - B);
    cairo_stroke(cr);
    cairo_set_font_size(cr, 13);
    for (int i = 0; i < f->nsizes; ++i) { /* x ticks at the probed sizes */
        snprintf(s, sizeof s, "%d", f->npix[i]);
        cairo_move_to(cr, px(a, f->npix[i]) - 12, H - B + 18);
        cairo_show_text(cr, s);
    }
    for (double e = a->ymin; e <= a->ymax; e += 1) { /* decades on y */
        snprintf(s, sizeof s, "1e%+.0f", e);
        cairo_move_to(cr, 20, py(a, pow(10, e)) + 4);
        cairo_show_text(cr, s);
        cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
        cairo_move_to(cr, L, py(a, pow(10, e)));
        cairo_line_to(cr, W - R, py(a, pow(10, e)));
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0, 0, 0);
    }
    cairo_move_to(cr, W / 2 - 90, H - 15);
    cairo_show_text(cr, "grid size N (N x N FFT)");
    cairo_move_to(cr, L, 25);
    cairo_show_text(cr, "psfsim latency probe: time per PSF to host memory [us]");
}

static void series(cairo_t *cr, const probe_figures *f, const axes *a, int which, double r,
                   double g, double b, const char *label, int row)
{
    cairo_set_source_rgb(cr, r, g, b);
    cairo_set_line_width(cr, 2.5);
    for (int i = 0; i < f->nsizes; ++i) {
        double v = which == 0   ? f->cpu_us[i]
                   : which == 1 ? f->gpu_b1_us[i]
                                : f->gpu_bb_us[i] / f->big_batch[i];
        if (i == 0)
            cairo_move_to(cr, px(a, f->npix[i]), py(a, v));
        else
            cairo_line_to(cr, px(a, f->npix[i]), py(a, v));
    }
    cairo_stroke(cr);
    cairo_move_to(cr, L + 15, T + 20 + 18 * row);
    cairo_show_text(cr, label);
}

static void crossover(cairo_t *cr, const axes *a, double n, double r, double g, double b)
{
    if (n <= 0) return;
    static const double dash[] = {6, 4};
    cairo_set_source_rgb(cr, r, g, b);
    cairo_set_dash(cr, dash, 2, 0);
    cairo_set_line_width(cr, 1.5);
    cairo_move_to(cr, px(a, n), T);
    cairo_line_to(cr, px(a, n), H - B);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    char s[48];
    snprintf(s, sizeof s, "crossover N~%.0f", n);
    cairo_move_to(cr, px(a, n) + 4, H - B - 8);
    cairo_show_text(cr, s);
}

static cairo_status_t write_fp(void *closure, const unsigned char *data, unsigned int len)
{
    return fwrite(data, 1, len, (FILE *)closure) == len ? CAIRO_STATUS_SUCCESS
                                                        : CAIRO_STATUS_WRITE_ERROR;
}

/* plot_module_ops.draw. */
static int draw(const probe_figures *f, const double crossovers[2], const char *path, char *err,
                size_t errlen)
{
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
    cairo_t *cr = cairo_create(sf);
    axes a;
    ranges(f, &a);
    frame(cr, f, &a);
    series(cr, f, &a, 0, 0.1, 0.3, 0.8, "CPU (FFTW)", 0);
    if (f->have_gpu) {
        char big[64];
        snprintf(big, sizeof big, "GPU, large batch (per image)");
        series(cr, f, &a, 1, 0.85, 0.3, 0.1, "GPU, one image", 1);
        series(cr, f, &a, 2, 0.1, 0.6, 0.2, big, 2);
        crossover(cr, &a, crossovers[0], 0.85, 0.3, 0.1);
        crossover(cr, &a, crossovers[1], 0.1, 0.6, 0.2);
    }
    cairo_destroy(cr);
    atomic_file af;
    int rc = atomic_open(&af, path, err, errlen);
    if (rc == 0 && cairo_surface_write_to_png_stream(sf, write_fp, af.fp) != CAIRO_STATUS_SUCCESS) {
        snprintf(err, errlen, "%s: cannot write the plot", path);
        atomic_abort(&af);
        rc = -1;
    } else if (rc == 0) {
        rc = atomic_commit(&af, err, errlen);
    }
    cairo_surface_destroy(sf);
    return rc;
}

PSFSIM_MODULE_EXPORT const plot_module_ops psf_plot_module_entry = {
    .abi = PLOT_MODULE_ABI,
    .size = sizeof(plot_module_ops),
    .draw = draw,
    .numbers = segment_numbers_draw,
};
