/* SPDX-License-Identifier: BSD-3-Clause */
/* The levels kernels (gpu/levels.h). Each image is cut into S slices of
 * LEVELS_THREADS x LEVELS_PER_THREAD pixels or more (S <= LEVELS_MAX_SLICES),
 * one block each, so that a sub-batch of 64 256^2 images is 1024 blocks
 * and fills the device (one block per image would leave half the SMs idle
 * and each thread 128 dependent passes): measure_kernel reduces each slice
 * (peak, total, counts) into the partials; levels_kernel reduces an
 * image's S partials in a fixed order (so the total is the same run after
 * run), writes the measures (the slice-0 block) and the slice's levels. */
#include "gpu/levels.h"

#include <math.h>
#include <string.h>

extern "C" {
#include "backend/detector.h"
}

#define LEVELS_THREADS 256
#define LEVELS_PER_THREAD 16
#define LEVELS_MAX_SLICES 64

/* One slice's (or, reduced, one image's) measures. */
typedef struct {
    float peak;
    double total;
    unsigned long long nan, inf, neg;
} slice_part;

/* a and b combined: the larger peak, the sums. */
__device__ static slice_part part_add(slice_part a, slice_part b)
{
    a.peak = b.peak > a.peak ? b.peak : a.peak;
    a.total += b.total;
    a.nan += b.nan;
    a.inf += b.inf;
    a.neg += b.neg;
    return a;
}

/* Tree reduction of s[0 .. n) (n a power of two <= LEVELS_THREADS) into
 * s[0], by the block's threads. */
__device__ static void reduce(slice_part *s, int n)
{
    for (int h = n / 2; h > 0; h /= 2) {
        if ((int)threadIdx.x < h) s[threadIdx.x] = part_add(s[threadIdx.x], s[threadIdx.x + h]);
        __syncthreads();
    }
}

/* Pixels [lo, hi) of image blockIdx.y's slice blockIdx.x. */
__device__ static void slice_range(size_t plane, int slices, size_t *lo, size_t *hi)
{
    size_t len = (plane + (size_t)slices - 1) / (size_t)slices;
    *lo = (size_t)blockIdx.x * len;
    *hi = *lo + len < plane ? *lo + len : plane;
}

__global__ void __launch_bounds__(LEVELS_THREADS)
    measure_kernel(const float *img, size_t plane, int slices, slice_part *parts)
{
    const float *p = img + (size_t)blockIdx.y * plane;
    size_t lo, hi;
    slice_range(plane, slices, &lo, &hi);
    slice_part m = {-INFINITY, 0.0, 0, 0, 0};
    for (size_t i = lo + threadIdx.x; i < hi; i += LEVELS_THREADS) {
        float x = p[i];
        m.peak = x > m.peak ? x : m.peak; /* false for NaN: skipped */
        m.total += x;
        m.nan += isnan(x) ? 1 : 0;
        m.inf += isinf(x) ? 1 : 0;
        m.neg += x < 0.0f ? 1 : 0;
    }
    __shared__ slice_part s[LEVELS_THREADS];
    s[threadIdx.x] = m;
    __syncthreads();
    reduce(s, LEVELS_THREADS);
    if (threadIdx.x == 0) parts[(size_t)blockIdx.y * slices + blockIdx.x] = s[0];
}

/* Image blockIdx.y's S partials reduced in a fixed order into s[0] (so
 * the total is the same run after run), and its measures written by
 * block 0's thread 0. */
__device__ static void image_measures(const float *img, size_t plane, size_t axis, int slices,
                                      const slice_part *parts, double *meas, slice_part *s)
{
    const slice_part none = {-INFINITY, 0.0, 0, 0, 0};
    const int t = threadIdx.x;
    if (t < LEVELS_MAX_SLICES) s[t] = t < slices ? parts[(size_t)blockIdx.y * slices + t] : none;
    __syncthreads();
    reduce(s, LEVELS_MAX_SLICES);
    if (blockIdx.x == 0 && t == 0) {
        double *m = meas + (size_t)blockIdx.y * PSF_MEASURES;
        m[PSF_MEASURE_PEAK] = s[0].peak;
        m[PSF_MEASURE_AXIS] = img[(size_t)blockIdx.y * plane + axis];
        m[PSF_MEASURE_TOTAL] = s[0].total;
        m[PSF_MEASURE_NAN] = (double)s[0].nan;
        m[PSF_MEASURE_INF] = (double)s[0].inf;
        m[PSF_MEASURE_NEG] = (double)s[0].neg;
    }
}

