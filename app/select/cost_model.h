/* SPDX-License-Identifier: BSD-3-Clause */
/* Predicted wall time of a whole image set on each backend, from the probe's
 * figures (docs/design.md, "Backend choice" and "Performance method": fixed
 * costs + per-image costs, measured). */
#ifndef PSFSIM_COST_MODEL_H
#define PSFSIM_COST_MODEL_H

#include "app/select/probe.h"

typedef struct {
    double cpu_us;       /* CPU: plan + images x per-image time */
    double gpu_us;       /* GPU: start (unless started) + plan + batches; INFINITY without a GPU */
    double gpu_start_us; /* the start cost included in gpu_us (0 when started) */
    int use_gpu;         /* gpu_us < cpu_us */
} cost_prediction;

/* Per-image CPU time at grid npix: log-log interpolation between the probed
 * sizes, and N^2 log N scaling (the FFT's cost, Cooley & Tukey 1965) beyond
 * them. */
double cost_cpu_image_us(const probe_figures *f, int npix);

/* GPU batch model T(b) = a + b c at npix, from T(1) and T(big_batch):
 * a = fixed cost of one run() call (launches, syncs), c = per image. */
void cost_gpu_batch(const probe_figures *f, int npix, double *a_us, double *c_us);

/* A whole job, as the cost model sees it. */
typedef struct {
    int npix;
    long long nimages;
    int ncomp;        /* fields per image (wavelengths) */
    int batch;        /* GPU images per run() call */
    int writers;      /* writer threads encoding PNG/FITS */
    double write_us;  /* encode + write of one image, one thread (cost_write_us) */
    int gpu_started;  /* the process already has a CUDA context */
    double gpu_speed; /* the GPUs sharing the set, in units of device 0's
                         throughput (probe_figures.gpu_rel_speed summed);
                         0 = one GPU */
} cost_job;

/* One image's PNG (png != 0) and FITS (fits != 0) encode + write time. */
double cost_write_us(const probe_figures *f, int npix, int png, int fits);

/* Predict the job's wall time on each backend. The writers overlap the
 * compute (app/output/writer_pool.h), so each backend takes its set-up, then the
 * compute and the writing, then the last image's write (w):
 *   CPU, N < 512: setup + (K fields t_cpu(N) + K w) / W + w
 *     (images spread over the W cores, which the writers share);
 *   CPU, N >= 512: setup + max(K fields t_cpu(N), K w / max(1, W - 1)) + w
 *     (FFTW's threads take the cores for each transform in turn);
 *   GPU: start + setup + max((nb a + K fields c) / S, K w / W) + w
 *     (S = gpu_speed: the batches spread over the GPUs, which start side
 *     by side; the writers serve all of them).
 * MFT sets use the FFT's figures at the output size: a first-order guess
 * (the GPU's MFT is 70-130x the CPU's, gpu/NOTES.md, so the choice holds). */
void cost_predict(const probe_figures *f, const cost_job *job, cost_prediction *p);

#endif
