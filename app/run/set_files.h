/* SPDX-License-Identifier: BSD-3-Clause */
/* The owner of a run's set files in the output directory (README,
 * "Outputs"): the manifest NAME_manifest.csv, the timing log
 * NAME_timing.csv and, with output.fits.cube, the cube NAME_cube.fits: the
 * journals' creation (or, on MPI ranks other than 0, appending to rank
 * 0's), the cube's start, the flushes, the closes and the final sort.
 * Their paths come from outputs_set_file (app/output/outputs.h), which names every
 * file of the directory and is below the run (resume.c reads the journals
 * by it too). */
#ifndef PSFSIM_SET_FILES_H
#define PSFSIM_SET_FILES_H

#include <stddef.h>

#include "app/run/run_state.h"

/* Create and open the output directory, take the set's lock unless
 * prepare() holds it (app/output/set_dir.h; the set in use, or written meanwhile
 * when the directory or its lock file is new: -1 with r->refused, nothing
 * touched), remove the temp files a killed run left, and create the
 * journals, with --resume the earlier run's kept rows first; with
 * MPI (rank 0) opened for appending too, as every rank appends to them
 * (app/formats/mpi_journal.h). 0, or -1 with err (what is open is marked so
 * in r and closed by set_files_abort). */
int set_files_create(run_state *r, char *err, size_t errlen);

/* MPI ranks other than 0: append to the journals rank 0 created. 0, or -1
 * with err. */
int set_files_attach(run_state *r, char *err, size_t errlen);

/* With output.fits.cube: open the cube's temp file (it appears only
 * complete, set_files_close); with --resume of a set whose every image is
 * done (resume_whole_cube) the cube there is kept, none opened. 0, or -1
 * with err. */
int set_files_open_cube(run_state *r, char *err, size_t errlen);

/* Flush both journals (rank 0 of an MPI run, before the ranks' summary).
 * 0, or -1 with the last failure in err. */
int set_files_flush(run_state *r, char *err, size_t errlen);

/* Close the journals still open, without a summary (an MPI rank; a shared
 * journal is never cut back on a failed flush: journal.h). 0, or -1 with
 * the last failure in err. */
int set_files_close_journals(run_state *r, char *err, size_t errlen);

/* Sort the manifest and the timing log by index: one ordered set, as an
 * uninterrupted single-process run writes it. 0, or -1 with err. */
int set_files_sort(run_state *r, char *err, size_t errlen);

/* The end of a plain run (its timing summary already added): close the
 * timing log and the manifest, commit the cube when complete (the manifest
 * then names it; else it is discarded), and sort the journals when rows
 * came out of order (several lanes, --resume). 0, or -1 with err. */
int set_files_close(run_state *r, int complete, char *err, size_t errlen);

/* After a failure: discard the cube, close what is still open, errors
 * ignored; then nothing is open. */
void set_files_abort(run_state *r);

#endif
