/* SPDX-License-Identifier: BSD-3-Clause */
/* NAME.h5 and NAME.json in a run (app/run/run_dataset.h). */
#include "app/run/run_dataset.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "app/base/log.h"
#include "app/dataset/hdf5_writer.h"
#include "app/output/outputs.h"
#include "app/dataset/sidecar.h"

static hdf5_provenance provenance(const run_state *r)
{
    return (hdf5_provenance){.config_hash = r->e.hash,
                             .backend = r->e.decision.reason,
                             .gpu = r->e.decision.ops && r->e.decision.ops != &psf_backend_cpu};
}

/* 1 when name is a regular file (not a link) in the directory dirfd. */
static int is_file(int dirfd, const char *name)
{
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/* --resume without a temp file: 1 when NAME.h5 is complete and this
 * config's: its sidecar, written after it, names this config, and the file
 * itself, opened, has this set's layout, complete = 1 and this config_hash
 * (a file cut short, or another config's put in its place, is made again,
 * with a warning saying why). */
static int kept_complete(const run_state *r)
{
    char h5[SET_PATH_MAX], tmp[SET_PATH_MAX], hash[64], why[600];
    outputs_set_file(NULL, r->e.cfg.name, SET_HDF5, h5, sizeof h5);
    if (h5set_temp_name(h5, tmp, sizeof tmp) != 0 || is_file(r->out.fd, tmp) ||
        !is_file(r->out.fd, h5))
        return 0;
    if (sidecar_config_hash(r->out.fd, r->e.cfg.name, hash, sizeof hash) != 0 ||
        strcmp(hash, r->e.hash) != 0)
        return 0;
    hdf5_provenance pv = provenance(r);
    if (hdf5_writer_check_complete(&r->e.set, r->out.fd, r->dir, &pv, why, sizeof why)) return 1;
    log_warn("resuming: %s/%s is not kept (%.500s): it is made again", r->dir, h5, why);
    return 0;
}

int run_dataset_open(run_state *r, char *err, size_t errlen)
{
    if (!r->e.cfg.hdf5_enabled) return 0;
    int resume = r->opt.resume;
    if (resume && kept_complete(r)) {
        r->h5_kept = 1;
        log_info("resuming: %s.h5 is complete, kept", r->e.cfg.name);
        return 0;
    }
    hdf5_provenance pv = provenance(r);
    h5set_info info;
    r->h5 =
        hdf5_writer_open(&r->e.set, r->out.fd, r->dir, &pv, resume, r->batch, &info, err, errlen);
    if (!r->h5) return -1;
    if (info.note[0] && resume)
        log_warn("%s", info.note); /* its images are computed again */
    else if (info.note[0])
        log_info("%s", info.note);
    if (!resume) return 0;
    long long before = r->resume.ndone;
    resume_require(&r->resume, hdf5_writer_written(r->h5));
    r->todo = r->e.set.nimages - r->resume.ndone;
    log_info("resuming: %s.h5 holds %lld image(s)%s; %lld done image(s) it lacks are computed "
             "again",
             r->e.cfg.name, info.nwritten, info.resumed ? "" : " (a new file)",
             before - r->resume.ndone);
    return 0;
}

int run_dataset_add(run_state *r, int s, int held, char *err, size_t errlen)
{
    const run_slot *sl = &r->slots[s];
    if (!r->h5) return 0;
    if (held) return hdf5_writer_add_held(r->h5, r->host, sl->writes, sl->count, s, err, errlen);
    return hdf5_writer_add(r->h5, r->host, sl->writes, sl->count, err, errlen);
}

void run_dataset_wait(run_state *r, int s)
{
    hdf5_writer_wait_slot(r->h5, s);
}

int run_dataset_close(run_state *r, int complete, char *err, size_t errlen)
{
    if (!r->e.cfg.hdf5_enabled) return 0;
    hdf5_writer *w = r->h5;
    r->h5 = NULL;
    if (hdf5_writer_close(w, complete, err, errlen) != 0) return -1;
    if (!complete) return 0;
    sidecar_run run = {
        .pv = provenance(r), .ndevices = r->e.decision.ndevices, .devices = r->e.decision.devices};
    return sidecar_write(&r->e.set, r->out.fd, r->dir, &run, err, errlen);
}

void run_dataset_abort(run_state *r)
{
    char err[RUN_ERRLEN];
    hdf5_writer_close(r->h5, 0, err, sizeof err);
    r->h5 = NULL;
}
