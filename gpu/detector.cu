/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage on the GPU (gpu/detector.h). */
#include "gpu/detector.h"

#include <stdlib.h>
#include <string.h>

extern "C" {
#include "backend/detector.h"
}

/* Images k0 .. k1 - 1 of thread group blockIdx.y: `per` consecutive
 * images (gpu_detector.multiply_per, fold_per), the last group short. */
__device__ static inline void image_range(int n, int per, int *k0, int *k1)
{
    *k0 = (int)blockIdx.y * per;
    *k1 = *k0 + per < n ? *k0 + per : n;
}

/* Spectrum element i of `per` images (image_range) times the table's element
 * i, read once: the complex product in float, as the CPU's (cpu/detector.c). */
__global__ static void otf_multiply_kernel(cufftComplex *__restrict__ spec,
                                           const cufftComplex *__restrict__ otf, size_t nspec,
                                           int n, int per)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nspec) return;
    int k0, k1;
    image_range(n, per, &k0, &k1);
    cufftComplex t = otf[i];
    for (int k = k0; k < k1; ++k) {
        cufftComplex *s = spec + (size_t)k * nspec + i;
        cufftComplex a = *s;
        *s = make_cuFloatComplex(a.x * t.x - a.y * t.y, a.x * t.y + a.y * t.x);
    }
}

/* out[k][i][j] = psf_detector_sample_at (s^2 grid[k][(i s + o) N + j s + o],
 * or WebbPSF's block sum: block), psf_detector_sample's code. */
__global__ static void sample_kernel(const float *__restrict__ grid, int npix, int s, int off,
                                     int block, int m, float *__restrict__ out)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= m) return;
    size_t k = blockIdx.z;
    out[k * m * m + (size_t)i * m + j] =
        psf_detector_sample_at(grid + k * npix * npix, npix, s, off, block, i, j);
}

/* Z[k][p1][p2] of `per` images (image_range): psf_detector_fold_at
 * (backend/detector.h has the derivation), one thread per element of the
 * M x (M/2+1) half spectrum in its row-major order (p2 fastest: coalesced
 * reads along the grid spectrum's rows; no idle lanes past M/2 as a 2D
 * block would have), the table's reads shared by the images through L1;
 * spec and z strided by N (N/2+1) and M (M/2+1) complex per image.
 * S > 0: s is the constant S, so the inlined alias loops unroll (their
 * s^2 loads in flight at once rather than one round trip each; the same
 * operations in the same order); S = 0: s as given. */
template <int S>
__global__ static void fold_kernel(const cufftComplex *__restrict__ spec,
                                   const cufftComplex *__restrict__ otf,
                                   const float *__restrict__ phase, int npix, int s_given, int m,
                                   int n, int per, cufftComplex *__restrict__ z)
{
    int s = S > 0 ? S : s_given, mc = m / 2 + 1;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, nz = (size_t)m * mc;
    if (i >= nz) return;
    size_t nspec = (size_t)npix * (size_t)(npix / 2 + 1);
    int p1 = (int)(i / mc), p2 = (int)(i % mc), k0, k1;
    image_range(n, per, &k0, &k1);
    for (int k = k0; k < k1; ++k)
        psf_detector_fold_at((const float *)(spec + (size_t)k * nspec), (const float *)otf, phase,
                             npix, s, p1, p2, (float *)(z + (size_t)k * nz + i));
}

/* The fold kernel for s: unrolled for s = 2 and 4 when unroll (the shipped
 * oversamples' common cases), else the general one. */
typedef void (*fold_fn)(const cufftComplex *, const cufftComplex *, const float *, int, int, int,
                        int, int, cufftComplex *);
static fold_fn fold_kernel_for(int s, int unroll)
{
    if (unroll && s == 2) return fold_kernel<2>;
    if (unroll && s == 4) return fold_kernel<4>;
    return fold_kernel<0>;
}

/* Both images' Z[k][p1][p2] of pair blockIdx.y (images 2 blockIdx.y and
 * the next, when there is one): psf_detector_fold_pair_at on the pair's
 * full N x N C2C spectrum in zs (strided N^2 complex a pair), one thread
 * per element of the M x (M/2+1) half spectrum (as fold_kernel); z strided
 * M (M/2+1) complex an image. At s = 1 (M = N, no phase) the multiply.
 * S as fold_kernel's. */
