/* SPDX-License-Identifier: BSD-3-Clause */
/* Opening and closing a set (lib/psfsim.h): options, config (file or
 * text) through the engine (lib/engine/engine.h); the library's lock. */
#include <stddef.h>
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

/* The size of API version 2's psfsim_options, which ends at base_dir. */
#define LIB_OPTIONS_V2_SIZE (offsetof(psfsim_options, base_dir) + sizeof(const char *))

#undef psfsim_options_init /* the header's macro: this is the symbol of version 2 */
void psfsim_options_init(psfsim_options *options)
{
    /* Called by programs built against version 2, whose struct ends at
     * base_dir: writing past it would overwrite their memory. */
    psfsim_options_init_size(options, LIB_OPTIONS_V2_SIZE);
}

void psfsim_options_init_size(psfsim_options *options, size_t size)
{
    if (!options) return;
    size = size < sizeof *options ? size : sizeof *options;
    memset(options, 0, size);
    options->size = size;
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

/* The library's own step of opening a set (engine_open_args.step): "both"
 * is refused once the image set is made, before its fingerprint. */
static int open_step(void *user, engine *e, engine_at at, char *err, size_t errlen)
{
    (void)user;
    if (at != ENGINE_AT_SET || !e->cfg.detector.enabled || e->cfg.detector.write != DET_WRITE_BOTH)
        return 0;
    /* two images per image: the program's FITS files (app/output/outputs.h) */
    char where[CFG_PATH_MAX + 32];
    config_key_where(&e->cfg, "detector.write", where, sizeof where);
    snprintf(err, errlen,
             "%.4200s: detector.write: \"both\" is written by the psfsim program only; "
             "the library takes \"detector\" or \"oversampled\"",
             where);
    return -1;
}

/* The most maps psfsim_options may give (psfsim.h): two keys take one. */
#define LIB_MAX_MAPS 16

/* o's maps as the config loader takes them (config.h, cfg_map_input): into
 * in[LIB_MAX_MAPS], *n their number; none for an options of version 2's
 * size. PSFSIM_OK or PSFSIM_ERR_ARGUMENT. */
static int options_maps(const psfsim_options *o, cfg_map_input *in, int *n, char *err,
                        size_t errlen)
{
    *n = 0;
    if (!o || o->size < sizeof *o || o->nmaps == 0) return PSFSIM_OK;
    if (o->nmaps < 0 || o->nmaps > LIB_MAX_MAPS || !o->maps)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "maps: expected 0..%d maps and a maps array for them (got nmaps %d, "
                        "maps %s)",
                        LIB_MAX_MAPS, o->nmaps, o->maps ? "given" : "NULL");
    for (int i = 0; i < o->nmaps; ++i)
        in[i] = (cfg_map_input){.key = o->maps[i].key,
                                .values = o->maps[i].values,
                                .rows = o->maps[i].rows,
                                .cols = o->maps[i].cols};
    *n = o->nmaps;
    return PSFSIM_OK;
}

/* Open from path or text (one of them), the options checked. The set's
 * FITS CFGHASH is filled as the command fills it (lib/engine/engine.h);
 * the decision is for computing into memory: the cost model counts no
 * files. */
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
    cfg_map_input maps[LIB_MAX_MAPS];
    int nmaps = 0;
    if (rc == PSFSIM_OK) rc = options_maps(o, maps, &nmaps, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    psfsim_set *s = calloc(1, sizeof *s);
    if (!s) return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
    atomic_init(&s->cancel, 0);
    atomic_flag_clear(&s->busy);
    s->threads = o ? o->threads : 0;
    engine_open_args args = {.path = path,
                             .text = text,
                             .name = o ? o->name : NULL,
                             .base_dir = o ? o->base_dir : NULL,
                             .maps = nmaps ? maps : NULL,
                             .nmaps = nmaps,
                             .backend_given = o && o->backend,
                             .backend = choice,
                             .gpus = &gpus,
                             .hash_after_set = 1,
                             .step = open_step,
                             .lock = lib_lock,
                             .unlock = lib_unlock};
    rc = engine_open(&s->e, &args, err, errlen);
    rc = rc == ENGINE_OK            ? PSFSIM_OK
         : rc == ENGINE_ERR_BACKEND ? PSFSIM_ERR_BACKEND
                                    : PSFSIM_ERR_CONFIG;
    if (rc == PSFSIM_OK) {
        s->query_storage = calloc(image_set_storage(&s->e.set) + 1, sizeof *s->query_storage);
        if (!s->query_storage) rc = lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
    }
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
    if (options && options->size < LIB_OPTIONS_V2_SIZE)
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
    if (options && options->size < LIB_OPTIONS_V2_SIZE)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "options: size %zu (not from psfsim_options_init)", options->size);
    return open_set(NULL, text, options, set, err, errlen);
}

void psfsim_close(psfsim_set *set)
{
    if (!set) return;
    lib_lanes_stop(set);
    vjp_cache_free(set->vjp);
    free(set->query_storage);
    engine_close(&set->e);
    free(set);
}
