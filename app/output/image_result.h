/* SPDX-License-Identifier: BSD-3-Clause */
/* What became of one image: the files written and its metrics, which the
 * writers fill and the manifest, FITS header, cube and timing log read. */
#ifndef PSFSIM_IMAGE_RESULT_H
#define PSFSIM_IMAGE_RESULT_H

typedef struct {
    char png[512], fits[512]; /* file names written ("" = not written) */
    double strehl, axial_intensity;
    const char *backend;
} image_result;

#endif