template <int S>
__global__ static void fold_pair_kernel(const cufftComplex *__restrict__ zs,
                                        const cufftComplex *__restrict__ otf,
                                        const float *__restrict__ phase, int npix, int s_given,
                                        int m, int n, cufftComplex *__restrict__ z)
{
    int s = S > 0 ? S : s_given, mc = m / 2 + 1;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, nz = (size_t)m * mc;
    if (i >= nz) return;
    size_t k = 2 * (size_t)blockIdx.y;
    int p1 = (int)(i / mc), p2 = (int)(i % mc);
    float v[4];
    psf_detector_fold_pair_at((const float *)(zs + (size_t)blockIdx.y * npix * npix),
                              (const float *)otf, phase, npix, s, p1, p2, v);
    z[k * nz + i] = make_cuFloatComplex(v[0], v[1]);
    if ((long long)k + 1 < n) z[(k + 1) * nz + i] = make_cuFloatComplex(v[2], v[3]);
}

typedef void (*fold_pair_fn)(const cufftComplex *, const cufftComplex *, const float *, int, int,
                             int, int, cufftComplex *);
static fold_pair_fn fold_pair_kernel_for(int s, int unroll)
{
    if (unroll && s == 1) return fold_pair_kernel<1>;
    if (unroll && s == 2) return fold_pair_kernel<2>;
    if (unroll && s == 4) return fold_pair_kernel<4>;
    return fold_pair_kernel<0>;
}

/* psf_detector_clamp of `count` floats: the cuFFT paths' last pass. */
__global__ static void clamp_kernel(float *__restrict__ x, size_t count)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) x[i] = psf_detector_clamp_value(x[i]);
}

/* The imaginary half of `plane` complex values zeroed: an odd count's
 * last pair has no second image. */
__global__ static void zero_imag_kernel(cufftComplex *__restrict__ z, size_t plane)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < plane) z[i].y = 0.0f;
}

/* Thread groups for n images at `per` images a thread. */
static unsigned image_groups(int n, int per)
{
    return (unsigned)((n + per - 1) / per);
}

/* The problem convolves and its stage starts packed (GPU_DETECTOR_PACKED). */
static int packs_problem(const psf_problem *problem)
{
    return GPU_DETECTOR_PACKED && psf_detector_active(&problem->detector) &&
           psf_detector_convolves(&problem->detector);
}

long long gpu_detector_grid_images(const psf_problem *problem, long long capacity)
{
    return capacity + (packs_problem(problem) && capacity >= 3 && (capacity & 1));
}

int gpu_detector_packs(const gpu_detector *d, int n)
{
    return d->convolve && !d->separable && d->packed && n >= 2;
}

size_t gpu_detector_bytes(const psf_problem *problem, long long capacity)
{
    const psf_detector *det = &problem->detector;
    if (!psf_detector_active(det)) return 0;
    size_t n = (size_t)problem->npix, m = (size_t)psf_detector_out_npix(problem);
    size_t c = (size_t)capacity;
    size_t bytes = det->sample ? 2 * c * m * m * sizeof(float) : 0;
    /* The fold's phase table (odd M) and plans of N x N (R2C) and at most
     * N x N (C2R): within the estimate of 8 N^2 C. */
    if (psf_detector_convolves(det))
        bytes += psf_detector_otf_bytes((int)n) + 8 * n * n * c + 2 * n * sizeof(float);
    /* The two grid buffers' image past C (an odd C's last pair). */
    bytes += 2 * (size_t)(gpu_detector_grid_images(problem, capacity) - capacity) * n * n *
             sizeof(float);
    return bytes;
}

/* The fold's phase table on the device (odd M; even M has none). */
static int phase_upload(gpu_detector *d, gpu_check *chk)
{
    size_t bytes = 2 * (size_t)d->npix * sizeof(float);
    float *host = (float *)malloc(bytes);
    if (!host) {
        snprintf(chk->err, chk->errlen, "gpu: out of host memory");
        return -1;
    }
    psf_detector_fold_phase(&d->det, d->npix, host);
    int rc = GPU_CUDA(chk, cudaMalloc(&d->phase, bytes));
    if (rc) d->phase = NULL;
    if (rc == 0) rc = GPU_CUDA(chk, cudaMemcpy(d->phase, host, bytes, cudaMemcpyHostToDevice));
    free(host);
    return rc;
}

