/* SPDX-License-Identifier: BSD-3-Clause */
/* The output directory and the files of an image set (docs/config.md,
 * "Files written to output.dir"). */
#ifndef PSFSIM_OUTPUTS_H
#define PSFSIM_OUTPUTS_H

#include <stddef.h>

#include "app/config/config.h"
#include "app/output/image_result.h"
#include "app/set/image_set.h"
#include "app/output/set_members.h" /* the files' names: outputs_image_name, outputs_set_file */

/* Check, before anything is written, that dir can be used: it is a
 * directory or can be created (its nearest existing ancestor is a
 * directory a file can be created in, and no symbolic link to nothing
 * stands in the way), and, unless force, holds no file of an earlier set
 * of this name (app/output/set_members.h: its manifest, timing log, cube, NAME.h5
 * with its temp file, NAME.json, and the image files its manifest names
 * or, without one, NAME_<k>.png/.fits of this set's digit count; another
 * set's or the user's NAME_x.png are not). Returns 0, or -1 with a message
 * naming the path. Touches nothing: that a file can be created is probed
 * with an unnamed O_TMPFILE file (on a filesystem without them, a hidden
 * file .psfsim-probe-XXXXXX removed at once). */
int outputs_check(const psf_config *cfg, const char *dir, int force, char *err, size_t errlen);

/* After a complete --force run: remove, from the directory dirfd (dir: for
 * messages), the files of the earlier set (earlier: its members, loaded
 * before this run replaced its manifest) that this set did not write
 * (NAME_k.png/.fits of another k or digit count, a format now disabled, a
 * cube or NAME.h5 no longer asked for); nothing that is not the earlier
 * set's. Manifest and timing log were replaced. Failures are ignored (the
 * files stay). */
void outputs_remove_stale(const psf_config *cfg, int dirfd, const char *dir,
                          const set_members *earlier, long long nimages);

/* Write image k's PNG and/or FITS into the directory dirfd (dir: its
 * name for messages) as the config asks, each atomically, through that
 * descriptor (atomic_file.h). png_us/fits_us get the time each took.
 * Returns 0, or -1 with err (files not written are left out of res). */
int outputs_write_image(const image_set *s, int dirfd, const char *dir, long long k,
                        const image_info *info, const float *img, image_result *res, double *png_us,
                        double *fits_us, char *err, size_t errlen);

/* Image k's PNG, when the config asks for one, from its grey levels
 * (levels[N N], as psf_png_stretch_levels makes them, already turned for
 * output.orientation "poppy"): a set whose every file output is levels
 * (image_set_levels_out). Returns 0, or -1 with err; png_us as above. */
int outputs_write_levels(const image_set *s, int dirfd, const char *dir, long long k,
                         const unsigned short *levels, image_result *res, double *png_us, char *err,
                         size_t errlen);

/* detector.write = "both": image k's oversampled image (set_detector_split's
 * grid, then normalised, measured and turned in place by image_set_measure
 * on the oversampled view before it is written, as an "oversampled" run
 * makes it), its info (set_detector_oversampled_info, then measured) and
 * its Strehl ratio and axial intensity (the OVERSAMP HDU's STREHL, AXIALINT). */
typedef struct {
    float *img;
    const image_info *info;
    double strehl, axial_intensity;
} image_over;

/* outputs_write_image, and with over (detector.write = "both"; NULL
 * otherwise) image k's FITS file holds over, the oversampled image of
 * view (set_detector_oversampled_view: view->samp.npix square, measured),
 * as the primary HDU OVERSAMP and img, the detector image, as the
 * extension DET_SAMP. PNG and res are img's. */
int outputs_write_images(const image_set *s, const image_set *view, int dirfd, const char *dir,
                         long long k, const image_info *info, const float *img,
                         const image_over *over, image_result *res, double *png_us, double *fits_us,
                         char *err, size_t errlen);

#endif
