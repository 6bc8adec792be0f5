/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim --draw-aperture FILE.png: the config's sampled aperture
 * transmission as a PNG, segment numbers drawn on a segmented aperture
 * (docs/config.md, "Command line" and "Segmented apertures"). */
#ifndef PSFSIM_DRAW_APERTURE_H
#define PSFSIM_DRAW_APERTURE_H

#include <stddef.h>

/* What draw_aperture drew. */
typedef struct {
    int npix;       /* the PNG's width and height: sampling.pupil_samples + 1 */
    double dx_m;    /* its pixel: D / pupil_samples, metres */
    int nsegments;  /* numbers drawn (0: not segmented, or not drawn) */
    char note[600]; /* why the numbers are not drawn (built without cairo ...), or "" */
} draw_aperture_info;

/* Load the config at config_path and make its image set (the config's
 * checks and its maps', as a run does before any work), then write the
 * aperture's transmission t, sampled as the backends sample it
 * (aperture_fill: n x n samples of pitch dx = D / pupil_samples, n =
 * pupil_samples + 1 so that the whole of D is drawn, the axis at sample
 * (n/2, n/2) as on the backends' grids, row 0 at y = -(n/2) dx,
 * the top row: the orientation of a map, so the PNG read back as
 * optics.aperture.file is the same aperture), to png_path atomically as an
 * 8-bit grayscale PNG, grey level round(255 t). A segmented aperture gets
 * every segment's number at its centre (black; a left-out segment's in
 * grey) through the plot module (app/select/plot.h); without it the PNG has
 * no numbers and info->note says why. Returns 0, or -1 with err (the
 * config's messages, the map's, or the PNG's; nothing written then). */
int draw_aperture(const char *config_path, const char *png_path, draw_aperture_info *info,
                  char *err, size_t errlen);

/* psfsim --draw-aperture PNG -c CONFIG: draw_aperture, then "wrote PATH:
 * N x N pixels of D/N m ..." (log_info) and the note as a warning. Returns
 * the exit status: 0, or 2 (the error logged, nothing written). */
int draw_aperture_command(const char *config_path, const char *png_path);

#endif
