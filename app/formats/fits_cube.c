/* SPDX-License-Identifier: BSD-3-Clause */
/* The FITS cube (fits.h), written by psfsim through its own descriptor
 * of the temp file (atomic_open_at: nothing is created by name, no link is
 * followed): the primary header as cfitsio encodes it in memory, then the
 * planes, each converted to big-endian float32 and written at its place
 * (pwrite: planes may come in any order), zero fill to a whole 2880-byte
 * block (FITS standard 4.0, 3.3.2), and the PLANES table extension as
 * cfitsio encodes it. The bytes are those cfitsio writes to a file of its
 * own (the same calls; tests/app/output/test_fits_cube.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/formats/atomic_file.h"
#include "app/formats/fits.h"
#include "app/formats/fits_loader.h"

#define FITS_BLOCK 2880

struct psf_fits_cube {
    atomic_file af;
    int npix;
    long long nplanes;
    off_t data_start; /* the primary header's length */
    uint32_t *be;     /* one plane, big-endian (npix * npix) */
};

/* n bytes at p to fd at offset off, all of them: 0 or errno. */
static int write_at(int fd, const void *p, size_t n, off_t off)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = pwrite(fd, c, n, off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : EIO;
        c += w;
        n -= (size_t)w;
        off += w;
    }
    return 0;
}

static int fd_of(const psf_fits_cube *c)
{
    return fileno(c->af.fp);
}

/* "cannot write PATH: strerror(e)" or "...: why". */
static void cube_error(const psf_fits_cube *c, int e, const char *why, char *err, size_t errlen)
{
    snprintf(err, errlen, "cannot write %s: %s", c->af.final_path, why ? why : strerror(e));
}

void psf_fits_cube_abort(psf_fits_cube *c)
{
    if (!c) return;
    atomic_abort(&c->af);
    free(c->be);
    free(c);
}

psf_fits_cube *psf_fits_cube_open_at(int dirfd, const char *dir, const char *name, int npix,
                                     long long nplanes, const fits_kv *kvs, int nkv, char *err,
                                     size_t errlen)
{
    char shown[4200];
    snprintf(shown, sizeof shown, "%s/%s", dir, name);
    const fits_module_ops *m = fits_module_for("cannot write", shown, err, errlen);
    if (!m) return NULL;
    psf_fits_cube *c = calloc(1, sizeof *c);
    if (c) c->be = malloc((size_t)npix * (size_t)npix * sizeof *c->be);
    if (!c || !c->be) {
        snprintf(err, errlen, "cannot write %s: out of memory", shown);
        if (c) free(c->be);
        free(c);
        return NULL;
    }
    c->npix = npix;
    c->nplanes = nplanes;
    fits_bytes h = {0};
    char why[900];
    if (m->encode_cube_header(npix, nplanes, kvs, nkv, &h, why, sizeof why) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", shown, why);
        free(c->be);
        free(c);
        return NULL;
    }
    if (atomic_open_at(&c->af, dirfd, dir, name, err, errlen) != 0) {
        free(h.data);
        free(c->be);
        free(c);
        return NULL;
    }
    int e = write_at(fd_of(c), h.data, h.size, 0);
    c->data_start = (off_t)h.size;
    free(h.data);
    if (e) {
        cube_error(c, e, NULL, err, errlen);
        psf_fits_cube_abort(c);
        return NULL;
    }
    return c;
}

int psf_fits_cube_write_plane(psf_fits_cube *c, long long plane, const float *img, char *err,
                              size_t errlen)
{
    size_t n = (size_t)c->npix * (size_t)c->npix;
    for (size_t i = 0; i < n; ++i) {
        uint32_t u;
        memcpy(&u, &img[i], sizeof u);
        c->be[i] = htonl(u); /* FITS is big-endian */
    }
    off_t off = c->data_start + (off_t)plane * (off_t)(n * sizeof *c->be);
    int e = write_at(fd_of(c), c->be, n * sizeof *c->be, off);
    if (e) cube_error(c, e, NULL, err, errlen);
    return e ? -1 : 0;
}

int psf_fits_cube_commit(psf_fits_cube *c, int ncols, const char *const *names,
                         const char *const *units, double *const *cols, char *err, size_t errlen)
{
    const fits_module_ops *m = fits_module_for("cannot write", c->af.final_path, err, errlen);
    fits_bytes t = {0};
    char why[900];
    if (!m || m->encode_table(c->nplanes, ncols, names, units, cols, &t, why, sizeof why) != 0) {
        if (m) cube_error(c, 0, why, err, errlen);
        psf_fits_cube_abort(c);
        return -1;
    }
    /* The data's fill (zeros, up to the next 2880-byte block), then the table. */
    off_t end = c->data_start + (off_t)c->nplanes * c->npix * c->npix * 4;
    size_t fill = (size_t)((FITS_BLOCK - end % FITS_BLOCK) % FITS_BLOCK);
    static const char zeros[FITS_BLOCK];
    int e = fill ? write_at(fd_of(c), zeros, fill, end) : 0;
    if (!e) e = write_at(fd_of(c), t.data, t.size, end + (off_t)fill);
    free(t.data);
    if (e) {
        cube_error(c, e, NULL, err, errlen);
        psf_fits_cube_abort(c);
        return -1;
    }
    int rc = atomic_commit(&c->af, err, errlen);
    free(c->be);
    free(c);
    return rc;
}
