/* SPDX-License-Identifier: BSD-3-Clause */
/* Inside the HDF5 module (app/formats/hdf5/): the set's state and the
 * file's layout (hdf5_layout.c), its chunk writer (hdf5_chunks.c). Not part
 * of psfsim proper: only the module's files (hdf5_module.c, hdf5_params.c,
 * hdf5_layout.c, hdf5_chunks.c) include it. */
#ifndef PSFSIM_HDF5_LAYOUT_H
#define PSFSIM_HDF5_LAYOUT_H

#include <hdf5.h>
#include <stddef.h>

#include "app/formats/h5set.h"

/* A chunk given in part: its images wait here until all are given. */
typedef struct {
    long long q;        /* chunk index: images q*c .. */
    long long have;     /* images given */
    unsigned char *buf; /* stage_bytes: c images of each image dataset (images
                           at 0, extra e at its off), zero beyond image K - 1 */
} h5_stage;

/* An image dataset beside images (h5set_images), with its sizes. */
typedef struct {
    char name[64];
    int npix;
    h5set_dtype dtype;
    size_t esize, image_bytes, chunk_bytes, off; /* off: its place in a stage */
    hid_t id;
} h5_extra;

struct h5set {
    /* The parameters (h5set_params), copied. */
    long long nimages; /* K */
    int npix;          /* M */
    h5set_dtype dtype;
    int gzip, chunk, threads, nzernike, ncols, nattrs; /* chunk: c */
    int *noll_j;
    h5set_column *cols;
    h5set_attr *attrs;
    char *resume_key, *zernike_units;
    char shown[512];
    size_t esize, image_bytes, chunk_bytes; /* bytes of a value, an image, a chunk */
    long long nchunks;
    /* The directory (opened once), the temp file's name and our descriptor
     * of it (flock'ed while the set is open). */
    int dir_fd, fd;
    char base[256], tmp[272];
    hid_t file, images, written, flushing, zernike;
    hid_t *col_ids;       /* ncols datasets labels/NAME */
    unsigned char *flags; /* [K] written, as in the file */
    unsigned char *given; /* [K] written or waiting in a stage */
    int nextra;
    h5_extra extra[H5SET_MAX_EXTRA];
    size_t stage_bytes; /* chunk_bytes + each extra's */
    h5_stage *stages;
    int nstages, capstages;
    int failed; /* an I/O error: only close may follow */
};

/* Check p (h5set.h's limits) and make a set of it: p copied, ids
 * invalid, descriptors -1, flags zero. NULL with err ("cannot write
 * SHOWN: ..."). (hdf5_params.c) */
h5set *h5p_new(const h5set_params *p, char *err, size_t errlen);

/* Free s and close its descriptors (not its HDF5 ids). */
void h5p_free(h5set *s);

/* The file access properties: HDF5's own file locking off (the module
 * flocks its descriptor), no sieve buffer (raw writes to the contiguous
 * label and flag datasets go to the file at once), and no metadata cache
 * evictions (metadata is written only by H5Fflush). H5I_INVALID_HID on
 * failure. */
hid_t h5l_fapl(void);

/* Lay out a new file s->file: datasets, attributes of the layout,
 * written = 0, flushing = 1 (the caller flushes, then sets it to 0); opens
 * s's dataset ids. 0, or -1 with err. */
int h5l_create(h5set *s, char *err, size_t errlen);

/* Check that s->file was made by h5l_create with s's layout and resume
 * key, and open s's dataset ids. 0, or -1 with the reason in why. */
int h5l_check(h5set *s, char *why, size_t whylen);

/* h5l_check, then that s->file is a finished set of this run's config:
 * its complete attribute 1 and its config_hash attribute the resume key
 * (NAME.h5 kept by --resume: h5set_check_complete). 0, or -1 with why. */
int h5l_check_complete(h5set *s, char *why, size_t whylen);

/* Write labels of images first .. first + count - 1 (checked). 0 or -1. */
int h5l_write_labels(h5set *s, long long first, int count, const h5set_rows *rows, char *err,
                     size_t errlen);

/* Write bytes [n] to uint8 dataset d (rank 0: n = 1) at first. 0 or -1. */
int h5l_write_u8(hid_t d, long long first, long long n, const unsigned char *bytes);

/* The flush of h5set.h: flushing = 1, H5Fflush, flushing = 0. 0 or -1. */
int h5l_flush(h5set *s);

/* Write the caller's attributes and complete = 1. 0, or -1 with err. */
int h5l_write_attrs(h5set *s, char *err, size_t errlen);

/* Close s's dataset ids (those open). */
void h5l_close_ids(h5set *s);

/* "cannot write SHOWN: WHAT (HDF5: innermost message)" into err, and
 * clears HDF5's error stack. */
void h5l_error(const h5set *s, const char *what, char *err, size_t errlen);

/* Called on entry to each function of the module's table: HDF5 prints no
 * error (errors come back in err) but keeps the message of this thread's
 * last failed call for h5l_error_text. */
void h5l_quiet(void);

/* HDF5's (innermost) message of this thread's last failed call into out
 * ("" when none), then forgotten. */
void h5l_error_text(char *out, size_t outlen);

/* Write labels and images first .. first + count - 1 of rows: the checks,
 * then as h5set_write says (hdf5_chunks.c). 0, or -1 with err (an I/O
 * error sets s->failed). */
int h5c_write_block(h5set *s, long long first, int count, const h5set_rows *rows, char *err,
                    size_t errlen);

#endif