int gpu_detector_create(gpu_detector *d, const psf_problem *problem, int capacity,
                        cudaStream_t stream, gpu_check *chk)
{
    memset(d, 0, sizeof *d);
    const psf_detector *det = &problem->detector;
    if (!psf_detector_active(det)) return 0;
    if (psf_detector_check(det, problem->npix, chk->err, chk->errlen) != 0) return -1;
    d->active = 1;
    d->det = *det;
    d->convolve = psf_detector_convolves(det);
    d->sample = det->sample;
    d->npix = problem->npix;
    d->s = det->oversample > 1 ? det->oversample : 1;
    d->out_npix = psf_detector_out_npix(problem);
    d->stream = stream;
    d->multiply_per = GPU_DETECTOR_MULTIPLY_PER;
    d->fold_per = 1;
    d->fold_unroll = 1;
    d->packed = GPU_DETECTOR_PACKED;
    cudaFuncAttributes a; /* load the kernels now, not on the first run */
    if (GPU_CUDA(chk, cudaFuncGetAttributes(&a, otf_multiply_kernel)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, sample_kernel)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, fold_kernel<0>)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, fold_kernel<2>)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, fold_kernel<4>)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, fold_pair_kernel<0>)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, fold_pair_kernel<1>)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, fold_pair_kernel<2>)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, fold_pair_kernel<4>)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, zero_imag_kernel)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, clamp_kernel)))
        return -1;
    size_t m2 = (size_t)d->out_npix * d->out_npix;
    for (int q = 0; q < 2 && d->sample; ++q)
        if (GPU_CUDA(chk, cudaMalloc(&d->out[q], (size_t)capacity * m2 * sizeof(float)))) {
            d->out[q] = NULL;
            return -1;
        }
    if (!d->convolve) return 0;
    d->fold = d->sample && d->s > 1;
    if (d->fold && psf_detector_sample_offset(det, d->npix) != 0 && phase_upload(d, chk)) return -1;
    size_t bytes = psf_detector_otf_bytes(d->npix);
    float *host = (float *)malloc(bytes);
    if (!host) {
        snprintf(chk->err, chk->errlen, "gpu: out of host memory");
        return -1;
    }
    /* The fold's table has WebbPSF's block sum in it (psf_detector_fold_otf). */
    (d->fold ? psf_detector_fold_otf : psf_detector_otf)(det, d->npix, host);
    int rc = GPU_CUDA(chk, cudaMalloc(&d->otf, bytes));
    if (rc) d->otf = NULL;
    if (rc == 0) rc = GPU_CUDA(chk, cudaMemcpy(d->otf, host, bytes, cudaMemcpyHostToDevice));
    free(host);
    /* The cuFFT paths stay ready beside it (the table is small, the plans
     * are made on first use): the bench and the tests compare them. */
    if (rc == 0 && gpu_detector_sep_supports(problem)) {
        rc = gpu_detector_sep_create(&d->sep, problem, chk);
        d->separable = rc == 0 && GPU_DETECTOR_SEPARABLE;
        d->fuse = 1;
    }
    return rc;
}

static void plan_free(gpu_detector_plan *p)
{
    if (!p->batch) return;
    cufftDestroy(p->fwd);
    cufftDestroy(p->c2r);
    memset(p, 0, sizeof *p);
}

void gpu_detector_destroy(gpu_detector *d)
{
    for (int i = 0; i < GPU_DETECTOR_PLANS; ++i)
        plan_free(&d->plans[i]);
    gpu_detector_sep_destroy(&d->sep);
    cudaFree(d->otf);
    cudaFree(d->phase);
    cudaFree(d->out[0]);
    cudaFree(d->out[1]);
    memset(d, 0, sizeof *d);
}

/* The forward (R2C of n, or packed the C2C of ceil(n/2) pairs) and C2R
 * plans for n images: kept, or made (replacing the least recently used). */
