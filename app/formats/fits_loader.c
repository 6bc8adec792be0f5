/* SPDX-License-Identifier: BSD-3-Clause */
/* The FITS loader: fits.h's functions, through the FITS module
 * (app/formats/fits/, its table fits_abi.h) loaded on first use; the
 * writers write the module's encoded bytes themselves (atomic_file.h).
 * The cube is in app/formats/fits_cube.c. */
#include "app/formats/fits_loader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "app/formats/atomic_file.h"
#include "app/formats/fits.h"

#include "app/base/module_loader.h"

MODULE_TABLE_CHECK(fits_module_ops);

/* The module, opened once per process (pthread_once: writer threads may
 * ask at the same time); g_error holds why it could not be. */
static module_opened g_module;
static char g_error[600];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void)
{
    static const module_spec spec = {FITS_MODULE_NAME, "PSFSIM_FITS_MODULE", FITS_MODULE_ENTRY,
                                     FITS_MODULE_ABI, sizeof(fits_module_ops)};
    module_open(&spec, &g_module);
    if (!g_module.table)
        snprintf(g_error, sizeof g_error, "cannot load FITS support: %.499s", g_module.why);
}

/* The table, or NULL with the reason in err (errlen bytes, may be 0). */
static const fits_module_ops *ops(char *err, size_t errlen)
{
    pthread_once(&g_once, load);
    if (!g_module.table && errlen) snprintf(err, errlen, "%s", g_error);
    return g_module.table;
}

int fits_module_load(char *err, size_t errlen)
{
    return ops(err, errlen) ? 0 : -1;
}

const fits_module_ops *fits_module_for(const char *verb, const char *path, char *err, size_t errlen)
{
    const fits_module_ops *m = ops(NULL, 0);
    if (!m) snprintf(err, errlen, "%s %s: %s", verb, path, g_error);
    return m;
}

/* Encode the image and write it through af (opened by the caller; shown:
 * the file for messages). 0, or -1 with err (af aborted). */
static int write_encoded(atomic_file *af, const char *shown, const float *img, int npix,
                         const fits_kv *kvs, int nkv, char *err, size_t errlen)
{
    const fits_module_ops *m = fits_module_for("cannot write", shown, err, errlen);
    fits_bytes b = {0};
    char why[900];
    if (!m || m->encode_image(img, npix, kvs, nkv, &b, why, sizeof why) != 0) {
        if (m) snprintf(err, errlen, "cannot write %s: %s", shown, why);
        atomic_abort(af);
        return -1;
    }
    int rc = atomic_write_all(af, b.data, b.size, err, errlen);
    free(b.data);
    return rc;
}

/* Refused before a temp file is made (the old writer's first check). */
static int size_ok(const char *shown, int npix, char *err, size_t errlen)
{
    if (npix > 0) return 1;
    snprintf(err, errlen, "%s: cannot write a FITS image of %d x %d pixels", shown, npix, npix);
    return 0;
}

int psf_fits_write_image(const char *path, const float *img, int npix, const fits_kv *kvs, int nkv,
                         char *err, size_t errlen)
{
    atomic_file af;
    if (!size_ok(path, npix, err, errlen) || !fits_module_for("cannot write", path, err, errlen) ||
        atomic_open(&af, path, err, errlen) != 0)
        return -1;
    return write_encoded(&af, path, img, npix, kvs, nkv, err, errlen);
}

int psf_fits_write_image_at(int dirfd, const char *dir, const char *name, const float *img,
                            int npix, const fits_kv *kvs, int nkv, char *err, size_t errlen)
{
    char shown[4200];
    snprintf(shown, sizeof shown, "%s/%s", dir, name);
    atomic_file af;
    if (!size_ok(shown, npix, err, errlen) ||
        !fits_module_for("cannot write", shown, err, errlen) ||
        atomic_open_at(&af, dirfd, dir, name, err, errlen) != 0)
        return -1;
    return write_encoded(&af, shown, img, npix, kvs, nkv, err, errlen);
}

int psf_fits_write_image_u16ext_at(int dirfd, const char *dir, const char *name, const float *img,
                                   int npix, const fits_kv *kvs, int nkv, const uint16_t *ext,
                                   const fits_kv *ekvs, int nekv, char *err, size_t errlen)
{
    char shown[4200];
    snprintf(shown, sizeof shown, "%s/%s", dir, name);
    atomic_file af;
    const fits_module_ops *m = NULL;
    if (!size_ok(shown, npix, err, errlen) ||
        !(m = fits_module_for("cannot write", shown, err, errlen)) ||
        atomic_open_at(&af, dirfd, dir, name, err, errlen) != 0)
        return -1;
    fits_bytes b = {0};
    char why[900];
    if (m->encode_image_u16ext(img, npix, kvs, nkv, ext, ekvs, nekv, &b, why, sizeof why) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", shown, why);
        atomic_abort(&af);
        return -1;
    }
    int rc = atomic_write_all(&af, b.data, b.size, err, errlen);
    free(b.data);
    return rc;
}

int psf_fits_write_image_f32ext_at(int dirfd, const char *dir, const char *name, const float *img,
                                   int npix, const fits_kv *kvs, int nkv, const float *ext,
                                   int enpix, const fits_kv *ekvs, int nekv, char *err,
                                   size_t errlen)
{
    char shown[4200];
    snprintf(shown, sizeof shown, "%s/%s", dir, name);
    atomic_file af;
    const fits_module_ops *m = NULL;
    if (!size_ok(shown, npix, err, errlen) || !size_ok(shown, enpix, err, errlen) ||
        !(m = fits_module_for("cannot write", shown, err, errlen)) ||
        atomic_open_at(&af, dirfd, dir, name, err, errlen) != 0)
        return -1;
    fits_bytes b = {0};
    char why[900];
    if (m->encode_image_f32ext(img, npix, kvs, nkv, ext, enpix, ekvs, nekv, &b, why, sizeof why) !=
        0) {
        snprintf(err, errlen, "cannot write %s: %s", shown, why);
        atomic_abort(&af);
        return -1;
    }
    int rc = atomic_write_all(&af, b.data, b.size, err, errlen);
    free(b.data);
    return rc;
}

int psf_fits_read_image(const char *path, float **data, int *rows, int *cols, char *err,
                        size_t errlen)
{
    *data = NULL;
    *rows = *cols = 0;
    const fits_module_ops *m = fits_module_for("cannot read", path, err, errlen);
    return m ? m->read_image(path, data, rows, cols, err, errlen) : -1;
}

int psf_fits_read_cube(const char *path, float **data, int *planes, int *rows, int *cols, char *err,
                       size_t errlen)
{
    *data = NULL;
    *planes = *rows = *cols = 0;
    const fits_module_ops *m = fits_module_for("cannot read", path, err, errlen);
    return m ? m->read_cube(path, data, planes, rows, cols, err, errlen) : -1;
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

int psf_fits_thread_safe(void)
{
    const fits_module_ops *m = ops(NULL, 0);
    return m ? m->thread_safe() : 0;
}
