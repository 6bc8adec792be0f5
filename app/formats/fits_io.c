/* FITS images through cfitsio: the FITS module, libpsfsim-fits.so
 * (fits_module.h), whose table psfsim calls through (app/formats/fits_module.c);
 * each function has the contract of the fits_io.h function of the same
 * name with the psf_fits_ prefix. Files are opened and created with the
 * *_diskfile calls, which take the name literally (no extended filename
 * syntax: a '[' or '!' in a directory name means nothing special). */
#include "app/formats/fits_io.h"

#include <errno.h>
#include <fitsio.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/formats/atomic_file.h"
#include "app/formats/fits_module.h"
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

static int write_image(const char *path, const float *img, int npix, const fits_kv *kvs, int nkv,
                       char *err, size_t errlen)
{
    if (npix <= 0) {
        snprintf(err, errlen, "%s: cannot write a FITS image of %d x %d pixels", path, npix, npix);
        return -1;
    }
    for (int k = 0; k < nkv; ++k) {
        if (!key_ok(kvs[k].key)) {
            snprintf(err, errlen,
                     "cannot write %s: FITS keyword \"%.40s\" must be 1 to 8 of A-Z 0-9 _ -", path,
                     kvs[k].key ? kvs[k].key : "(null)");
            return -1;
        }
        if (kvs[k].type == FITS_KV_STRING && !text_ok(kvs[k].s)) {
            snprintf(err, errlen, "cannot write %s: keyword %s: the value must be printable ASCII",
                     path, kvs[k].key);
            return -1;
        }
        if (kvs[k].comment && !text_ok(kvs[k].comment)) {
            snprintf(err, errlen,
                     "cannot write %s: keyword %s: the comment must be printable ASCII", path,
                     kvs[k].key);
            return -1;
        }
    }
    atomic_file af;
    if (atomic_reserve_path(&af, path, err, errlen)) return -1;

    fitsfile *f = NULL;
    int status = 0;
    const char *bad_key = NULL;
    long naxes[2] = {npix, npix}; /* NAXIS1 = columns, NAXIS2 = rows */
    fits_create_diskfile(&f, af.tmp_path, &status);
    fits_create_img(f, FLOAT_IMG, 2, naxes, &status);
    for (int k = 0; k < nkv && !status; ++k) {
        write_key(f, &kvs[k], &status);
        if (status) bad_key = kvs[k].key;
    }
    /* Row-major buffer from the first pixel: array row 0 is the first stored
     * row. cfitsio converts to big-endian in its own buffer (the input is
     * not modified), hence the cast. */
    fits_write_img(f, TFLOAT, 1, (LONGLONG)npix * npix, (void *)(uintptr_t)img, &status);
    int sys = status ? errno : 0; /* a failed write's reason (cfitsio keeps only its code) */
    if (f) {
        int cstatus = 0;
        errno = 0;
        fits_close_file(f, &cstatus);
        if (!status) status = cstatus;
        if (cstatus && !sys) sys = errno; /* the data is flushed at close */
    }
    if (status) {
        char text[200];
        fits_error_text(status, text, sizeof text);
        atomic_abort(&af);
        if (bad_key)
            snprintf(err, errlen, "cannot write %s: keyword %s: %s", path, bad_key, text);
        else if (sys && (status == WRITE_ERROR || status == FILE_NOT_CLOSED))
            snprintf(err, errlen, "cannot write %s: %s (%s)", path, strerror(sys), text);
        else
            snprintf(err, errlen, "cannot write %s: %s", path, text);
        return -1;
    }
    return atomic_commit_path(&af, err, errlen);
}

