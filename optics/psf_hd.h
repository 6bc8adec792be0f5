/* SPDX-License-Identifier: BSD-3-Clause */
/* PSF_HD marks the per-sample optics formulas that both the C host code and the
 * CUDA kernels compile (as __host__ __device__ under nvcc), so the GPU backend
 * evaluates exactly the code the CPU backend and the tests check. */
#ifndef PSFSIM_PSF_HD_H
#define PSFSIM_PSF_HD_H
#ifdef __CUDACC__
#define PSF_HD __host__ __device__ static inline
#else
#define PSF_HD static inline
#endif
#endif
