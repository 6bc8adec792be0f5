/* SPDX-License-Identifier: BSD-3-Clause */
/* FITS images through cfitsio: float32 PSF output with header keywords,
 * and 2-D map input (aperture, OPD): what psfsim calls. cfitsio's side
 * (app/formats/fits/) is the FITS module, libpsfsim-fits.so, which these
 * functions load on first use (app/formats/fits_loader.c, the table
 * fits_abi.h): when it cannot be loaded each fails with err saying so
 * ("cannot write PATH: cannot load FITS support: no libpsfsim-fits.so in
 * ..."), the key readers return -1 and psf_fits_thread_safe 0. */
#ifndef PSFSIM_FITS_H
#define PSFSIM_FITS_H

#include <stddef.h>
#include <stdint.h>

/* FITS_KV_HISTORY: HISTORY cards of the comment (a prefix; may be NULL), a
 * blank and s (key "HISTORY"; cfitsio continues a long text over more
 * cards, 72 characters each). */
typedef enum { FITS_KV_DOUBLE, FITS_KV_INT, FITS_KV_STRING, FITS_KV_HISTORY } fits_kv_type;

typedef struct {
    const char *key; /* <= 8 characters, upper case */
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

/* The same into the file name (a plain name) of the directory dirfd,
 * through that descriptor (atomic_open_at: no symbolic link in it is
 * followed); dir names the directory in messages (DIR/NAME). cfitsio
 * encodes the file in memory; psfsim writes it (fits_abi.h). */
int psf_fits_write_image_at(int dirfd, const char *dir, const char *name, const float *img,
                            int npix, const fits_kv *kvs, int nkv, char *err, size_t errlen);

/* psf_fits_write_image_at with an image extension after the primary image:
 * ext[npix * npix] unsigned 16-bit integers (BITPIX 16, BZERO 32768; row 0
 * the first stored row) with the keywords ekvs (EXTNAME among them).
 * Errors as psf_fits_write_image_at. */
int psf_fits_write_image_u16ext_at(int dirfd, const char *dir, const char *name, const float *img,
                                   int npix, const fits_kv *kvs, int nkv, const uint16_t *ext,
                                   const fits_kv *ekvs, int nekv, char *err, size_t errlen);

/* psf_fits_write_image_at's file with a float32 image extension after the
 * primary HDU: ext[enpix * enpix] (row 0 the first stored row) with the
 * keywords ekvs (EXTNAME among them): detector.write = "both"'s DET_SAMP
 * image after the OVERSAMP one. Errors as psf_fits_write_image_at. */
int psf_fits_write_image_f32ext_at(int dirfd, const char *dir, const char *name, const float *img,
                                   int npix, const fits_kv *kvs, int nkv, const float *ext,
                                   int enpix, const fits_kv *ekvs, int nekv, char *err,
                                   size_t errlen);

/* Read the first 2-D image HDU as float (rows = NAXIS2, cols = NAXIS1,
 * row-major, row 0 = the first stored row), of a FITS file or a
 * gzip-compressed one (fits_scan.h checks either first). *data is malloc'd.
 * Returns 0 or -1 with err (missing, not 2-D, truncated). */
int psf_fits_read_image(const char *path, float **data, int *rows, int *cols, char *err,
                        size_t errlen);

/* The same for images: the first image HDU, 2-D (*planes 1) or a 3-D
 * cube (NAXIS3 = *planes images of NAXIS2 x NAXIS1, plane-major, plane p
 * at p rows cols): psfsim --retrieve's measured images. */
int psf_fits_read_cube(const char *path, float **data, int *planes, int *rows, int *cols, char *err,
                       size_t errlen);

/* Read one keyword of a FITS file's primary header as double / string
 * (for tests and tools). Return 0, or -1 if absent. */
int psf_fits_read_key_double(const char *path, const char *key, double *out);
int psf_fits_read_key_string(const char *path, const char *key, char *out, size_t outlen);

/* A FITS cube: NAXIS1 = NAXIS2 = N, NAXIS3 = nplanes float32 planes (plane
 * p = image p of a series), written plane by plane into a temp file and
 * renamed into place by commit, with a binary-table extension PLANES of
 * per-plane parameters (one row per plane, double columns). psfsim writes
 * the file itself through its own descriptor (app/formats/fits_cube.c):
 * cfitsio encodes the headers and the table in memory; the planes, big-
 * endian float32, go straight to their place in the file. */
typedef struct psf_fits_cube psf_fits_cube;

/* Open the cube's temp file for the file name in the directory dirfd (dir:
 * for messages; atomic_open_at) with kvs in the primary header. NULL with
 * err on failure (nothing left behind). */
psf_fits_cube *psf_fits_cube_open_at(int dirfd, const char *dir, const char *name, int npix,
                                     long long nplanes, const fits_kv *kvs, int nkv, char *err,
                                     size_t errlen);

/* Write plane (0-based) from img (N*N, row-major, row 0 first). 0 or -1. */
int psf_fits_cube_write_plane(psf_fits_cube *c, long long plane, const float *img, char *err,
                              size_t errlen);

/* Append the PLANES table: ncols columns named names[i] (TTYPE, <= 68
 * characters) with units units[i] (TUNIT, may be ""), values cols[i][p]
 * for every plane; close and rename into place. Frees c. 0 or -1 with err
 * (then the temp file is removed). */
int psf_fits_cube_commit(psf_fits_cube *c, int ncols, const char *const *names,
                         const char *const *units, double *const *cols, char *err, size_t errlen);

/* Close and remove the temp file; frees c. Safe with NULL. */
void psf_fits_cube_abort(psf_fits_cube *c);

/* 1 when cfitsio was built reentrant (several threads may write separate
 * files at once; fits_is_reentrant), else 0 (also when the FITS module
 * cannot be loaded). Loads the module. */
int psf_fits_thread_safe(void);

/* Load the FITS module now if it is not loaded yet (once per process;
 * thread-safe). Returns 0, or -1 with a one-line reason in err, e.g.
 * "cannot load FITS support: no libpsfsim-fits.so in /opt/psfsim/bin,
 * /opt/psfsim/bin/.. or /opt/psfsim/bin/../lib/psfsim". The functions
 * above call it themselves; a caller may call it early to fail before any
 * work is done. */
int fits_module_load(char *err, size_t errlen);

#endif
