/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU backend's per-set pupils (the twin of cpu/pupil.h): for one
 * pupil pitch, the open samples of the aperture with their transmission,
 * Zernike basis values and OPD, computed once on the device and reused for
 * every image; and the kernel that writes a batch of pupil fields
 * A exp(+i 2 pi W) from per-field coefficients, so no pupil is ever built
 * on the host or uploaded per image.
 *
 * Layouts. The N x N grid is centred as in optics/aperture.h (sample (i, j)
 * at x = (j - N/2) dx, y = (i - N/2) dx); everything indexed by pixel is in
 * FFT order: sample (i, j) is stored at p = ((i - N/2) mod N) * N +
 * ((j - N/2) mod N), so the optical axis is at index 0 (ifftshift). For the
 * MFT (gpu_pupil_set.natural) the grid is the G x G pupil grid, centred the
 * same way, in natural order instead: p = i * G + j (cpu_pupil_build_compact's
 * grid). Open samples are numbered k = 0..nopen-1 in increasing p, so
 * neighbouring threads read neighbouring basis values.
 *
 * Two field kernels. The dense one writes every sample of a field (zeros at
 * the closed ones); the open-sample one writes only the open samples, for a
 * field buffer whose other samples are known to be zero already (the FFT is
 * out of place and the MFT's products read their input, so a buffer keeps
 * its zeros from pass to pass). At N = 4096 the open samples are ~18% of the
 * grid. */
#ifndef PSFSIM_GPU_PUPIL_GPU_H
#define PSFSIM_GPU_PUPIL_GPU_H

#include <math.h>
#include <stddef.h>

#include <cuda_runtime.h>
#include <cufft.h>

#include "gpu/cuda_check.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Inside extern "C": optics/ headers declare C functions. */
#include "optics/aperture_geom.h"

/* idx value of a closed sample (transmission 0). */
#define GPU_PUPIL_CLOSED 0xFFFFFFFFu
/* Largest N: open-sample numbers are 32-bit (N^2 < 2^32). */
#define GPU_PUPIL_MAX_NPIX 65535
/* The basis is kept (nterms * nopen floats) only up to this size and half
 * the free device memory; above it the field kernel evaluates zernike_eval
 * itself for every image (slower, same values). PSFSIM_GPU_BASIS_MAX_MB
 * overrides the size (read in create; tests set 0 to exercise that path). */
#define GPU_PUPIL_BASIS_MAX_BYTES ((size_t)2 << 30)

/* Everything of the set the pupil kernels need, fixed at create. Device
 * pointers. */
typedef struct {
    int npix;               /* N: the grid (the FFT's, or the MFT's pupil grid G) */
    int natural;            /* 0: FFT order (the FFT's input); 1: natural order (the MFT's) */
    double radius_m;        /* D / 2: rho = r / radius */
    psf_aperture_geom geom; /* optics/aperture_geom.h, evaluated per sample */
    const float *amp_map;   /* [map_rows * map_cols] transmission map (APERTURE_FILE), or NULL */
    int map_rows, map_cols;
    double map_width_m, map_height_m; /* the transmission map's extent (map_bilinear_wh) */
    double opd_width_m, opd_height_m; /* the OPD map's extent */
    const float *opd_map;             /* [opd_rows * opd_cols] OPD map, or NULL */
    int opd_rows, opd_cols;
    int nterms;
    const int *modes;       /* [2 * nterms]: n[0..nterms-1] then m[0..nterms-1] */
    int seg_nterms;         /* segment terms (psf_problem.seg_modes), 0 = none */
    const int *seg_modes;   /* [2 * seg_nterms]: n then m, as modes */
    int ncoeff;             /* coefficients per field: psf_coeff_count (nterms, then the
                               segments' seg_nterms each) */
    size_t basis_max_bytes; /* largest basis kept (GPU_PUPIL_BASIS_MAX_BYTES) */
} gpu_pupil_set;

/* One pupil (one pitch). Copied by value into device memory (a table of
 * them that the field kernel indexes), so plain old data. */
typedef struct {
    double dx_m;      /* pupil pitch, metres */
    size_t nopen;     /* samples with transmission > 0 */
    unsigned *idx;    /* device [N*N], grid order: open-sample number k, or GPU_PUPIL_CLOSED;
                         NULL when built by gpu_pupil_build_in */
    unsigned *pos;    /* device [nopen]: the grid position p of open sample k (idx inverted) */
    float *amp;       /* device [nopen] transmission in (0, 1] */
    float *basis;     /* device [nterms * nopen] Z_t at sample k at t*nopen + k (unit RMS),
                         or NULL: the field kernel evaluates zernike_eval */
    float *opd;       /* device [nopen] OPD map value (map units), or NULL without a map */
    int *seg;         /* device [nopen] the sample's segment or -1 (optics/seg_wavefront.h),
                         NULL without segment terms */
    float *seg_basis; /* device [seg_nterms * nopen] segment term t at sample k at
                         t * nopen + k, NULL without */
} gpu_pupil;

