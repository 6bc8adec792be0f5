/* The FITS module's interface: libpsfsim-fits.so (app/formats/fits_io.c with
 * app/formats/fits_scan.c and app/formats/atomic_file.c, linked with cfitsio) exports one
 * table, psf_fits_module_entry, of the functions fits_io.h declares; psfsim
 * itself does not link cfitsio. app/formats/fits_module.c defines fits_io.h's
 * functions: each loads the module on first use (module_loader.h; the
 * path may be given by $PSFSIM_FITS_MODULE) and calls through the table,
 * so a run without FITS input or output never maps cfitsio and libcurl.
 * Each entry has the contract of the fits_io.h function of the same name
 * (psf_fits_ prefix dropped). */
#ifndef PSFSIM_FITS_MODULE_H
#define PSFSIM_FITS_MODULE_H

#include <stddef.h>

#include "app/formats/fits_io.h"

#define FITS_MODULE_NAME "libpsfsim-fits.so"
#define FITS_MODULE_ENTRY "psf_fits_module_entry"
/* Raised whenever the table changes, so a stale module is refused. */
#define FITS_MODULE_ABI 1

typedef struct {
    int abi;     /* FITS_MODULE_ABI */
    size_t size; /* sizeof(fits_module_ops) */
    int (*write_image)(const char *path, const float *img, int npix, const fits_kv *kvs, int nkv,
                       char *err, size_t errlen);
    int (*read_image)(const char *path, float **data, int *rows, int *cols, char *err,
                      size_t errlen);
    int (*read_key_double)(const char *path, const char *key, double *out);
    int (*read_key_string)(const char *path, const char *key, char *out, size_t outlen);
    psf_fits_cube *(*cube_open)(const char *path, int npix, long long nplanes, const fits_kv *kvs,
                                int nkv, char *err, size_t errlen);
    int (*cube_write_plane)(psf_fits_cube *c, long long plane, const float *img, char *err,
                            size_t errlen);
    int (*cube_commit)(psf_fits_cube *c, int ncols, const char *const *names,
                       const char *const *units, double *const *cols, char *err, size_t errlen);
    void (*cube_abort)(psf_fits_cube *c);
    int (*thread_safe)(void);
} fits_module_ops;

/* Defined by the module only (app/formats/fits_io.c). */
extern const fits_module_ops psf_fits_module_entry;

/* Load the FITS module now if it is not loaded yet (once per process;
 * thread-safe). Returns 0, or -1 with a one-line reason in err, e.g.
 * "cannot load FITS support: no libpsfsim-fits.so in /opt/psfsim/bin,
 * /opt/psfsim/bin/.. or /opt/psfsim/bin/../lib/psfsim". The fits_io.h
 * functions call it themselves; a caller may call it early to fail before
 * any work is done. */
int fits_module_load(char *err, size_t errlen);

#endif
