/* SPDX-License-Identifier: BSD-3-Clause */
/* The plot loader: probe_plot and plot_segment_numbers (plot.h) through the
 * plot module (app/select/plot/, its table plot_abi.h), loaded when one is
 * drawn. */
#include "app/select/plot.h"

#include <stdio.h>

#include "app/base/module_loader.h"
#include "app/select/plot_abi.h"

#ifndef PSFSIM_PLOT_BUILT
#define PSFSIM_PLOT_BUILT 0 /* CMake: 1 when the plot module is built (cairo) */
#endif

MODULE_TABLE_CHECK(plot_module_ops);

/* The module's table: 0, or 1 with why in err (not built, missing, or
 * another version). Called once per process (--probe, --draw-aperture): no
 * need to keep the table. */
static int load(const plot_module_ops **m, char *err, size_t errlen)
{
    static const module_spec spec = {PLOT_MODULE_NAME, "PSFSIM_PLOT_MODULE", PLOT_MODULE_ENTRY,
                                     PLOT_MODULE_ABI, sizeof(plot_module_ops)};
    module_opened mod;
    module_open(&spec, &mod);
    if (mod.status == MODULE_NOT_FOUND && !PSFSIM_PLOT_BUILT)
        snprintf(err, errlen, "psfsim was built without cairo (%.499s)", mod.why);
    else if (mod.status == MODULE_NOT_FOUND)
        snprintf(err, errlen, "the plot module is missing (%.499s)", mod.why);
    else if (!mod.table)
        snprintf(err, errlen, "cannot load the plot module: %.499s", mod.why);
    *m = mod.table;
    return *m ? 0 : 1;
}

int probe_plot(const probe_figures *f, const double crossovers[2], const char *path, char *err,
               size_t errlen)
{
    const plot_module_ops *m = NULL;
    if (load(&m, err, errlen)) return 1;
    return m->draw(f, crossovers, path, err, errlen);
}

int plot_segment_numbers(unsigned char *gray, int w, int h, const segment_label *labels, int n,
                         double font_px, char *err, size_t errlen)
{
    const plot_module_ops *m = NULL;
    if (load(&m, err, errlen)) return 1;
    return m->numbers(gray, w, h, labels, n, font_px, err, errlen);
}
