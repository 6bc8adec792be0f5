/* The set's own files: their names, and for a run their creation, closes
 * and sort (app/set_files.h). */
#include "app/set_files.h"

#include <stdio.h>
#include <string.h>

#include "app/base/make_dir.h"
#include "app/formats/mpi_journal.h"
#include "app/outputs.h"
#include "app/run_state.h"

/* r's set file f in r->dir. */
static const char *path_of(const run_state *r, set_file f, char *out, size_t outlen)
{
    return outputs_set_file(r->dir, r->cfg.name, f, out, outlen);
}

int set_files_create(run_state *r, char *err, size_t errlen)
{
    if (make_dir(r->dir, err, errlen) != 0) return -1;
    resume_clean_temps(r->dir, r->cfg.name);
    char path[SET_PATH_MAX];
    path_of(r, SET_MANIFEST, path, sizeof path);
    if (manifest_open(&r->manifest, path, r->hash, r->cfg.normalization == NORM_PUPIL,
                      r->resume.manifest_rows, r->resume.nmanifest, err, errlen) != 0)
        return -1;
    r->manifest_open = 1;
    if (r->mpi && mpi_journal_append(&r->manifest.j, path, err, errlen) != 0) return -1;
    path_of(r, SET_TIMING, path, sizeof path);
    if (timing_open(&r->timing, path, r->resume.timing_rows, r->resume.ntiming, err, errlen) != 0)
        return -1;
    r->timing_open = 1;
    if (r->mpi && mpi_journal_append(&r->timing.j, path, err, errlen) != 0) return -1;
    return 0;
}

int set_files_attach(run_state *r, char *err, size_t errlen)
{
    char path[SET_PATH_MAX];
    memset(&r->manifest, 0, sizeof r->manifest);
    snprintf(r->manifest.hash, sizeof r->manifest.hash, "%s", r->hash);
    path_of(r, SET_MANIFEST, path, sizeof path);
    if (mpi_journal_append(&r->manifest.j, path, err, errlen) != 0) return -1;
    r->manifest_open = 1;
    path_of(r, SET_TIMING, path, sizeof path);
    if (mpi_journal_append(&r->timing.j, path, err, errlen) != 0) return -1;
    r->timing_open = 1;
    return 0;
}

int set_files_open_cube(run_state *r, char *err, size_t errlen)
{
    if (!r->cfg.fits_enabled || !r->cfg.fits_cube) return 0;
    if (cube_writer_open(&r->cube, &r->set, r->dir, err, errlen) != 0) return -1;
    r->cube_open = 1;
    return 0;
}

int set_files_flush(run_state *r, char *err, size_t errlen)
{
    int rc = timing_flush(&r->timing, err, errlen);
    rc |= manifest_flush(&r->manifest, err, errlen);
    return rc ? -1 : 0;
}

/* Close a journal this run still has open. */
static int close_journal(int *open, journal *j, char *err, size_t errlen)
{
    if (!*open) return 0;
    *open = 0;
    return journal_close(j, err, errlen);
}

int set_files_close_journals(run_state *r, char *err, size_t errlen)
{
    int rc = close_journal(&r->timing_open, &r->timing.j, err, errlen);
    rc |= close_journal(&r->manifest_open, &r->manifest.j, err, errlen);
    return rc ? -1 : 0;
}

int set_files_sort(run_state *r, char *err, size_t errlen)
{
    char path[SET_PATH_MAX];
    int rc = journal_sort(path_of(r, SET_MANIFEST, path, sizeof path), err, errlen);
    rc |= journal_sort(path_of(r, SET_TIMING, path, sizeof path), err, errlen);
    return rc ? -1 : 0;
}

/* The cube appears only complete; then the manifest names it. */
static int close_cube(run_state *r, int complete, char *err, size_t errlen)
{
    if (!r->cube_open) return 0;
    r->cube_open = 0;
    if (!complete) {
        cube_writer_abort(&r->cube);
        return 0;
    }
    char name[sizeof r->cube.name];
    snprintf(name, sizeof name, "%s", r->cube.name);
    if (cube_writer_commit(&r->cube, err, errlen) != 0) return -1;
    char path[SET_PATH_MAX];
    return manifest_set_fits(path_of(r, SET_MANIFEST, path, sizeof path), name, err, errlen);
}

int set_files_close(run_state *r, int complete, char *err, size_t errlen)
{
    int rc = 0;
    if (r->timing_open) {
        rc |= timing_close(&r->timing, err, errlen);
        r->timing_open = 0;
    }
    if (r->manifest_open) {
        rc |= manifest_close(&r->manifest, err, errlen);
        r->manifest_open = 0;
        if (rc == 0) rc |= close_cube(r, complete, err, errlen);
        /* Rows come in completion order when several lanes computed, and
         * after the kept rows on --resume. */
        if (rc == 0 && (r->resume.ndone > 0 || r->nlanes > 1)) rc |= set_files_sort(r, err, errlen);
    }
    return rc ? -1 : 0;
}

void set_files_abort(run_state *r)
{
    char err[RUN_ERRLEN];
    if (r->cube_open) cube_writer_abort(&r->cube);
    if (r->timing_open) timing_close(&r->timing, err, sizeof err);
    if (r->manifest_open) manifest_close(&r->manifest, err, sizeof err);
}
