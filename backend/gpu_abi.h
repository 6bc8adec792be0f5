/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU module's ABI: the one table libpsfsim-gpu.so (gpu/, CUDA) exports
 * as psf_gpu_module_entry, as the FITS, HDF5 and plot modules do
 * (app/formats/fits_abi.h, app/formats/hdf5_abi.h, app/select/plot_abi.h).
 * psfsim loads it on first use (app/select/gpu_loader.c) and refuses a table
 * of another GPU_MODULE_ABI or size, so a stale module is never misread. It
 * lies below gpu/ and app/ so that both see it and app/ includes no gpu/
 * header. A plain C header: no CUDA type. */
#ifndef PSFSIM_GPU_ABI_H
#define PSFSIM_GPU_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "backend/backend.h"

#define GPU_MODULE_NAME "libpsfsim-gpu.so"
#define GPU_MODULE_ENTRY "psf_gpu_module_entry"
/* Raised whenever the table, gpu_basics, gpu_versions or psf_backend_ops
 * (with the problem and options it takes) changes, so a stale module is refused. */
/* 5: psf_problem.levels, psf_backend_ops.run_levels (issue 17); 6: psf_job.done's scan,
 * psf_job.stream; 7: psf_detector.blocks (issue 26); 8: gpu_module_ops.memory,
 * psf_backend_ops.run_measured (issue 27); 9: gpu_module_ops.vjp (issue 28); 10:
 * gpu_vjp_ops.run_device (device cotangents); 11: gpu_memory_ops.host_alloc; 12:
 * gpu_vjp_ops.fit_loss, fit_fisher (the retrieval's evaluations on the device); 13:
 * gpu_vjp_ops.fit_evaluate (an evaluation in one call) instead of fit_loss */
#define GPU_MODULE_ABI 13

/* Images per run() call the GPU backend asks for (its preferred_batch):
 * known to the cost model without loading the module. */
#define PSF_GPU_PREFERRED_BATCH 1024

/* GPU figures for the latency probe (docs/design.md, "Backend choice"). */
typedef struct {
    char name[256];   /* device 0's name */
    double start_us;  /* first CUDA runtime call until a context is ready */
    double launch_us; /* empty kernel launch to stream sync, median */
    double h2d_us;    /* 4-byte pinned host-to-device copy + sync, median */
    double d2h_us;    /* 4-byte pinned device-to-host copy + sync, median */
    double d2h_gbs;   /* 64 MiB pinned device-to-host copy, GB/s (1e9 B/s) */
    int device_count; /* CUDA devices visible to the process (cudaGetDeviceCount) */
} gpu_basics;

/* The CUDA libraries of the module (none of them needs a device or a
 * driver to say): versions as cuFFT and CUDA encode them. */
typedef struct {
    int cufft;       /* cufftGetVersion: the libcufft loaded, major * 1000 + minor * 100 +
                        patch; -1 when it fails */
    int cufft_built; /* CUFFT_VERSION of the headers the module was built with */
    int cudart;      /* CUDART_VERSION (the runtime is static in the module): major * 1000 +
                        minor * 10 */
} gpu_versions;

/* Device memory for the library's device outputs (lib/psfsim.h,
 * psfsim_compute_device; gpu/device_memory.cu): what the library needs of
 * CUDA beside the backend, so that libpsfsim itself never links the CUDA
 * runtime. Every function makes device `device` current on the calling
 * thread first; each returns 0, or -1 with a message naming the CUDA call
 * in err (errlen bytes). */
typedef struct {
    /* Where p points: *kind 1 device memory of CUDA device *device (managed
     * memory counts: the GPU writes it), 2 pinned host memory (cudaHostAlloc,
     * cudaHostRegister: the GPU's copies reach it at the link's rate), 0
     * other host memory (*device -1 for both). Never fails for a host
     * pointer CUDA does not know. */
    int (*pointer)(const void *p, int *kind, int *device, char *err, size_t errlen);
    /* bytes of device memory on device (cudaMallocAsync from the device's
     * default pool on a stream of the module's, waited for, so it is ready
     * for any stream). NULL with err on failure. */
    void *(*alloc)(int device, size_t bytes, char *err, size_t errlen);
    /* Free what alloc gave, ordered after all work queued on the legacy
     * default stream (cudaFreeAsync on it): a consumer on the default
     * stream may still be reading it. NULL: nothing. */
    void (*release)(int device, void *p);
    /* bytes from src to dst, either on the host or the device
     * (cudaMemcpyDefault), on a non-blocking stream of the module's,
     * complete on return. */
    int (*copy)(int device, void *dst, const void *src, size_t bytes, char *err, size_t errlen);
    /* Wait until the work queued on the caller's stream (a cudaStream_t,
     * NULL = the legacy default stream) is done (cudaStreamSynchronize). */
    int (*wait_stream)(int device, void *stream, char *err, size_t errlen);
    /* bytes of pinned (page-locked) host memory, portable to every device
     * (cudaHostAlloc, cudaHostAllocPortable): the GPU's copies reach it at
     * the link's rate. NULL with err on failure. */
    void *(*host_alloc)(size_t bytes, char *err, size_t errlen);
    /* Free what host_alloc gave (cudaFreeHost, which waits for the
     * device's work). NULL: nothing. */
    void (*host_release)(void *p);
} gpu_memory_ops;

