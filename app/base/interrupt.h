/* SPDX-License-Identifier: BSD-3-Clause */
/* SIGINT and SIGTERM during a run: the handler only sets a flag (the one
 * thing a handler may safely do, POSIX.1-2017 2.4.3); the run loop checks it
 * between batches, lets the files in flight finish, writes a true manifest
 * and exits 130. Installed before the config loads: the loader checks the
 * flag while it waits for a stream (a FIFO, standard input) and reads its
 * files, and refuses the config ("interrupted"); main then exits 130 with
 * nothing written. A second signal restores the default action (so a
 * stuck run can still be killed). */
#ifndef PSFSIM_INTERRUPT_H
#define PSFSIM_INTERRUPT_H

/* Install the handlers (once per run). */
void interrupt_install(void);

/* The signal received (SIGINT/SIGTERM), or 0. */
int interrupt_pending(void);

#endif
