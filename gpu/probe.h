/* GPU figures for the latency probe (design.md, "Backend choice"), measured
 * by the CUDA build (gpu/probe.cu) or reported absent by the stub. A
 * plain C header: nothing outside gpu/ sees CUDA. */
#ifndef PSFSIM_GPU_PROBE_H
#define PSFSIM_GPU_PROBE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    char name[256];   /* device 0's name */
    double start_us;  /* first CUDA runtime call until a context is ready */
    double launch_us; /* empty kernel launch to stream sync, median */
    double h2d_us;    /* 4-byte pinned host-to-device copy + sync, median */
    double d2h_us;    /* 4-byte pinned device-to-host copy + sync, median */
    double d2h_gbs;   /* 64 MiB pinned device-to-host copy, GB/s (1e9 B/s) */
    int device_count; /* CUDA devices visible to the process (cudaGetDeviceCount) */
} gpu_basics;

/* Measure device 0. The first CUDA call of the process should be this one,
 * so that start_us is the real start cost. Returns 0, or -1 with err (no
 * device, no driver, CUDA error, or built without CUDA). */
int gpu_probe_basics(gpu_basics *out, char *err, size_t errlen);

/* CUDA runtime and cuFFT versions psfsim was built with (CUDART_VERSION,
 * CUFFT_VERSION), 0 without CUDA. Neither initialises CUDA. */
int gpu_runtime_version(void);
int gpu_cufft_version(void);

#ifdef __cplusplus
}
#endif

#endif
