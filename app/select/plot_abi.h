/* SPDX-License-Identifier: BSD-3-Clause */
/* The plot module's ABI: the one table libpsfsim-plot.so (app/select/plot/
 * with app/formats/atomic_file.c, linked with cairo; built only when cairo is
 * found) exports as psf_plot_module_entry, and the loader
 * (app/select/plot_loader.c) reads for plot.h's functions, so only psfsim
 * --probe and --draw-aperture map cairo and the ~15 libraries under it.
 * Nothing but the module and its loader includes this. */
#ifndef PSFSIM_PLOT_ABI_H
#define PSFSIM_PLOT_ABI_H

#include <stddef.h>

#include "app/select/plot.h"
#include "app/select/probe.h"

#define PLOT_MODULE_NAME "libpsfsim-plot.so"
#define PLOT_MODULE_ENTRY "psf_plot_module_entry"
/* Raised whenever the table changes, so a stale module is refused. */
#define PLOT_MODULE_ABI 2

typedef struct {
    int abi;     /* PLOT_MODULE_ABI */
    size_t size; /* sizeof(plot_module_ops) */
    /* Draw f to path (PNG, written atomically) as probe_plot does, with
     * the crossover sizes N at batch 1 and at the large batch as
     * probe_crossover gives them (0: none marked; used when f->have_gpu).
     * Returns 0, or -1 with err naming path. */
    int (*draw)(const probe_figures *f, const double crossovers[2], const char *path, char *err,
                size_t errlen);
    /* Draw the segment numbers (plot.h) onto gray (w x h 8-bit levels,
     * row-major, row 0 the top row) in place, as plot_segment_numbers does.
     * Returns 0, or -1 with err. */
    int (*numbers)(unsigned char *gray, int w, int h, const segment_label *labels, int n,
                   double font_px, char *err, size_t errlen);
} plot_module_ops;

/* Defined by the module only (app/select/plot/plot_module.c). */
extern const plot_module_ops psf_plot_module_entry;

#endif
