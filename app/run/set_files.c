/* SPDX-License-Identifier: BSD-3-Clause */
/* The set's own files: their names, and for a run their creation, closes
 * and sort (app/run/set_files.h). */
#include "app/run/set_files.h"

#include <stdio.h>
#include <string.h>

#include "app/base/log.h"
#include "app/formats/mpi_journal.h"
#include "app/output/outputs.h"
#include "app/run/run_state.h"
#include "app/run/run_dataset.h"

/* The name of r's set file f in the output directory. */
static const char *name_of(const run_state *r, set_file f, char *out, size_t outlen)
{
    return outputs_set_file(NULL, r->e.cfg.name, f, out, outlen);
}

/* Take the set's lock unless prepare() did: the directory is made now, or
 * had no lock file then; a set made meanwhile by another run (a plain run
 * then finds it written) is refused, r->refused. */
static int lock(run_state *r, char *err, size_t errlen)
{
    if (r->locked_early) return 0;
    int rc = set_dir_lock(&r->out, r->e.cfg.name, 1, err, errlen);
    if (rc == 0 && !r->opt.resume && !r->opt.force &&
        outputs_check(&r->e.cfg, r->dir, 0, err, errlen) != 0)
        rc = SET_DIR_BUSY;
    r->refused = rc == SET_DIR_BUSY;
    return rc;
}

int set_files_create(run_state *r, char *err, size_t errlen)
{
    if (set_dir_open(&r->out, 1, err, errlen) != 0 || lock(r, err, errlen) != 0) return -1;
    int fd = r->out.fd;
    resume_clean_temps(fd, &r->e.cfg, r->e.set.nimages);
    /* NAME.h5 first: with --resume it narrows the rows the journals keep. */
    if (run_dataset_open(r, err, errlen) != 0) return -1;
    if (resume_whole_cube(&r->resume, &r->e.cfg)) { /* NAME.h5 lacked some: the cube needs all */
        log_warn("resuming: %s_cube.fits is written whole: every image is computed again",
                 r->e.cfg.name);
        r->todo = r->e.set.nimages;
    }
    if (resume_cube_check(&r->resume, &r->e.set, fd, r->e.hash)) r->todo = r->e.set.nimages;
    char name[SET_PATH_MAX];
    name_of(r, SET_MANIFEST, name, sizeof name);
    if (manifest_open(&r->manifest, &r->e.set, fd, r->dir, name, r->e.hash, r->resume.manifest_rows,
                      r->resume.nmanifest, err, errlen) != 0)
        return -1;
    r->manifest_open = 1;
    if (r->mpi && mpi_journal_append(&r->manifest.j, fd, r->dir, name, err, errlen) != 0) return -1;
    name_of(r, SET_TIMING, name, sizeof name);
    if (timing_open(&r->timing, fd, r->dir, name, r->resume.timing_rows, r->resume.ntiming, err,
                    errlen) != 0)
        return -1;
    r->timing_open = 1;
    if (r->mpi && mpi_journal_append(&r->timing.j, fd, r->dir, name, err, errlen) != 0) return -1;
    return 0;
}

int set_files_attach(run_state *r, char *err, size_t errlen)
{
    char name[SET_PATH_MAX];
    memset(&r->manifest, 0, sizeof r->manifest);
    snprintf(r->manifest.hash, sizeof r->manifest.hash, "%s", r->e.hash);
    int there = set_dir_open(&r->out, 0, err, errlen);
    if (there == 1) snprintf(err, errlen, "output directory %s: not there", r->dir);
    if (there != 0) return -1;
    name_of(r, SET_MANIFEST, name, sizeof name);
    if (mpi_journal_append(&r->manifest.j, r->out.fd, r->dir, name, err, errlen) != 0) return -1;
    r->manifest_open = 1;
    name_of(r, SET_TIMING, name, sizeof name);
    if (mpi_journal_append(&r->timing.j, r->out.fd, r->dir, name, err, errlen) != 0) return -1;
    r->timing_open = 1;
    return 0;
}

int set_files_open_cube(run_state *r, char *err, size_t errlen)
{
    if (!r->e.cfg.fits_enabled || !r->e.cfg.fits_cube) return 0;
    if (r->resume.ndone == r->e.set.nimages) { /* resume_cube_check: the cube is there, whole */
        char name[SET_PATH_MAX];
        log_info("resuming: %s is complete, kept", name_of(r, SET_CUBE, name, sizeof name));
        return 0;
    }
    if (cube_writer_open(&r->cube, &r->e.set, r->out.fd, r->dir, err, errlen) != 0) return -1;
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
    char name[SET_PATH_MAX];
    int rc =
        journal_sort(r->out.fd, r->dir, name_of(r, SET_MANIFEST, name, sizeof name), err, errlen);
    rc |= journal_sort(r->out.fd, r->dir, name_of(r, SET_TIMING, name, sizeof name), err, errlen);
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
    char manifest[SET_PATH_MAX];
    return manifest_set_fits(r->out.fd, r->dir, name_of(r, SET_MANIFEST, manifest, sizeof manifest),
                             name, err, errlen);
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
    char herr[RUN_ERRLEN]; /* NAME.h5 and NAME.json, complete only after the journals */
    if (run_dataset_close(r, complete && rc == 0, herr, sizeof herr) != 0 && rc == 0) {
        snprintf(err, errlen, "%s", herr);
        rc = -1;
    }
    return rc ? -1 : 0;
}

void set_files_abort(run_state *r)
{
    char err[RUN_ERRLEN];
    if (r->cube_open) cube_writer_abort(&r->cube);
    run_dataset_abort(r);
    if (r->timing_open) timing_close(&r->timing, err, sizeof err);
    if (r->manifest_open) manifest_close(&r->manifest, err, sizeof err);
    r->cube_open = r->timing_open = r->manifest_open = 0;
}
