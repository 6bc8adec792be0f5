/* SPDX-License-Identifier: BSD-3-Clause */
/* cpu_pupil_field (cpu/pupil.h): the pupil's phasors, once per image and
 * component. Its sinf and cosf were half of a 256^2 image's time on one
 * thread (12.9k open samples, ~8 ns each); here they are glibc's vector
 * versions (libmvec, at most 4 ulp: glibc manual, "Known Maximum Errors in
 * Math Functions"), 7x faster, in chunks: the phase (in double, reduced to
 * one wave), then the cosines, the sines (two loops: in one GCC would fuse
 * them into a sincosf with no vector version) and the scatter into the FFT
 * input. GCC 12+ on x86-64 with libmvec found (PSFSIM_MVEC): kernels for
 * AVX-512, AVX2 and the baseline, picked at load time as in cpu/mft.c;
 * elsewhere the same loops with the scalar functions. */
#include <math.h>
#include <stddef.h>

#include "cpu/pupil.h"

#if defined(PSFSIM_MVEC) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 &&          \
    defined(__x86_64__)
/* What <math.h> declares under -ffast-math (bits/math-vector.h): the
 * vector variants exist, so loops calling these may use them. */
__attribute__((simd("notinbranch"))) extern float sinf(float);
__attribute__((simd("notinbranch"))) extern float cosf(float);
#define FIELD_CLONES                                                                               \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"),                   \
                   optimize("no-math-errno", "no-trapping-math")))
#else
#define FIELD_CLONES
#endif

#define FIELD_CHUNK 256 /* samples per pass: the scratch stays in L1 */

/* Samples k0 .. k0 + m - 1 (m <= FIELD_CHUNK) of the aberrated field. */
FIELD_CLONES static void field_chunk(const cpu_pupil *pp, size_t k0, size_t m, int nterms,
                                     const double *coeff_waves, double opd_to_waves, int has_opd,
                                     fftwf_complex *in)
{
    double w[FIELD_CHUNK];
    float ph[FIELD_CHUNK], re[FIELD_CHUNK], im[FIELD_CHUNK];
    const size_t nopen = pp->nopen;
    const float *amp = pp->amp + k0;
    for (size_t k = 0; k < m; ++k)
        w[k] = has_opd ? pp->opd[k0 + k] * opd_to_waves : 0.0;
    for (int t = 0; t < nterms; ++t) {
        const float *b = pp->basis + (size_t)t * nopen + k0;
        const double c = coeff_waves[t];
        for (size_t k = 0; k < m; ++k)
            w[k] += c * b[k];
    }
    for (size_t k = 0; pp->seg_nterms > 0 && k < m;
         ++k) { /* segment terms, after the global ones */
        if (pp->seg[k0 + k] < 0) continue;
        const double *c = coeff_waves + nterms + (size_t)pp->seg[k0 + k] * pp->seg_nterms;
        for (int t = 0; t < pp->seg_nterms; ++t)
            w[k] += c[t] * pp->seg_basis[(size_t)t * nopen + k0 + k];
    }
    /* Reduce to one wave in double, so float trigonometry stays exact. */
    const double two_pi = 2.0 * M_PI;
    for (size_t k = 0; k < m; ++k)
        ph[k] = (float)(two_pi * (w[k] - floor(w[k])));
    for (size_t k = 0; k < m; ++k)
        re[k] = amp[k] * cosf(ph[k]);
    for (size_t k = 0; k < m; ++k)
        im[k] = amp[k] * sinf(ph[k]);
    const unsigned *dest = pp->dest + k0;
    for (size_t k = 0; k < m; ++k) {
        in[dest[k]][0] = re[k];
        in[dest[k]][1] = im[k];
    }
}

void cpu_pupil_field(const cpu_pupil *pp, int nterms, const double *coeff_waves,
                     double opd_to_waves, fftwf_complex *in)
{
    size_t nopen = pp->nopen;
    int has_opd = pp->opd && opd_to_waves != 0.0;
    int flat = !has_opd;
    size_t ncoeff = (size_t)nterms + (size_t)pp->seg_count * pp->seg_nterms;
    for (size_t t = 0; t < ncoeff && flat; ++t)
        flat = coeff_waves[t] == 0.0;
    if (flat) { /* no aberration: a real field, no trigonometry */
        for (size_t k = 0; k < nopen; ++k) {
            in[pp->dest[k]][0] = pp->amp[k];
            in[pp->dest[k]][1] = 0.0f;
        }
        return;
    }
    for (size_t k0 = 0; k0 < nopen; k0 += FIELD_CHUNK) {
        size_t m = nopen - k0 < FIELD_CHUNK ? nopen - k0 : FIELD_CHUNK;
        field_chunk(pp, k0, m, nterms, coeff_waves, opd_to_waves, has_opd, in);
    }
}
