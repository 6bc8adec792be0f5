/* SPDX-License-Identifier: BSD-3-Clause */
/* Opening and closing a set (lib/psfsim.h): options, config (file or
 * text), the image set, the backend decision; the library's lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/log.h"
#include "lib/set_priv.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

void lib_lock(void)
{
    pthread_mutex_lock(&g_lock);
}

void lib_unlock(void)
{
    pthread_mutex_unlock(&g_lock);
}

void psfsim_options_init(psfsim_options *options)
{
    if (!options) return;
    memset(options, 0, sizeof *options);
    options->size = sizeof *options;
}

/* The --backend value, or the config's for NULL. */
static int parse_backend(const char *name, backend_choice *b, char *err, size_t errlen)
{
    static const char *const names[] = {"auto", "cpu", "gpu"};
    for (int i = 0; i < 3; ++i)
        if (strcmp(name, names[i]) == 0) {
            *b = (backend_choice)i; /* the order of backend_choice */
            return PSFSIM_OK;
        }
    return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                    "backend: expected auto, cpu or gpu (got \"%.100s\")", name);
}

/* The decision for computing into memory: the cost model counts no files
 * (a shallow copy of the set whose config writes neither PNG nor FITS). */
static int decide(psfsim_set *s, backend_choice choice, const gpu_list *gpus, char *err,
                  size_t errlen)
{
    psf_config quiet = s->cfg;
    quiet.png_enabled = quiet.fits_enabled = 0;
    image_set view = s->set;
    view.cfg = &quiet;
    lib_lock(); /* the probe, the GPU module */
    int rc = backend_select(choice, &view, 0, gpus, &s->decision, err, errlen);
    lib_unlock();
    return rc == 0 ? PSFSIM_OK : PSFSIM_ERR_BACKEND;
}

/* Open from path or text (one of them), the options checked. */
static int open_set(const char *path, const char *text, const psfsim_options *o, psfsim_set **out,
                    char *err, size_t errlen)
{
    lib_messages_init();
    backend_choice choice = BACKEND_AUTO;
    gpu_list gpus;
    gpu_list_all(&gpus);
    int rc = PSFSIM_OK;
    if (o && o->backend) rc = parse_backend(o->backend, &choice, err, errlen);
    if (rc == PSFSIM_OK && o && o->gpus && gpu_list_parse(o->gpus, &gpus, err, errlen) != 0)
        rc = PSFSIM_ERR_ARGUMENT;
    if (rc == PSFSIM_OK && o && (o->threads < 0 || o->threads > LIB_MAX_THREADS))
        rc = lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                      "threads: expected 0 (one per CPU) or 1..%d (got %d)", LIB_MAX_THREADS,
                      o->threads);
    if (rc != PSFSIM_OK) return rc;
    psfsim_set *s = calloc(1, sizeof *s);
    if (!s) return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
    atomic_init(&s->cancel, 0);
    atomic_flag_clear(&s->busy);
    s->threads = o ? o->threads : 0;
    int bad = path ? config_load(path, &s->cfg, err, errlen)
                   : config_load_text(text, o ? o->name : NULL, o ? o->base_dir : NULL, &s->cfg,
                                      err, errlen);
    if (!bad) {
        bad = image_set_init(&s->set, &s->cfg, err, errlen);
        if (!bad && s->cfg.detector.enabled && s->cfg.detector.write == DET_WRITE_BOTH) {
            /* two images per image: the program's FITS files (app/output/outputs.h) */
            char where[CFG_PATH_MAX + 32];
            config_key_where(&s->cfg, "detector.write", where, sizeof where);
            snprintf(err, errlen,
                     "%.4200s: detector.write: \"both\" is written by the psfsim program only; "
                     "the library takes \"detector\" or \"oversampled\"",
                     where);
            image_set_free(&s->set);
            bad = -1;
        }
        /* The FITS CFGHASH, as the command fills it (app/run/run.c). */
        if (!bad) bad = config_fingerprint(&s->cfg, s->set.config_hash, err, errlen);
        s->set_ready = !bad;
        if (bad) image_set_free(&s->set);
    }
    rc = bad ? PSFSIM_ERR_CONFIG : PSFSIM_OK;
    if (rc == PSFSIM_OK) {
        s->query_storage = calloc(image_set_storage(&s->set) + 1, sizeof *s->query_storage);
        if (!s->query_storage) rc = lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
    }
    if (rc == PSFSIM_OK && o && o->backend) s->cfg.backend = choice; /* as --backend */
    if (rc == PSFSIM_OK) rc = decide(s, s->cfg.backend, &gpus, err, errlen);
    if (rc != PSFSIM_OK) {
        psfsim_close(s);
        return rc;
    }
    *out = s;
    return PSFSIM_OK;
}

int psfsim_open_file(const char *path, const psfsim_options *options, psfsim_set **set, char *err,
                     size_t errlen)
{
    if (set) *set = NULL;
    if (!path || !set) return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no path or no set given");
    if (options && options->size < sizeof *options)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "options: size %zu (not from psfsim_options_init)", options->size);
    return open_set(path, NULL, options, set, err, errlen);
}

int psfsim_open_text(const char *text, const psfsim_options *options, psfsim_set **set, char *err,
                     size_t errlen)
{
    if (set) *set = NULL;
    if (!text || !set)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no config text or no set given");
    if (options && options->size < sizeof *options)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "options: size %zu (not from psfsim_options_init)", options->size);
    return open_set(NULL, text, options, set, err, errlen);
}

void psfsim_close(psfsim_set *set)
{
    if (!set) return;
    lib_lanes_stop(set);
    free(set->query_storage);
    if (set->set_ready) image_set_free(&set->set);
    config_free(&set->cfg);
    free(set);
}
