/* SPDX-License-Identifier: BSD-3-Clause */
/* The HDF5 set's layout (hdf5_layout.h; the file is described in
 * h5set.h): creating it, checking it on resume, writing labels, flags and
 * attributes. Part of the HDF5 module. */
#include "app/formats/hdf5/hdf5_layout.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT_NAME "psfsim image set"
#define FORMAT_VERSION 1

static const char *const DTYPE_NAMES[] = {"float32", "uint16"};

hid_t h5l_fapl(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5AC_cache_config_t mdc = {.version = H5AC__CURR_CACHE_CONFIG_VERSION};
    if (fapl < 0 || H5Pset_file_locking(fapl, 0, 1) < 0 || H5Pset_sieve_buf_size(fapl, 0) < 0 ||
        H5Pget_mdc_config(fapl, &mdc) < 0)
        goto fail;
    /* Evictions may be turned off only with every adaptive resize off. */
    mdc.incr_mode = H5C_incr__off;
    mdc.flash_incr_mode = H5C_flash_incr__off;
    mdc.decr_mode = H5C_decr__off;
    mdc.evictions_enabled = 0;
    if (H5Pset_mdc_config(fapl, &mdc) < 0) goto fail;
    return fapl;
fail:
    if (fapl >= 0) H5Pclose(fapl);
    return H5I_INVALID_HID;
}

/* HDF5's message for the last failed call of this thread: each API call
 * clears HDF5's error stack, so the cleanup after a failure would lose
 * it; the handler below keeps it. */
static _Thread_local char g_last[200];

/* The innermost message; a system error's ("file write failed: time =
 * ..., filename = '/proc/self/fd/5', ..., error message = 'File too large',
 * ...") as "file write failed: File too large". */
static herr_t innermost(unsigned n, const H5E_error2_t *e, void *data)
{
    if (n != 0 || !e->desc) return 0;
    const char *sys = strstr(e->desc, "error message = '");
    size_t head = strcspn(e->desc, ":,");
    if (sys && head < (size_t)(sys - e->desc)) {
        sys += strlen("error message = '");
        const char *end = strchr(sys, '\'');
        snprintf(data, sizeof g_last, "%.*s: %.*s", (int)head, e->desc, (int)(end ? end - sys : 80),
                 sys);
    } else {
        snprintf(data, sizeof g_last, "%s", e->desc);
    }
    return 0;
}

/* HDF5's automatic error handler: keep the message, print nothing. */
static herr_t keep_message(hid_t stack, void *unused)
{
    (void)unused;
    g_last[0] = '\0';
    H5Ewalk2(stack, H5E_WALK_UPWARD, innermost, g_last);
    return 0;
}

void h5l_quiet(void)
{
    H5Eset_auto2(H5E_DEFAULT, keep_message, NULL);
    g_last[0] = '\0';
}

void h5l_error_text(char *out, size_t outlen)
{
    snprintf(out, outlen, "%s", g_last);
    g_last[0] = '\0';
    H5Eclear2(H5E_DEFAULT);
}

void h5l_error(const h5set *s, const char *what, char *err, size_t errlen)
{
    char text[200];
    h5l_error_text(text, sizeof text);
    if (text[0])
        snprintf(err, errlen, "cannot write %s: %s (HDF5: %s)", s->shown, what, text);
    else
        snprintf(err, errlen, "cannot write %s: %s", s->shown, what);
}

/* A variable-length UTF-8 string type (h5py reads it as str). */
static hid_t vstring(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0)) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

/* Attribute key of obj = *val (file type ftype, memory type mtype, space
 * sp: NULL for a scalar), replacing one of that name. 0 or -1. */