/* The gradients on the GPU (issue 28; gpu/adjoint.cu, lib/vjp_gpu.c,
 * docs/design.md "Gradients on the GPU"): the double model of an FFT set's
 * images (cpu/adjoint.h's) and its adjoint, for a batch of rows, each row
 * one wavelength component of one image. Per row r on pupil p (nopen
 * samples, basis B_p [K][nopen]):
 *   W_r = coeff_r . B_p (waves; a cuBLAS DGEMM over the batch, or for at
 *         most 16 rows the field kernel's own sum),
 *   U_r = A exp(i 2 pi (W_r - floor W_r)) at the samples' FFT indices of
 *         the zeroed N x N grid, E_r = FFT(U_r) (cuFFT Z2Z, forward),
 *   image[row's image][shift(q)] += scale_r |E_r[q]|^2 (shift: the zero
 *         frequency to (N/2, N/2), cpu/adjoint_transform.c's table),
 *         then the detector stage (gpu_vjp_detector) if set,
 * and with a cotangent (per image, as the images; g its transpose through
 * the detector stage, N x N):
 *   B_r = F^H(scale_r g[shift(q)] E_r[q]) (the inverse Z2Z, unnormalised),
 *   dW_r[k] = 4 pi Im(B_r[dest k] conj(U_r[k])),
 *   gcoeff_r = B_p dW_r (a DGEMM, or for at most 16 rows a kernel of
 *         fixed-order sums), d_opd_p[k] += sum_r opd_weight_r dW_r[k]
 *         (a DGEMV).
 * Everything in double. Every function makes the instance's device
 * current first; each that can fail returns 0, or -1 with a message
 * naming the CUDA, cuFFT or cuBLAS call in err. PSFSIM_GPU_FAIL_AT=n
 * (gpu/cuda_check.h) fails the n-th checked call of each create,
 * add_pupil, set_row and run (fit_evaluate counts afresh at its forward
 * and at its backward, as two runs). An instance is one caller's at a
 * time. */
typedef struct gpu_vjp gpu_vjp;

typedef struct {
    int pupil;         /* add_pupil's index */
    int image;         /* the image of the run it adds to, 0 .. nimages - 1 */
    double scale;      /* the component's intensity scale */
    double opd_weight; /* its factor in d_opd (the component's opd_to_waves) */
} gpu_vjp_row;

/* The detector stage (cpu/adjoint_detector.c's, backend/detector.h): the
 * N x N grid image I becomes D = S(h * I) [M][M], h * I = C2R(R2C(I) T),
 * S the sampling: D[i][j] = the sum of the s x s block at (i s + off,
 * j s + off) (bins), or s^2 I there; its transpose scatters, then
 * convolves with conj(T). */
typedef struct {
    int m;             /* M: N / s when sampled, else N */
    int s, off;        /* the oversampling, the first sample's offset */
    int sample, bins;  /* 1: sampled; 1: WebbPSF's blocks summed */
    int convolve;      /* 1: the convolution (otf given) */
    const double *otf; /* [N][N/2 + 1] complex (re, im): T / N^2 (psf_detector_otf_double) */
} gpu_vjp_detector;

