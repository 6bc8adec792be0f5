/* SPDX-License-Identifier: BSD-3-Clause */
/* output.hdf5 in a run: NAME.h5's writer (app/dataset/hdf5_writer.h) and the
 * sidecar NAME.json (app/dataset/sidecar.h), for app/run/set_files.c, the owner of the
 * set's files, and for the loop's retire (app/run/run_sink.c). One process
 * only: prepare() refuses output.hdf5 with MPI.
 *
 * --resume: an image counts as done when the manifest lists it with its
 * files (app/output/resume.h) and NAME.h5's temp file has it (its written flag);
 * every other image is computed again (an image the temp file has but the
 * manifest lacks is computed for its PNG/FITS files and row, and not
 * written again: the file keeps its own). With no temp file, a complete
 * NAME.h5 whose sidecar names this config's fingerprint, and which, opened,
 * has this set's layout, complete = 1 and this config_hash
 * (hdf5_writer_check_complete), holds every image: it is kept as it is;
 * else it is made again, with a warning. */
#ifndef PSFSIM_RUN_DATASET_H
#define PSFSIM_RUN_DATASET_H

#include <stddef.h>

#include "app/run/run_state.h"

/* With output.hdf5, before the journals are created: open NAME.h5's temp
 * file (afresh, or with --resume continued) and start its writer; with
 * --resume narrow r->resume to the images the file has too, and r->todo
 * with it. 0, or -1 with err. */
int run_dataset_open(run_state *r, char *err, size_t errlen);

/* Slot s's images, written and logged, to NAME.h5's queue (nothing
 * without output.hdf5): held 1, written from the slot's memory in place
 * (hdf5_writer_add_held: the slot is not reused before run_dataset_wait),
 * else copied. 0, or -1 with err (the writer failed). */
int run_dataset_add(run_state *r, int s, int held, char *err, size_t errlen);

/* Wait until NAME.h5's writer is done with slot s's memory. */
void run_dataset_wait(run_state *r, int s);

/* The end of the run: write what is queued and close NAME.h5 (complete:
 * renamed into place; else its temp file is kept for --resume); then,
 * complete, the sidecar. 0, or -1 with err. */
int run_dataset_close(run_state *r, int complete, char *err, size_t errlen);

/* After a failure: close NAME.h5 keeping its temp file, errors ignored. */
void run_dataset_abort(run_state *r);

#endif
