/* SPDX-License-Identifier: BSD-3-Clause */
/* The plot module's interface: libpsfsim-plot.so (app/select/probe_plot.c with
 * app/formats/atomic_file.c, linked with cairo; built only when cairo is found)
 * exports one table, psf_plot_module_entry. app/select/plot_module.c defines
 * probe_plot (probe_plot.h) through it, loading the module on first use
 * (module_loader.h; the path may be given by $PSFSIM_PLOT_MODULE), so
 * only psfsim --probe maps cairo and the ~15 libraries under it; and
 * plot_segment_numbers (segment_numbers.h) for psfsim --draw-aperture. */
#ifndef PSFSIM_PLOT_MODULE_H
#define PSFSIM_PLOT_MODULE_H

#include <stddef.h>

#include "app/select/probe.h"
#include "app/select/segment_numbers.h"

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
    /* Draw the numbers of segment_numbers.h onto gray (w x h 8-bit levels,
     * row-major, row 0 the top row) in place, as plot_segment_numbers does.
     * Returns 0, or -1 with err. */
    int (*numbers)(unsigned char *gray, int w, int h, const segment_label *labels, int n,
                   double font_px, char *err, size_t errlen);
} plot_module_ops;

/* The module's numbers (app/select/segment_numbers_draw.c). */
int segment_numbers_draw(unsigned char *gray, int w, int h, const segment_label *labels, int n,
                         double font_px, char *err, size_t errlen);

/* Defined by the module only (app/select/probe_plot.c). */
extern const plot_module_ops psf_plot_module_entry;

#endif