typedef struct {
    /* An instance on CUDA device `device` for N x N grids (n) and K basis
     * rows per pupil (nbasis >= 1). */
    int (*create)(int device, int n, int nbasis, gpu_vjp **out, char *err, size_t errlen);
    /* A pupil: nopen samples, dest[k] the FFT index (< N N) of sample k,
     * amp[k] its transmission, basis [nbasis][nopen] (row-major); copied.
     * *index gets its number (0, 1, ...; at most 64 pupils). */
    int (*add_pupil)(gpu_vjp *v, size_t nopen, const unsigned *dest, const double *amp,
                     const double *basis, int *index, char *err, size_t errlen);
    /* Replace row `row` of pupil pupil's basis with values [nopen] (the
     * OPD row when the call's OPD map input changes). */
    int (*set_row)(gpu_vjp *v, int pupil, int row, const double *values, char *err, size_t errlen);
    /* The detector stage d (copied) from now on: the images and the
     * cotangents of run are then [M][M]. */
    int (*set_detector)(gpu_vjp *v, const gpu_vjp_detector *d, char *err, size_t errlen);
    /* nrows rows (coeff [nrows][K]), their images non-decreasing, adding
     * to nimages images: images (NULL: not wanted) gets [nimages][M][M]
     * (M = N without a detector stage, which each image's grid then goes
     * through); with cotangent [nimages][M][M] (NULL: a forward only; its
     * transpose through the stage first) gcoeff
     * [nrows][K] gets each row's gradient and d_opd (NULL, or one pointer
     * per pupil, each NULL or [nopen]) is added to. Rows run grouped by
     * pupil, in batches of the instance's size (its buffers and cuFFT
     * plans made on first need). */
    int (*run)(gpu_vjp *v, int nimages, const double *cotangent, double *images, int nrows,
               const gpu_vjp_row *rows, const double *coeff, double *gcoeff, double *const *d_opd,
               char *err, size_t errlen);
    /* Free everything (NULL: nothing). */
    void (*destroy)(gpu_vjp *v);
    /* As run, with cotangent (NULL: a forward) and images (NULL: not
     * wanted) in device memory (reachable from the instance's device),
     * dtype 0 float (converted to double on the device: the model and the
     * gradients stay double) or 1 double, each [nimages][M][M]; turn 1:
     * each image's M M values read and written in reverse order (the
     * "poppy" orientation's 180-degree turn), on the device. Nothing
     * crosses to the host but the rows' coefficients and gradients. */
    int (*run_device)(gpu_vjp *v, int nimages, int dtype, int turn, const void *cotangent,
                      void *images, int nrows, const gpu_vjp_row *rows, const double *coeff,
                      double *gcoeff, double *const *d_opd, char *err, size_t errlen);
    /* The Fisher matrix's products (lib/fit/fisher.c) on the device: plus
     * [nparams][nimages][npix] (device) the images at p + h e_j, images
     * those at p, w the weights (device), flux [nimages] (host); plus is
     * overwritten by the weighted Jacobian U_j = sqrt(w) f_k (plus_j - I)
     * / h (forward differences), then G [nparams][nparams] (host) = U^T U
     * (cuBLAS DSYRK) and y [nimages][2][nparams] (host) = image k's
     * U^T sqrt(w) I and U^T sqrt(w) (DGEMV). */
    int (*fit_fisher)(gpu_vjp *v, int nimages, size_t npix, int nparams, const double *w,
                      const double *images, double *plus, const double *flux, double h, double *G,
                      double *y, char *err, size_t errlen);
    /* One evaluation of a retrieval whose images stay on the device
     * (lib/retrieve_gpu.c), waited for once (for one batch of rows
     * without an OPD gradient; else also each batch's and the OPD sum's
     * copy back, as run_device's):
     * - run_device's forward of rows and coeff into images (device
     *   [nimages][npix] double, npix = M M, turned as turn);
     * - the fit's projected loss (lib/fit/fit.h, fit_loss) of those
     *   images: data and w (the weights) device [nimages][npix]; per
     *   image k the flux f and background b minimising sum w (d - f I -
     *   b)^2 (lib/fit/objective.c's solve_linear: fit & 1 the flux
     *   fitted, fit & 2 the background; the others, and a degenerate
     *   system's, at fixed[2k], fixed[2k + 1] (host)); then, with r = d -
     *   (f I + b), cot (device [nimages][npix]) = -f w r, the cotangent of
     *   the loss 1/2 sum w r^2, and out (host [nimages][3]) = f, b and
     *   that loss, every sum in a fixed order (the same bits each call);
     * - run_device's backward of cot into gcoeff and d_opd.
     * images: NULL (unturned only: the images stay in the module's
     * buffers), or receives them; cot (required): scratch for the
     * cotangent, which an unturned evaluation keeps in the module's own
     * buffer instead. */
    int (*fit_evaluate)(gpu_vjp *v, int nimages, int turn, int nrows, const gpu_vjp_row *rows,
                        const double *coeff, size_t npix, const double *data, const double *w,
                        double *images, int fit, const double *fixed, double *cot, double *out,
                        double *gcoeff, double *const *d_opd, char *err, size_t errlen);
} gpu_vjp_ops;

typedef struct {
    int abi;     /* GPU_MODULE_ABI */
    size_t size; /* sizeof(gpu_module_ops) */
    /* The CUDA backend (gpu/backend.cu). */
    const psf_backend_ops *backend;
    /* Measure device 0 into out (gpu/probe.cu). The first CUDA call of the
     * process should be this one, so that start_us is the real start cost.
     * Returns 0, or -1 with err (no device, no driver, CUDA error). */
    int (*probe_basics)(gpu_basics *out, char *err, size_t errlen);
    /* The module's library versions into out (gpu/probe.cu): no CUDA call
     * that needs a device or the driver. */
    void (*versions)(gpu_versions *out);
    /* Device memory for device outputs (gpu/device_memory.cu). */
    const gpu_memory_ops *memory;
    /* The gradients (gpu/adjoint.cu); NULL: the library computes them on
     * the CPU. */
    const gpu_vjp_ops *vjp;
} gpu_module_ops;

/* Marks the entry (the module is built with hidden visibility). */
#define GPU_MODULE_EXPORT __attribute__((visibility("default")))

/* Defined by the module only (gpu/backend.cu). */
extern GPU_MODULE_EXPORT const gpu_module_ops psf_gpu_module_entry;

#ifdef __cplusplus
}
#endif

#endif
