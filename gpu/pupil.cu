/* SPDX-License-Identifier: BSD-3-Clause */
#include <math.h>
#include <string.h>

#include <cub/device/device_scan.cuh>

#include "gpu/pupil.h"

extern "C" {
#include "optics/map_sample.h"
#include "optics/seg_wavefront.h"
#include "optics/zernike.h"
}

#define TWO_PI 6.283185307179586476925286766559
/* Threads of a block: 32 columns (one warp, coalesced) x 8 rows. */
#define BX 32
#define BY 8
/* Fields one thread writes (see field_kernel). */
#define GPU_FIELDS_PER_THREAD 8

static dim3 grid_for(int npix, int nz)
{
    return dim3((unsigned)((npix + BX - 1) / BX), (unsigned)((npix + BY - 1) / BY), (unsigned)nz);
}

/* Threads of a block of the open-sample kernel (one sample each). */
#define OPEN_THREADS 256

/* Pupil row i (or column j) of stored position di (dj): in FFT order the
 * inverse of di = (i - N/2) mod N; in natural order di itself. */
__device__ static inline int unshift(int d, int npix, int natural)
{
    if (natural) return d;
    int i = d + npix / 2;
    return i >= npix ? i - npix : i;
}

/* Transmission of every sample (FFT order) and its open flag, plus a 0 flag
 * past the end so that the exclusive scan's last entry is nopen. The same
 * formula as aperture_fill (optics/aperture.c). */
__global__ static void aperture_kernel(gpu_pupil_set set, double dx_m, float *amp, unsigned *flags)
{
    int dj = blockIdx.x * BX + threadIdx.x, di = blockIdx.y * BY + threadIdx.y;
    int npix = set.npix;
    if (dj >= npix || di >= npix) return;
    int c = npix / 2;
    int oj = unshift(dj, npix, set.natural) - c, oi = unshift(di, npix, set.natural) - c;
    double x = (double)oj * dx_m, y = (double)oi * dx_m;
    float t = aperture_sample_index(&set.geom, oi, oj, dx_m); /* binary rims: exact (integers) */
    if (set.amp_map && t != 0.0f)
        t *= map_bilinear_wh(set.amp_map, set.map_rows, set.map_cols, set.map_width_m,
                             set.map_height_m, x, y);
    size_t p = (size_t)di * npix + dj;
    amp[p] = t;
    flags[p] = t > 0.0f;
    if (p == 0) flags[(size_t)npix * npix] = 0;
}

/* Turn the scan of the open flags (in idx) into open-sample numbers, and
 * gather the transmission, OPD and Zernike basis of the open samples, in
 * the CPU backend's formulas (cpu/pupil.c: rho = r / radius, theta =
 * atan2(y, x), basis stored as float). idx: pp.idx, or the scratch's
 * (gpu_pupil_build_in). */
__global__ static void compact_kernel(gpu_pupil_set set, gpu_pupil pp, const float *amp_grid,
                                      unsigned *idx)
{
    int dj = blockIdx.x * BX + threadIdx.x, di = blockIdx.y * BY + threadIdx.y;
    int npix = set.npix;
    if (dj >= npix || di >= npix) return;
    size_t p = (size_t)di * npix + dj;
    float a = amp_grid[p];
    if (!(a > 0.0f)) {
        idx[p] = GPU_PUPIL_CLOSED;
        return;
    }
    unsigned k = idx[p];
    pp.pos[k] = (unsigned)p; /* p < N^2 <= 2^32 - 1 (GPU_PUPIL_MAX_NPIX) */
    pp.amp[k] = a;
    int c = npix / 2;
    double x = (double)(unshift(dj, npix, set.natural) - c) * pp.dx_m;
    double y = (double)(unshift(di, npix, set.natural) - c) * pp.dx_m;
    if (pp.opd)
        pp.opd[k] = map_bilinear_wh(set.opd_map, set.opd_rows, set.opd_cols, set.opd_width_m,
                                    set.opd_height_m, x, y);
    if (pp.basis) {
        double rho = sqrt(x * x + y * y) / set.radius_m, theta = atan2(y, x);
        for (int t = 0; t < set.nterms; ++t)
            pp.basis[(size_t)t * pp.nopen + k] =
                (float)zernike_eval(set.modes[t], set.modes[set.nterms + t], rho, theta);
    }
    if (pp.seg)
        pp.seg[k] =
            aps_segment_basis(&set.geom.seg, set.seg_nterms, set.seg_modes,
                              set.seg_modes + set.seg_nterms, x, y, pp.seg_basis + k, pp.nopen);
}

