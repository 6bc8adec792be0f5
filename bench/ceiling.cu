/* SPDX-License-Identifier: BSD-3-Clause */
/* The device-side ceiling psfsim's GPU backend is measured against: a batched
 * cuFFT C2C transform plus one |.|^2 pass over the same batch, nothing else
 * (no pupil, no shift, no copy to the host), timed with CUDA events.
 * Prints CSV rows: ceiling,npix,images,seconds_total,us_per_psf
 * Usage: psfsim_ceiling N BATCH [N BATCH ...] */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <cufft.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CHECK_FFT(call)                                                                            \
    do {                                                                                           \
        cufftResult r_ = (call);                                                                   \
        if (r_ != CUFFT_SUCCESS) {                                                                 \
            fprintf(stderr, "%s:%d: %s: cufft error %d\n", __FILE__, __LINE__, #call, (int)r_);    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

__global__ void abs2(const cufftComplex *in, float *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        cufftComplex v = in[i];
        out[i] = v.x * v.x + v.y * v.y;
    }
}

__global__ void fill(cufftComplex *a, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        a[i] = make_cuFloatComplex((float)(i % 7) * 0.1f, 0.0f);
}

static void run(int npix, int batch)
{
    size_t n = (size_t)npix * npix * batch;
    cufftComplex *buf;
    float *out;
    CHECK(cudaMalloc(&buf, n * sizeof *buf));
    CHECK(cudaMalloc(&out, n * sizeof *out));
    cufftHandle plan;
    int dims[2] = {npix, npix};
    CHECK_FFT(cufftPlanMany(&plan, 2, dims, NULL, 1, 0, NULL, 1, 0, CUFFT_C2C, batch));
    fill<<<1024, 256>>>(buf, n);
    CHECK(cudaGetLastError());
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    enum { reps = 11 };
    float t[reps];
    for (int r = -2; r < reps; ++r) {
        CHECK(cudaEventRecord(e0));
        CHECK_FFT(cufftExecC2C(plan, buf, buf, CUFFT_FORWARD));
        abs2<<<4 * 132, 256>>>(buf, out, n);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 0) t[r] = ms;
    }
    for (int i = 1; i < reps; ++i) /* median of the repeats */
        for (int j = i; j > 0 && t[j] < t[j - 1]; --j) {
            float x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    float med = t[reps / 2];
    printf("ceiling,%d,%d,%.6f,%.3f\n", npix, batch, med * 1e-3, med * 1e3 / batch);
    fflush(stdout);
    cufftDestroy(plan);
    cudaFree(buf);
    cudaFree(out);
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc % 2 == 0) {
        fprintf(stderr, "usage: %s N BATCH [N BATCH ...]\n", argv[0]);
        return 2;
    }
    for (int i = 1; i + 1 < argc; i += 2)
        run(atoi(argv[i]), atoi(argv[i + 1]));
    return 0;
}
