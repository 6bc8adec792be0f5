/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage's test cases shared by tests/cpu/test_detector_fold.c
 * and tests/gpu/test_gpu_detector_pack.c: a problem with every effect on
 * and an asymmetric IPC kernel (the fold must keep its phase), and
 * positive grid images with no symmetry. */
#ifndef PSFSIM_DETECTOR_CASES_H
#define PSFSIM_DETECTOR_CASES_H

#include <math.h>
#include <string.h>

#include "backend/backend.h"

/* An npix grid at oversample s, sampled or not: pixel response, jitter of
 * 0.15 and 0.3 grid pixels, diffusion of 0.25, an asymmetric IPC kernel. */
static inline psf_problem detector_case_problem(int npix, int s, int sample)
{
    static const double ipc[9] = {0.001, 0.02, 0.003, 0.015, 0.92, 0.017, 0.002, 0.019, 0.003};
    psf_problem p;
    memset(&p, 0, sizeof p);
    p.npix = npix;
    psf_detector *d = &p.detector;
    d->oversample = s;
    d->sample = sample;
    d->pixel_response = 1;
    d->jitter_px[0] = 0.15;
    d->jitter_px[1] = 0.3;
    d->diffusion_px = 0.25;
    d->ipc = 1;
    memcpy(d->ipc_kernel, ipc, sizeof ipc);
    return p;
}

/* Grid image g (npix^2, row-major): two off-axis Gaussian cores, a tilted
 * ridge, and a small pseudo-random floor (an LCG); each variant moves the
 * cores and reseeds the floor (the images of a packed pair, a batch). */
static inline void detector_case_grid(int npix, int variant, float *g)
{
    unsigned long long r = 12345 + 977 * (unsigned long long)variant;
    for (int i = 0; i < npix; ++i)
        for (int j = 0; j < npix; ++j) {
            double y = i - npix / 2 - 1.3 + 2.7 * variant, x = j - npix / 2 + 2.1 - 1.9 * variant;
            double v = exp(-(x * x + y * y) / 6.0) + 0.4 * exp(-((x - 7) * (x - 7) + y * y) / 2.0) +
                       0.05 * exp(-(x + 0.5 * y) * (x + 0.5 * y) / 3.0);
            r = r * 6364136223846793005ULL + 1442695040888963407ULL;
            g[(size_t)i * npix + j] = (float)(v + 1e-3 * (double)(r >> 40) / (double)(1 << 24));
        }
}

#endif