/* The per-open-sample arrays of pp (nopen set), the basis only when it is
 * at most set->basis_max_bytes and half of free_b. */
static int open_arrays(gpu_pupil *pp, const gpu_pupil_set *set, size_t free_b, gpu_check *chk)
{
    size_t nopen = pp->nopen;
    if (GPU_CUDA(chk, cudaMalloc(&pp->amp, nopen * sizeof *pp->amp)) ||
        GPU_CUDA(chk, cudaMalloc(&pp->pos, nopen * sizeof *pp->pos)))
        return -1;
    if (set->opd_map && GPU_CUDA(chk, cudaMalloc(&pp->opd, nopen * sizeof *pp->opd))) return -1;
    if (set->seg_nterms > 0 &&
        (GPU_CUDA(chk, cudaMalloc(&pp->seg, nopen * sizeof *pp->seg)) ||
         GPU_CUDA(chk, cudaMalloc(&pp->seg_basis,
                                  (size_t)set->seg_nterms * nopen * sizeof *pp->seg_basis))))
        return -1;
    size_t basis_bytes = (size_t)set->nterms * nopen * sizeof(float);
    if (basis_bytes > 0 && basis_bytes <= set->basis_max_bytes && basis_bytes <= free_b / 2 &&
        GPU_CUDA(chk, cudaMalloc(&pp->basis, basis_bytes)))
        return -1;
    return 0;
}

/* Both builds: with scr NULL the temporaries are allocated here and the
 * index kept (pp->idx); else they are scr's and no index is kept. */
static int pupil_build(gpu_pupil *pp, const gpu_pupil_set *set, double dx_m,
                       const gpu_pupil_scratch *scr, cudaStream_t stream, gpu_check *chk)
{
    memset(pp, 0, sizeof *pp);
    pp->dx_m = dx_m;
    int npix = set->npix;
    size_t plane = (size_t)npix * npix;
    float *amp_grid = scr ? scr->amp : NULL;
    unsigned *flags = scr ? scr->idx : NULL, *idx = scr ? scr->idx : NULL; /* scr: in place */
    void *scan_tmp = NULL;
    size_t scan_bytes = 0;
    int own_tmp = 0;
    unsigned nopen = 0;
    size_t free_b = 0, total_b = 0;
    int rc = -1;
    if (!scr && (GPU_CUDA(chk, cudaMalloc(&amp_grid, plane * sizeof *amp_grid)) ||
                 GPU_CUDA(chk, cudaMalloc(&flags, (plane + 1) * sizeof *flags)) ||
                 GPU_CUDA(chk, cudaMalloc(&pp->idx, (plane + 1) * sizeof *pp->idx))))
        goto done;
    if (!scr) idx = pp->idx;
    aperture_kernel<<<grid_for(npix, 1), dim3(BX, BY), 0, stream>>>(*set, dx_m, amp_grid, flags);
    if (GPU_LAUNCH(chk, "aperture_kernel")) goto done;
    /* Number the open samples: exclusive prefix sum of the flags (CUB; in
     * place when flags == idx, which CUB supports). */
    if (GPU_CUDA(chk, cub::DeviceScan::ExclusiveSum(NULL, scan_bytes, flags, idx,
                                                    (long long)plane + 1, stream)))
        goto done;
    if (scr && scan_bytes <= scr->tmp_bytes) {
        scan_tmp = scr->tmp;
    } else {
        own_tmp = 1;
        if (GPU_CUDA(chk, cudaMalloc(&scan_tmp, scan_bytes ? scan_bytes : 1))) goto done;
    }
    if (GPU_CUDA(chk, cub::DeviceScan::ExclusiveSum(scan_tmp, scan_bytes, flags, idx,
                                                    (long long)plane + 1, stream)) ||
        GPU_CUDA(chk, cudaMemcpyAsync(&nopen, idx + plane, sizeof nopen, cudaMemcpyDeviceToHost,
                                      stream)) ||
        GPU_CUDA(chk, cudaStreamSynchronize(stream)) ||
        GPU_CUDA(chk, cudaMemGetInfo(&free_b, &total_b)))
        goto done;
    pp->nopen = nopen;
    if (nopen > 0) {
        if (open_arrays(pp, set, free_b, chk)) goto done;
        compact_kernel<<<grid_for(npix, 1), dim3(BX, BY), 0, stream>>>(*set, *pp, amp_grid, idx);
        if (GPU_LAUNCH(chk, "compact_kernel")) goto done;
    }
    /* The temporaries go once the kernels are done; this also surfaces
     * errors raised while they ran. */
    if (GPU_CUDA(chk, cudaStreamSynchronize(stream))) goto done;
    rc = 0;
done:
    if (rc != 0) {
        cudaStreamSynchronize(stream); /* nothing queued may still use what is freed */
        gpu_pupil_free(pp);
    }
    if (!scr) {
        cudaFree(amp_grid);
        cudaFree(flags);
    }
    if (own_tmp) cudaFree(scan_tmp);
    return rc;
}

