/* SPDX-License-Identifier: BSD-3-Clause */
/* The plot module's interface: libpsfsim-plot.so (app/select/probe_plot.c with
 * app/formats/atomic_file.c, linked with cairo; built only when cairo is found)
 * exports one table, psf_plot_module_entry. app/select/plot_module.c defines
 * probe_plot (probe_plot.h) through it, loading the module on first use
 * (module_loader.h; the path may be given by $PSFSIM_PLOT_MODULE), so
 * only psfsim --probe maps cairo and the ~15 libraries under it. */
#ifndef PSFSIM_PLOT_MODULE_H
#define PSFSIM_PLOT_MODULE_H

#include <stddef.h>

#include "app/select/probe.h"

#define PLOT_MODULE_NAME "libpsfsim-plot.so"
#define PLOT_MODULE_ENTRY "psf_plot_module_entry"
/* Raised whenever the table changes, so a stale module is refused. */
#define PLOT_MODULE_ABI 1

typedef struct {
    int abi;     /* PLOT_MODULE_ABI */
    size_t size; /* sizeof(plot_module_ops) */
    /* Draw f to path (PNG, written atomically) as probe_plot does, with
     * the crossover sizes N at batch 1 and at the large batch as
     * probe_crossover gives them (0: none marked; used when f->have_gpu).
     * Returns 0, or -1 with err naming path. */
    int (*draw)(const probe_figures *f, const double crossovers[2], const char *path, char *err,
                size_t errlen);
} plot_module_ops;

/* Defined by the module only (app/select/probe_plot.c). */
extern const plot_module_ops psf_plot_module_entry;

#endif