static gpu_detector_plan *plan_for(gpu_detector *d, int n, int packed, gpu_check *chk)
{
    gpu_detector_plan *victim = &d->plans[0];
    for (int i = 0; i < GPU_DETECTOR_PLANS; ++i) {
        gpu_detector_plan *p = &d->plans[i];
        if (p->batch == n && p->packed == packed) {
            p->used = ++d->tick;
            return p;
        }
        if (!p->batch || (victim->batch && p->used < victim->used)) victim = p;
    }
    if (victim->batch && GPU_CUDA(chk, cudaStreamSynchronize(d->stream))) return NULL;
    plan_free(victim);
    int dims[2] = {d->npix, d->npix}, out[2] = {d->out_npix, d->out_npix};
    gpu_detector_plan p;
    memset(&p, 0, sizeof p);
    if (GPU_CUFFT(chk, cufftPlanMany(&p.fwd, 2, dims, NULL, 1, 0, NULL, 1, 0,
                                     packed ? CUFFT_C2C : CUFFT_R2C, packed ? (n + 1) / 2 : n)))
        return NULL;
    /* The fold's C2R is M x M; else N x N (M = N at s = 1 or unsampled). */
    if (GPU_CUFFT(chk, cufftPlanMany(&p.c2r, 2, d->fold ? out : dims, NULL, 1, 0, NULL, 1, 0,
                                     CUFFT_C2R, n))) {
        cufftDestroy(p.fwd);
        return NULL;
    }
    if (GPU_CUFFT(chk, cufftSetStream(p.fwd, d->stream)) ||
        GPU_CUFFT(chk, cufftSetStream(p.c2r, d->stream))) {
        cufftDestroy(p.fwd);
        cufftDestroy(p.c2r);
        return NULL;
    }
    p.batch = n;
    p.packed = packed;
    p.used = ++d->tick;
    *victim = p;
    return victim;
}

/* The fold (s > 1, sampled): Z into grid (the grid is spent once R2C has
 * read it, and 8 M (M/2+1) <= 4 N^2 bytes for s >= 2), then the M x M C2R
 * of Z into out. */
static int fold_apply(gpu_detector *d, gpu_detector_plan *p, float *grid, int n, cufftComplex *spec,
                      float *out, gpu_check *chk)
{
    int m = d->out_npix;
    size_t nz = (size_t)m * (size_t)(m / 2 + 1);
    cufftComplex *z = (cufftComplex *)grid;
    int per = d->fold_per;
    dim3 blocks((unsigned)((nz + 255) / 256), image_groups(n, per)); /* n <= 65535 */
    fold_kernel_for(d->s, d->fold_unroll)<<<blocks, 256, 0, d->stream>>>(
        spec, d->otf, d->phase, d->npix, d->s, m, n, per, z);
    if (GPU_LAUNCH(chk, "fold_kernel")) return -1;
    if (d->steps == 2) return 0;
    return GPU_CUFFT(chk, cufftExecC2R(p->c2r, z, out)) ? -1 : 0;
}

/* The packed path (gpu_detector_packs): the last pair's imaginary half
 * zeroed for odd n, the pairs' C2C in place in grid, the fold of both
 * images of each pair into spec (s = 1 when not folding: the multiply),
 * then the C2R of the n images' spectra into out. */
static int packed_apply(gpu_detector *d, gpu_detector_plan *p, float *grid, int n,
                        cufftComplex *spec, float *out, gpu_check *chk)
{
    size_t plane = (size_t)d->npix * (size_t)d->npix;
    cufftComplex *zs = (cufftComplex *)grid;
    if (n & 1) {
        zero_imag_kernel<<<(unsigned)((plane + 255) / 256), 256, 0, d->stream>>>(
            zs + (size_t)(n / 2) * plane, plane);
        if (GPU_LAUNCH(chk, "zero_imag_kernel")) return -1;
    }
    if (GPU_CUFFT(chk, cufftExecC2C(p->fwd, zs, zs, CUFFT_FORWARD))) return -1;
    if (d->steps == 1) return 0;
    int s = d->fold ? d->s : 1, m = d->npix / s;
    size_t nz = (size_t)m * (size_t)(m / 2 + 1);
    dim3 blocks((unsigned)((nz + 255) / 256), (unsigned)((n + 1) / 2)); /* n <= 65535 */
    fold_pair_kernel_for(s, d->fold_unroll)<<<blocks, 256, 0, d->stream>>>(
        zs, d->otf, d->fold ? d->phase : NULL, d->npix, s, m, n, spec);
    if (GPU_LAUNCH(chk, "fold_pair_kernel")) return -1;
    if (d->steps == 2) return 0;
    return GPU_CUFFT(chk, cufftExecC2R(p->c2r, spec, out)) ? -1 : 0;
}

