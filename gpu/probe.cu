/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU part of the latency probe: start cost, launch round trip, pinned
 * copy latency and bandwidth. Each figure is a median over repeats after a
 * warm-up (METHOD: medians resist the odd slow repeat). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <cufft.h>

#include "gpu/cuda_check.h"
#include "gpu/probe.h"

#define PROBE_REPS 21
#define PROBE_BW_BYTES ((size_t)64 << 20)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

__global__ void probe_empty_kernel(void) {}

/* Report a failed call; the caller releases and returns -1. */
static int failed(cudaError_t e, const char *what, char *err, size_t errlen)
{
    if (e == cudaSuccess) return 0;
    snprintf(err, errlen, "gpu probe: %s: %s", what, cudaGetErrorString(e));
    return 1;
}

static int time_launch(cudaStream_t s, double *us, char *err, size_t errlen)
{
    double t[PROBE_REPS];
    for (int i = -3; i < PROBE_REPS; ++i) {
        double t0 = now_us();
        probe_empty_kernel<<<1, 1, 0, s>>>();
        if (failed(cudaGetLastError(), "empty kernel launch", err, errlen) ||
            failed(cudaStreamSynchronize(s), "stream sync", err, errlen))
            return -1;
        if (i >= 0) t[i] = now_us() - t0;
    }
    *us = median(t, PROBE_REPS);
    return 0;
}

/* Median time of a pinned copy of bytes in direction kind, with a sync. */
static int time_copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s,
                     double *us, char *err, size_t errlen)
{
    double t[PROBE_REPS];
    int reps = bytes > 4096 ? 5 : PROBE_REPS;
    for (int i = -1; i < reps; ++i) {
        double t0 = now_us();
        if (failed(cudaMemcpyAsync(dst, src, bytes, kind, s), "pinned copy", err, errlen) ||
            failed(cudaStreamSynchronize(s), "stream sync", err, errlen))
            return -1;
        if (i >= 0) t[i] = now_us() - t0;
    }
    *us = median(t, reps);
    return 0;
}

static int measure(gpu_basics *out, void *host, void *dev, cudaStream_t s, char *err, size_t errlen)
{
    double big_us;
    if (time_launch(s, &out->launch_us, err, errlen) != 0 ||
        time_copy(dev, host, 4, cudaMemcpyHostToDevice, s, &out->h2d_us, err, errlen) != 0 ||
        time_copy(host, dev, 4, cudaMemcpyDeviceToHost, s, &out->d2h_us, err, errlen) != 0 ||
        time_copy(host, dev, PROBE_BW_BYTES, cudaMemcpyDeviceToHost, s, &big_us, err, errlen) != 0)
        return -1;
    out->d2h_gbs = PROBE_BW_BYTES / (big_us * 1e3);
    return 0;
}

extern "C" int gpu_probe_basics(gpu_basics *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    double t0 = now_us();
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count < 1) {
        char why[128];
        gpu_no_device_reason(e, why, sizeof why);
        snprintf(err, errlen, "gpu probe: no CUDA device: %s", why);
        return -1;
    }
    if (failed(cudaSetDevice(0), "cudaSetDevice", err, errlen) ||
        failed(cudaFree(0), "creating the CUDA context", err, errlen))
        return -1;
    out->start_us = now_us() - t0;
    out->device_count = count;
    cudaDeviceProp prop;
    if (failed(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties", err, errlen))
        return -1;
    snprintf(out->name, sizeof out->name, "%s", prop.name);
    void *host = NULL, *dev = NULL;
    cudaStream_t s = NULL;
    int rc = -1;
    if (!failed(cudaHostAlloc(&host, PROBE_BW_BYTES, cudaHostAllocDefault), "cudaHostAlloc", err,
                errlen) &&
        !failed(cudaMalloc(&dev, PROBE_BW_BYTES), "cudaMalloc", err, errlen) &&
        !failed(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate", err,
                errlen))
        rc = measure(out, host, dev, s, err, errlen);
    if (s) cudaStreamDestroy(s);
    cudaFree(dev);
    cudaFreeHost(host);
    return rc;
}

extern "C" void gpu_library_versions(gpu_versions *out)
{
    int v = 0;
    out->cufft = cufftGetVersion(&v) == CUFFT_SUCCESS ? v : -1;
    out->cufft_built = CUFFT_VERSION;
    out->cudart = CUDART_VERSION;
}
