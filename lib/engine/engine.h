/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine under the psfsim command (app/run/) and the library (lib/):
 * opening a set (the config from a file or text, the --backend override,
 * the image set, the config's fingerprint, the backend decision) and
 * closing it, written once (issue 25). Each client keeps what is its own
 * (the command: MPI refusals, the FITS and HDF5 modules, --resume, the
 * output directory, the limits; the library: its options, "both"'s
 * refusal, the queries' storage) in engine_open_args.step, which the
 * engine calls at fixed points, so that the order of the checks, and so
 * which message a config with several faults gets, is each client's as
 * before. The lanes that compute the set: lib/engine/lanes.h; the batch
 * loop over them: lib/engine/batch.h. */
#ifndef PSFSIM_ENGINE_H
#define PSFSIM_ENGINE_H

#include <stddef.h>

#include "app/config/config.h"
#include "app/select/backend_select.h"
#include "app/select/gpu_list.h"
#include "app/set/image_set.h"

/* An open set: its config, image set and backend decision. Zeroed
 * (memset) before engine_open; engine_close frees it. */
typedef struct engine {
    psf_config cfg;
    image_set set;
    int set_ready;             /* image_set_init succeeded (set to free) */
    char hash[24];             /* config_fingerprint; also in set.config_hash */
    backend_decision decision; /* the reason is updated on a fall-back (lanes.h) */
    double select_us;          /* backend_select's own time */
} engine;

/* The points of engine_open where the client's step runs. */
typedef enum {
    ENGINE_AT_LOADED, /* the config loaded, --backend applied; before the fingerprint */
    ENGINE_AT_HASHED, /* the fingerprint made (e->hash); before the image set */
    ENGINE_AT_SET,    /* the image set made (its config_hash filled unless hash_after_set) */
} engine_at;

/* What differs between the clients' opening of a set. */
typedef struct {
    const char *path;          /* the config file; NULL: text */
    const char *text;          /* the config's text (path NULL) */
    const char *name;          /* text: the name messages give it (NULL: "<text>") */
    const char *base_dir;      /* text: relative paths' directory (NULL: the working one) */
    const cfg_map_input *maps; /* maps given in memory (config_load_maps); NULL: none */
    int nmaps;
    int backend_given; /* backend replaces the config's backend key (--backend) */
    backend_choice backend;
    const gpu_list *gpus; /* the devices a GPU decision may use (--gpus) */
    int writers;          /* backend_select's writers (0: one per CPU) */
    /* 0: the cost model counts no files (the library computes into memory:
     * the decision is made on a view of the set writing neither PNG nor FITS) */
    int count_files;
    /* The library's order: the fingerprint after the image set and the
     * step at ENGINE_AT_SET, so that a map the set cannot read is named by
     * its loader (image_set_init) first; the command's: before the set. */
    int hash_after_set;
    /* image_set_check_open before the decision (the command) */
    int check_open;
    /* The client's step at each engine_at point: 0, or -1 with err (the
     * open fails, ENGINE_ERR_CONFIG). NULL: none. */
    int (*step)(void *user, engine *e, engine_at at, char *err, size_t errlen);
    void *user;
    /* Held around backend_select (the probe, the GPU module) when not NULL:
     * the library's lock (lib/set_priv.h). */
    void (*lock)(void);
    void (*unlock)(void);
} engine_open_args;

enum {
    ENGINE_OK = 0,
    ENGINE_ERR_CONFIG = -1,  /* the config, the set, a step or a check failed */
    ENGINE_ERR_BACKEND = -2, /* backend_select failed */
};

/* Open the set of args into e (zeroed): config_load_maps (path or text,
 * with args' maps), the backend override, the fingerprint, image_set_init (the fingerprint
 * copied into e->set.config_hash), image_set_check_open (check_open), then
 * backend_select (e->decision, e->select_us), with args->step at each
 * engine_at point. ENGINE_OK, or an ENGINE_ERR_* with the message (FILE:
 * LINE: KEY, or the file) in err; on failure e holds what was made:
 * engine_close frees it. */
int engine_open(engine *e, const engine_open_args *args, char *err, size_t errlen);

/* Free what engine_open made (a failed open's part too); e is zeroed. */
void engine_close(engine *e);

#endif
