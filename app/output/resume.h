/* SPDX-License-Identifier: BSD-3-Clause */
/* --resume: which images of a set an earlier, interrupted run finished.
 * An image counts as done when the earlier manifest lists it with every
 * file the config asks for, each present and non-empty (files are renamed
 * into place whole, so present means complete; a symbolic link is not a
 * file of the set), under the same config fingerprint. A row is trusted
 * only when its png and fits cells are exactly the set's own names for its
 * index k (NAME_<k>.png, NAME_<k>.fits, or NAME_cube.fits): a row naming
 * anything else ("../../etc/passwd") claims nothing, its image is computed
 * again, and a warning says how many rows were so. */
#ifndef PSFSIM_RESUME_H
#define PSFSIM_RESUME_H

#include <stddef.h>

#include "app/config/config.h"
#include "app/set/image_set.h"

typedef struct {
    long long nimages;
    unsigned char *done; /* [nimages] 1 = finished earlier */
    long long ndone;
    char **manifest_rows; /* the manifest lines of the done images, verbatim */
    long long nmanifest;
    char **timing_rows; /* their timing lines */
    long long ntiming;
} resume_state;

/* Read NAME_manifest.csv and NAME_timing.csv in the output directory
 * dirfd (dir: its name for messages; dirfd -1: there is no directory yet;
 * both files may be missing: nothing done). A manifest of another config
 * (fingerprint) or not a psfsim manifest is an error (-1 with err: exit 2,
 * nothing touched). */
int resume_load(const psf_config *cfg, int dirfd, const char *dir, long long nimages,
                const char *hash, resume_state *rs, char *err, size_t errlen);

void resume_free(resume_state *rs);

/* Another file of the set holds images too (output.hdf5's NAME.h5): an
 * image stays done only when also[k] (1 = it is in that file) says so as
 * well; the others are done again, their kept manifest and timing rows
 * dropped. */
void resume_require(resume_state *rs, const unsigned char *also);

/* output.fits.cube: the cube NAME_cube.fits is written whole or not at
 * all (app/output/cube_writer.h), so its planes cannot be added to: a set done in
 * full keeps its cube as it is (the run computes and writes nothing into
 * it); a set done only in part (a manifest cut by hand, NAME.h5 lacking
 * images) is done again whole, its kept rows dropped, so that the new cube
 * has every plane. Nothing without a cube. Returns 1 when it dropped rows. */
int resume_whole_cube(resume_state *rs, const psf_config *cfg);

/* output.fits.cube, every image of set s done: keep the cube NAME_cube.fits
 * in the directory dirfd only when it is what this run would write: a
 * regular file (opened with O_NOFOLLOW: not a link), whose structure
 * (fits_scan_layout_fd) is the planes (BITPIX -32, NAXIS = 3: npix x npix x
 * the image count, CFGHASH = hash, the manifest's config_hash) then the
 * PLANES binary table (a row a plane, cube_writer_columns doubles), its
 * size exactly their headers and padded data (FITS 4.0 sec. 3). Otherwise
 * (cut short, another config's, damaged) it warns "resuming: NAME_cube.fits
 * is not kept (why); every image is computed again" and drops every done
 * image, as resume_whole_cube, so the cube is written again whole. Returns
 * 1 when it dropped them, 0 otherwise (nothing to check included). */
int resume_cube_check(resume_state *rs, const image_set *s, int dirfd, const char *hash);

/* Remove from the directory dirfd the temp files a killed run of this set
 * (cfg, nimages) left: exactly ".F.tmp.XXXXXX" for F one of its own files
 * (set_members_own_temp), regular files only. Another set's temp files and
 * anything else stay (the HDF5 temp .NAME.h5.part is resumed, not a temp
 * of this kind). Call it only while holding the set's lock
 * (app/output/set_dir.h): then no other run is writing the set. */
void resume_clean_temps(int dirfd, const psf_config *cfg, long long nimages);

#endif
