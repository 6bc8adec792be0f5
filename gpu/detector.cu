/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage on the GPU (gpu/detector.h). */
#include "gpu/detector.h"

#include <stdlib.h>
#include <string.h>

extern "C" {
#include "backend/detector.h"
}

/* Spectrum element i of image blockIdx.y times the table's element i: the
 * complex product in float, as the CPU's (cpu/detector.c). */
__global__ static void otf_multiply_kernel(cufftComplex *__restrict__ spec,
                                           const cufftComplex *__restrict__ otf, size_t nspec)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nspec) return;
    cufftComplex *s = spec + (size_t)blockIdx.y * nspec + i;
    cufftComplex a = *s, t = otf[i];
    *s = make_cuFloatComplex(a.x * t.x - a.y * t.y, a.x * t.y + a.y * t.x);
}

/* out[k][i][j] = s^2 grid[k][(i s + o) N + j s + o] (psf_detector_sample). */
__global__ static void sample_kernel(const float *__restrict__ grid, int npix, int s, int off,
                                     int m, float *__restrict__ out)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= m) return;
    size_t k = blockIdx.z;
    float s2 = (float)s * (float)s;
    out[k * m * m + (size_t)i * m + j] =
        s2 * grid[k * npix * npix + (size_t)(i * s + off) * npix + (size_t)(j * s + off)];
}

size_t gpu_detector_bytes(const psf_problem *problem, long long capacity)
{
    const psf_detector *det = &problem->detector;
    if (!psf_detector_active(det)) return 0;
    size_t n = (size_t)problem->npix, m = (size_t)psf_detector_out_npix(problem);
    size_t c = (size_t)capacity;
    size_t bytes = det->sample ? 2 * c * m * m * sizeof(float) : 0;
    if (psf_detector_convolves(det)) bytes += psf_detector_otf_bytes((int)n) + 8 * n * n * c;
    return bytes;
}

int gpu_detector_create(gpu_detector *d, const psf_problem *problem, int capacity,
                        cudaStream_t stream, gpu_check *chk)
{
    memset(d, 0, sizeof *d);
    const psf_detector *det = &problem->detector;
    if (!psf_detector_active(det)) return 0;
    if (psf_detector_check(det, problem->npix, chk->err, chk->errlen) != 0) return -1;
    d->active = 1;
    d->convolve = psf_detector_convolves(det);
    d->sample = det->sample;
    d->npix = problem->npix;
    d->s = det->oversample > 1 ? det->oversample : 1;
    d->out_npix = psf_detector_out_npix(problem);
    d->stream = stream;
    cudaFuncAttributes a; /* load the kernels now, not on the first run */
    if (GPU_CUDA(chk, cudaFuncGetAttributes(&a, otf_multiply_kernel)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, sample_kernel)))
        return -1;
    size_t m2 = (size_t)d->out_npix * d->out_npix;
    for (int q = 0; q < 2 && d->sample; ++q)
        if (GPU_CUDA(chk, cudaMalloc(&d->out[q], (size_t)capacity * m2 * sizeof(float)))) {
            d->out[q] = NULL;
            return -1;
        }
    if (!d->convolve) return 0;
    size_t bytes = psf_detector_otf_bytes(d->npix);
    float *host = (float *)malloc(bytes);
    if (!host) {
        snprintf(chk->err, chk->errlen, "gpu: out of host memory");
        return -1;
    }
    psf_detector_otf(det, d->npix, host);
    int rc = GPU_CUDA(chk, cudaMalloc(&d->otf, bytes));
    if (rc) d->otf = NULL;
    if (rc == 0) rc = GPU_CUDA(chk, cudaMemcpy(d->otf, host, bytes, cudaMemcpyHostToDevice));
    free(host);
    return rc;
}

static void plan_free(gpu_detector_plan *p)
{
    if (!p->batch) return;
    cufftDestroy(p->r2c);
    cufftDestroy(p->c2r);
    memset(p, 0, sizeof *p);
}

void gpu_detector_destroy(gpu_detector *d)
{
    for (int i = 0; i < GPU_DETECTOR_PLANS; ++i)
        plan_free(&d->plans[i]);
    cudaFree(d->otf);
    cudaFree(d->out[0]);
    cudaFree(d->out[1]);
    memset(d, 0, sizeof *d);
}

/* The R2C/C2R pair for n images: kept, or made (replacing the least recently used). */
static gpu_detector_plan *plan_for(gpu_detector *d, int n, gpu_check *chk)
{
    gpu_detector_plan *victim = &d->plans[0];
    for (int i = 0; i < GPU_DETECTOR_PLANS; ++i) {
        gpu_detector_plan *p = &d->plans[i];
        if (p->batch == n) {
            p->used = ++d->tick;
            return p;
        }
        if (!p->batch || (victim->batch && p->used < victim->used)) victim = p;
    }
    if (victim->batch && GPU_CUDA(chk, cudaStreamSynchronize(d->stream))) return NULL;
    plan_free(victim);
    int dims[2] = {d->npix, d->npix};
    gpu_detector_plan p;
    memset(&p, 0, sizeof p);
    if (GPU_CUFFT(chk, cufftPlanMany(&p.r2c, 2, dims, NULL, 1, 0, NULL, 1, 0, CUFFT_R2C, n)))
        return NULL;
    if (GPU_CUFFT(chk, cufftPlanMany(&p.c2r, 2, dims, NULL, 1, 0, NULL, 1, 0, CUFFT_C2R, n))) {
        cufftDestroy(p.r2c);
        return NULL;
    }
    if (GPU_CUFFT(chk, cufftSetStream(p.r2c, d->stream)) ||
        GPU_CUFFT(chk, cufftSetStream(p.c2r, d->stream))) {
        cufftDestroy(p.r2c);
        cufftDestroy(p.c2r);
        return NULL;
    }
    p.batch = n;
    p.used = ++d->tick;
    *victim = p;
    return victim;
}

int gpu_detector_apply(gpu_detector *d, float *grid, int n, cufftComplex *spec, int q,
                       float **result, gpu_check *chk)
{
    *result = grid;
    if (!d->active || n < 1) return 0;
    if (d->convolve) {
        gpu_detector_plan *p = plan_for(d, n, chk);
        if (!p) return -1;
        size_t nspec = (size_t)d->npix * (size_t)(d->npix / 2 + 1);
        dim3 blocks((unsigned)((nspec + 255) / 256), (unsigned)n); /* n <= 65535: the capacity */
        if (GPU_CUFFT(chk, cufftExecR2C(p->r2c, grid, spec))) return -1;
        otf_multiply_kernel<<<blocks, 256, 0, d->stream>>>(spec, d->otf, nspec);
        if (GPU_LAUNCH(chk, "otf_multiply_kernel") ||
            GPU_CUFFT(chk, cufftExecC2R(p->c2r, spec, grid)))
            return -1;
    }
    if (!d->sample) return 0;
    int m = d->out_npix, off = psf_detector_sample_offset(d->npix, d->s);
    dim3 block(32, 8), g((unsigned)((m + 31) / 32), (unsigned)((m + 7) / 8), (unsigned)n);
    sample_kernel<<<g, block, 0, d->stream>>>(grid, d->npix, d->s, off, m, d->out[q]);
    if (GPU_LAUNCH(chk, "sample_kernel")) return -1;
    *result = d->out[q];
    return 0;
}
