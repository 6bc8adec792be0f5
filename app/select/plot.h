/* SPDX-License-Identifier: BSD-3-Clause */
/* The probe's plot: time per image against N, log-log, for the CPU and the
 * GPU at batch 1 and at the large batch, crossovers marked. Drawn with cairo
 * (cairographics.org) by the plot module, libpsfsim-plot.so, built when
 * cairo is found and loaded only here (plot_module.h). */
#ifndef PSFSIM_PROBE_PLOT_H
#define PSFSIM_PROBE_PLOT_H

#include <stddef.h>

#include "app/select/probe.h"

/* Write the plot to path (PNG, atomically), marking crossovers[0] and
 * crossovers[1], the crossover sizes N at batch 1 and at the large batch
 * (0: none marked), which the caller computes (probe_crossover). Returns 0;
 * 1 when built without cairo (no plot module) or when the module cannot be
 * loaded (reason in err: the plot is skipped); -1 with err on failure. */
int probe_plot(const probe_figures *f, const double crossovers[2], const char *path, char *err,
               size_t errlen);

#endif