/* One field of a batch (a job's component): which pupil, and the OPD scale.
 * Its Zernike coefficients are row s (ncoeff long) of the pass's coefficient array. */
typedef struct {
    int pupil; /* index into the device pupil table */
    int reserved;
    double opd_to_waves; /* OPD map value times this = waves; 0 = no OPD */
} gpu_field_desc;

/* Build the pupil of pitch dx_m on the device, on stream (waits for it once,
 * to learn nopen). Uses aperture_sample and map_bilinear
 * (optics/aperture_geom.h, optics/map_sample.h) and zernike_eval, the same
 * code as the CPU backend. Keeps the basis when it is at most
 * set->basis_max_bytes and half of the free memory. Returns 0, or -1
 * with chk's message; on failure pp holds nothing. */
int gpu_pupil_build(gpu_pupil *pp, const gpu_pupil_set *set, double dx_m, cudaStream_t stream,
                    gpu_check *chk);

/* Device memory a pupil is built in instead of its own temporaries (the
 * single-image plan, gpu/set_data.cu: its field and image buffers, free
 * while no pass runs). */
typedef struct {
    float *amp;    /* [N*N]: the aperture grid */
    unsigned *idx; /* [N*N + 1]: the open flags, scanned in place into the numbers */
    void *tmp;     /* the scan's temporary storage, used when it needs at most tmp_bytes */
    size_t tmp_bytes;
} gpu_pupil_scratch;

/* gpu_pupil_build with the aperture grid, the open flags and their scan in
 * scr (the scan's storage cudaMalloc'd only when it needs more than
 * scr->tmp_bytes): the same open samples, transmission, basis and OPD, but
 * no index over the grid is kept (pp->idx NULL), so its fields are written
 * by gpu_pupil_field_open into a zeroed buffer, never by gpu_pupil_field.
 * Device memory kept: the per-open-sample arrays alone. Whatever scr held
 * is overwritten. Returns 0, or -1 with chk's message. */
int gpu_pupil_build_in(gpu_pupil *pp, const gpu_pupil_set *set, double dx_m,
                       const gpu_pupil_scratch *scr, cudaStream_t stream, gpu_check *chk);

/* Write nfields pupil fields into field (device, nfields x N*N cufftComplex,
 * grid order, field s at s*N*N): A exp(+i 2 pi W) at open samples, 0 at the
 * others, with W = sum_t coeff[s*nterms + t] Z_t + opd * opd_to_waves in
 * waves (accumulated in double and reduced to one wave before the float
 * sine and cosine, as the CPU does). pupils: device table indexed by
 * desc[s].pupil; desc[nfields], coeff[nfields * nterms]: device. nfields
 * <= 65535. all_basis: 1 when every pupil the fields use has its basis
 * (the lean kernel), 0 when some may not (a kernel that can evaluate
 * zernike_eval, at half the occupancy). Returns 0, or -1 with chk's
 * message (launch error). */
int gpu_pupil_field(const gpu_pupil_set *set, const gpu_pupil *pupils, int all_basis,
                    const gpu_field_desc *desc, const double *coeff, int nfields,
                    cufftComplex *field, cudaStream_t stream, gpu_check *chk);

/* The same fields as gpu_pupil_field, but only the open samples of each
 * field's pupil are written: the caller guarantees that every other sample
 * of field s is already zero (it holds a field of the same pupil, or was
 * written by gpu_pupil_field with that pupil). max_open: the largest nopen of
 * the pupils the fields use (the grid's size). Returns 0, or -1 with chk's
 * message (launch error). */
int gpu_pupil_field_open(const gpu_pupil_set *set, const gpu_pupil *pupils, int all_basis,
                         const gpu_field_desc *desc, const double *coeff, int nfields,
                         size_t max_open, cufftComplex *field, cudaStream_t stream, gpu_check *chk);

void gpu_pupil_free(gpu_pupil *pp);

/* Load this file's kernels now (cudaFuncGetAttributes), so that lazy module
 * loading costs the backend's create rather than its first run, and a GPU
 * the kernels were not built for is refused there. Returns 0, or -1 with
 * chk's message (e.g. no kernel image for this device). */
int gpu_pupil_load_kernels(gpu_check *chk);

#ifdef __cplusplus
}
#endif

#endif
