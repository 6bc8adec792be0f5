/* SPDX-License-Identifier: BSD-3-Clause */
/* The plot module's segment numbers (plot_abi.h, numbers): cairo draws
 * them on an RGB copy of the grey picture, whose green channel goes back. */
#include "app/select/plot/segment_numbers_draw.h"

#include <cairo.h>
#include <stdio.h>

int segment_numbers_draw(unsigned char *gray, int w, int h, const segment_label *labels, int n,
                         double font_px, char *err, size_t errlen)
{
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
    if (cairo_surface_status(sf) != CAIRO_STATUS_SUCCESS) {
        snprintf(err, errlen, "cairo: no %d x %d surface for the segment numbers", w, h);
        cairo_surface_destroy(sf);
        return -1;
    }
    cairo_surface_flush(sf);
    unsigned char *px = cairo_image_surface_get_data(sf);
    const int stride = cairo_image_surface_get_stride(sf);
    for (int r = 0; r < h; ++r) /* RGB24: one uint32 0x00RRGGBB per pixel */
        for (int c = 0; c < w; ++c) {
            unsigned g = gray[(size_t)r * w + c];
            *(unsigned *)(px + (size_t)r * stride + 4 * (size_t)c) = g << 16 | g << 8 | g;
        }
    cairo_surface_mark_dirty(sf);
    cairo_t *cr = cairo_create(sf);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    cairo_set_font_size(cr, font_px);
    for (int k = 0; k < n; ++k) {
        char s[16];
        snprintf(s, sizeof s, "%d", labels[k].number);
        cairo_text_extents_t e;
        cairo_text_extents(cr, s, &e);
        /* Centre the ink box on the point. */
        cairo_move_to(cr, labels[k].x - e.x_bearing - 0.5 * e.width,
                      labels[k].y - e.y_bearing - 0.5 * e.height);
        double v = labels[k].present ? 0.0 : 0.55;
        cairo_set_source_rgb(cr, v, v, v);
        cairo_show_text(cr, s);
    }
    cairo_destroy(cr);
    cairo_surface_flush(sf);
    for (int r = 0; r < h; ++r)
        for (int c = 0; c < w; ++c)
            gray[(size_t)r * w + c] =
                (unsigned char)(*(unsigned *)(px + (size_t)r * stride + 4 * (size_t)c) >> 8 & 255);
    cairo_surface_destroy(sf);
    return 0;
}
