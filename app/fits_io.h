/* FITS images through cfitsio: float32 PSF output with header keywords,
 * and 2-D map input (aperture, OPD). */
#ifndef PSFSIM_FITS_IO_H
#define PSFSIM_FITS_IO_H

#include <stddef.h>

typedef enum { FITS_KV_DOUBLE, FITS_KV_INT, FITS_KV_STRING } fits_kv_type;

typedef struct {
    const char *key;     /* <= 8 characters, upper case */
    fits_kv_type type;
    double d;
    long long i;
    const char *s;
    const char *comment; /* may be NULL */
} fits_kv;

/* Write an N x N float32 primary image (array row 0 = the first stored
 * row, NAXIS1 = columns) with the given keywords, atomically. Returns 0, or
 * -1 with a message naming the path and cfitsio's error text in err. */
int psf_fits_write_image(const char *path, const float *img, int npix, const fits_kv *kvs, int nkv,
                     char *err, size_t errlen);

/* Read the first 2-D image HDU as float (rows = NAXIS2, cols = NAXIS1,
 * row-major, row 0 = the first stored row). *data is malloc'd.
 * Returns 0 or -1 with err (missing, not 2-D, truncated). */
int psf_fits_read_image(const char *path, float **data, int *rows, int *cols, char *err,
                    size_t errlen);

/* Read one keyword of a FITS file's primary header as double / string
 * (for tests and tools). Return 0, or -1 if absent. */
int psf_fits_read_key_double(const char *path, const char *key, double *out);
int psf_fits_read_key_string(const char *path, const char *key, char *out, size_t outlen);

/* 1 when cfitsio was built reentrant (several threads may write separate
 * files at once; fits_is_reentrant), else 0. */
int psf_fits_thread_safe(void);

#endif
