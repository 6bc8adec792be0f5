/* SPDX-License-Identifier: BSD-3-Clause */
/* What NAME.h5 (output.hdf5) holds, from the image set: the label terms,
 * the label columns, the attributes (pixel scales, units, conventions,
 * provenance), as the h5set_params of app/formats/h5set.h; and the
 * conventions, which the sidecar NAME.json states too (app/dataset/sidecar.h). */
#ifndef PSFSIM_HDF5_LABELS_H
#define PSFSIM_HDF5_LABELS_H

#include <stddef.h>

#include "app/formats/h5set.h"
#include "app/output/outputs.h"
#include "app/set/image_set.h"

/* The label columns labels/NAME, one value per image, in this order. */
enum {
    HDF5_COL_INDEX,        /* int64: k, the manifest's index */
    HDF5_COL_WAVELENGTH,   /* the manifest's wavelength_nm */
    HDF5_COL_DEFOCUS,      /* swept value, NaN when not swept (the manifest's empty cell) */
    HDF5_COL_FOCUS_SHIFT,  /* swept value, NaN when not swept */
    HDF5_COL_PIXEL_LD,     /* pixel_scale_lambda_d */
    HDF5_COL_PIXEL_ARCSEC, /* pixel_scale_arcsec */
    HDF5_COL_PIXEL_UM,     /* pixel_scale_um, NaN without optics.f_number */
    HDF5_COL_STREHL,       /* strehl */
    HDF5_COL_AXIAL,        /* axial_intensity */
    HDF5_COL_BACKEND,      /* string, HDF5_BACKEND_WIDTH bytes: "cpu" or "gpu" */
    HDF5_NCOLS
};
#define HDF5_NDOUBLES (HDF5_COL_BACKEND - HDF5_COL_WAVELENGTH) /* the float64 columns */
#define HDF5_BACKEND_WIDTH 8
#define HDF5_MAX_ATTRS 96

/* Where the run stands, for the provenance attributes. */
typedef struct {
    const char *config_hash; /* the manifest's config_hash (the resume key) */
    const char *backend;     /* the backend decision, "backend cpu: requested" */
    int gpu;                 /* 1: the run computes on the GPU (CUDA versions are named) */
} hdf5_provenance;

/* The versions and the date a set's files record. */
typedef struct {
    char psfsim[32]; /* PSFSIM_VERSION */
    char fftw[96];   /* fftwf_version, "fftw-3.3.10-sse2-avx" */
    char hdf5[32];   /* the HDF5 module's libhdf5, "" when it cannot be loaded */
    char cuda[32];   /* the CUDA toolkit (runtime and cuFFT ship with it), "" without GPU */
    char date[32];   /* the set's date, ISO 8601 UTC: "2025-01-31T12:00:00Z" */
} set_versions;

/* Fill v for set s (its date: image_set's date_utc, the time it was opened
 * or SOURCE_DATE_EPOCH, as the FITS DATE keyword); gpu: the run computes on
 * the GPU. */
void hdf5_set_versions(const image_set *s, int gpu, set_versions *v);

/* Conventions every image of a set shares, as key and text. */
typedef struct {
    const char *key;
    char value[400];
} set_convention;
#define SET_CONVENTIONS 9

/* The label terms: the Zernike modes whose totals label each image
 * (labels/zernike, the sidecar's j list). term[i] (may be NULL; room for
 * s->modes.nterms) gets each one's index into s->modes. Returns J. They
 * are the set model's label terms (app/set/labels.h: the terms non-zero
 * anywhere in the set, ascending j), the manifest's z<j> columns. */
int hdf5_label_terms(const image_set *s, int *term);

/* The conventions of set s into out (SET_CONVENTIONS entries): Zernike
 * index convention, units and normalisation, the images' normalisation,
 * centring, orientation, propagation and its sign (docs/design.md,
 * "Conventions"). Returns how many. */
int hdf5_set_conventions(const image_set *s, set_convention *out);

/* NAME.h5's parameters for set s: p below, with what it points to. */
typedef struct {
    h5set_params p;
    int nterms;         /* J */
    int *term;          /* [J] index into s->modes of each label term */
    int *noll_j;        /* [J] */
    char *conv_j;       /* "4,5,6": the terms' j in aberrations.convention */
    h5set_column *cols; /* [HDF5_NCOLS + nseg + nfc]: the columns above, then the segment
                           label terms' labels/s<k>_z<j> (app/set/segterms.h), then the
                           field columns */
    int nseg;           /* segment label columns */
    int nfc;            /* field columns after them: labels/field_x_px, field_y_px (a field
                           group's or a table's positions), then field_hx, field_hy (the
                           field group's); 0, 2 or 4 */
    char (*seg_names)[24];
    h5set_images extra[H5SET_MAX_EXTRA]; /* p.extra: "oversampled", "noisy" */
    int over, noisy;                     /* their indices in extra, or -1 when not written */
    h5set_attr attrs[HDF5_MAX_ATTRS];
    char name[SET_PATH_MAX];  /* NAME.h5, in the directory p.dir_fd */
    char shown[SET_PATH_MAX]; /* dir/NAME.h5, for messages */
    char text[8192];          /* the attributes' strings */
    size_t used;
} hdf5_set_desc;

/* detector.write's value ("detector", "oversampled" or "both") for the
 * HDF5 attribute detector_write and the sidecar's detector.write. */
const char *hdf5_set_detector_write(const image_set *s);

/* Describe NAME.h5 in the directory dirfd (dir: its name for messages;
 * AT_FDCWD and "." for the current one) for set s (dtype, gzip level,
 * labels, attributes; resume_key = pv->config_hash; the image datasets
 * beside images: detector.write = "both" the oversampled images,
 * detector.noise the noisy ones, docs/config.md "NAME.h5"). 0, or -1 with err (out of memory); free
 * with hdf5_set_desc_free in both cases. */
int hdf5_set_describe(const image_set *s, int dirfd, const char *dir, const hdf5_provenance *pv,
                      hdf5_set_desc *d, char *err, size_t errlen);

void hdf5_set_desc_free(hdf5_set_desc *d);

#endif
