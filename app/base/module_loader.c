/* SPDX-License-Identifier: BSD-3-Clause */
/* Finding and loading psfsim's modules (module_loader.h). */
#include "app/base/module_loader.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_CANDIDATES 4

/* The directory of the running executable into dir (no trailing slash);
 * 0, or -1 when /proc/self/exe cannot be read. */
static int exe_dir(char *dir, size_t dirlen)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return -1;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return -1;
    *slash = '\0';
    snprintf(dir, dirlen, "%s", exe);
    return 0;
}

/* When this code is in a shared library (libpsfsim.so, lib/psfsim.h)
 * rather than in the executable: that library's directory into dir, 0;
 * else -1. The library's modules are beside it (a build tree, the Python
 * package) or in its psfsim/ subdirectory (an installed tree:
 * lib/libpsfsim.so.0, lib/psfsim/NAME), whatever program loaded it.
 * (glibc names the executable's own link map "".) */
static int library_dir(char *dir, size_t dirlen)
{
    Dl_info info;
    struct link_map *map = NULL;
    if (!dladdr1((void *)library_dir, &info, (void **)&map, RTLD_DL_LINKMAP) || !map ||
        !map->l_name || !map->l_name[0])
        return -1;
    char real[PATH_MAX];
    if (!realpath(map->l_name, real)) return -1;
    char *slash = strrchr(real, '/');
    if (!slash) return -1;
    *slash = '\0';
    snprintf(dir, dirlen, "%s", real);
    return 0;
}

/* $env, or NULL. secure_getenv: a setuid or setgid psfsim (or one run
 * with raised capabilities) never loads a library the caller names. */
static const char *module_env(const char *env)
{
    return env ? secure_getenv(env) : NULL;
}

/* Candidate paths, in order; returns how many were written. */
static int candidates(const char *name, const char *env, char (*paths)[MODULE_PATH_MAX], int max)
{
    int n = 0;
    const char *val = module_env(env);
    if (val && *val && n < max) { /* the user's path is the only one: no silent other module */
        snprintf(paths[n++], sizeof paths[0], "%.*s", PATH_MAX, val);
        return n;
    }
    char dir[PATH_MAX];
    if (library_dir(dir, sizeof dir) == 0) {
        static const char *const lib_rel[] = {"", "/psfsim"};
        for (size_t i = 0; i < sizeof lib_rel / sizeof *lib_rel && n < max; ++i)
            snprintf(paths[n++], sizeof paths[0], "%.*s%s/%.40s", PATH_MAX - 60, dir, lib_rel[i],
                     name);
        return n;
    }
    if (exe_dir(dir, sizeof dir) != 0) return n;
    static const char *const rel[] = {"", "/..", "/../lib/psfsim"};
    for (size_t i = 0; i < sizeof rel / sizeof *rel && n < max; ++i)
        snprintf(paths[n++], sizeof paths[0], "%.*s%s/%.40s", PATH_MAX - 60, dir, rel[i], name);
    return n;
}

int module_find(const char *name, const char *env, char *path, size_t pathlen)
{
    char paths[MAX_CANDIDATES][MODULE_PATH_MAX];
    int n = candidates(name, env, paths, MAX_CANDIDATES);
    struct stat st;
    for (int i = 0; i < n; ++i)
        if (stat(paths[i], &st) == 0 && S_ISREG(st.st_mode)) {
            snprintf(path, pathlen, "%s", paths[i]);
            return 0;
        }
    return -1;
}

/* "no NAME at $ENV (VALUE), in DIR, its parent or DIR/../lib/psfsim". */
static void not_found(const char *name, const char *env, char *err, size_t errlen)
{
    const char *val = module_env(env);
    char at[PATH_MAX + 64] = "", dir[PATH_MAX] = "";
    if (val && *val) {
        snprintf(err, errlen, "no %s at %s ($%s)", name, val, env);
        return;
    }
    if (library_dir(dir, sizeof dir) == 0) {
        snprintf(err, errlen, "no %s in %s or %s/psfsim", name, dir, dir);
        return;
    }
    if (exe_dir(dir, sizeof dir) != 0) {
        snprintf(err, errlen, "no %s%s and the executable's directory is unknown", name, at);
        return;
    }
    snprintf(err, errlen, "no %s%s in %s, %s/.. or %s/../lib/psfsim", name, at, dir, dir, dir);
}

void *module_load(const char *name, const char *env, const char *const *symbols, void **entries,
                  int nsym, module_status *status, char *path, size_t pathlen, char *err,
                  size_t errlen)
{
    char found[MODULE_PATH_MAX];
    if (path && pathlen) path[0] = '\0';
    if (module_find(name, env, found, sizeof found) != 0) {
        not_found(name, env, err, errlen);
        *status = MODULE_NOT_FOUND;
        return NULL;
    }
    if (path && pathlen) snprintf(path, pathlen, "%s", found);
    void *h = dlopen(found, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(err, errlen, "%s", why ? why : found);
        *status = MODULE_LOAD_FAILED;
        return NULL;
    }
    for (int i = 0; i < nsym; ++i) {
        entries[i] = dlsym(h, symbols[i]);
        if (!entries[i]) {
            snprintf(err, errlen, "%s: no %s", found, symbols[i]);
            dlclose(h);
            *status = MODULE_NO_ENTRY;
            return NULL;
        }
    }
    *status = MODULE_OK;
    return h;
}

void module_open(const module_spec *spec, module_opened *out)
{
    void *entry = NULL;
    out->table = NULL;
    out->why[0] = '\0';
    if (!module_load(spec->file, spec->env, &spec->entry, &entry, 1, &out->status, out->path,
                     sizeof out->path, out->why, sizeof out->why))
        return;
    /* The head read bytewise: the table is of the module's type, not module_table_head. */
    module_table_head head;
    memcpy(&head.abi, (const char *)entry + offsetof(module_table_head, abi), sizeof head.abi);
    memcpy(&head.size, (const char *)entry + offsetof(module_table_head, size), sizeof head.size);
    if (head.abi != spec->abi || head.size != spec->size) {
        snprintf(out->why, sizeof out->why, "%.400s is of another psfsim version", out->path);
        out->status = MODULE_STALE;
        return;
    }
    out->table = entry;
}