static int attr_put(hid_t obj, const char *key, hid_t ftype, hid_t mtype, hid_t sp, const void *val)
{
    if (H5Aexists(obj, key) > 0 && H5Adelete(obj, key) < 0) return -1;
    hid_t space = sp >= 0 ? sp : H5Screate(H5S_SCALAR);
    hid_t a = space < 0 ? -1 : H5Acreate2(obj, key, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, mtype, val);
    if (a >= 0) H5Aclose(a);
    if (sp < 0 && space >= 0) H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

static int attr_str(hid_t obj, const char *key, const char *v)
{
    hid_t t = vstring();
    const char *p = v ? v : "";
    int rc = t < 0 ? -1 : attr_put(obj, key, t, t, -1, &p);
    if (t >= 0) H5Tclose(t);
    return rc;
}

static int attr_i64(hid_t obj, const char *key, long long v)
{
    int64_t x = v;
    return attr_put(obj, key, H5T_STD_I64LE, H5T_NATIVE_INT64, -1, &x);
}

static int attr_f64(hid_t obj, const char *key, double v)
{
    return attr_put(obj, key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, -1, &v);
}

/* String attribute key of obj, malloc'd (NULL when absent or not a string). */
static char *attr_get_str(hid_t obj, const char *key)
{
    if (H5Aexists(obj, key) <= 0) return NULL;
    hid_t a = H5Aopen(obj, key, H5P_DEFAULT), t = vstring(), ft = a < 0 ? -1 : H5Aget_type(a);
    char *v = NULL, *out = NULL;
    if (ft >= 0 && H5Tget_class(ft) == H5T_STRING && H5Tis_variable_str(ft) > 0 &&
        H5Aread(a, t, &v) >= 0 && v) {
        out = strdup(v);
        H5free_memory(v);
    }
    if (ft >= 0) H5Tclose(ft);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return out;
}

/* Integer attribute key of obj into *v: 0, or -1 when absent or not an integer. */
static int attr_get_i64(hid_t obj, const char *key, long long *v)
{
    if (H5Aexists(obj, key) <= 0) return -1;
    hid_t a = H5Aopen(obj, key, H5P_DEFAULT), ft = a < 0 ? -1 : H5Aget_type(a);
    int64_t x = 0;
    int rc = ft >= 0 && H5Tget_class(ft) == H5T_INTEGER && H5Aread(a, H5T_NATIVE_INT64, &x) >= 0
                 ? 0
                 : -1;
    if (ft >= 0) H5Tclose(ft);
    if (a >= 0) H5Aclose(a);
    *v = x;
    return rc;
}

/* "K=.. M=.. dtype=.. gzip=.. c=.. j=1,2,.. columns=name:d,name:i,name:s8":
 * everything a resumed file must share with the run. malloc'd or NULL. */
static char *signature(const h5set *s)
{
    size_t cap = 160 + 12 * (size_t)s->nzernike + 80 * (size_t)(s->ncols + s->nextra), n = 0;
    char *b = malloc(cap);
    if (!b) return NULL;
    n += (size_t)snprintf(b + n, cap - n, "K=%lld M=%d dtype=%s gzip=%d c=%d j=", s->nimages,
                          s->npix, DTYPE_NAMES[s->dtype], s->gzip, s->chunk);
    for (int i = 0; i < s->nzernike; ++i)
        n += (size_t)snprintf(b + n, cap - n, "%s%d", i ? "," : "", s->noll_j[i]);
    n += (size_t)snprintf(b + n, cap - n, " columns=");
    for (int i = 0; i < s->ncols; ++i) {
        const h5set_column *c = &s->cols[i];
        const char *t = c->type == H5SET_DOUBLE ? "d" : c->type == H5SET_INT64 ? "i" : "s";
        n += (size_t)snprintf(b + n, cap - n, "%s%s:%s", i ? "," : "", c->name, t);
        if (c->type == H5SET_STRING) n += (size_t)snprintf(b + n, cap - n, "%d", c->width);
    }
    /* Only when there are extra datasets, so a set without is as before. */
    for (int i = 0; i < s->nextra; ++i)
        n += (size_t)snprintf(b + n, cap - n, "%s%s:%d:%s", i ? "," : " images=", s->extra[i].name,
                              s->extra[i].npix, DTYPE_NAMES[s->extra[i].dtype]);
    return b;
}

/* Creation properties of the label and flag datasets: contiguous, space
 * allocated now (so their writes change no metadata), no fill, no times. */
static hid_t dcpl_fixed(void)
{
    hid_t p = H5Pcreate(H5P_DATASET_CREATE);
    if (p >= 0 &&
        (H5Pset_layout(p, H5D_CONTIGUOUS) < 0 || H5Pset_alloc_time(p, H5D_ALLOC_TIME_EARLY) < 0 ||
         H5Pset_fill_time(p, H5D_FILL_TIME_NEVER) < 0 || H5Pset_obj_track_times(p, 0) < 0)) {
        H5Pclose(p);
        return H5I_INVALID_HID;
    }
    return p;
}

/* An image dataset's creation properties (npix: its images'): chunks of c
 * whole images; gzip: shuffle + deflate, space allocated as chunks are
 * written; else allocated now. */
static hid_t dcpl_images(const h5set *s, int npix)
{
    hid_t p = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk[3] = {(hsize_t)s->chunk, (hsize_t)npix, (hsize_t)npix};
    herr_t rc = p < 0 ? -1 : H5Pset_chunk(p, 3, chunk);
    if (rc >= 0 && s->gzip) rc = H5Pset_shuffle(p) < 0 ? -1 : H5Pset_deflate(p, (unsigned)s->gzip);
    if (rc >= 0 && !s->gzip) rc = H5Pset_alloc_time(p, H5D_ALLOC_TIME_EARLY);
    if (rc >= 0) rc = H5Pset_fill_time(p, H5D_FILL_TIME_NEVER);
    if (rc >= 0) rc = H5Pset_obj_track_times(p, 0);
    if (rc < 0 && p >= 0) H5Pclose(p);
    return rc < 0 ? H5I_INVALID_HID : p;
}

static hid_t make(hid_t loc, const char *name, hid_t type, int rank, const hsize_t *dims,
                  hid_t dcpl)
{
    hid_t sp = rank ? H5Screate_simple(rank, dims, NULL) : H5Screate(H5S_SCALAR);
    hid_t d = sp < 0 ? -1 : H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (sp >= 0) H5Sclose(sp);
    return d;
}

/* The memory (and file) type of column c's values. */
static hid_t column_type(const h5set_column *c)
{
    if (c->type == H5SET_DOUBLE) return H5Tcopy(H5T_NATIVE_DOUBLE);
    if (c->type == H5SET_INT64) return H5Tcopy(H5T_NATIVE_INT64);
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && (H5Tset_size(t, (size_t)c->width) < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0)) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

static int make_labels(h5set *s, hid_t labels, hid_t dcpl)
{
    hsize_t dims[2] = {(hsize_t)s->nimages, (hsize_t)s->nzernike};
    if (s->nzernike) {
        hsize_t j = (hsize_t)s->nzernike;
        hid_t sp = H5Screate_simple(1, &j, NULL);
        s->zernike = make(labels, "zernike", H5T_IEEE_F64LE, 2, dims, dcpl);
        if (s->zernike < 0 || sp < 0 ||
            attr_put(s->zernike, "noll_j", H5T_STD_I32LE, H5T_NATIVE_INT, sp, s->noll_j) ||
            (s->zernike_units && attr_str(s->zernike, "units", s->zernike_units))) {
            if (sp >= 0) H5Sclose(sp);
            return -1;
        }
        H5Sclose(sp);
    }
    for (int i = 0; i < s->ncols; ++i) {
        const h5set_column *c = &s->cols[i];
        hid_t t = column_type(c);
        hid_t ft = c->type == H5SET_DOUBLE  ? H5T_IEEE_F64LE
                   : c->type == H5SET_INT64 ? H5T_STD_I64LE
                                            : t;
        s->col_ids[i] = t < 0 ? -1 : make(labels, c->name, ft, 1, dims, dcpl);
        if (t >= 0) H5Tclose(t);
        if (s->col_ids[i] < 0 || (c->units && attr_str(s->col_ids[i], "units", c->units)) ||
            (c->description && attr_str(s->col_ids[i], "description", c->description)))
            return -1;
    }
    return 0;
}

/* The root group's attributes of the layout. */
static int root_attrs(const h5set *s, const char *sig)
{
    hid_t f = s->file;
    return attr_str(f, "psfsim_format", FORMAT_NAME) ||
           attr_i64(f, "psfsim_format_version", FORMAT_VERSION) ||
           attr_str(f, "psfsim_layout", sig) || attr_i64(f, "nimages", s->nimages) ||
           attr_i64(f, "npix", s->npix) || attr_str(f, "dtype", DTYPE_NAMES[s->dtype]) ||
           attr_str(f, "compression", s->gzip ? "gzip" : "none") ||
           attr_i64(f, "gzip_level", s->gzip) || attr_i64(f, "chunk_images", s->chunk) ||
           attr_str(f, "resume_key", s->resume_key) || attr_i64(f, "complete", 0);
}

static hid_t file_type(h5set_dtype t)
{
    return t == H5SET_FLOAT32 ? H5T_IEEE_F32LE : H5T_STD_U16LE;
}

/* The extra image datasets, as images. 0 or -1. */
static int make_extra(h5set *s)
{
    for (int i = 0; i < s->nextra; ++i) {
        h5_extra *e = &s->extra[i];
        hsize_t dims[3] = {(hsize_t)s->nimages, (hsize_t)e->npix, (hsize_t)e->npix};
        hid_t dcpl = dcpl_images(s, e->npix);
        e->id = dcpl < 0 ? -1 : make(s->file, e->name, file_type(e->dtype), 3, dims, dcpl);
        if (dcpl >= 0) H5Pclose(dcpl);
        if (e->id < 0) return -1;
    }
    return 0;
}

int h5l_create(h5set *s, char *err, size_t errlen)
{
    char *sig = signature(s);
    hid_t fixed = dcpl_fixed(), dcpl = dcpl_images(s, s->npix), labels = -1;
    hsize_t dims[3] = {(hsize_t)s->nimages, (hsize_t)s->npix, (hsize_t)s->npix};
    hid_t type = file_type(s->dtype);
    unsigned char *zeros = calloc((size_t)s->nimages, 1), one = 1;
    int rc = -1;
    if (!sig || !zeros || fixed < 0 || dcpl < 0 || root_attrs(s, sig)) goto done;
    if ((s->images = make(s->file, "images", type, 3, dims, dcpl)) < 0 || make_extra(s)) goto done;
    if ((s->written = make(s->file, "written", H5T_STD_U8LE, 1, dims, fixed)) < 0) goto done;
    if ((s->flushing = make(s->file, "flushing", H5T_STD_U8LE, 0, dims, fixed)) < 0) goto done;
    labels = H5Gcreate2(s->file, "labels", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (labels < 0 || make_labels(s, labels, fixed)) goto done;
    /* flushing = 1 until the first H5Fflush has written the layout. */
    rc = h5l_write_u8(s->written, 0, s->nimages, zeros) || h5l_write_u8(s->flushing, -1, 1, &one);
done:
    if (rc) h5l_error(s, sig && zeros ? "cannot lay out the file" : "out of memory", err, errlen);
    if (labels >= 0) H5Gclose(labels);
    if (fixed >= 0) H5Pclose(fixed);
    if (dcpl >= 0) H5Pclose(dcpl);
    free(zeros);
    free(sig);
    return rc ? -1 : 0;
}

/* Open dataset name of s->file into *id; 0, or -1 with why. */
static int open_dset(h5set *s, const char *name, hid_t *id, char *why, size_t whylen)
{
    *id = H5Dopen2(s->file, name, H5P_DEFAULT);
    if (*id < 0) snprintf(why, whylen, "it has no dataset %s", name);
    return *id < 0 ? -1 : 0;
}

/* The root's string attribute key equals want. */
static int attr_is(hid_t f, const char *key, const char *want)
{
    char *v = attr_get_str(f, key);
    int same = v && !strcmp(v, want);
    free(v);
    return same;
}

int h5l_check(h5set *s, char *why, size_t whylen)
{
    char *sig = signature(s), name[80];
    int rc = -1;
    if (!sig)
        snprintf(why, whylen, "out of memory");
    else if (!attr_is(s->file, "psfsim_format", FORMAT_NAME))
        snprintf(why, whylen, "it is not a psfsim image set");
    else if (!attr_is(s->file, "psfsim_layout", sig))
        snprintf(why, whylen,
                 "it was made with other parameters (K, M, dtype, gzip, chunks, "
                 "Zernike terms or label columns)");
    else if (!attr_is(s->file, "resume_key", s->resume_key))
        snprintf(why, whylen, "it was made by another run (resume_key differs)");
    else if (!open_dset(s, "images", &s->images, why, whylen) &&
             !open_dset(s, "written", &s->written, why, whylen) &&
             !open_dset(s, "flushing", &s->flushing, why, whylen) &&
             (!s->nzernike || !open_dset(s, "labels/zernike", &s->zernike, why, whylen))) {
        rc = 0;
        for (int i = 0; i < s->ncols && !rc; ++i) {
            snprintf(name, sizeof name, "labels/%s", s->cols[i].name);
            rc = open_dset(s, name, &s->col_ids[i], why, whylen);
        }
        for (int i = 0; i < s->nextra && !rc; ++i)
            rc = open_dset(s, s->extra[i].name, &s->extra[i].id, why, whylen);
    }
    H5Eclear2(H5E_DEFAULT);
    free(sig);
    return rc;
}

int h5l_check_complete(h5set *s, char *why, size_t whylen)
{
    long long complete = 0;
    if (h5l_check(s, why, whylen)) return -1;
    if (attr_get_i64(s->file, "complete", &complete) || complete != 1)
        snprintf(why, whylen, "it is not marked complete");
    else if (!attr_is(s->file, "config_hash", s->resume_key))
        snprintf(why, whylen, "its config_hash is not this config's");
    H5Eclear2(H5E_DEFAULT);
    return why[0] ? -1 : 0;
}

/* Write rows first .. first + n - 1 of d (rank 1, or rank 2 with ncols
 * columns) from buf of memory type mtype. 0 or -1. */
static int write_rows(hid_t d, hid_t mtype, long long first, long long n, hsize_t ncols,
                      const void *buf)
{
    hsize_t start[2] = {(hsize_t)first, 0}, count[2] = {(hsize_t)n, ncols};
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(ncols ? 2 : 1, count, NULL);
    herr_t rc =
        fs < 0 || ms < 0 ? -1 : H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    if (rc >= 0) rc = H5Dwrite(d, mtype, ms, fs, H5P_DEFAULT, buf);
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc < 0 ? -1 : 0;
}

int h5l_write_u8(hid_t d, long long first, long long n, const unsigned char *bytes)
{
    if (first < 0)
        return H5Dwrite(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes) < 0 ? -1 : 0;
    return write_rows(d, H5T_NATIVE_UCHAR, first, n, 0, bytes);
}

int h5l_flush(h5set *s)
{
    unsigned char one = 1, zero = 0;
    if (h5l_write_u8(s->flushing, -1, 1, &one) || H5Fflush(s->file, H5F_SCOPE_LOCAL) < 0) return -1;
    return h5l_write_u8(s->flushing, -1, 1, &zero);
}

/* Column c's count values from v, strings packed into width-byte fields. */
static int write_column(const h5set *s, int c, long long first, int count, const void *v)
{
    const h5set_column *col = &s->cols[c];
    hid_t t = column_type(col);
    if (t < 0) return -1;
    char *packed = NULL;
    if (col->type == H5SET_STRING) {
        size_t w = (size_t)col->width;
        const char *const *str = v;
        if (!(packed = calloc((size_t)count, w))) {
            H5Tclose(t);
            return -1;
        }
        for (int k = 0; k < count; ++k)
            memcpy(packed + (size_t)k * w, str[k], strnlen(str[k], w)); /* checked: fits */
        v = packed;
    }
    int rc = write_rows(s->col_ids[c], t, first, count, 0, v);
    H5Tclose(t);
    free(packed);
    return rc;
}

int h5l_write_labels(h5set *s, long long first, int count, const h5set_rows *rows, char *err,
                     size_t errlen)
{
    int rc = 0;
    if (s->nzernike)
        rc = write_rows(s->zernike, H5T_NATIVE_DOUBLE, first, count, (hsize_t)s->nzernike,
                        rows->zernike);
    for (int c = 0; c < s->ncols && !rc; ++c)
        rc = write_column(s, c, first, count, rows->columns[c]);
    if (rc) h5l_error(s, "cannot write labels", err, errlen);
    return rc;
}

int h5l_write_attrs(h5set *s, char *err, size_t errlen)
{
    for (int i = 0; i < s->nattrs; ++i) {
        const h5set_attr *a = &s->attrs[i];
        const char *on = a->object && a->object[0] ? a->object : "/";
        hid_t o = H5Oopen(s->file, on, H5P_DEFAULT);
        int rc = o < 0                     ? -1
                 : a->type == H5SET_DOUBLE ? attr_f64(o, a->key, a->d)
                 : a->type == H5SET_INT64  ? attr_i64(o, a->key, a->i)
                                           : attr_str(o, a->key, a->s);
        if (o >= 0) H5Oclose(o);
        if (rc) {
            char what[400];
            snprintf(what, sizeof what, "cannot write attribute %.100s of %.200s", a->key, on);
            h5l_error(s, what, err, errlen);
            return -1;
        }
    }
    if (attr_i64(s->file, "complete", 1)) {
        h5l_error(s, "cannot write attribute complete", err, errlen);
        return -1;
    }
    return 0;
}

void h5l_close_ids(h5set *s)
{
    hid_t *ids[] = {&s->images, &s->written, &s->flushing, &s->zernike};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; ++i) {
        if (*ids[i] >= 0) H5Dclose(*ids[i]);
        *ids[i] = H5I_INVALID_HID;
    }
    for (int i = 0; s->col_ids && i < s->ncols; ++i) {
        if (s->col_ids[i] >= 0) H5Dclose(s->col_ids[i]);
        s->col_ids[i] = H5I_INVALID_HID;
    }
    for (int i = 0; i < s->nextra; ++i) {
        if (s->extra[i].id >= 0) H5Dclose(s->extra[i].id);
        s->extra[i].id = H5I_INVALID_HID;
    }
}
