/* SPDX-License-Identifier: BSD-3-Clause */
/* The FITS module, libpsfsim-fits.so: FITS images through cfitsio. Its one
 * export is the table of app/formats/fits_abi.h, which psfsim calls through
 * (app/formats/fits_loader.c); each reader has the contract of the fits.h
 * function of the same name with the psf_fits_ prefix. Files are opened with
 * the *_diskfile calls, which take the name literally (no extended filename
 * syntax: a '[' or '!' in a directory name means nothing special). Nothing
 * here creates a file: the encoders let cfitsio write into memory
 * (fits_create_memfile) and return the bytes, which psfsim writes through a
 * descriptor of its own (fits_loader.c). */
#include "app/formats/fits_abi.h"

#include <errno.h>
#include <fitsio.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/formats/fits.h"
#include "app/formats/fits_scan.h"
#include "app/base/module_loader.h"

/* Largest map psf_fits_read_image accepts, in pixels (16384 x 16384). */
#define FITS_READ_MAX_PIXELS (1LL << 28)

/* "cfitsio error N: <cfitsio's text for N>"; clears cfitsio's message
 * stack (its entries are fragments, some naming the temp file). */
static void fits_error_text(int status, char *out, size_t outlen)
{
    char text[FLEN_STATUS] = "";
    fits_get_errstatus(status, text);
    fits_clear_errmsg();
    snprintf(out, outlen, "cfitsio error %d: %s", status, text);
}

/* Write one keyword. A non-finite double is written as an undefined value
 * (FITS headers cannot hold NaN or infinity). Doubles use the fewest
 * significant digits (15..17) that read back to the same double. */
static void write_key(fitsfile *f, const fits_kv *kv, int *status)
{
    char key[FLEN_KEYWORD];
    snprintf(key, sizeof key, "%s", kv->key);
    const char *comment = kv->comment;
    switch (kv->type) {
    case FITS_KV_DOUBLE:
        if (!isfinite(kv->d)) {
            fits_update_key_null(f, key, comment, status);
        } else {
            int digits = 15;
            for (; digits < 17; ++digits) {
                char buf[40];
                snprintf(buf, sizeof buf, "%.*G", digits, kv->d);
                if (strtod(buf, NULL) == kv->d) break;
            }
            fits_update_key_dbl(f, key, kv->d, -digits, comment, status);
        }
        break;
    case FITS_KV_INT: {
        LONGLONG v = kv->i;
        fits_update_key(f, TLONGLONG, key, &v, comment, status);
        break;
    }
    case FITS_KV_STRING: {
        const char *s = kv->s ? kv->s : "";
        if (strlen(s) > 68)
            fits_update_key_longstr(f, key, s, comment, status);
        else
            fits_update_key_str(f, key, s, comment, status);
        break;
    }
    case FITS_KV_HISTORY: {
        char text[8192];
        snprintf(text, sizeof text, "%s%s%s", comment ? comment : "", comment ? " " : "",
                 kv->s ? kv->s : "");
        fits_write_history(f, text, status);
        break;
    }
    default:
        *status = BAD_DATATYPE;
        break;
    }
}

/* A FITS keyword name: 1 to 8 of A-Z 0-9 '_' '-' (cfitsio would quietly
 * turn a longer name or one with a blank into a HIERARCH card). */
