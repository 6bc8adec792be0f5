/* SPDX-License-Identifier: BSD-3-Clause */
/* png_stretch_fast_block (png_stretch_fast.h). A file of its own: built
 * with -fno-math-errno (CMake, with libmvec found: PSFSIM_MVEC), without
 * which GCC takes log for a call that may write errno and vectorises no
 * loop calling it; the exact loops (png_stretch.c) keep the usual flags.
 * Its kernels: AVX-512, AVX2 and the baseline, picked at load time as in
 * cpu/mft.c, with glibc's vector log (libmvec: what <math.h> declares
 * under -ffast-math, bits/math-vector.h); GCC 12+ on x86-64 only, elsewhere
 * the same loops with the scalar log. FMA may contract the products: the
 * guard covers it. */
#include "app/formats/png_stretch_fast.h"

#include <math.h>

#if defined(PSFSIM_MVEC) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 &&          \
    defined(__x86_64__)
__attribute__((simd("notinbranch"))) extern double log(double);
#define STRETCH_CLONES                                                                             \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"),                   \
                   optimize("no-math-errno", "no-trapping-math")))
#elif defined(__GNUC__) && !defined(__clang__)
#define STRETCH_CLONES __attribute__((optimize("no-trapping-math")))
#else
#define STRETCH_CLONES
#endif

STRETCH_CLONES int png_stretch_fast_block(const float *img, size_t n, int is_log,
                                          const stretch_args *a, unsigned short *out)
{
    double x[STRETCH_BLOCK];
    const double inv_peak = a->inv_peak, maxlev = a->maxlev;
    if (is_log) {
        const double v_zero = a->v_zero, inv_ln_dr = a->inv_ln_dr;
        for (size_t k = 0; k < n; ++k) { /* NaN, <= 0 and < v_zero: v_zero, so t < 0 */
            double v = (double)img[k] * inv_peak;
            x[k] = v > v_zero ? v : v_zero;
        }
        for (size_t k = 0; k < n; ++k)
            x[k] = log(x[k]);
        for (size_t k = 0; k < n; ++k) {
            double t = 1.0 + x[k] * inv_ln_dr;
            t = t < 0.0 ? 0.0 : t;
            t = t > 1.0 ? 1.0 : t;
            x[k] = t * maxlev + 0.5;
        }
    } else {
        for (size_t k = 0; k < n; ++k) {
            double v = (double)img[k] * inv_peak;
            v = v > 0.0 ? v : 0.0; /* NaN too */
            v = v > 1.0 ? 1.0 : v;
            x[k] = v * maxlev + 0.5;
        }
    }
    int near = 0;
    for (size_t k = 0; k < n; ++k) {
        int level = (int)x[k];
        double f = x[k] - (double)level;
        near |= (f < STRETCH_GUARD) | (f > 1.0 - STRETCH_GUARD);
        out[k] = (unsigned short)level;
    }
    return near;
}