int gpu_pupil_build(gpu_pupil *pp, const gpu_pupil_set *set, double dx_m, cudaStream_t stream,
                    gpu_check *chk)
{
    return pupil_build(pp, set, dx_m, NULL, stream, chk);
}

int gpu_pupil_build_in(gpu_pupil *pp, const gpu_pupil_set *set, double dx_m,
                       const gpu_pupil_scratch *scr, cudaStream_t stream, gpu_check *chk)
{
    return pupil_build(pp, set, dx_m, scr, stream, chk);
}

/* Phase of wavefront w (waves) as the CPU computes it: reduced to one wave
 * in double, so the float trigonometry stays exact; the field a e^{i ph}. */
__device__ static inline cufftComplex phasor(float a, double w)
{
    float ph = (float)(TWO_PI * (w - floor(w)));
    float sn, cs;
    sincosf(ph, &sn, &cs);
    return make_float2(a * cs, a * sn);
}

/* sum_t c[t] Z_t(rho, theta) with each Z_t rounded to float as the stored
 * basis is, for pupils kept without a basis. Only field_kernel<false> and
 * field_open_kernel<false> call it: the call alone took the kernel from 38
 * to 84 registers (half the occupancy), which the common case, every pupil
 * with its basis, should not pay. */
__device__ __noinline__ static double zernike_sum(const gpu_pupil_set *set, const double *c,
                                                  double rho, double theta)
{
    double w = 0.0;
    for (int t = 0; t < set->nterms; ++t)
        if (c[t] != 0.0)
            w += c[t] * (float)zernike_eval(set->modes[t], set->modes[set->nterms + t], rho, theta);
    return w;
}

/* The segment terms at open sample k: sum_t c[seg * seg_nterms + t]
 * seg_basis_t, c the field's coefficients past its global ones (the CPU's
 * cpu_pupil_field, in the same order). Not inlined, as zernike_sum, so
 * that sets without segment terms keep the field kernels' registers. */
__device__ __noinline__ static double segment_sum(const gpu_pupil *pp, int nterms, size_t k,
                                                  const double *c)
{
    int sg = pp->seg[k];
    if (sg < 0) return 0.0;
    const double *cs = c + (size_t)sg * nterms;
    double w = 0.0;
    for (int t = 0; t < nterms; ++t)
        w += cs[t] * pp->seg_basis[(size_t)t * pp->nopen + k];
    return w;
}

/* The wavefront (waves) of one field at open sample k of pupil pp: the OPD
 * map's times ow (the field's opd_to_waves), then its Zernike terms, from
 * the stored basis or (a pupil kept without one) evaluated at rho, theta,
 * then its segment terms; c: the field's coefficients. Written once for
 * field_kernel and field_open_kernel, whose values must agree bit for bit;
 * inlined, and k of each kernel's own type (K: unsigned, size_t), so each
 * kernel compiles to the code it had when it held the sum itself (the same
 * PTX and sm_90 code; with k as size_t, field_kernel's branches differed). */
template <bool ALL_BASIS, typename K>
__device__ __forceinline__ static double field_wavefront(const gpu_pupil_set &set,
                                                         const gpu_pupil *pp, K k, const double *c,
                                                         double ow, double rho, double theta)
{
    double w = (pp->opd && ow != 0.0) ? pp->opd[k] * ow : 0.0;
    if (ALL_BASIS || pp->basis) {
        const float *b = pp->basis + k;
        size_t nopen = pp->nopen;
        for (int t = 0; t < set.nterms; ++t)
            w += c[t] * b[(size_t)t * nopen];
    } else {
        w += zernike_sum(&set, c, rho, theta);
    }
    if (pp->seg) w += segment_sum(pp, set.seg_nterms, k, c + set.nterms);
    return w;
}

