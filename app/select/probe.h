/* SPDX-License-Identifier: BSD-3-Clause */
/* The latency probe: what each backend costs on this machine, measured
 * through the backends' own create/run (docs/design.md, "Backend choice"). The
 * figures feed the cost model (cost_model.h) and are cached per machine
 * (probe_cache.h). */
#ifndef PSFSIM_PROBE_H
#define PSFSIM_PROBE_H

#include <stddef.h>

#define PROBE_NSIZES 5     /* N = 64, 128, 256, 512, 1024 */
#define PROBE_MAX_GPUS 16  /* devices measured (GPU_LIST_MAX) */
#define PROBE_REL_NPIX 256 /* the grid at which the devices are compared */

typedef struct {
    int nsizes;
    int npix[PROBE_NSIZES];
    int big_batch[PROBE_NSIZES];        /* images in the "large batch" run at each N */
    int cpu_threads;                    /* threads the CPU backend uses (large grids) */
    double cpu_create_us[PROBE_NSIZES]; /* CPU set-up: create (FFTW plan) + the first
                                           run's one-time work (aperture, basis) */
    double cpu_us[PROBE_NSIZES];        /* CPU: one image, median */
    int have_gpu;                       /* the GPU figures below were measured */
    char gpu_name[256];
    double gpu_start_us;                  /* first CUDA call to context ready */
    double gpu_launch_us;                 /* empty kernel round trip */
    double gpu_h2d_us, gpu_d2h_us;        /* small pinned copies */
    double gpu_d2h_gbs;                   /* pinned device-to-host bandwidth */
    double gpu_create_us[PROBE_NSIZES];   /* GPU set-up: create (plans, buffers) + the
                                             first run's one-time work */
    double gpu_b1_us[PROBE_NSIZES];       /* GPU: one image to host memory, median */
    double gpu_bb_us[PROBE_NSIZES];       /* GPU: big_batch images to host memory, median */
    int gpu_count;                        /* CUDA devices visible (the figures above: device 0) */
    double gpu_rel_speed[PROBE_MAX_GPUS]; /* device d's large-batch throughput at
                                             PROBE_REL_NPIX over device 0's (1 for
                                             device 0; 0 beyond gpu_count) */
    double png_us_per_mpix;               /* 16-bit log PNG encode + write, one thread */
    double fits_us_per_mpix;              /* FITS float32 write, one thread */
    double probe_us;                      /* how long the probe took */
} probe_figures;

/* Measure the CPU backend (with the cache directory psfsim runs give it,
 * psf_backend_options.cache_dir, or NULL; its plans are estimated, as in
 * every run: cpu/plan_cache.h) and, when with_gpu, the GPU. A GPU that fails is
 * recorded as absent (have_gpu = 0, reason in gpu_note), not an error.
 * Returns 0, or -1 with err when even the CPU cannot be measured. */
int probe_measure(probe_figures *f, int with_gpu, const char *cache_dir, char *gpu_note,
                  size_t notelen, char *err, size_t errlen);

#endif
