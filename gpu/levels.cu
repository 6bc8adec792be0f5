/* SPDX-License-Identifier: BSD-3-Clause */
/* The levels kernel (gpu/levels.h). One block per image: a 256^2 image is
 * 64 K pixels, 128 per thread of 512, read twice (the measures, then the
 * levels) from L2; the copy of a sub-batch's levels to the host takes
 * several times the kernel's time, so a split of images over blocks would
 * save nothing. */
#include "gpu/levels.h"

#include <math.h>
#include <string.h>

#define LEVELS_THREADS 512

/* Measures then levels of image blockIdx.x (see gpu/levels.h). */
__global__ void __launch_bounds__(LEVELS_THREADS)
    levels_kernel(const float *img, size_t plane, size_t axis, psf_levels_map map, int rotate_180,
                  unsigned short *lev, double *meas)
{
    const float *p = img + (size_t)blockIdx.x * plane;
    float peak = -INFINITY;
    double total = 0.0;
    unsigned long long nan = 0, inf = 0, neg = 0;
    for (size_t i = threadIdx.x; i < plane; i += LEVELS_THREADS) {
        float x = p[i];
        peak = x > peak ? x : peak; /* false for NaN: skipped */
        total += x;
        nan += isnan(x) ? 1 : 0;
        inf += isinf(x) ? 1 : 0;
        neg += x < 0.0f ? 1 : 0;
    }
    __shared__ float s_peak[LEVELS_THREADS];
    __shared__ double s_total[LEVELS_THREADS];
    __shared__ unsigned long long s_count[3][LEVELS_THREADS];
    const int t = threadIdx.x;
    s_peak[t] = peak;
    s_total[t] = total;
    s_count[0][t] = nan;
    s_count[1][t] = inf;
    s_count[2][t] = neg;
    __syncthreads();
    for (int h = LEVELS_THREADS / 2; h > 0; h /= 2) {
        if (t < h) {
            s_peak[t] = s_peak[t + h] > s_peak[t] ? s_peak[t + h] : s_peak[t];
            s_total[t] += s_total[t + h];
            for (int c = 0; c < 3; ++c)
                s_count[c][t] += s_count[c][t + h];
        }
        __syncthreads();
    }
    if (t == 0) {
        double *m = meas + (size_t)blockIdx.x * PSF_MEASURES;
        m[PSF_MEASURE_PEAK] = s_peak[0];
        m[PSF_MEASURE_AXIS] = p[axis];
        m[PSF_MEASURE_TOTAL] = s_total[0];
        m[PSF_MEASURE_NAN] = (double)s_count[0][0];
        m[PSF_MEASURE_INF] = (double)s_count[1][0];
        m[PSF_MEASURE_NEG] = (double)s_count[2][0];
    }
    const double pk = s_peak[0]; /* read by all after the last barrier, written by none */
    const int blank = psf_levels_blank(pk);
    unsigned short *o = lev + (size_t)blockIdx.x * plane;
    for (size_t i = threadIdx.x; i < plane; i += LEVELS_THREADS)
        o[rotate_180 ? plane - 1 - i : i] = blank ? 0 : psf_level_of(&map, p[i], pk);
}

size_t gpu_levels_bytes(const psf_problem *problem, long long capacity)
{
    if (problem->levels.bits == 0 || capacity < 1) return 0;
    size_t plane = (size_t)problem->npix * (size_t)problem->npix;
    return 2 * (size_t)capacity * (plane * sizeof(unsigned short) + PSF_MEASURES * sizeof(double));
}

int gpu_levels_create(gpu_levels *l, const psf_problem *problem, int capacity, gpu_check *chk)
{
    memset(l, 0, sizeof *l);
    if (problem->levels.bits == 0) return 0;
    l->active = 1;
    l->plane = (size_t)problem->npix * (size_t)problem->npix;
    l->axis = (size_t)(problem->npix / 2) * (size_t)problem->npix + (size_t)(problem->npix / 2);
    l->rotate_180 = problem->levels.rotate_180 != 0;
    l->map = psf_levels_map_make(problem->levels.bits, problem->levels.stretch,
                                 problem->levels.dynamic_range);
    cudaFuncAttributes a; /* load the kernel now, not in the first run */
    if (GPU_CUDA(chk, cudaFuncGetAttributes(&a, levels_kernel))) return -1;
    size_t cap = (size_t)capacity;
    for (int q = 0; q < 2; ++q)
        if (GPU_CUDA(chk, cudaMalloc(&l->lev[q], cap * l->plane * sizeof(unsigned short))) ||
            GPU_CUDA(chk, cudaMalloc(&l->meas[q], cap * PSF_MEASURES * sizeof(double))))
            return -1;
    return 0;
}

void gpu_levels_destroy(gpu_levels *l)
{
    for (int q = 0; q < 2; ++q) {
        cudaFree(l->lev[q]);
        cudaFree(l->meas[q]);
        l->lev[q] = NULL;
        l->meas[q] = NULL;
    }
    l->active = 0;
}

int gpu_levels_apply(const gpu_levels *l, const float *img, int n, int q, cudaStream_t stream,
                     gpu_check *chk)
{
    if (n < 1) return 0;
    levels_kernel<<<n, LEVELS_THREADS, 0, stream>>>(img, l->plane, l->axis, l->map, l->rotate_180,
                                                    l->lev[q], l->meas[q]);
    return GPU_LAUNCH(chk, "levels_kernel");
}