/* The measures alone: one block per image (grid 1 x n). */
__global__ void __launch_bounds__(LEVELS_THREADS)
    measures_kernel(const float *img, size_t plane, size_t axis, int slices,
                    const slice_part *parts, double *meas)
{
    __shared__ slice_part s[LEVELS_MAX_SLICES];
    image_measures(img, plane, axis, slices, parts, meas, s);
}

__global__ void __launch_bounds__(LEVELS_THREADS)
    levels_kernel(const float *img, size_t plane, size_t axis, int slices, psf_levels_map map,
                  int rotate_180, const slice_part *parts, unsigned short *lev, double *meas)
{
    __shared__ slice_part s[LEVELS_MAX_SLICES];
    const int t = threadIdx.x;
    image_measures(img, plane, axis, slices, parts, meas, s);
    const float *p = img + (size_t)blockIdx.y * plane;
    const double pk = s[0].peak; /* read by all after the last barrier, written by none */
    const int blank = psf_levels_blank(pk);
    unsigned short *o = lev + (size_t)blockIdx.y * plane;
    size_t lo, hi;
    slice_range(plane, slices, &lo, &hi);
    for (size_t i = lo + t; i < hi; i += LEVELS_THREADS)
        o[rotate_180 ? plane - 1 - i : i] = blank ? 0 : psf_level_of(&map, p[i], pk);
}

/* S for images of plane pixels. */
static int slices_for(size_t plane)
{
    size_t s = plane / ((size_t)LEVELS_THREADS * LEVELS_PER_THREAD);
    return s < 1 ? 1 : s > LEVELS_MAX_SLICES ? LEVELS_MAX_SLICES : (int)s;
}

/* Whether problem gets the measures' buffers: no detector stage (the
 * images' side is then npix). */
static int has_measures(const psf_problem *problem)
{
    return problem->levels.bits != 0 || !psf_detector_active(&problem->detector);
}

size_t gpu_levels_bytes(const psf_problem *problem, long long capacity, int nbuf)
{
    /* Without levels, the measures' buffers (run_measured's, made at its
     * first call) are not counted: C (2 PSF_MEASURES doubles + S partials),
     * 2 MiB at C = 1024 and S = 64, inside the plan's margins. */
    if (problem->levels.bits == 0 || capacity < 1) return 0;
    size_t plane = (size_t)problem->npix * (size_t)problem->npix;
    return (size_t)capacity *
           ((nbuf == 1 ? 1 : 2) * (plane * sizeof(unsigned short) + PSF_MEASURES * sizeof(double)) +
            (size_t)slices_for(plane) * sizeof(slice_part));
}

/* The measures' buffers (parts, meas[], host_meas) for l's capacity. */
static int measures_alloc(gpu_levels *l, gpu_check *chk)
{
    size_t cap = (size_t)l->capacity;
    if (GPU_CUDA(chk, cudaMalloc(&l->parts, cap * (size_t)l->slices * sizeof(slice_part))))
        return -1;
    for (int q = 0; q < (l->nbuf == 1 ? 1 : 2); ++q)
        if (GPU_CUDA(chk, cudaMalloc(&l->meas[q], cap * PSF_MEASURES * sizeof(double)))) return -1;
    if (l->nbuf == 1) l->meas[1] = l->meas[0]; /* one sub-batch at a time: q is always 0 */
    return GPU_CUDA(
        chk, cudaMallocHost(&l->host_meas, l->host_meas_jobs * PSF_MEASURES * sizeof(double)));
}

