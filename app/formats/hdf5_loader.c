/* SPDX-License-Identifier: BSD-3-Clause */
/* The HDF5 loader: h5set.h's functions, through the HDF5 module
 * (app/formats/hdf5/, its table hdf5_abi.h) loaded on first use. */
#include "app/formats/h5set.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "app/base/module_loader.h"
#include "app/formats/hdf5_abi.h"

MODULE_TABLE_CHECK(hdf5_module_ops);

/* The module, opened once per process (pthread_once: writer threads may
 * ask at the same time); g_error holds why it could not be. */
static module_opened g_module;
static char g_error[600];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void)
{
    static const module_spec spec = {HDF5_MODULE_NAME, "PSFSIM_HDF5_MODULE", HDF5_MODULE_ENTRY,
                                     HDF5_MODULE_ABI, sizeof(hdf5_module_ops)};
    module_open(&spec, &g_module);
    if (!g_module.table)
        snprintf(g_error, sizeof g_error, "cannot load HDF5 support: %.499s", g_module.why);
}

/* The table, or NULL with the reason in err (errlen bytes, may be 0). */
static const hdf5_module_ops *ops(char *err, size_t errlen)
{
    pthread_once(&g_once, load);
    if (!g_module.table && errlen) snprintf(err, errlen, "%s", g_error);
    return g_module.table;
}

int hdf5_module_load(char *err, size_t errlen)
{
    return ops(err, errlen) ? 0 : -1;
}

h5set *h5set_open(const h5set_params *p, h5set_mode mode, h5set_info *info, char *err,
                  size_t errlen)
{
    if (info) memset(info, 0, sizeof *info);
    const hdf5_module_ops *m = ops(NULL, 0);
    if (!m) {
        const char *name = p && p->shown ? p->shown : p && p->name ? p->name : "(null)";
        snprintf(err, errlen, "cannot write %s: %s", name, g_error);
        return NULL;
    }
    return m->open(p, mode, info, err, errlen);
}

/* A set exists only when the module was loaded: its table is set. */
const unsigned char *h5set_written(const h5set *s)
{
    return ops(NULL, 0)->written(s);
}

int h5set_chunk_images(const h5set *s)
{
    return ops(NULL, 0)->chunk_images(s);
}

int h5set_write(h5set *s, long long first, int count, const h5set_rows *rows, char *err,
                size_t errlen)
{
    return ops(NULL, 0)->write(s, first, count, rows, err, errlen);
}

int h5set_close(h5set *s, h5set_close_mode mode, char *err, size_t errlen)
{
    return s ? ops(NULL, 0)->close(s, mode, err, errlen) : 0;
}

int h5set_thread_safe(void)
{
    const hdf5_module_ops *m = ops(NULL, 0);
    return m ? m->thread_safe() : 0;
}

void h5set_library_version(char *out, size_t outlen)
{
    const hdf5_module_ops *m = ops(NULL, 0);
    if (m)
        m->library_version(out, outlen);
    else if (outlen)
        out[0] = '\0';
}

int h5set_temp_name(const char *name, char *out, size_t outlen)
{
    const char *slash = strrchr(name, '/');
    int dirlen = slash ? (int)(slash - name) + 1 : 0;
    int n = snprintf(out, outlen, "%.*s" H5SET_TEMP_FORMAT, dirlen, name, name + dirlen);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

int h5set_check_complete(const h5set_params *p, char *why, size_t whylen)
{
    const hdf5_module_ops *m = ops(why, whylen);
    return m ? m->check_complete(p, why, whylen) : 0;
}
