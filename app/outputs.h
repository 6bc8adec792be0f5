/* The output directory and the files of an image set (config-schema.md,
 * "Files written to output.dir"). */
#ifndef PSFSIM_OUTPUTS_H
#define PSFSIM_OUTPUTS_H

#include <stddef.h>

#include "app/config/config.h"
#include "app/image_result.h"
#include "app/set/image_set.h"

/* Check, before anything is written, that dir can be used: it is a
 * directory or can be created (its nearest existing ancestor is a
 * directory a file can be created in, and no symbolic link to nothing
 * stands in the way), and, unless force, holds no file of an earlier set
 * of this name (NAME_*.png, NAME_*.fits, NAME_manifest.csv,
 * NAME_timing.csv, NAME.h5, NAME.json). Returns 0, or -1 with a message naming the path.
 * Touches nothing: that a file can be created is probed with an unnamed
 * O_TMPFILE file (on a filesystem without them, a hidden file
 * .psfsim-probe-XXXXXX removed at once). */
int outputs_check(const psf_config *cfg, const char *dir, int force, char *err, size_t errlen);

/* After a complete --force run: remove the files of an earlier set of this
 * name that this set did not write (NAME_k.png/.fits of another k or digit
 * count, a format now disabled, a cube or NAME.h5 no longer asked for). Manifest and
 * timing log were replaced. Failures are ignored (the files stay). */
void outputs_remove_stale(const psf_config *cfg, const char *dir, long long nimages);

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
 * dir/NAME.h5 or dir/NAME.json (name:
 * the config's set name) into out, cut to outlen; dir NULL: the file name
 * alone. The one place that names them. Returns out. */
const char *outputs_set_file(const char *dir, const char *name, set_file f, char *out,
                             size_t outlen);

/* Write image k's PNG and/or FITS into dir as the config asks, each
 * atomically. png_us/fits_us get the time each took. Returns 0, or -1 with
 * err (files not written are left out of res). */
int outputs_write_image(const image_set *s, const char *dir, long long k, const image_info *info,
                        const float *img, image_result *res, double *png_us, double *fits_us,
                        char *err, size_t errlen);

#endif