static int read_image(const char *path, float **data, int *rows, int *cols, char *err,
                      size_t errlen)
{
    *data = NULL;
    *rows = *cols = 0;
    fitsfile *f = NULL;
    int status = 0;
    char text[300];
    /* The headers on the way to the image are checked before cfitsio
     * parses them (fits_scan.h: cfitsio trusts malformed table headers). */
    int hdu = 0, naxis = 0, type = 0;
    if (fits_scan_first_image(path, &hdu, err, errlen) != 0) return -1;
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
    if (!status && naxis != 2) {
        fits_close_file(f, &status);
        if (naxis == 0)
            snprintf(err, errlen, "%s: no image in this FITS file", path);
        else
            snprintf(err, errlen, "%s: image HDU %d has NAXIS = %d; a map must be 2-D", path, hdu,
                     naxis);
        return -1;
    }
    LONGLONG dims[2] = {0, 0};
    fits_get_img_sizell(f, 2, dims, &status);
    if (!status && (dims[0] <= 0 || dims[1] <= 0 || dims[0] > FITS_READ_MAX_PIXELS ||
                    dims[1] > FITS_READ_MAX_PIXELS || dims[0] * dims[1] > FITS_READ_MAX_PIXELS)) {
        int cstatus = 0;
        fits_close_file(f, &cstatus);
        snprintf(err, errlen, "%s: image of %lld x %lld pixels is empty or too large", path,
                 (long long)dims[0], (long long)dims[1]);
        return -1;
    }
    float *buf = NULL;
    if (!status) {
        buf = malloc(sizeof *buf * (size_t)(dims[0] * dims[1]));
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
        fits_read_img(f, TFLOAT, 1, dims[0] * dims[1], bitpix < 0 ? NULL : &nulval, buf, &anynul,
                      &status);
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
    *rows = (int)dims[1];
    *cols = (int)dims[0];
    return 0;
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

static int thread_safe(void)
{
    return fits_is_reentrant();
}

struct psf_fits_cube {
    atomic_file af;
    fitsfile *f;
    int npix;
    long long nplanes;
};

static void cube_abort(psf_fits_cube *c);

static void cube_error(const char *path, int status, char *err, size_t errlen)
{
    char text[200];
    fits_error_text(status, text, sizeof text);
    snprintf(err, errlen, "cannot write %s: %s", path, text);
}

static psf_fits_cube *cube_open(const char *path, int npix, long long nplanes, const fits_kv *kvs,
                                int nkv, char *err, size_t errlen)
{
    psf_fits_cube *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "cannot write %s: out of memory", path);
        return NULL;
    }
    c->npix = npix;
    c->nplanes = nplanes;
    if (atomic_reserve_path(&c->af, path, err, errlen)) {
        free(c);
        return NULL;
    }
    int status = 0;
    long naxes[3] = {npix, npix, (long)nplanes};
    fits_create_diskfile(&c->f, c->af.tmp_path, &status);
    fits_create_img(c->f, FLOAT_IMG, 3, naxes, &status);
    for (int k = 0; k < nkv && !status; ++k)
        write_key(c->f, &kvs[k], &status);
    if (status) {
        cube_error(path, status, err, errlen);
        cube_abort(c);
        return NULL;
    }
    return c;
}

static int cube_write_plane(psf_fits_cube *c, long long plane, const float *img, char *err,
                            size_t errlen)
{
    int status = 0;
    LONGLONG n = (LONGLONG)c->npix * c->npix;
    fits_write_img(c->f, TFLOAT, 1 + plane * n, n, (void *)(uintptr_t)img, &status);
    if (status) cube_error(c->af.final_path, status, err, errlen);
    return status ? -1 : 0;
}

static int cube_commit(psf_fits_cube *c, int ncols, const char *const *names,
                       const char *const *units, double *const *cols, char *err, size_t errlen)
{
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
    if (!status)
        fits_create_tbl(c->f, BINARY_TBL, c->nplanes, ncols, ttype, tform, tunit, "PLANES",
                        &status);
    for (int i = 0; !status && i < ncols; ++i)
        fits_write_col(c->f, TDOUBLE, i + 1, 1, 1, c->nplanes, cols[i], &status);
    free(ttype);
    free(tform);
    free(tunit);
    int cstatus = 0;
    fits_close_file(c->f, &cstatus);
    c->f = NULL;
    if (!status) status = cstatus;
    if (status) {
        cube_error(c->af.final_path, status, err, errlen);
        cube_abort(c);
        return -1;
    }
    int rc = atomic_commit_path(&c->af, err, errlen);
    free(c);
    return rc;
}

static void cube_abort(psf_fits_cube *c)
{
    if (!c) return;
    if (c->f) {
        int status = 0;
        fits_close_file(c->f, &status);
    }
    atomic_abort(&c->af);
    free(c);
}

PSFSIM_MODULE_EXPORT const fits_module_ops psf_fits_module_entry = {
    .abi = FITS_MODULE_ABI,
    .size = sizeof(fits_module_ops),
    .write_image = write_image,
    .read_image = read_image,
    .read_key_double = read_key_double,
    .read_key_string = read_key_string,
    .cube_open = cube_open,
    .cube_write_plane = cube_write_plane,
    .cube_commit = cube_commit,
    .cube_abort = cube_abort,
    .thread_safe = thread_safe,
};
