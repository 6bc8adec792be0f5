/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim --probe: measure, cache, and report the latency probe's figures:
 * a table on stdout (N, CPU and GPU time per image at batch 1 and at a large
 * batch, the winner) with the crossover sizes, the same as CSV
 * (psfsim_probe.csv) and a plot of time against N for both backends with
 * the crossovers marked (psfsim_probe.png, when built with cairo). */
#ifndef PSFSIM_PROBE_REPORT_H
#define PSFSIM_PROBE_REPORT_H

#include <stdio.h>

#include "app/select/probe.h"

/* Run the probe command, writing into dir. Returns the exit status: 0, or 3
 * when the probe or a file failed (message logged). */
int probe_command(const char *dir);

/* The crossover N (interpolated between probed sizes) above which the GPU
 * is faster per image, at batch 1 (big = 0, GPU start cost excluded) or at
 * the large batch (big = 1); 0 when the GPU never wins in the probed range,
 * -1 when it always does. */
double probe_crossover(const probe_figures *f, int big);

/* The table, to out. */
void probe_print_table(const probe_figures *f, FILE *out);

#endif