/* One thread per sample for GPU_FIELDS_PER_THREAD consecutive fields
 * (blockIdx.z picks the group). Most samples are closed and only write a
 * zero, so the kernel is bound by how many stores each thread has in flight
 * behind its chain of dependent loads (measured 2026-11-29: one field per
 * thread reached 1.3 TB/s of writes). Hence: the group's field descriptors
 * and pupils are read once per block into shared memory, leaving one global
 * load (the sample's index) before the stores; a sample's index,
 * transmission and basis values serve all fields of the same pupil. */
template <bool ALL_BASIS>
__global__ static void field_kernel(gpu_pupil_set set, const gpu_pupil *__restrict__ pupils,
                                    const gpu_field_desc *__restrict__ desc,
                                    const double *__restrict__ coeff, int nfields,
                                    cufftComplex *__restrict__ field)
{
    __shared__ gpu_field_desc sd[GPU_FIELDS_PER_THREAD];
    __shared__ gpu_pupil sp[GPU_FIELDS_PER_THREAD];
    int s0 = blockIdx.z * GPU_FIELDS_PER_THREAD;
    int nf = nfields - s0 < GPU_FIELDS_PER_THREAD ? nfields - s0 : GPU_FIELDS_PER_THREAD;
    int tid = threadIdx.y * BX + threadIdx.x;
    if (tid < nf) {
        sd[tid] = desc[s0 + tid];
        sp[tid] = pupils[sd[tid].pupil];
    }
    __syncthreads();
    int dj = blockIdx.x * BX + threadIdx.x, di = blockIdx.y * BY + threadIdx.y;
    int npix = set.npix;
    if (dj >= npix || di >= npix) return;
    size_t plane = (size_t)npix * npix, p = (size_t)di * npix + dj;
    unsigned k = GPU_PUPIL_CLOSED;
    float a = 0.0f;
    double rho = 0.0, theta = 0.0;
#pragma unroll
    for (int i = 0; i < GPU_FIELDS_PER_THREAD; ++i) {
        if (i >= nf) break;
        const gpu_pupil *pp = &sp[i];
        if (i == 0 || sd[i].pupil != sd[i - 1].pupil) { /* this sample in a new pupil */
            k = pp->idx[p];
            if (k != GPU_PUPIL_CLOSED) {
                a = pp->amp[k];
                if (!ALL_BASIS && !pp->basis && set.nterms > 0) {
                    int c = npix / 2;
                    double x = (double)(unshift(dj, npix, set.natural) - c) * pp->dx_m;
                    double y = (double)(unshift(di, npix, set.natural) - c) * pp->dx_m;
                    rho = sqrt(x * x + y * y) / set.radius_m;
                    theta = atan2(y, x);
                }
            }
        }
        int s = s0 + i;
        cufftComplex v = make_float2(0.0f, 0.0f);
        if (k != GPU_PUPIL_CLOSED) {
            const double *c = coeff + (size_t)s * set.ncoeff;
            double w = field_wavefront<ALL_BASIS>(set, pp, k, c, sd[i].opd_to_waves, rho, theta);
            v = phasor(a, w);
        }
        field[(size_t)s * plane + p] = v;
    }
}

int gpu_pupil_field(const gpu_pupil_set *set, const gpu_pupil *pupils, int all_basis,
                    const gpu_field_desc *desc, const double *coeff, int nfields,
                    cufftComplex *field, cudaStream_t stream, gpu_check *chk)
{
    int groups = (nfields + GPU_FIELDS_PER_THREAD - 1) / GPU_FIELDS_PER_THREAD;
    dim3 grid = grid_for(set->npix, groups), block(BX, BY);
    if (all_basis || set->nterms == 0)
        field_kernel<true><<<grid, block, 0, stream>>>(*set, pupils, desc, coeff, nfields, field);
    else
        field_kernel<false><<<grid, block, 0, stream>>>(*set, pupils, desc, coeff, nfields, field);
    return GPU_LAUNCH(chk, "field_kernel");
}

/* One thread per open sample k (of the largest pupil) for
 * GPU_FIELDS_PER_THREAD consecutive fields (blockIdx.z picks the group):
 * field_kernel's work without the closed samples, whose zeros the field
 * buffer already holds. The sample's position, transmission and basis
 * values are read once per pupil and serve all the group's fields of that
 * pupil; the values written are field_kernel's, bit for bit. */