/* The cuFFT paths' convolution of n grid images into out (packed pairs,
 * or the R2C of n then the fold or the multiply, then the C2R), enqueued;
 * d->steps stops it early (the bench). Returns 0, or -1 with chk's
 * message. */
static int cufft_apply(gpu_detector *d, float *grid, int n, cufftComplex *spec, float *out,
                       gpu_check *chk)
{
    int packed = gpu_detector_packs(d, n);
    gpu_detector_plan *p = plan_for(d, n, packed, chk);
    if (!p) return -1;
    if (packed) return packed_apply(d, p, grid, n, spec, out, chk);
    if (GPU_CUFFT(chk, cufftExecR2C(p->fwd, grid, spec))) return -1;
    if (d->steps == 1) return 0;
    if (d->fold) return fold_apply(d, p, grid, n, spec, out, chk);
    size_t nspec = (size_t)d->npix * (size_t)(d->npix / 2 + 1);
    int per = d->multiply_per;
    dim3 blocks((unsigned)((nspec + 255) / 256), image_groups(n, per)); /* n <= 65535 */
    otf_multiply_kernel<<<blocks, 256, 0, d->stream>>>(spec, d->otf, nspec, n, per);
    /* Out of place, straight into the image run() returns: at s = 1 the
     * detector image is the grid image (s^2 = 1, o = 0), no sampling pass. */
    if (GPU_LAUNCH(chk, "otf_multiply_kernel")) return -1;
    if (d->steps == 2) return 0;
    return GPU_CUFFT(chk, cufftExecC2R(p->c2r, spec, out)) ? -1 : 0;
}

int gpu_detector_apply(gpu_detector *d, float *grid, int n, cufftComplex *spec, int q,
                       float **result, gpu_check *chk)
{
    *result = grid;
    if (!d->active || n < 1) return 0;
    float *out = d->sample ? d->out[q] : grid;
    if (d->convolve && d->separable) {
        /* Rows into spec (the scratch the other paths use too), columns
         * into the images run() returns (grid, read by then, at s = 1). */
        d->sep.steps = d->steps == 1;
        if (gpu_detector_sep_apply(&d->sep, grid, n, (float *)spec, out, d->stream, chk)) return -1;
        *result = out;
        return 0;
    }
    if (d->convolve) {
        if (cufft_apply(d, grid, n, spec, out, chk)) return -1;
        *result = out;
        if (d->steps) return 0;
        size_t count = (size_t)n * (size_t)d->out_npix * (size_t)d->out_npix;
        clamp_kernel<<<(unsigned)((count + 255) / 256), 256, 0, d->stream>>>(out, count);
        return GPU_LAUNCH(chk, "clamp_kernel");
    }
    if (!d->sample) return 0;
    int m = d->out_npix, off = psf_detector_sample_offset(&d->det, d->npix);
    dim3 block(32, 8), g((unsigned)((m + 31) / 32), (unsigned)((m + 7) / 8), (unsigned)n);
    sample_kernel<<<g, block, 0, d->stream>>>(grid, d->npix, d->s, off, psf_detector_bins(&d->det),
                                              m, d->out[q]);
    if (GPU_LAUNCH(chk, "sample_kernel")) return -1;
    *result = d->out[q];
    return 0;
}

int gpu_detector_fuses(const gpu_detector *d)
{
    return d->active && d->convolve && d->separable && d->sample && d->fuse;
}

int gpu_detector_rows_from_fields(gpu_detector *d, const cufftComplex *field, const float *scale,
                                  const gpu_pass_image *images, int nimages, int centred,
                                  float *rows, gpu_check *chk)
{
    return gpu_detector_sep_rows_from_fields(&d->sep, field, scale, images, nimages, centred, rows,
                                             d->stream, chk);
}

int gpu_detector_finish(gpu_detector *d, const float *rows, int n, int q, float **result,
                        gpu_check *chk)
{
    *result = d->out[q];
    if (d->steps == 1) return 0;
    return gpu_detector_sep_columns(&d->sep, rows, n, d->out[q], d->stream, chk);
}
