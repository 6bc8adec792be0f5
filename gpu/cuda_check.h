/* SPDX-License-Identifier: BSD-3-Clause */
/* Checked CUDA, cuFFT and cuBLAS calls with fault injection. Every CUDA
 * runtime, cuFFT and cuBLAS call of the GPU backend whose failure matters
 * goes through GPU_CUDA, GPU_CUFFT, GPU_CUBLAS or GPU_LAUNCH, so that
 *  - a failure writes one message naming the call, where it is, and the
 *    error (cudaGetErrorString / gpu_cufft_error_name /
 *    gpu_cublas_error_name) into the checker's err buffer, and the caller
 *    can release what it holds and return -1;
 *  - PSFSIM_GPU_FAIL_AT=n (read once per backend, in create) makes the n-th
 *    checked call of that backend instance fail with "injected fault at CUDA
 *    call n" instead of being made, so every failure path can be tested
 *    without a broken GPU. The call is skipped rather than made and then
 *    reported failed, so an injected allocation never leaks.
 * Release calls (cudaFree, cufftDestroy, cublasDestroy, ...) on cleanup paths are not
 * checked: there is nothing left to do when they fail.
 *
 * Usage: if (GPU_CUDA(&b->chk, cudaMalloc(&p, bytes))) goto fail; */
#ifndef PSFSIM_GPU_CUDA_CHECK_H
#define PSFSIM_GPU_CUDA_CHECK_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

typedef struct {
    long long calls;   /* checked calls made so far by this backend instance */
    long long fail_at; /* the call to fail (PSFSIM_GPU_FAIL_AT), 0 = none */
    char *err;         /* where messages go: the err of the create/run in progress */
    size_t errlen;
} gpu_check;

/* Read PSFSIM_GPU_FAIL_AT (a positive integer; anything else = no fault)
 * and point messages at err. With PSFSIM_GPU_FAIL_DEVICE=d the fault is
 * injected only into backends of CUDA device d (one GPU of several failing,
 * tests/e2e/e2e_gpu_multi.sh). */
static inline void gpu_check_init(gpu_check *c, int device, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    const char *s = getenv("PSFSIM_GPU_FAIL_AT"), *d = getenv("PSFSIM_GPU_FAIL_DEVICE");
    if (s && *s && !(d && *d && atoi(d) != device)) {
        char *end;
        long long n = strtoll(s, &end, 10);
        if (*end == '\0' && n > 0) c->fail_at = n;
    }
    c->err = err;
    c->errlen = errlen;
}

/* Name of a cuFFT status code (cufft.h has no such function). Numeric cases,
 * so the names of codes that some toolkit versions lack still compile. */
static inline const char *gpu_cufft_error_name(cufftResult r)
{
    switch ((int)r) {
    case 0x0:
        return "CUFFT_SUCCESS";
    case 0x1:
        return "CUFFT_INVALID_PLAN";
    case 0x2:
        return "CUFFT_ALLOC_FAILED";
    case 0x3:
        return "CUFFT_INVALID_TYPE";
    case 0x4:
        return "CUFFT_INVALID_VALUE";
    case 0x5:
        return "CUFFT_INTERNAL_ERROR";
    case 0x6:
        return "CUFFT_EXEC_FAILED";
    case 0x7:
        return "CUFFT_SETUP_FAILED";
    case 0x8:
        return "CUFFT_INVALID_SIZE";
    case 0x9:
        return "CUFFT_UNALIGNED_DATA";
    case 0xA:
        return "CUFFT_INCOMPLETE_PARAMETER_LIST";
    case 0xB:
        return "CUFFT_INVALID_DEVICE";
    case 0xC:
        return "CUFFT_PARSE_ERROR";
    case 0xD:
        return "CUFFT_NO_WORKSPACE";
    case 0xE:
        return "CUFFT_NOT_IMPLEMENTED";
    case 0xF:
        return "CUFFT_LICENSE_ERROR";
    case 0x10:
        return "CUFFT_NOT_SUPPORTED";
    case 0x11:
        return "CUFFT_MISSING_DEPENDENCY";
    case 0x12:
        return "CUFFT_NVRTC_FAILURE";
    case 0x13:
        return "CUFFT_NVJITLINK_FAILURE";
    case 0x14:
        return "CUFFT_NVSHMEM_FAILURE";
    default:
        return "unknown cuFFT error";
    }
}

/* Why CUDA shows no device, from cudaGetDeviceCount's result e (success:
 * it counted none), into out. Without the NVIDIA kernel driver (no /proc/driver/nvidia/version)
 * the runtime says cudaErrorInsufficientDriver, "CUDA driver version is
 * insufficient for CUDA runtime version", which reads as an old driver:
 * that case, and cudaErrorNoDevice with no driver, say "no NVIDIA driver";
 * an old driver that is there keeps CUDA's own words. */
