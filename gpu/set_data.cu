/* SPDX-License-Identifier: BSD-3-Clause */
/* The set's data on the CUDA device: the maps and Zernike modes uploaded
 * at create (upload_set, and the pupil kernels' view of the set,
 * gpu_pupil_set), and the pupils, one per pitch, built on first use in a
 * run (pupil_for; gpu/pupil.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <cufft.h>

extern "C" {
#include "backend/backend.h"
}

#include "gpu/backend_state.h"
#include "gpu/cuda_check.h"
#include "gpu/pupil.h"
#include "gpu/set_data.h"
#include "optics/map_sample.h"

/* Copy a host array to new device memory. */
template <typename T> static int upload(psf_backend *b, T **dst, const T *src, size_t count)
{
    if (GPU_CUDA(&b->chk, cudaMalloc(dst, count * sizeof(T)))) {
        *dst = NULL;
        return -1;
    }
    return GPU_CUDA(&b->chk, cudaMemcpy(*dst, src, count * sizeof(T), cudaMemcpyHostToDevice));
}

/* The segment modes on the device (gpu_pupil_set.seg_modes), when the
 * problem has segment terms. */
static int upload_seg_modes(psf_backend *b)
{
    int nt = b->ncoeff > b->nterms ? b->set.seg_modes.nterms : 0;
    if (nt <= 0) return 0;
    int *nm = (int *)malloc(2 * (size_t)nt * sizeof *nm);
    if (!nm) {
        snprintf(b->chk.err, b->chk.errlen, "gpu: out of host memory");
        return -1;
    }
    for (int t = 0; t < nt; ++t) {
        nm[t] = b->set.seg_modes.n[t];
        nm[nt + t] = b->set.seg_modes.m[t];
    }
    int rc = upload(b, &b->d_seg_modes, nm, 2 * (size_t)nt);
    free(nm);
    if (rc) return -1;
    b->pset.seg_nterms = nt;
    b->pset.seg_modes = b->d_seg_modes;
    return 0;
}

/* The maps and modes on the device, and the pupil kernels' view of the set. */
int upload_set(psf_backend *b)
{
    const psf_problem *s = &b->set;
    gpu_pupil_set *ps = &b->pset;
    memset(ps, 0, sizeof *ps);
    ps->npix = b->grid;
    ps->natural = b->mft; /* the MFT's pupil grid is row-major, the FFT's in FFT order */
    ps->radius_m = 0.5 * s->aperture.diameter_m;
    aperture_geom_init(&s->aperture, &ps->geom);
    const double d = s->aperture.diameter_m; /* a map's extent, 0: D (map_extent_m) */
    ps->map_width_m = map_extent_m(s->aperture.map_width_m, d);
    ps->map_height_m = map_extent_m(s->aperture.map_height_m, d);
    ps->opd_width_m = map_extent_m(s->opd_width_m, d);
    ps->opd_height_m = map_extent_m(s->opd_height_m, d);
    if (s->aperture.shape == APERTURE_FILE) {
        if (upload(b, &b->d_amp_map, s->aperture.map,
                   (size_t)s->aperture.map_rows * s->aperture.map_cols))
            return -1;
        ps->amp_map = b->d_amp_map;
        ps->map_rows = s->aperture.map_rows;
        ps->map_cols = s->aperture.map_cols;
    }
    if (s->opd_map) {
        if (upload(b, &b->d_opd_map, s->opd_map, (size_t)s->opd_rows * s->opd_cols)) return -1;
        ps->opd_map = b->d_opd_map;
        ps->opd_rows = s->opd_rows;
        ps->opd_cols = s->opd_cols;
    }
    ps->nterms = b->nterms;
    ps->ncoeff = b->ncoeff;
    ps->basis_max_bytes = GPU_PUPIL_BASIS_MAX_BYTES;
    const char *mb = getenv("PSFSIM_GPU_BASIS_MAX_MB");
    if (mb && *mb) {
        char *end;
        long long v = strtoll(mb, &end, 10);
        if (*end == '\0' && v >= 0) ps->basis_max_bytes = (size_t)v << 20;
    }
    if (b->nterms > 0) {
        int *nm = (int *)malloc(2 * (size_t)b->nterms * sizeof *nm);
        if (!nm) {
            snprintf(b->chk.err, b->chk.errlen, "gpu: out of host memory");
            return -1;
        }
        for (int t = 0; t < b->nterms; ++t) {
            nm[t] = s->modes.n[t];
            nm[b->nterms + t] = s->modes.m[t];
        }
        int rc = upload(b, &b->d_modes, nm, 2 * (size_t)b->nterms);
        free(nm);
        if (rc) return -1;
        ps->modes = b->d_modes;
    }
    return upload_seg_modes(b);
}

/* The single-image plan's pupil build, in its two buffers (no pass runs
 * while pupils are built, gpu_run): the aperture grid in the image buffer,
 * the open flags scanned in place at the start of the grid's 8 N^2 bytes,
 * the scan's storage after them. */
static int pupil_build_lean(psf_backend *b, gpu_pupil *pp, double dx_m)
{
    size_t idx_bytes = ((b->pplane + 1) * sizeof(unsigned) + 255) & ~(size_t)255;
    size_t grid_bytes = b->pplane * sizeof(cufftComplex);
    gpu_pupil_scratch scr;
    scr.amp = b->dimg[0];
    scr.idx = (unsigned *)(void *)b->field;
    scr.tmp = (unsigned char *)(void *)b->field + idx_bytes;
    scr.tmp_bytes = grid_bytes > idx_bytes ? grid_bytes - idx_bytes : 0;
    return gpu_pupil_build_in(pp, &b->pset, dx_m, &scr, b->compute, &b->chk);
}

/* The pupil for pitch dx_m, built on first use (as the CPU backend does). */
int pupil_for(psf_backend *b, double dx_m)
{
    for (int i = 0; i < b->npupils; ++i)
        if (fabs(b->pupils[i].dx_m - dx_m) <= 1e-12 * dx_m) return i;
    if (!(dx_m > 0.0) || !isfinite(dx_m)) {
        snprintf(b->chk.err, b->chk.errlen, "gpu: pupil pitch %g m is not positive", dx_m);
        return -1;
    }
    if (b->npupils == PSF_MAX_COMPONENTS) {
        snprintf(b->chk.err, b->chk.errlen, "gpu: more than %d pupil pitches in one set",
                 PSF_MAX_COMPONENTS);
        return -1;
    }
    int i = b->npupils;
    if (b->lean ? pupil_build_lean(b, &b->pupils[i], dx_m)
                : gpu_pupil_build(&b->pupils[i], &b->pset, dx_m, b->compute, &b->chk))
        return -1;
    /* Into the device table the field kernel reads. Pageable source: the
     * copy has taken it when the call returns. */
    if (GPU_CUDA(&b->chk, cudaMemcpyAsync(&b->d_pupils[i], &b->pupils[i], sizeof(gpu_pupil),
                                          cudaMemcpyHostToDevice, b->compute))) {
        gpu_pupil_free(&b->pupils[i]);
        return -1;
    }
    if (b->nterms > 0 && b->pupils[i].nopen > 0 && !b->pupils[i].basis) b->all_basis = 0;
    b->npupils++;
    return i;
}