int gpu_levels_create(gpu_levels *l, const psf_problem *problem, int capacity, int nbuf,
                      gpu_check *chk)
{
    memset(l, 0, sizeof *l);
    if (!has_measures(problem)) return 0;
    l->active = problem->levels.bits != 0;
    l->measures = 1;
    l->plane = (size_t)problem->npix * (size_t)problem->npix;
    l->axis = (size_t)(problem->npix / 2) * (size_t)problem->npix + (size_t)(problem->npix / 2);
    l->rotate_180 = problem->levels.rotate_180 != 0;
    l->slices = slices_for(l->plane);
    l->capacity = capacity;
    l->nbuf = nbuf;
    l->host_meas_jobs = (size_t)(problem->max_batch > capacity ? problem->max_batch : capacity);
    /* Without levels nothing is made now: the measures' buffers come at
     * run_measured's first call, so that a backend that never measures
     * (the command's) makes the CUDA calls it always made. */
    if (!l->active) return 0;
    l->map = psf_levels_map_make(problem->levels.bits, problem->levels.stretch,
                                 problem->levels.dynamic_range);
    cudaFuncAttributes a; /* load the kernels now, not in the first run */
    if (GPU_CUDA(chk, cudaFuncGetAttributes(&a, measure_kernel)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, levels_kernel)))
        return -1;
    size_t cap = (size_t)capacity;
    for (int q = 0; q < (nbuf == 1 ? 1 : 2); ++q)
        if (GPU_CUDA(chk, cudaMalloc(&l->lev[q], cap * l->plane * sizeof(unsigned short))))
            return -1;
    if (nbuf == 1) l->lev[1] = l->lev[0]; /* one sub-batch at a time: q is always 0 */
    return measures_alloc(l, chk);
}

void gpu_levels_destroy(gpu_levels *l)
{
    cudaFree(l->parts);
    l->parts = NULL;
    cudaFreeHost(l->host_meas);
    l->host_meas = NULL;
    l->host_meas_jobs = 0;
    if (l->lev[1] == l->lev[0]) l->lev[1] = NULL; /* nbuf 1: aliases */
    if (l->meas[1] == l->meas[0]) l->meas[1] = NULL;
    for (int q = 0; q < 2; ++q) {
        cudaFree(l->lev[q]);
        cudaFree(l->meas[q]);
        l->lev[q] = NULL;
        l->meas[q] = NULL;
    }
    l->active = 0;
    l->measures = 0;
}

int gpu_levels_apply(const gpu_levels *l, const float *img, int n, int q, cudaStream_t stream,
                     gpu_check *chk)
{
    if (n < 1) return 0;
    dim3 grid((unsigned)l->slices, (unsigned)n);
    slice_part *parts = (slice_part *)l->parts;
    measure_kernel<<<grid, LEVELS_THREADS, 0, stream>>>(img, l->plane, l->slices, parts);
    if (GPU_LAUNCH(chk, "measure_kernel")) return -1;
    levels_kernel<<<grid, LEVELS_THREADS, 0, stream>>>(img, l->plane, l->axis, l->slices, l->map,
                                                       l->rotate_180, parts, l->lev[q], l->meas[q]);
    return GPU_LAUNCH(chk, "levels_kernel");
}

int gpu_levels_measure_ready(gpu_levels *l, gpu_check *chk)
{
    if (!l->measures) return -1;
    if (l->host_meas) return 0;
    cudaFuncAttributes a; /* the kernels loaded now, as create does for levels */
    if (GPU_CUDA(chk, cudaFuncGetAttributes(&a, measure_kernel)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, measures_kernel)))
        return -1;
    return measures_alloc(l, chk);
}

int gpu_levels_measure(const gpu_levels *l, const float *img, int n, int q, cudaStream_t stream,
                       gpu_check *chk)
{
    if (n < 1) return 0;
    slice_part *parts = (slice_part *)l->parts;
    measure_kernel<<<dim3((unsigned)l->slices, (unsigned)n), LEVELS_THREADS, 0, stream>>>(
        img, l->plane, l->slices, parts);
    if (GPU_LAUNCH(chk, "measure_kernel")) return -1;
    measures_kernel<<<dim3(1, (unsigned)n), LEVELS_THREADS, 0, stream>>>(
        img, l->plane, l->axis, l->slices, parts, l->meas[q]);
    return GPU_LAUNCH(chk, "measures_kernel");
}