static inline void gpu_no_device_reason(cudaError_t e, char *out, size_t len)
{
    if (e == cudaSuccess) {
        snprintf(out, len, "the driver reports none");
        return;
    }
    int driver = access("/proc/driver/nvidia/version", F_OK) == 0;
    if (!driver && (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice))
        snprintf(out, len, "no NVIDIA driver (no /proc/driver/nvidia/version)");
    else
        snprintf(out, len, "%s", cudaGetErrorString(e));
}

/* Name of a cuBLAS status code: numeric cases, as for cuFFT, so that the
 * message does not depend on the toolkit having cublasGetStatusName. */
static inline const char *gpu_cublas_error_name(cublasStatus_t r)
{
    switch ((int)r) {
    case 0:
        return "CUBLAS_STATUS_SUCCESS";
    case 1:
        return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3:
        return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7:
        return "CUBLAS_STATUS_INVALID_VALUE";
    case 8:
        return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11:
        return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14:
        return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15:
        return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16:
        return "CUBLAS_STATUS_LICENSE_ERROR";
    default:
        return "unknown cuBLAS error";
    }
}

/* The function name of a call's source text: "cudaMalloc(&p, n)" -> "cudaMalloc". */
static inline void gpu_check_callname(const char *call, char *out, size_t outlen)
{
    size_t n = strcspn(call, "(");
    if (n >= outlen) n = outlen - 1;
    memcpy(out, call, n);
    out[n] = '\0';
}

static inline const char *gpu_check_basename(const char *file)
{
    const char *s = strrchr(file, '/');
    return s ? s + 1 : file;
}

/* Count one checked call. Returns 1 (with the message written) when this is
 * the call to fail, else 0 and the call is to be made. */
static inline int gpu_check_inject(gpu_check *c, const char *call, const char *file, int line)
{
    c->calls++;
    if (c->calls != c->fail_at) return 0;
    char name[64];
    gpu_check_callname(call, name, sizeof name);
    if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "gpu: injected fault at CUDA call %lld (%s, %s:%d)", c->calls,
                 name, gpu_check_basename(file), line);
    return 1;
}

static inline int gpu_check_cuda_result(gpu_check *c, cudaError_t e, const char *call,
                                        const char *file, int line)
{
    if (e == cudaSuccess) return 0;
    char name[64];
    gpu_check_callname(call, name, sizeof name);
    if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "gpu: %s failed (%s:%d): %s (%s)", name,
                 gpu_check_basename(file), line, cudaGetErrorString(e), cudaGetErrorName(e));
    return -1;
}

static inline int gpu_check_cufft_result(gpu_check *c, cufftResult r, const char *call,
                                         const char *file, int line)
{
    if (r == CUFFT_SUCCESS) return 0;
    char name[64];
    gpu_check_callname(call, name, sizeof name);
    if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "gpu: %s failed (%s:%d): %s (cuFFT status %d)", name,
                 gpu_check_basename(file), line, gpu_cufft_error_name(r), (int)r);
    return -1;
}

static inline int gpu_check_cublas_result(gpu_check *c, cublasStatus_t r, const char *call,
                                          const char *file, int line)
{
    if (r == CUBLAS_STATUS_SUCCESS) return 0;
    char name[64];
    gpu_check_callname(call, name, sizeof name);
    if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "gpu: %s failed (%s:%d): %s (cuBLAS status %d)", name,
                 gpu_check_basename(file), line, gpu_cublas_error_name(r), (int)r);
    return -1;
}

/* Each evaluates to 0 on success, -1 (message written) on failure. The call
 * is made only when the injector lets it. */
#define GPU_CUDA(chk, call)                                                                        \
    (-(gpu_check_inject((chk), #call, __FILE__, __LINE__) ||                                       \
       gpu_check_cuda_result((chk), (call), #call, __FILE__, __LINE__) != 0))
#define GPU_CUFFT(chk, call)                                                                       \
    (-(gpu_check_inject((chk), #call, __FILE__, __LINE__) ||                                       \
       gpu_check_cufft_result((chk), (call), #call, __FILE__, __LINE__) != 0))
#define GPU_CUBLAS(chk, call)                                                                      \
    (-(gpu_check_inject((chk), #call, __FILE__, __LINE__) ||                                       \
       gpu_check_cublas_result((chk), (call), #call, __FILE__, __LINE__) != 0))
/* After a kernel launch: the launch's own error (bad configuration, no
 * kernel image for this GPU). Errors while the kernel runs surface at the
 * next synchronising call, which is checked too. */
#define GPU_LAUNCH(chk, kernel_name)                                                               \
    (-(gpu_check_inject((chk), kernel_name, __FILE__, __LINE__) ||                                 \
       gpu_check_cuda_result((chk), cudaGetLastError(), kernel_name, __FILE__, __LINE__) != 0))

#endif
