/* SPDX-License-Identifier: BSD-3-Clause */
/* The HDF5 set's parameters, checked and copied (hdf5_layout.h). Part of
 * the HDF5 module. */
#include "app/formats/hdf5/hdf5_layout.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* HDF5 stores a chunk's size in 32 bits. */
#define CHUNK_MAX ((size_t)0xffffffffu)
#define THREADS_MAX 64
#define THREADS_AUTO_MAX 8

/* The root attributes of the layout (hdf5_layout.c): not the caller's. */
static const char *const RESERVED[] = {
    "psfsim_format", "psfsim_format_version", "psfsim_layout", "nimages",      "npix",
    "dtype",         "compression",           "gzip_level",    "chunk_images", "resume_key",
    "complete"};

__attribute__((format(printf, 4, 5))) static int bad(const char *shown, char *err, size_t errlen,
                                                     const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "cannot write %s: %s", shown, why);
    return -1;
}

/* 1..63 of A-Z a-z 0-9 _. */
static int name_ok(const char *n)
{
    size_t len = n ? strlen(n) : 0;
    if (len < 1 || len > 63) return 0;
    for (size_t i = 0; i < len; ++i) {
        char c = n[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return 0;
    }
    return 1;
}

static int check_columns(const h5set_params *p, const char *shown, char *err, size_t errlen)
{
    if (p->ncolumns < 0 || (p->ncolumns && !p->columns))
        return bad(shown, err, errlen, "no label columns given");
    for (int i = 0; i < p->ncolumns; ++i) {
        const h5set_column *c = &p->columns[i];
        if (!name_ok(c->name) || !strcmp(c->name, "zernike"))
            return bad(shown, err, errlen,
                       "label column %d: the name \"%.80s\" is not 1 to 63 of "
                       "A-Z a-z 0-9 _ (nor zernike)",
                       i, c->name ? c->name : "(null)");
        for (int j = 0; j < i; ++j)
            if (!strcmp(p->columns[j].name, c->name))
                return bad(shown, err, errlen, "label column %s is given twice", c->name);
        if (c->type != H5SET_DOUBLE && c->type != H5SET_INT64 && c->type != H5SET_STRING)
            return bad(shown, err, errlen, "label column %s: unknown type", c->name);
        if (c->type == H5SET_STRING && (c->width < 1 || c->width > 255))
            return bad(shown, err, errlen, "label column %s: width %d is not 1..255", c->name,
                       c->width);
    }
    return 0;
}

/* Bytes of an image of npix x npix values of dtype. */
static size_t image_size(int npix, h5set_dtype dtype)
{
    return (size_t)npix * (size_t)npix * (dtype == H5SET_FLOAT32 ? 4 : 2);
}

/* The extra image datasets: names free and distinct, each image in a chunk. */
static int check_extra(const h5set_params *p, const char *shown, char *err, size_t errlen)
{
    static const char *const taken[] = {"images", "written", "flushing", "labels"};
    if (p->nextra < 0 || p->nextra > H5SET_MAX_EXTRA || (p->nextra && !p->extra))
        return bad(shown, err, errlen, "extra image datasets: %d is not 0..%d", p->nextra,
                   H5SET_MAX_EXTRA);
    for (int i = 0; i < p->nextra; ++i) {
        const h5set_images *e = &p->extra[i];
        int clash = !name_ok(e->name);
        for (size_t t = 0; !clash && t < sizeof taken / sizeof *taken; ++t)
            clash = !strcmp(e->name, taken[t]);
        for (int j = 0; !clash && j < i; ++j)
            clash = !strcmp(e->name, p->extra[j].name);
        if (clash)
            return bad(shown, err, errlen,
                       "image dataset %d: the name \"%.80s\" is taken or not 1 "
                       "to 63 of A-Z a-z 0-9 _",
                       i, e->name ? e->name : "(null)");
        if (e->dtype != H5SET_FLOAT32 && e->dtype != H5SET_UINT16)
            return bad(shown, err, errlen, "%s: unknown dtype %d", e->name, (int)e->dtype);
        if (e->npix < 1 || e->npix > 65535 || image_size(e->npix, e->dtype) > CHUNK_MAX)
            return bad(shown, err, errlen,
                       "%s: an image of %d x %d pixels is not 1 pixel to "
                       "HDF5's 4 GiB chunk",
                       e->name, e->npix, e->npix);
    }
    return 0;
}

/* The largest image of images and the extra datasets, bytes. */
static size_t largest_image(const h5set_params *p)
{
    size_t m = image_size(p->npix, p->dtype);
    for (int i = 0; i < p->nextra; ++i) {
        size_t e = image_size(p->extra[i].npix, p->extra[i].dtype);
        m = e > m ? e : m;
    }
    return m;
}

/* An attribute's object: the root, an image dataset, the labels group or a label. */
static int object_ok(const h5set_params *p, const char *o)
{
    if (!o || !o[0] || !strcmp(o, "/") || !strcmp(o, "images") || !strcmp(o, "labels")) return 1;
    for (int i = 0; i < p->nextra; ++i)
        if (!strcmp(o, p->extra[i].name)) return 1;
    if (strncmp(o, "labels/", 7)) return 0;
    if (!strcmp(o + 7, "zernike")) return p->nzernike > 0;
    for (int i = 0; i < p->ncolumns; ++i)
        if (!strcmp(o + 7, p->columns[i].name)) return 1;
    return 0;
}

static int check_attrs(const h5set_params *p, const char *shown, char *err, size_t errlen)
{
    if (p->nattrs < 0 || (p->nattrs && !p->attrs))
        return bad(shown, err, errlen, "no attributes given");
    for (int i = 0; i < p->nattrs; ++i) {
        const h5set_attr *a = &p->attrs[i];
        if (!a->key || !a->key[0] || strlen(a->key) > 255)
            return bad(shown, err, errlen, "attribute %d has no key of 1..255 bytes", i);
        if (!object_ok(p, a->object))
            return bad(shown, err, errlen, "attribute %s: no object %.100s in the file", a->key,
                       a->object);
        int root = !a->object || !a->object[0] || !strcmp(a->object, "/");
        for (size_t r = 0; root && r < sizeof RESERVED / sizeof *RESERVED; ++r)
            if (!strcmp(a->key, RESERVED[r]))
                return bad(shown, err, errlen, "attribute %s is psfsim's own", a->key);
        if (a->type != H5SET_DOUBLE && a->type != H5SET_INT64 && a->type != H5SET_STRING)
            return bad(shown, err, errlen, "attribute %s: unknown type", a->key);
    }
    return 0;
}

static int check(const h5set_params *p, const char *shown, char *err, size_t errlen)
{
    if (!p->name || !p->name[0]) return bad(shown, err, errlen, "no file name");
    if (p->nimages < 1) return bad(shown, err, errlen, "nimages %lld < 1", p->nimages);
    if (p->npix < 1) return bad(shown, err, errlen, "npix %d < 1", p->npix);
    if (p->dtype != H5SET_FLOAT32 && p->dtype != H5SET_UINT16)
        return bad(shown, err, errlen, "unknown dtype %d", (int)p->dtype);
    size_t image = image_size(p->npix, p->dtype);
    if (p->npix > 65535 || image > CHUNK_MAX)
        return bad(shown, err, errlen, "an image of %d x %d pixels is over HDF5's 4 GiB chunk",
                   p->npix, p->npix);
    if (check_extra(p, shown, err, errlen)) return -1;
    image = largest_image(p);
    if (p->gzip < 0 || p->gzip > 9)
        return bad(shown, err, errlen, "gzip level %d is not 0..9", p->gzip);
    if (p->chunk_images < 0 || p->chunk_images > p->nimages ||
        (size_t)p->chunk_images * image > CHUNK_MAX)
        return bad(shown, err, errlen, "chunk_images %d is not 0..nimages (a chunk < 4 GiB)",
                   p->chunk_images);
    if (p->threads < 0 || p->threads > THREADS_MAX)
        return bad(shown, err, errlen, "threads %d is not 0..%d", p->threads, THREADS_MAX);
    if (p->nzernike < 0 || (p->nzernike && !p->noll_j))
        return bad(shown, err, errlen, "no Zernike j list given");
    for (int i = 0; i < p->nzernike; ++i)
        if (p->noll_j[i] < 1)
            return bad(shown, err, errlen, "Zernike term %d: Noll j %d < 1", i, p->noll_j[i]);
    return check_columns(p, shown, err, errlen) || check_attrs(p, shown, err, errlen) ? -1 : 0;
}

/* strdup of v, NULL for NULL; *oom set when memory runs out. */
static char *copy_str(const char *v, int *oom)
{
    char *d = v ? strdup(v) : NULL;
    if (v && !d) *oom = 1;
    return d;
}

static int copy(h5set *s, const h5set_params *p)
{
    int oom = 0;
    s->noll_j = malloc((size_t)(p->nzernike ? p->nzernike : 1) * sizeof *s->noll_j);
    s->cols = calloc((size_t)(p->ncolumns ? p->ncolumns : 1), sizeof *s->cols);
    s->col_ids = malloc((size_t)(p->ncolumns ? p->ncolumns : 1) * sizeof *s->col_ids);
    s->attrs = calloc((size_t)(p->nattrs ? p->nattrs : 1), sizeof *s->attrs);
    s->flags = calloc((size_t)p->nimages, 1);
    s->given = calloc((size_t)p->nimages, 1);
    if (!s->noll_j || !s->cols || !s->col_ids || !s->attrs || !s->flags || !s->given) return -1;
    if (p->nzernike) memcpy(s->noll_j, p->noll_j, (size_t)p->nzernike * sizeof *s->noll_j);
    s->nzernike = p->nzernike;
    for (int i = 0; i < p->ncolumns; ++i, ++s->ncols) {
        s->col_ids[i] = H5I_INVALID_HID;
        s->cols[i] = p->columns[i];
        s->cols[i].name = copy_str(p->columns[i].name, &oom);
        s->cols[i].units = copy_str(p->columns[i].units, &oom);
        s->cols[i].description = copy_str(p->columns[i].description, &oom);
    }
    for (int i = 0; i < p->nattrs; ++i, ++s->nattrs) {
        s->attrs[i] = p->attrs[i];
        s->attrs[i].object = copy_str(p->attrs[i].object, &oom);
        s->attrs[i].key = copy_str(p->attrs[i].key, &oom);
        s->attrs[i].s = copy_str(p->attrs[i].s, &oom);
    }
    for (int i = 0; i < p->nextra; ++i, ++s->nextra) {
        h5_extra *e = &s->extra[i];
        snprintf(e->name, sizeof e->name, "%s", p->extra[i].name); /* checked: <= 63 */
        e->npix = p->extra[i].npix;
        e->dtype = p->extra[i].dtype;
        e->id = H5I_INVALID_HID;
    }
    s->resume_key = copy_str(p->resume_key ? p->resume_key : "", &oom);
    s->zernike_units = copy_str(p->zernike_units, &oom);
    return oom ? -1 : 0;
}

/* The chunk (c images) and the gzip threads. */
static void sizes(h5set *s, const h5set_params *p)
{
    s->esize = p->dtype == H5SET_FLOAT32 ? 4 : 2;
    s->image_bytes = (size_t)p->npix * (size_t)p->npix * s->esize;
    long long c =
        p->chunk_images ? p->chunk_images : h5set_auto_chunk_images(largest_image(p), p->nimages);
    s->chunk = (int)(c < p->nimages ? c : p->nimages);
    s->chunk_bytes = (size_t)s->chunk * s->image_bytes;
    s->stage_bytes = s->chunk_bytes;
    for (int i = 0; i < s->nextra; ++i) {
        h5_extra *e = &s->extra[i];
        e->esize = e->dtype == H5SET_FLOAT32 ? 4 : 2;
        e->image_bytes = image_size(e->npix, e->dtype);
        e->chunk_bytes = (size_t)s->chunk * e->image_bytes;
        e->off = s->stage_bytes;
        s->stage_bytes += e->chunk_bytes;
    }
    s->nchunks = (p->nimages + s->chunk - 1) / s->chunk;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    s->threads = p->threads ? p->threads
                            : (int)(cpus < 1                  ? 1
                                    : cpus > THREADS_AUTO_MAX ? THREADS_AUTO_MAX
                                                              : cpus);
}

h5set *h5p_new(const h5set_params *p, char *err, size_t errlen)
{
    const char *shown = !p ? "(null)" : p->shown ? p->shown : p->name ? p->name : "(null)";
    if (!p) return bad(shown, err, errlen, "no parameters"), NULL;
    if (check(p, shown, err, errlen)) return NULL;
    h5set *s = calloc(1, sizeof *s);
    if (!s) return bad(shown, err, errlen, "out of memory"), NULL;
    s->file = s->images = s->written = s->flushing = s->zernike = H5I_INVALID_HID;
    s->dir_fd = s->fd = -1;
    snprintf(s->shown, sizeof s->shown, "%s", shown);
    s->nimages = p->nimages;
    s->npix = p->npix;
    s->dtype = p->dtype;
    s->gzip = p->gzip;
    if (copy(s, p)) {
        bad(shown, err, errlen, "out of memory");
        h5p_free(s);
        return NULL;
    }
    sizes(s, p); /* after copy: the extra datasets' sizes */
    return s;
}

void h5p_free(h5set *s)
{
    if (!s) return;
    for (int i = 0; i < s->nstages; ++i)
        free(s->stages[i].buf);
    for (int i = 0; i < s->ncols; ++i) {
        free((char *)s->cols[i].name);
        free((char *)s->cols[i].units);
        free((char *)s->cols[i].description);
    }
    for (int i = 0; i < s->nattrs; ++i) {
        free((char *)s->attrs[i].object);
        free((char *)s->attrs[i].key);
        free((char *)s->attrs[i].s);
    }
    free(s->stages);
    free(s->cols);
    free(s->col_ids);
    free(s->attrs);
    free(s->noll_j);
    free(s->flags);
    free(s->given);
    free(s->resume_key);
    free(s->zernike_units);
    if (s->fd >= 0) close(s->fd);
    if (s->dir_fd >= 0) close(s->dir_fd);
    free(s);
}
