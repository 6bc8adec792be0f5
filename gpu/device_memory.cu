/* SPDX-License-Identifier: BSD-3-Clause */
/* Device memory for the library's device outputs (backend/gpu_abi.h,
 * gpu_memory_ops): pointer queries, allocations the caller owns, copies
 * and the wait on a caller's stream. Each call makes its device current
 * first (the caller's thread may have another one current), and never
 * uses the legacy default stream for its own work, so it does not wait
 * for the caller's kernels queued there (PyTorch's default stream). */
#include <stdio.h>

#include <cuda_runtime.h>

#include "gpu/cuda_check.h"
#include "gpu/device_memory.h"

static int failed(cudaError_t e, const char *what, char *err, size_t errlen)
{
    if (e == cudaSuccess) return 0;
    (void)cudaGetLastError(); /* not the next call's error */
    if (!err || !errlen) return 1;
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) {
        char why[128]; /* no driver at all reads as an old one in CUDA's words */
        gpu_no_device_reason(e, why, sizeof why);
        snprintf(err, errlen, "no CUDA device: %s (%s)", why, what);
    } else {
        snprintf(err, errlen, "gpu: %s: %s", what, cudaGetErrorString(e));
    }
    return 1;
}

static int pointer_kind(const void *p, int *kind, int *device, char *err, size_t errlen)
{
    cudaPointerAttributes a;
    *kind = 0;
    *device = -1;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e == cudaErrorInvalidValue) { /* a host pointer of an older runtime's kind */
        (void)cudaGetLastError();
        return 0;
    }
    if (failed(e, "cudaPointerGetAttributes", err, errlen)) return -1;
    if (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) {
        *kind = 1;
        *device = a.device;
    } else if (a.type == cudaMemoryTypeHost) {
        *kind = 2; /* pinned: cudaHostAlloc'd or registered */
    }
    return 0;
}

/* A non-blocking stream of the calling thread's current device, made
 * per call: cudaStreamCreate is a few microseconds against copies of
 * whole batches. */
static int stream_make(int device, cudaStream_t *s, char *err, size_t errlen)
{
    return failed(cudaSetDevice(device), "cudaSetDevice", err, errlen) ||
                   failed(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking),
                          "cudaStreamCreateWithFlags", err, errlen)
               ? -1
               : 0;
}

/* The device's default pool (cudaMallocAsync's) keeps the memory psfsim's
 * outputs free, as PyTorch's and CuPy's caching allocators keep theirs:
 * with the default release threshold (0) each free gives the pages back
 * to the driver at the next synchronisation, and the next output of the
 * same size maps them again (compute(device=) of 10,000 256^2 images, 2.6
 * GB, each call). What it keeps is at most psfsim's peak of live outputs;
 * cudaMemPoolTrimTo on the default pool gives it back. Set at each
 * allocation (a driver call of about a microsecond). */
static int keep_pool(int device, char *err, size_t errlen)
{
    cudaMemPool_t pool;
    unsigned long long keep = ~0ULL; /* cuuint64_t: the attribute is 64 bits */
    return failed(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool", err,
                  errlen) ||
           failed(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
                  "cudaMemPoolSetAttribute (release threshold)", err, errlen);
}

static void *device_alloc(int device, size_t bytes, char *err, size_t errlen)
{
    cudaStream_t s;
    if (stream_make(device, &s, err, errlen)) return NULL;
    if (keep_pool(device, err, errlen)) {
        cudaStreamDestroy(s);
        return NULL;
    }
    void *p = NULL;
    if (failed(cudaMallocAsync(&p, bytes ? bytes : 1, s), "cudaMallocAsync", err, errlen) ||
        failed(cudaStreamSynchronize(s), "cudaStreamSynchronize", err, errlen)) {
        if (p) cudaFreeAsync(p, s);
        p = NULL;
    }
    cudaStreamDestroy(s);
    return p;
}

static void device_release(int device, void *p)
{
    if (!p || cudaSetDevice(device) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    if (cudaFreeAsync(p, cudaStreamLegacy) != cudaSuccess) (void)cudaGetLastError();
}

static int device_copy(int device, void *dst, const void *src, size_t bytes, char *err,
                       size_t errlen)
{
    cudaStream_t s;
    if (stream_make(device, &s, err, errlen)) return -1;
    int rc = failed(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync", err,
                    errlen) ||
                     failed(cudaStreamSynchronize(s), "cudaStreamSynchronize", err, errlen)
                 ? -1
                 : 0;
    cudaStreamDestroy(s);
    return rc;
}

static int wait_stream(int device, void *stream, char *err, size_t errlen)
{
    return failed(cudaSetDevice(device), "cudaSetDevice", err, errlen) ||
                   failed(cudaStreamSynchronize(stream ? (cudaStream_t)stream : cudaStreamLegacy),
                          "cudaStreamSynchronize (the caller's stream)", err, errlen)
               ? -1
               : 0;
}

static void *host_alloc(size_t bytes, char *err, size_t errlen)
{
    void *p = NULL;
    if (failed(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable), "cudaHostAlloc", err,
               errlen))
        return NULL;
    return p;
}

static void host_release(void *p)
{
    if (p && cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
}

const gpu_memory_ops gpu_device_memory = {pointer_kind, device_alloc, device_release, device_copy,
                                          wait_stream,  host_alloc,   host_release};
