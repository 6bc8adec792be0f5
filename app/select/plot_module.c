/* SPDX-License-Identifier: BSD-3-Clause */
/* probe_plot (probe_plot.h) through the plot module, loaded on first use
 * (plot_module.h). */
#include "app/select/plot_module.h"

#include <stdio.h>

#include "app/base/module_loader.h"
#include "app/select/probe_plot.h"

#ifndef PSFSIM_PLOT_BUILT
#define PSFSIM_PLOT_BUILT 0 /* CMake: 1 when the plot module is built (cairo) */
#endif

int probe_plot(const probe_figures *f, const double crossovers[2], const char *path, char *err,
               size_t errlen)
{
    static const char *const symbols[] = {PLOT_MODULE_ENTRY};
    void *entry = NULL;
    char mpath[MODULE_PATH_MAX], why[500];
    module_status st;
    /* Called once per process (psfsim --probe): no need to keep the table. */
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
    const plot_module_ops *m = entry;
    if (m->abi != PLOT_MODULE_ABI || m->size != sizeof *m) {
        snprintf(err, errlen, "cannot load the plot module: %.400s is of another psfsim version",
                 mpath);
        return 1;
    }
    return m->draw(f, crossovers, path, err, errlen);
}
