/* Predicted wall time of a whole image set on each backend, from the probe's
 * figures (design.md, "Backend choice"; the method of ../shared/design.md
 * "Performance method": fixed costs + per-image costs, measured). */
#ifndef PSFSIM_COST_MODEL_H
#define PSFSIM_COST_MODEL_H

#include "probe.h"

typedef struct {
    double cpu_us;     /* CPU: plan + images x per-image time */
    double gpu_us;     /* GPU: start (unless started) + plan + batches; INFINITY without a GPU */
    double gpu_start_us; /* the start cost included in gpu_us (0 when started) */
    int use_gpu;       /* gpu_us < cpu_us */
} cost_prediction;

/* Per-image CPU time at grid npix: log-log interpolation between the probed
 * sizes, and N^2 log N scaling (the FFT's cost, Cooley & Tukey 1965) beyond
 * them. */
double cost_cpu_image_us(const probe_figures *f, int npix);

/* GPU batch model T(b) = a + b c at npix, from T(1) and T(big_batch):
 * a = fixed cost of one run() call (launches, syncs), c = per image. */
void cost_gpu_batch(const probe_figures *f, int npix, double *a_us, double *c_us);

/* Predict a set of nimages images of npix x npix, each the sum of ncomp
 * monochromatic fields, run in batches of at most batch images on the GPU.
 * gpu_started: the process already has a CUDA context (no start cost). */
void cost_predict(const probe_figures *f, int npix, long long nimages, int ncomp, int batch,
                  int gpu_started, cost_prediction *p);

#endif
