/* SPDX-License-Identifier: BSD-3-Clause */
#include "gpu/intensity.h"

/* 32 columns (one warp: 128-byte coalesced writes) x 8 rows per block. */
#define BX 32
#define BY 8

/* Images one thread writes: independent loads and stores in flight. */
#define GPU_IMAGES_PER_THREAD 8

/* One thread per pixel (r, c) for GPU_IMAGES_PER_THREAD consecutive entries
 * (blockIdx.z picks the group), whose descriptors the block reads once into
 * shared memory (see field_kernel in gpu/pupil.cu: the same reasoning).
 * SHIFT: the FFT's layout (zero frequency at 0, moved to N/2); without it
 * the field is already centred (the MFT's). PAIRS: image 2p's pixel in the
 * .x, 2p+1's in the .y of complex image p (gpu_psf_intensity_pairs). */
template <bool SHIFT, bool PAIRS>
__global__ static void intensity_kernel(const cufftComplex *__restrict__ field,
                                        const float *__restrict__ scale,
                                        const gpu_pass_image *__restrict__ images, int nimages,
                                        int npix, float *__restrict__ out)
{
    __shared__ gpu_pass_image se[GPU_IMAGES_PER_THREAD];
    int e0 = blockIdx.z * GPU_IMAGES_PER_THREAD;
    int ne = nimages - e0 < GPU_IMAGES_PER_THREAD ? nimages - e0 : GPU_IMAGES_PER_THREAD;
    int tid = threadIdx.y * BX + threadIdx.x;
    if (tid < ne) se[tid] = images[e0 + tid];
    __syncthreads();
    int c = blockIdx.x * BX + threadIdx.x, r = blockIdx.y * BY + threadIdx.y;
    if (c >= npix || r >= npix) return;
    int h = npix / 2;
    int u = !SHIFT ? r : r >= h ? r - h : r + (npix - h);
    int v = !SHIFT ? c : c >= h ? c - h : c + (npix - h);
    size_t plane = (size_t)npix * npix, pix = (size_t)r * npix + c;
    const cufftComplex *src = field + (size_t)u * npix + v;
#pragma unroll
    for (int j = 0; j < GPU_IMAGES_PER_THREAD; ++j) {
        if (j >= ne) break;
        const gpu_pass_image e = se[j];
        float acc = 0.0f;
        for (int f = e.first_field; f < e.first_field + e.nfields; ++f) {
            cufftComplex z = src[(size_t)f * plane];
            acc += scale[f] * (z.x * z.x + z.y * z.y);
        }
        float *dst = PAIRS ? out + 2 * ((size_t)(e.image >> 1) * plane + pix) + (e.image & 1)
                           : out + (size_t)e.image * plane + pix;
        *dst = e.accumulate ? *dst + acc : acc;
    }
}

static dim3 grid_for(int nimages, int npix)
{
    int groups = (nimages + GPU_IMAGES_PER_THREAD - 1) / GPU_IMAGES_PER_THREAD;
    return dim3((unsigned)((npix + BX - 1) / BX), (unsigned)((npix + BY - 1) / BY),
                (unsigned)groups);
}

int gpu_psf_intensity(const cufftComplex *field, const float *scale, const gpu_pass_image *images,
                      int nimages, int npix, float *out, cudaStream_t stream, gpu_check *chk)
{
    intensity_kernel<true, false><<<grid_for(nimages, npix), dim3(BX, BY), 0, stream>>>(
        field, scale, images, nimages, npix, out);
    return GPU_LAUNCH(chk, "intensity_kernel");
}

int gpu_psf_intensity_centred(const cufftComplex *field, const float *scale,
                              const gpu_pass_image *images, int nimages, int npix, float *out,
                              cudaStream_t stream, gpu_check *chk)
{
    intensity_kernel<false, false><<<grid_for(nimages, npix), dim3(BX, BY), 0, stream>>>(
        field, scale, images, nimages, npix, out);
    return GPU_LAUNCH(chk, "intensity_kernel");
}

int gpu_psf_intensity_pairs(const cufftComplex *field, const float *scale,
                            const gpu_pass_image *images, int nimages, int npix, int centred,
                            float *out, cudaStream_t stream, gpu_check *chk)
{
    dim3 g = grid_for(nimages, npix), b(BX, BY);
    if (centred)
        intensity_kernel<false, true>
            <<<g, b, 0, stream>>>(field, scale, images, nimages, npix, out);
    else
        intensity_kernel<true, true><<<g, b, 0, stream>>>(field, scale, images, nimages, npix, out);
    return GPU_LAUNCH(chk, "intensity_kernel");
}

int gpu_psf_load_kernels(gpu_check *chk)
{
    cudaFuncAttributes a;
    return GPU_CUDA(chk, cudaFuncGetAttributes(&a, intensity_kernel<true, false>)) ||
                   GPU_CUDA(chk, cudaFuncGetAttributes(&a, intensity_kernel<false, false>)) ||
                   GPU_CUDA(chk, cudaFuncGetAttributes(&a, intensity_kernel<true, true>)) ||
                   GPU_CUDA(chk, cudaFuncGetAttributes(&a, intensity_kernel<false, true>))
               ? -1
               : 0;
}
