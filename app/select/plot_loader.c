/* SPDX-License-Identifier: BSD-3-Clause */
/* probe_plot (probe_plot.h) and plot_segment_numbers (segment_numbers.h)
 * through the plot module, loaded on first use (plot_module.h). */
#include "app/select/plot_abi.h"

#include <stdio.h>

#include "app/base/module_loader.h"
#include "app/select/plot.h"
#include "app/select/segment_numbers.h"

#ifndef PSFSIM_PLOT_BUILT
#define PSFSIM_PLOT_BUILT 0 /* CMake: 1 when the plot module is built (cairo) */
#endif

/* The module's table: 0, or 1 with why in err (not built, missing, or
 * another version). */
static int load(const plot_module_ops **m, char *err, size_t errlen)
{
    static const char *const symbols[] = {PLOT_MODULE_ENTRY};
    void *entry = NULL;
    char mpath[MODULE_PATH_MAX], why[500];
    module_status st;
    /* Called once per process (--probe, --draw-aperture): no need to keep the table. */
    if (!module_load(PLOT_MODULE_NAME, "PSFSIM_PLOT_MODULE", symbols, &entry, 1, &st, mpath,
                     sizeof mpath, why, sizeof why)) {
        if (st == MODULE_NOT_FOUND && !PSFSIM_PLOT_BUILT)
            snprintf(err, errlen, "psfsim was built without cairo (%s)", why);
        else if (st == MODULE_NOT_FOUND)
            snprintf(err, errlen, "the plot module is missing (%s)", why);
        else
            snprintf(err, errlen, "cannot load the plot module: %s", why);
        return 1;
    }
    *m = entry;
    if ((*m)->abi != PLOT_MODULE_ABI || (*m)->size != sizeof **m) {
        snprintf(err, errlen, "cannot load the plot module: %.400s is of another psfsim version",
                 mpath);
        return 1;
    }
    return 0;
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