template <bool ALL_BASIS>
__global__ static void field_open_kernel(gpu_pupil_set set, const gpu_pupil *__restrict__ pupils,
                                         const gpu_field_desc *__restrict__ desc,
                                         const double *__restrict__ coeff, int nfields,
                                         cufftComplex *__restrict__ field)
{
    __shared__ gpu_field_desc sd[GPU_FIELDS_PER_THREAD];
    __shared__ gpu_pupil sp[GPU_FIELDS_PER_THREAD];
    int s0 = blockIdx.z * GPU_FIELDS_PER_THREAD;
    int nf = nfields - s0 < GPU_FIELDS_PER_THREAD ? nfields - s0 : GPU_FIELDS_PER_THREAD;
    if ((int)threadIdx.x < nf) {
        sd[threadIdx.x] = desc[s0 + threadIdx.x];
        sp[threadIdx.x] = pupils[sd[threadIdx.x].pupil];
    }
    __syncthreads();
    size_t k = (size_t)blockIdx.x * OPEN_THREADS + threadIdx.x;
    int npix = set.npix;
    size_t plane = (size_t)npix * npix;
    int open = 0;
    unsigned p = 0;
    float a = 0.0f;
    double rho = 0.0, theta = 0.0;
#pragma unroll
    for (int i = 0; i < GPU_FIELDS_PER_THREAD; ++i) {
        if (i >= nf) break;
        const gpu_pupil *pp = &sp[i];
        if (i == 0 || sd[i].pupil != sd[i - 1].pupil) { /* this sample in a new pupil */
            open = k < pp->nopen;
            if (open) {
                p = pp->pos[k];
                a = pp->amp[k];
                if (!ALL_BASIS && !pp->basis && set.nterms > 0) {
                    int c = npix / 2;
                    int dj = (int)(p % (unsigned)npix), di = (int)(p / (unsigned)npix);
                    double x = (double)(unshift(dj, npix, set.natural) - c) * pp->dx_m;
                    double y = (double)(unshift(di, npix, set.natural) - c) * pp->dx_m;
                    rho = sqrt(x * x + y * y) / set.radius_m;
                    theta = atan2(y, x);
                }
            }
        }
        if (!open) continue;
        int s = s0 + i;
        const double *c = coeff + (size_t)s * set.ncoeff;
        double w = field_wavefront<ALL_BASIS>(set, pp, k, c, sd[i].opd_to_waves, rho, theta);
        field[(size_t)s * plane + p] = phasor(a, w);
    }
}

int gpu_pupil_field_open(const gpu_pupil_set *set, const gpu_pupil *pupils, int all_basis,
                         const gpu_field_desc *desc, const double *coeff, int nfields,
                         size_t max_open, cufftComplex *field, cudaStream_t stream, gpu_check *chk)
{
    if (nfields < 1 || max_open == 0) return 0; /* nothing open: the zeros are the fields */
    int groups = (nfields + GPU_FIELDS_PER_THREAD - 1) / GPU_FIELDS_PER_THREAD;
    dim3 grid((unsigned)((max_open + OPEN_THREADS - 1) / OPEN_THREADS), 1, (unsigned)groups);
    if (all_basis || set->nterms == 0)
        field_open_kernel<true>
            <<<grid, OPEN_THREADS, 0, stream>>>(*set, pupils, desc, coeff, nfields, field);
    else
        field_open_kernel<false>
            <<<grid, OPEN_THREADS, 0, stream>>>(*set, pupils, desc, coeff, nfields, field);
    return GPU_LAUNCH(chk, "field_open_kernel");
}

void gpu_pupil_free(gpu_pupil *pp)
{
    cudaFree(pp->idx);
    cudaFree(pp->pos);
    cudaFree(pp->amp);
    cudaFree(pp->basis);
    cudaFree(pp->opd);
    cudaFree(pp->seg);
    cudaFree(pp->seg_basis);
    memset(pp, 0, sizeof *pp);
}

int gpu_pupil_load_kernels(gpu_check *chk)
{
    cudaFuncAttributes a;
    if (GPU_CUDA(chk, cudaFuncGetAttributes(&a, aperture_kernel)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, compact_kernel)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, field_kernel<true>)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, field_kernel<false>)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, field_open_kernel<true>)) ||
        GPU_CUDA(chk, cudaFuncGetAttributes(&a, field_open_kernel<false>)))
        return -1;
    return 0;
}
