/* SPDX-License-Identifier: BSD-3-Clause */
/* The PNG stretch's fast blocks (png_stretch_fast.c), for png_stretch.c. */
#ifndef PSFSIM_PNG_STRETCH_FAST_H
#define PSFSIM_PNG_STRETCH_FAST_H

#include <stddef.h>

#define STRETCH_BLOCK 256 /* pixels per fast block: its scratch stays in L1 */
/* A fast x = t * maxlev + 0.5 this near an integer may floor differently
 * from the exact one (png_stretch.c gives the bound, < 1e-8). */
#define STRETCH_GUARD 1e-6

/* What the loops need: the peak, the top level, the log's constants. */
typedef struct {
    double peak, inv_peak, maxlev; /* inv_peak = 1 / peak */
    int log_ok;                    /* dynamic_range finite and > 1 */
    double inv_ln_dr, v_zero;      /* 1 / ln dr; below v_zero = 0.5 / dr, t < 0 */
} stretch_args;

/* Levels of img[0 .. n-1] (n <= STRETCH_BLOCK) into out by the fast route:
 * v = I * inv_peak clamped to [0, 1] (NaN: 0); linear t = v, log (is_log;
 * a->log_ok) t = 1 + ln(max(v, v_zero)) * inv_ln_dr clamped to [0, 1];
 * level = floor(t * maxlev + 0.5). Returns nonzero when some x lies within
 * STRETCH_GUARD of an integer: the caller recomputes the block exactly. */
int png_stretch_fast_block(const float *img, size_t n, int is_log, const stretch_args *a,
                           unsigned short *out);

#endif
