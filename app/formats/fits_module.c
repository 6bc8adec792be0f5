/* fits_io.h's functions, through the FITS module loaded on first use
 * (fits_module.h). */
#include "app/formats/fits_module.h"

#include <pthread.h>
#include <stdio.h>

#include "app/base/module_loader.h"

/* The module, loaded once per process (pthread_once: writer threads may
 * ask at the same time); error holds why it could not be. */
static const fits_module_ops *g_ops;
static char g_error[600];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void)
{
    static const char *const symbols[] = {FITS_MODULE_ENTRY};
    void *entry = NULL;
    char path[MODULE_PATH_MAX], why[500];
    module_status st;
    if (!module_load(FITS_MODULE_NAME, "PSFSIM_FITS_MODULE", symbols, &entry, 1, &st, path,
                     sizeof path, why, sizeof why)) {
        snprintf(g_error, sizeof g_error, "cannot load FITS support: %s", why);
        return;
    }
    const fits_module_ops *ops = entry;
    if (ops->abi != FITS_MODULE_ABI || ops->size != sizeof *ops) {
        snprintf(g_error, sizeof g_error,
                 "cannot load FITS support: %.400s is of another psfsim version", path);
        return;
    }
    g_ops = ops;
}

/* The table, or NULL with the reason in err (errlen bytes, may be 0). */
static const fits_module_ops *ops(char *err, size_t errlen)
{
    pthread_once(&g_once, load);
    if (!g_ops && errlen) snprintf(err, errlen, "%s", g_error);
    return g_ops;
}

int fits_module_load(char *err, size_t errlen)
{
    return ops(err, errlen) ? 0 : -1;
}

/* "VERB PATH: REASON" into err when the module is missing. */
static const fits_module_ops *ops_for(const char *verb, const char *path, char *err, size_t errlen)
{
    const fits_module_ops *m = ops(NULL, 0);
    if (!m) snprintf(err, errlen, "%s %s: %s", verb, path, g_error);
    return m;
}

int psf_fits_write_image(const char *path, const float *img, int npix, const fits_kv *kvs, int nkv,
                         char *err, size_t errlen)
{
    const fits_module_ops *m = ops_for("cannot write", path, err, errlen);
    return m ? m->write_image(path, img, npix, kvs, nkv, err, errlen) : -1;
}

int psf_fits_read_image(const char *path, float **data, int *rows, int *cols, char *err,
                        size_t errlen)
{
    *data = NULL;
    *rows = *cols = 0;
    const fits_module_ops *m = ops_for("cannot read", path, err, errlen);
    return m ? m->read_image(path, data, rows, cols, err, errlen) : -1;
}

int psf_fits_read_key_double(const char *path, const char *key, double *out)
{
    const fits_module_ops *m = ops(NULL, 0);
    return m ? m->read_key_double(path, key, out) : -1;
}

int psf_fits_read_key_string(const char *path, const char *key, char *out, size_t outlen)
{
    const fits_module_ops *m = ops(NULL, 0);
    return m ? m->read_key_string(path, key, out, outlen) : -1;
}

psf_fits_cube *psf_fits_cube_open(const char *path, int npix, long long nplanes, const fits_kv *kvs,
                                  int nkv, char *err, size_t errlen)
{
    const fits_module_ops *m = ops_for("cannot write", path, err, errlen);
    return m ? m->cube_open(path, npix, nplanes, kvs, nkv, err, errlen) : NULL;
}

/* A cube exists only when the module was loaded: g_ops is set. */
int psf_fits_cube_write_plane(psf_fits_cube *c, long long plane, const float *img, char *err,
                              size_t errlen)
{
    return ops(NULL, 0)->cube_write_plane(c, plane, img, err, errlen);
}

int psf_fits_cube_commit(psf_fits_cube *c, int ncols, const char *const *names,
                         const char *const *units, double *const *cols, char *err, size_t errlen)
{
    return ops(NULL, 0)->cube_commit(c, ncols, names, units, cols, err, errlen);
}

void psf_fits_cube_abort(psf_fits_cube *c)
{
    if (c) ops(NULL, 0)->cube_abort(c);
}

int psf_fits_thread_safe(void)
{
    const fits_module_ops *m = ops(NULL, 0);
    return m ? m->thread_safe() : 0;
}
