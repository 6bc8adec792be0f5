/* SPDX-License-Identifier: BSD-3-Clause */
/* The levels path (psf_backend_ops.run_levels, issue 17) against the float
 * path, for one backend: shared by tests/cpu/test_cpu_levels.c and
 * tests/gpu/test_gpu_levels.c. */
#ifndef PSFSIM_LEVELS_HARNESS_H
#define PSFSIM_LEVELS_HARNESS_H

#include <stddef.h>

#include "backend/backend.h"

/* What levels_harness_compare found. */
typedef struct {
    long long nimages;
    int npix;
    size_t levels;       /* levels compared */
    size_t levels_wrong; /* run_levels' level != psf_png_stretch_levels of run's floats */
    int measures_wrong;  /* images whose Strehl ratio or axis value differ from
                            image_set_measure's by a bit, or bad-pixel counts not 0 */
    double total_rel;    /* largest |captured fraction - image_set_measure's| / it
                            (normalization "pupil"; 0 otherwise) */
} levels_diff;

/* Compute every image of the config text (its set must be one
 * image_set_levels_out accepts) with ops, in batches of batch images,
 * twice: run (floats, then image_set_measure: the float path) and
 * run_levels (with problem.levels from image_set_levels_out); compare.
 * Returns 0, or -1 after printing the error (a load or backend failure,
 * or a set not on the levels path). */
int levels_harness_compare(const char *cfg_text, const psf_backend_ops *ops, int batch,
                           levels_diff *out);

/* The cases both backends' tests run: LEVELS_CASES pairs of a top-level
 * text (normalization) and an output group: linear, log and sqrt at 8 and
 * 16 bits as PNG, then the same as output.hdf5 uint16 alone, then "poppy"
 * and "pupil" ones. levels_case(i) writes case i into top and out. */
#define LEVELS_CASES 15
void levels_case(int i, char *top, size_t toplen, char *out, size_t outlen);

#endif
