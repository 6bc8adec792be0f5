/* SPDX-License-Identifier: BSD-3-Clause */
/* The FITS module's ABI: the one table libpsfsim-fits.so (app/formats/fits/,
 * linked with cfitsio) exports as psf_fits_module_entry, and the loader
 * (app/formats/fits_loader.c) reads: the readers fits.h declares and the
 * encoders psfsim's writers use; psfsim itself does not link cfitsio.
 * Each reader has the contract of the fits.h function of the same name
 * (psf_fits_ prefix dropped). The module creates no file: its encoders
 * return a file's bytes (cfitsio writing into memory, fits_create_memfile),
 * which psfsim writes through a directory descriptor of its own
 * (atomic_file.h). Nothing but the module and its loader includes this. */
#ifndef PSFSIM_FITS_ABI_H
#define PSFSIM_FITS_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "app/formats/fits.h"

#define FITS_MODULE_NAME "libpsfsim-fits.so"
#define FITS_MODULE_ENTRY "psf_fits_module_entry"
/* Raised whenever the table changes, so a stale module is refused.
 * 2: the encoders replaced write_image and the cube calls, which created
 * files by name. */
/* 3: encode_image_u16ext (detector.noise's NOISY extension); 4:
 * encode_image_f32ext (detector.write = "both"'s DET_SAMP extension); 5:
 * read_cube (psfsim --retrieve's measured images). */
#define FITS_MODULE_ABI 5

/* Bytes an encoder made: data (malloc'd; the caller frees it with free())
 * holds size bytes, a whole number of 2880-byte FITS blocks. */
typedef struct {
    void *data;
    size_t size;
} fits_bytes;

/* The encoders return 0, or -1 with why (no path in it: the caller's
 * message names the file, "cannot write PATH: WHY") and out empty.
 *  encode_image: the whole file psf_fits_write_image writes (npix >= 1);
 *    why names a keyword cfitsio or the checks refused ("FITS keyword
 *    \"x\" must be 1 to 8 of A-Z 0-9 _ -", "keyword K: cfitsio error N:
 *    ...").
 *  encode_cube_header: the primary header of an npix x npix x nplanes
 *    float32 cube with the keywords, up to where its data starts.
 *  encode_table: the binary-table extension PLANES (nrows rows of ncols
 *    double columns names[i], units units[i]: fits.h's cube commit),
 *    header and data, to go after the cube's padded data. */
typedef struct {
    int abi;     /* FITS_MODULE_ABI */
    size_t size; /* sizeof(fits_module_ops) */
    int (*encode_image)(const float *img, int npix, const fits_kv *kvs, int nkv, fits_bytes *out,
                        char *why, size_t whylen);
    int (*read_image)(const char *path, float **data, int *rows, int *cols, char *err,
                      size_t errlen);
    int (*read_key_double)(const char *path, const char *key, double *out);
    int (*read_key_string)(const char *path, const char *key, char *out, size_t outlen);
    int (*encode_cube_header)(int npix, long long nplanes, const fits_kv *kvs, int nkv,
                              fits_bytes *out, char *why, size_t whylen);
    int (*encode_table)(long long nrows, int ncols, const char *const *names,
                        const char *const *units, double *const *cols, fits_bytes *out, char *why,
                        size_t whylen);
    int (*thread_safe)(void);
    /* encode_image's file with an image extension after the primary HDU:
     * ext[npix * npix] unsigned 16-bit (BITPIX 16, BZERO 32768, the FITS
     * standard's unsigned integers, 4.4.2.5), keywords ekvs (EXTNAME among
     * them). Errors as encode_image. */
    int (*encode_image_u16ext)(const float *img, int npix, const fits_kv *kvs, int nkv,
                               const uint16_t *ext, const fits_kv *ekvs, int nekv, fits_bytes *out,
                               char *why, size_t whylen);
    /* encode_image's file with a float32 image extension of enpix x
     * enpix (ext, row-major) after the primary HDU, keywords ekvs
     * (EXTNAME among them). Errors as encode_image. */
    int (*encode_image_f32ext)(const float *img, int npix, const fits_kv *kvs, int nkv,
                               const float *ext, int enpix, const fits_kv *ekvs, int nekv,
                               fits_bytes *out, char *why, size_t whylen);
    /* read_image's first image HDU, 2-D (*planes 1) or a 3-D cube (NAXIS3
     * planes of NAXIS2 rows x NAXIS1 columns, plane-major). */
    int (*read_cube)(const char *path, float **data, int *planes, int *rows, int *cols, char *err,
                     size_t errlen);
} fits_module_ops;

/* Defined by the module only (app/formats/fits/fits_module.c). */
extern const fits_module_ops psf_fits_module_entry;

#endif
