/* The set's own files in the output directory (README, "Outputs"): the
 * manifest NAME_manifest.csv, the timing log NAME_timing.csv and, with
 * output.fits.cube, the cube NAME_cube.fits (the images' own names are
 * outputs_image_name's, app/outputs.h). set_file_path is the one place that
 * names them; the set_files_* functions own them for a run: the journals'
 * creation (or, on MPI ranks other than 0, appending to rank 0's), the
 * cube's start, the flushes, the closes and the final sort. */
#ifndef PSFSIM_SET_FILES_H
#define PSFSIM_SET_FILES_H

#include <stddef.h>

#include "app/config/config.h"

/* Room for dir/NAME_manifest.csv and the others (a dir of up to
 * CFG_PATH_MAX, the name and the suffix). */
#define SET_PATH_MAX (CFG_PATH_MAX + 300)

typedef enum { SET_MANIFEST, SET_TIMING, SET_CUBE } set_file;

/* dir/NAME_manifest.csv, dir/NAME_timing.csv or dir/NAME_cube.fits (name:
 * the config's set name) into out, cut to outlen; dir NULL: the file name
 * alone. Returns out. */
const char *set_file_path(const char *dir, const char *name, set_file f, char *out, size_t outlen);

struct run_state; /* app/run_state.h */

/* Create the output directory (removing the temp files a killed run left)
 * and the journals, with --resume the earlier run's kept rows first; with
 * MPI (rank 0) opened for appending too, as every rank appends to them
 * (app/formats/mpi_journal.h). 0, or -1 with err (what is open is marked so
 * in r and closed by set_files_abort). */
int set_files_create(struct run_state *r, char *err, size_t errlen);

/* MPI ranks other than 0: append to the journals rank 0 created. 0, or -1
 * with err. */
int set_files_attach(struct run_state *r, char *err, size_t errlen);

/* With output.fits.cube: open the cube's temp file (it appears only
 * complete, set_files_close). 0, or -1 with err. */
int set_files_open_cube(struct run_state *r, char *err, size_t errlen);

/* Flush both journals (rank 0 of an MPI run, before the ranks' summary).
 * 0, or -1 with the last failure in err. */
int set_files_flush(struct run_state *r, char *err, size_t errlen);

/* Close the journals still open, without a summary (an MPI rank; a shared
 * journal is never cut back on a failed flush: journal.h). 0, or -1 with
 * the last failure in err. */
int set_files_close_journals(struct run_state *r, char *err, size_t errlen);

/* Sort the manifest and the timing log by index: one ordered set, as an
 * uninterrupted single-process run writes it. 0, or -1 with err. */
int set_files_sort(struct run_state *r, char *err, size_t errlen);

/* The end of a plain run (its timing summary already added): close the
 * timing log and the manifest, commit the cube when complete (the manifest
 * then names it; else it is discarded), and sort the journals when rows
 * came out of order (several lanes, --resume). 0, or -1 with err. */
int set_files_close(struct run_state *r, int complete, char *err, size_t errlen);

/* After a failure: discard the cube, close what is still open, errors
 * ignored. */
void set_files_abort(struct run_state *r);

#endif
