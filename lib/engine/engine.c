/* SPDX-License-Identifier: BSD-3-Clause */
/* Opening and closing a set (lib/engine/engine.h). */
#include "lib/engine/engine.h"

#include <stdio.h>
#include <string.h>

#include "app/base/clock.h"

static int step(const engine_open_args *a, engine *e, engine_at at, char *err, size_t errlen)
{
    return a->step && a->step(a->user, e, at, err, errlen) != 0 ? -1 : 0;
}

/* The decision for the set; without counting files (count_files 0) on a
 * shallow copy of the set whose config writes neither PNG nor FITS. */
static int decide(engine *e, const engine_open_args *a, char *err, size_t errlen)
{
    psf_config quiet = e->cfg;
    image_set view = e->set;
    if (!a->count_files) {
        quiet.png_enabled = quiet.fits_enabled = 0;
        view.cfg = &quiet;
    }
    if (a->lock) a->lock();
    double t0 = clock_us();
    int rc = backend_select(e->cfg.backend, &view, a->writers, a->gpus, &e->decision, err, errlen);
    e->select_us = clock_us() - t0;
    if (a->unlock) a->unlock();
    return rc;
}

static int fingerprint(engine *e, char *err, size_t errlen)
{
    if (config_fingerprint(&e->cfg, e->hash, err, errlen) != 0) return -1;
    if (e->set_ready) snprintf(e->set.config_hash, sizeof e->set.config_hash, "%s", e->hash);
    return 0;
}

int engine_open(engine *e, const engine_open_args *a, char *err, size_t errlen)
{
    int bad = config_load_maps(a->path, a->text, a->name, a->base_dir, a->maps, a->nmaps, &e->cfg,
                               err, errlen);
    if (bad) return ENGINE_ERR_CONFIG;
    if (a->backend_given) e->cfg.backend = a->backend;
    if (step(a, e, ENGINE_AT_LOADED, err, errlen) != 0) return ENGINE_ERR_CONFIG;
    if (!a->hash_after_set && fingerprint(e, err, errlen) != 0) return ENGINE_ERR_CONFIG;
    if (step(a, e, ENGINE_AT_HASHED, err, errlen) != 0) return ENGINE_ERR_CONFIG;
    if (image_set_init(&e->set, &e->cfg, err, errlen) != 0) {
        image_set_free(&e->set); /* what it made before failing */
        return ENGINE_ERR_CONFIG;
    }
    e->set_ready = 1;
    if (!a->hash_after_set) snprintf(e->set.config_hash, sizeof e->set.config_hash, "%s", e->hash);
    if (step(a, e, ENGINE_AT_SET, err, errlen) != 0) return ENGINE_ERR_CONFIG;
    if (a->hash_after_set && fingerprint(e, err, errlen) != 0) return ENGINE_ERR_CONFIG;
    if (a->check_open && image_set_check_open(&e->set, err, errlen) != 0) return ENGINE_ERR_CONFIG;
    return decide(e, a, err, errlen) == 0 ? ENGINE_OK : ENGINE_ERR_BACKEND;
}

void engine_close(engine *e)
{
    if (e->set_ready) image_set_free(&e->set);
    config_free(&e->cfg);
    memset(e, 0, sizeof *e);
}