static int key_ok(const char *key)
{
    if (!key) return 0;
    size_t n = strlen(key);
    if (n < 1 || n > 8) return 0;
    for (size_t i = 0; i < n; ++i) {
        char c = key[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return 0;
    }
    return 1;
}

/* Header text must be printable ASCII (cfitsio cuts a string at the first
 * other byte). NULL is fine. */
static int text_ok(const char *s)
{
    for (; s && *s; ++s)
        if (*s < 32 || *s > 126) return 0;
    return 1;
}

/* The bytes of memfile f (buf, bufsize: its buffer), from offset from to
 * the end of the current HDU's data padded to 2880 bytes, into out (moved:
 * a fresh buffer; the memfile's is freed). f is closed. 0, or a cfitsio
 * status. */
static int memfile_take(fitsfile *f, void **buf, size_t *bufsize, LONGLONG from, fits_bytes *out,
                        int status)
{
    LONGLONG head = 0, data = 0, end = 0;
    if (!status) fits_get_hduaddrll(f, &head, &data, &end, &status);
    int cstatus = 0;
    fits_close_file(f, &cstatus);
    if (!status) status = cstatus;
    size_t size = (size_t)((end + 2879) / 2880 * 2880);
    if (!status && (size > *bufsize || from < 0 || (size_t)from > size)) status = MEMORY_ALLOCATION;
    if (!status && !(out->data = malloc(size - (size_t)from + 1))) status = MEMORY_ALLOCATION;
    if (!status) {
        memcpy(out->data, (char *)*buf + from, size - (size_t)from);
        out->size = size - (size_t)from;
    }
    free(*buf);
    *buf = NULL;
    return status;
}

/* The keywords' names and texts are what FITS can hold; else why says so. */
static int keys_ok(const fits_kv *kvs, int nkv, char *why, size_t whylen)
{
    for (int k = 0; k < nkv; ++k) {
        if (!key_ok(kvs[k].key)) {
            snprintf(why, whylen, "FITS keyword \"%.40s\" must be 1 to 8 of A-Z 0-9 _ -",
                     kvs[k].key ? kvs[k].key : "(null)");
            return -1;
        }
        if ((kvs[k].type == FITS_KV_STRING || kvs[k].type == FITS_KV_HISTORY) &&
            !text_ok(kvs[k].s)) {
            snprintf(why, whylen, "keyword %s: the value must be printable ASCII", kvs[k].key);
            return -1;
        }
        if (kvs[k].comment && !text_ok(kvs[k].comment)) {
            snprintf(why, whylen, "keyword %s: the comment must be printable ASCII", kvs[k].key);
            return -1;
        }
    }
    return 0;
}

/* A new memfile f with an image HDU of naxis axes and the keywords;
 * *bad_key names the keyword cfitsio refused. Returns the status. */
static int memfile_image(fitsfile **f, void **buf, size_t *bufsize, int naxis, long *naxes,
                         const fits_kv *kvs, int nkv, const char **bad_key)
{
    int status = 0;
    *buf = NULL;
    *bufsize = 0;
    *f = NULL;
    fits_create_memfile(f, buf, bufsize, 0, realloc, &status);
    fits_create_img(*f, FLOAT_IMG, naxis, naxes, &status);
    for (int k = 0; k < nkv && !status; ++k) {
        write_key(*f, &kvs[k], &status);
        if (status) *bad_key = kvs[k].key;
    }
    return status;
}

/* why: "keyword K: cfitsio error N: TEXT" or "cfitsio error N: TEXT". */
static void encode_error(int status, const char *bad_key, char *why, size_t whylen)
{
    char text[200];
    fits_error_text(status, text, sizeof text);
    if (bad_key)
        snprintf(why, whylen, "keyword %s: %s", bad_key, text);
    else
        snprintf(why, whylen, "%s", text);
}

/* The memfile f's whole file into out (memfile_take) and the buffer freed;
 * 0, or -1 with why (encode_error) for status or a failure here. */
static int encode_finish(fitsfile *f, void **buf, size_t *bufsize, fits_bytes *out, int status,
                         const char *bad_key, char *why, size_t whylen)
{
    if (f) status = memfile_take(f, buf, bufsize, 0, out, status);
    free(*buf);
    *buf = NULL;
    if (status) {
        encode_error(status, bad_key, why, whylen);
        return -1;
    }
    return 0;
}

static int encode_image(const float *img, int npix, const fits_kv *kvs, int nkv, fits_bytes *out,
                        char *why, size_t whylen)
{
    out->data = NULL;
    out->size = 0;
    if (keys_ok(kvs, nkv, why, whylen) != 0) return -1;
    fitsfile *f = NULL;
    void *buf = NULL;
    size_t bufsize = 0;
    const char *bad_key = NULL;
    long naxes[2] = {npix, npix}; /* NAXIS1 = columns, NAXIS2 = rows */
    int status = memfile_image(&f, &buf, &bufsize, 2, naxes, kvs, nkv, &bad_key);
    /* Row-major buffer from the first pixel: array row 0 is the first stored
     * row. cfitsio converts to big-endian in its own buffer (the input is
     * not modified), hence the cast. */
    fits_write_img(f, TFLOAT, 1, (LONGLONG)npix * npix, (void *)(uintptr_t)img, &status);
    return encode_finish(f, &buf, &bufsize, out, status, bad_key, why, whylen);
}

static int encode_cube_header(int npix, long long nplanes, const fits_kv *kvs, int nkv,
                              fits_bytes *out, char *why, size_t whylen)
{
    out->data = NULL;
    out->size = 0;
    if (keys_ok(kvs, nkv, why, whylen) != 0) return -1;
    fitsfile *f = NULL;
    void *buf = NULL;
    size_t bufsize = 0;
    const char *bad_key = NULL;
    long naxes[3] = {npix, npix, (long)nplanes};
    int status = memfile_image(&f, &buf, &bufsize, 3, naxes, kvs, nkv, &bad_key);
    /* The header ends (END, blank fill: fits_set_hdustruc) and reaches the
     * buffer (fits_flush_buffer); the image is then cut to no data, so
     * closing does not pad a cube's worth of data in memory. */
    LONGLONG head = 0, data = 0, end = 0;
    fits_set_hdustruc(f, &status);
    fits_get_hduaddrll(f, &head, &data, &end, &status);
    fits_flush_buffer(f, 0, &status);
    if (!status && (data <= 0 || (size_t)data > bufsize)) status = MEMORY_ALLOCATION;
    if (!status && !(out->data = malloc((size_t)data))) status = MEMORY_ALLOCATION;
    if (!status) {
        memcpy(out->data, buf, (size_t)data);
        out->size = (size_t)data;
    }
    if (f) {
        long none[1] = {0};
        int cstatus = 0;
        fits_resize_img(f, FLOAT_IMG, 0, none, &cstatus);
        cstatus = 0;
        fits_close_file(f, &cstatus);
    }
    free(buf);
    if (status) {
        free(out->data);
        out->data = NULL;
        out->size = 0;
        encode_error(status, bad_key, why, whylen);
        return -1;
    }
    return 0;
}

static int encode_table(long long nrows, int ncols, const char *const *names,
                        const char *const *units, double *const *cols, fits_bytes *out, char *why,
                        size_t whylen)
{
    out->data = NULL;
    out->size = 0;
    int status = 0;
    char **ttype = calloc((size_t)ncols, sizeof *ttype),
         **tform = calloc((size_t)ncols, sizeof *tform);
    char **tunit = calloc((size_t)ncols, sizeof *tunit);
    if (!ttype || !tform || !tunit) status = MEMORY_ALLOCATION;
    for (int i = 0; !status && i < ncols; ++i) {
        ttype[i] = (char *)(uintptr_t)names[i];
        tform[i] = "1D";
        tunit[i] = (char *)(uintptr_t)units[i];
    }
    /* The table as the second HDU of a memfile after an empty primary;
     * its bytes from its header on are the extension. */
    fitsfile *f = NULL;
    void *buf = NULL;
    size_t bufsize = 0;
    long none[1] = {0};
    if (!status) fits_create_memfile(&f, &buf, &bufsize, 0, realloc, &status);
    if (f) fits_create_img(f, BYTE_IMG, 0, none, &status);
    if (f) fits_create_tbl(f, BINARY_TBL, nrows, ncols, ttype, tform, tunit, "PLANES", &status);
    for (int i = 0; f && !status && i < ncols; ++i)
        fits_write_col(f, TDOUBLE, i + 1, 1, 1, nrows, cols[i], &status);
    free(ttype);
    free(tform);
    free(tunit);
    LONGLONG head = 0, data = 0, end = 0;
    if (f) fits_get_hduaddrll(f, &head, &data, &end, &status);
    if (f) status = memfile_take(f, &buf, &bufsize, head, out, status);
    free(buf);
    if (status) {
        encode_error(status, NULL, why, whylen);
        return -1;
    }
    return 0;
}

/* The first image HDU with data as float: 2-D (maxdim 2: a map) or 2-D
 * or 3-D (maxdim 3: a cube of *planes images; 1 for a 2-D image). */
static int read_array(const char *path, int maxdim, float **data, int *planes, int *rows, int *cols,
                      char *err, size_t errlen)
{
    *data = NULL;
    *planes = *rows = *cols = 0;
    fitsfile *f = NULL;
    int status = 0;
    char text[300];
    /* The headers on the way to the image are checked before cfitsio
     * parses them (fits_scan.h: cfitsio trusts malformed table headers). */
    int hdu = 0, naxis = 0, type = 0;
    if ((maxdim == 3 ? fits_scan_first_cube(path, &hdu, err, errlen)
                     : fits_scan_first_image(path, &hdu, err, errlen)) != 0)
        return -1;
    if (fits_open_diskfile(&f, path, READONLY, &status)) {
        fits_error_text(status, text, sizeof text);
        snprintf(err, errlen, "cannot open %s: %s%s", path, text,
                 status == READ_ERROR ? " (not a FITS file, or truncated)" : "");
        return -1;
    }
    /* The first image HDU with data: the primary array, or the first image
     * extension after an empty primary (NAXIS = 0), as fits_scan found it. */
    fits_movabs_hdu(f, hdu, &type, &status);
    if (!status && type == IMAGE_HDU) fits_get_img_dim(f, &naxis, &status);
    if (!status && (naxis < 2 || naxis > maxdim)) {
        fits_close_file(f, &status);
        if (naxis == 0)
            snprintf(err, errlen, "%s: no image in this FITS file", path);
        else
            snprintf(err, errlen, "%s: image HDU %d has NAXIS = %d; %s", path, hdu, naxis,
                     maxdim == 2 ? "a map must be 2-D" : "images must be 2-D or a 3-D cube");
        return -1;
    }
    LONGLONG dims[3] = {0, 0, 1};
    fits_get_img_sizell(f, naxis, dims, &status);
    if (!status &&
        (dims[0] <= 0 || dims[1] <= 0 || dims[2] <= 0 || dims[0] > FITS_READ_MAX_PIXELS ||
         dims[1] > FITS_READ_MAX_PIXELS || dims[2] > FITS_READ_MAX_PIXELS ||
         dims[0] * dims[1] > FITS_READ_MAX_PIXELS / dims[2])) {
        int cstatus = 0;
        fits_close_file(f, &cstatus);
        if (naxis == 3)
            snprintf(err, errlen, "%s: cube of %lld x %lld x %lld pixels is empty or too large",
                     path, (long long)dims[0], (long long)dims[1], (long long)dims[2]);
        else
            snprintf(err, errlen, "%s: image of %lld x %lld pixels is empty or too large", path,
                     (long long)dims[0], (long long)dims[1]);
        return -1;
    }
    float *buf = NULL;
    if (!status) {
        buf = malloc(sizeof *buf * (size_t)(dims[0] * dims[1] * dims[2]));
        if (!buf) {
            int cstatus = 0;
            fits_close_file(f, &cstatus);
            snprintf(err, errlen, "%s: out of memory for %lld x %lld pixels", path,
                     (long long)dims[0], (long long)dims[1]);
            return -1;
        }
        /* Integer images: BLANK pixels -> NaN. Floating-point images are
         * read without cfitsio's null check, which would also turn
         * infinities into NaN and subnormals into 0; NaN stays NaN. */
        int bitpix = 0;
        fits_get_img_type(f, &bitpix, &status);
        float nulval = NAN;
        int anynul = 0;
        fits_read_img(f, TFLOAT, 1, dims[0] * dims[1] * dims[2], bitpix < 0 ? NULL : &nulval, buf,
                      &anynul, &status);
    }
    if (status) {
        fits_error_text(status, text, sizeof text);
        int cstatus = 0;
        fits_close_file(f, &cstatus);
        free(buf);
        snprintf(err, errlen, "%s: cannot read the image (truncated or corrupt?): %s", path, text);
        return -1;
    }
    fits_close_file(f, &status);
    fits_clear_errmsg();
    *data = buf;
    *planes = (int)dims[2];
    *rows = (int)dims[1];
    *cols = (int)dims[0];
    return 0;
}

static int read_image(const char *path, float **data, int *rows, int *cols, char *err,
                      size_t errlen)
{
    int planes;
    return read_array(path, 2, data, &planes, rows, cols, err, errlen);
}

static int read_cube(const char *path, float **data, int *planes, int *rows, int *cols, char *err,
                     size_t errlen)
{
    return read_array(path, 3, data, planes, rows, cols, err, errlen);
}

static int read_key_double(const char *path, const char *key, double *out)
{
    fitsfile *f = NULL;
    int status = 0;
    if (fits_open_diskfile(&f, path, READONLY, &status)) {
        fits_clear_errmsg();
        return -1;
    }
    double v = 0;
    fits_read_key(f, TDOUBLE, key, &v, NULL, &status);
    int ok = status == 0;
    status = 0;
    fits_close_file(f, &status);
    fits_clear_errmsg();
    if (!ok) return -1;
    *out = v;
    return 0;
}

static int read_key_string(const char *path, const char *key, char *out, size_t outlen)
{
    fitsfile *f = NULL;
    int status = 0;
    if (fits_open_diskfile(&f, path, READONLY, &status)) {
        fits_clear_errmsg();
        return -1;
    }
    char *s = NULL;
    fits_read_key_longstr(f, key, &s, NULL, &status);
    int ok = status == 0 && s;
    if (ok && outlen) snprintf(out, outlen, "%s", s);
    status = 0;
    if (s) fits_free_memory(s, &status);
    status = 0;
    fits_close_file(f, &status);
    fits_clear_errmsg();
    return ok ? 0 : -1;
}
/* encode_image's file with one image extension after the primary HDU:
 * enpix x enpix pixels of cfitsio type etype (TUSHORT, TFLOAT) written as
 * ebitpix (USHORT_IMG: BITPIX 16 with BZERO 32768; FLOAT_IMG), keywords ekvs. */
static int encode_with_ext(const float *img, int npix, const fits_kv *kvs, int nkv, int ebitpix,
                           int etype, const void *ext, int enpix, const fits_kv *ekvs, int nekv,
                           fits_bytes *out, char *why, size_t whylen)
{
    out->data = NULL;
    out->size = 0;
    if (keys_ok(kvs, nkv, why, whylen) != 0 || keys_ok(ekvs, nekv, why, whylen) != 0) return -1;
    fitsfile *f = NULL;
    void *buf = NULL;
    size_t bufsize = 0;
    const char *bad_key = NULL;
    long naxes[2] = {npix, npix}, enaxes[2] = {enpix, enpix};
    int status = memfile_image(&f, &buf, &bufsize, 2, naxes, kvs, nkv, &bad_key);
    fits_write_img(f, TFLOAT, 1, (LONGLONG)npix * npix, (void *)(uintptr_t)img, &status);
    fits_create_img(f, ebitpix, 2, enaxes, &status);
    for (int k = 0; k < nekv && !status; ++k) {
        write_key(f, &ekvs[k], &status);
        if (status) bad_key = ekvs[k].key;
    }
    fits_write_img(f, etype, 1, (LONGLONG)enpix * enpix, (void *)(uintptr_t)ext, &status);
    return encode_finish(f, &buf, &bufsize, out, status, bad_key, why, whylen);
}

static int encode_image_u16ext(const float *img, int npix, const fits_kv *kvs, int nkv,
                               const uint16_t *ext, const fits_kv *ekvs, int nekv, fits_bytes *out,
                               char *why, size_t whylen)
{
    return encode_with_ext(img, npix, kvs, nkv, USHORT_IMG, TUSHORT, ext, npix, ekvs, nekv, out,
                           why, whylen);
}

static int encode_image_f32ext(const float *img, int npix, const fits_kv *kvs, int nkv,
                               const float *ext, int enpix, const fits_kv *ekvs, int nekv,
                               fits_bytes *out, char *why, size_t whylen)
{
    return encode_with_ext(img, npix, kvs, nkv, FLOAT_IMG, TFLOAT, ext, enpix, ekvs, nekv, out, why,
                           whylen);
}

static int thread_safe(void)
{
    return fits_is_reentrant();
}

PSFSIM_MODULE_EXPORT const fits_module_ops psf_fits_module_entry = {
    .abi = FITS_MODULE_ABI,
    .size = sizeof(fits_module_ops),
    .encode_image = encode_image,
    .read_image = read_image,
    .read_key_double = read_key_double,
    .read_key_string = read_key_string,
    .encode_cube_header = encode_cube_header,
    .encode_table = encode_table,
    .thread_safe = thread_safe,
    .encode_image_u16ext = encode_image_u16ext,
    .encode_image_f32ext = encode_image_f32ext,
    .read_cube = read_cube,
};
