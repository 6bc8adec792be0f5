/* SPDX-License-Identifier: BSD-3-Clause */
/* The names of an image set's files, and which files in an output
 * directory are the set's (docs/config.md, "Files written to output.dir"),
 * so that the existence check, --force's
 * clean-up, its disk-space credit and the removal of leftover temp files
 * touch nothing else: another set's NAME_wide_0.png, the user's
 * NAME_notes.png or NAME_calibration.fits stay what they are.
 *
 * A set's files are NAME_manifest.csv, NAME_timing.csv, NAME_cube.fits,
 * NAME.h5 with its temp file .NAME.h5.part and its sidecar NAME.json
 * (output.hdf5), and its image files: when the directory holds the set's manifest, exactly
 * those its rows name (a png or fits cell that is NAME_<k>.png or
 * NAME_<k>.fits for the row's own index k, k in decimal, zero-padded to any
 * width; anything else a row holds, "../x" say, names nothing); without a
 * manifest, NAME_<k>.png and NAME_<k>.fits with k < K, the set's image
 * count, written in this set's digit count (outputs_image_name): a user's
 * NAME_<k>.png beyond the set is not the set's (--force leaves it). The names' functions keep their
 * outputs_ prefix: they are the outputs' names (app/output/outputs.h includes
 * this header); they are here so that this file needs nothing above it. */
#ifndef PSFSIM_SET_MEMBERS_H
#define PSFSIM_SET_MEMBERS_H

#include <stddef.h>

#include "app/config/config.h"

/* File name (no directory) of image k of nimages: NAME_k.EXT with k
 * zero-padded to the number of digits of nimages - 1. */
void outputs_image_name(const psf_config *cfg, long long k, long long nimages, const char *ext,
                        char *out, size_t outlen);

/* The set's own files (README, "Outputs"): the manifest, the timing log,
 * the cube (output.fits.cube), the HDF5 file NAME.h5 (output.hdf5) and its
 * sidecar NAME.json. */
typedef enum { SET_MANIFEST, SET_TIMING, SET_CUBE, SET_HDF5, SET_SIDECAR } set_file;

/* Room for dir/NAME_manifest.csv and the others (a dir of up to
 * CFG_PATH_MAX, the name and the suffix). */
#define SET_PATH_MAX (CFG_PATH_MAX + 300)

/* dir/NAME_manifest.csv, dir/NAME_timing.csv, dir/NAME_cube.fits,
 * dir/NAME.h5 or dir/NAME.json (name: the config's set name) into out, cut to outlen; dir NULL: the
 * file name alone. The one place that names them. Returns out. */
const char *outputs_set_file(const char *dir, const char *name, set_file f, char *out,
                             size_t outlen);

typedef struct {
    char name[256];      /* the set's name */
    int width;           /* this set's digit count: of its nimages - 1 */
    long long nimages;   /* K: without a manifest, NAME_<k> for k < K only */
    int manifest;        /* the directory holds NAME_manifest.csv */
    long long nrows;     /* rows[k] for k < nrows */
    unsigned char *rows; /* per index k the manifest names: bit 0 its PNG, bit 1 its FITS;
                            bits 2-6 the width k is written in (1..19) */
} set_members;

/* The members of set cfg (of nimages images: its digit count) in the
 * directory dirfd: reads NAME_manifest.csv there when it is (O_NOFOLLOW).
 * Returns 0, or -1 when out of memory (m then names no image file). */
int set_members_load(set_members *m, int dirfd, const psf_config *cfg, long long nimages);

/* 1 when file (a name in the directory) is one of m's set files. */
int set_members_has(const set_members *m, const char *file);

void set_members_free(set_members *m);

/* 1 when file is a temp file that a writer of set cfg (nimages images)
 * made for one of its own files: ".F.tmp.XXXXXX" (atomic_file.h) for F the
 * manifest, the timing log, the cube, NAME.h5, NAME.json or NAME_<k>.png / .fits with k
 * (< nimages) in this set's digit count. */
int set_members_own_temp(const psf_config *cfg, long long nimages, const char *file);

#endif
