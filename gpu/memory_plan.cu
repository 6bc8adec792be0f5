/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA backend's memory plan: what a set needs on the device at a
 * capacity C, the capacity create chooses against the free memory, the
 * single-image plan's check, and psf_backend_ops.memory_need. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <cufft.h>

extern "C" {
#include "backend/backend.h"
#include "backend/bytes.h"
#include "backend/detector.h"
}

#include "gpu/backend_state.h"
#include "gpu/batch.h"
#include "gpu/cuda_check.h"
#include "gpu/detector.h"
#include "gpu/levels.h"
#include "gpu/memory_plan.h"
#include "gpu/mft.h"
#include "gpu/plan_cache.h"
#include "gpu/pupil.h"

/* Aim for sub-batches of about this many image bytes: big enough that a
 * pass's launches and the copy's set-up are small next to its transfer
 * (16 MiB is ~0.3 ms over PCIe 5), small enough that copies start early and
 * overlap the compute of the next sub-batch. */
#define GPU_SUBBATCH_BYTES ((size_t)16 << 20)
/* Most fields of one pass (the z dimension of the kernels' grids). */
#define GPU_MAX_PASS 65535
/* Device memory left unclaimed by the estimate: other processes, the CUDA
 * context's own growth, cuFFT's plan data, the CUB scan's scratch. */
#define GPU_MEMORY_MARGIN ((size_t)256 << 20)
/* The single-image plan from these many grid samples: N = 4096 for a set of
 * one image per run (no copy to overlap: one image buffer is enough),
 * N = 32768 for any set (two of the batch plan's image buffers alone are
 * then 8 GiB, its whole need past 40 GiB). */
#define GPU_LEAN_SINGLE_PLANE ((size_t)4096 * 4096)
#define GPU_LEAN_PLANE ((size_t)32768 * 32768)

gpu_shape shape_of(const psf_problem *set)
{
    gpu_shape s;
    s.mft = set->mft != 0;
    s.npix = set->npix;
    s.plane = (size_t)set->npix * (size_t)(set->npix > 0 ? set->npix : 0);
    s.grid = s.mft ? set->pupil_npix : set->npix;
    s.pplane = (size_t)s.grid * (size_t)(s.grid > 0 ? s.grid : 0);
    s.nterms = set->modes.nterms > 0 ? set->modes.nterms : 0;
    s.ncoeff = psf_coeff_count(set) > 0 ? psf_coeff_count(set) : 0;
    s.maps = 0;
    s.set = set;
    /* An FFT set past the sizes where the batch plan pays (GPU_LEAN_*). */
    s.lean = !s.mft && (s.plane >= GPU_LEAN_PLANE ||
                        (set->max_batch <= 1 && s.plane >= GPU_LEAN_SINGLE_PLANE));
    if (set->aperture.shape == APERTURE_FILE)
        s.maps += (size_t)set->aperture.map_rows * set->aperture.map_cols * sizeof(float);
    if (set->opd_map) s.maps += (size_t)set->opd_rows * set->opd_cols * sizeof(float);
    return s;
}

/* Device memory one capacity C needs, besides the work area: the fields
 * (grid^2 each) and their transforms (N^2 each: the FFT is out of place),
 * for the MFT its intermediate (N G) and one matrix, two image buffers,
 * the staging tables, the maps, and one pupil's build (the index, its
 * temporaries and the per-sample arrays; the basis is sized against the
 * memory free when it is built). */
static size_t need_bytes(const gpu_shape *s, long long cap, size_t work)
{
    size_t plane = s->plane, pplane = s->pplane, ng = (size_t)s->npix * (size_t)s->grid;
    size_t per = (pplane + plane) * sizeof(cufftComplex) + 2 * plane * sizeof(float);
    size_t fixed = pplane * 5 * sizeof(float);
    if (s->mft) {
        per += ng * sizeof(cufftComplex);
        fixed += gpu_mft_table_bytes(s->npix, s->grid);
    }
    return (size_t)cap * per + work + fixed + s->maps + gpu_detector_bytes(s->set, cap) +
           gpu_levels_bytes(s->set, cap, 2) +
           2 * gpu_pass_layout_for((int)cap, (int)cap, s->ncoeff, s->mft).bytes;
}

static unsigned long long pupils_bytes(const psf_problem *set, const gpu_shape *s);

/* Device memory of the single-image plan with cuFFT's work area of `work`
 * bytes: its two buffers, the grid (N^2 complex: the field, transformed in
 * place) and the image (N^2 float), which a pupil is built in; the staging
 * tables of a pass of one field; the device pupil table; the maps; the
 * detector stage's (gpu_detector_bytes at one image); the levels' (gpu_levels_bytes, one
 * buffer); and the pupils kept
 * (pupils_bytes: their open samples' arrays, no index). Every cudaMalloc of
 * create and run but the CUB scan's storage (inside the buffers) and the
 * detector's cuFFT plans (its own estimate). */
static unsigned long long need_lean(const gpu_shape *s, size_t work)
{
    unsigned long long bufs = bytes_mul(s->plane, sizeof(cufftComplex) + sizeof(float));
    unsigned long long small = 2 * gpu_pass_layout_for(1, 1, s->ncoeff, 0).bytes +
                               PSF_MAX_COMPONENTS * sizeof(gpu_pupil) + s->maps;
    return bytes_add(bytes_add(bufs, work),
                     bytes_add(bytes_add(bytes_add(small, gpu_detector_bytes(s->set, 1)),
                                         gpu_levels_bytes(s->set, 1, 1)),
                               pupils_bytes(s->set, s)));
}

/* The plane a sub-batch is sized by: the images copied out. A detector
 * stage that samples (oversample s > 1) copies M^2 = N^2 / s^2 an image,
 * and its fold and M x M C2R are launch-bound at the 64 images of 256^2
 * that N^2 would give (the C2R 0.12 us an image against 0.05 at 256
 * images, H200): its sub-batches are sized by the M^2 images, up to four
 * times the grid's count (the grid buffers grow with C). */
static size_t subbatch_plane(const gpu_shape *s)
{
    const psf_problem *p = s->set;
    if (s->mft || !psf_detector_active(&p->detector) || !p->detector.sample) return s->plane;
    size_t m = (size_t)psf_detector_out_npix(p), out = m * m;
    return out > s->plane / 4 ? out : (s->plane / 4 > 0 ? s->plane / 4 : 1);
}

/* The largest C worth having: images of about GPU_SUBBATCH_BYTES
 * (subbatch_plane), at most max_batch and GPU_MAX_PASS. */
static long long capacity_wanted(const gpu_shape *s, int max_batch)
{
    long long cap = (long long)(GPU_SUBBATCH_BYTES / (subbatch_plane(s) * sizeof(float)));
    if (cap < 1) cap = 1;
    if (cap > max_batch) cap = max_batch;
    if (cap > GPU_MAX_PASS) cap = GPU_MAX_PASS;
    if (cap < 1) cap = 1;
    return cap;
}

/* The single-image plan's check: need_lean with the work area of its one
 * transform, planned now (gpu_plan_make: the exact figure, not an
 * estimate; kept for create), against the free memory less the margin;
 * refused with both figures and what the need is made of. */
static int check_lean(psf_backend *b, const gpu_shape *s, size_t *work, size_t free_b,
                      size_t total_b, char *err, size_t errlen)
{
    size_t avail = free_b > GPU_MEMORY_MARGIN ? free_b - GPU_MEMORY_MARGIN : 0;
    if (gpu_plan_make(&b->chk, b->npix, 1, &b->lean_plan, work) != 0) return -1;
    b->lean_plan_held = 1;
    unsigned long long need = need_lean(s, *work);
    b->capacity = 1;
    if (need <= avail) return 0;
    snprintf(err, errlen,
             "gpu: not enough device memory for one %dx%d image: need %.1f MiB (the grid and "
             "the image %.1f MiB, cuFFT's work area %.1f MiB, the pupils and the rest %.1f MiB), "
             "%.1f MiB free of %.1f MiB less a margin of %.1f MiB",
             b->npix, b->npix, need / 1048576.0, 12.0 * s->plane / 1048576.0, *work / 1048576.0,
             (need - 12.0 * s->plane - *work) / 1048576.0, free_b / 1048576.0, total_b / 1048576.0,
             GPU_MEMORY_MARGIN / 1048576.0);
    return -1;
}

/* Choose C: capacity_wanted, halved until the fields, image buffers and
 * cuFFT work area fit the free memory; 1 for the single-image plan, if it
 * fits (check_lean). */
int choose_capacity(psf_backend *b, size_t *work, char *err, size_t errlen)
{
    size_t free_b = 0, total_b = 0;
    if (GPU_CUDA(&b->chk, cudaMemGetInfo(&free_b, &total_b))) return -1;
    gpu_shape s = shape_of(&b->set);
    if (s.lean) return check_lean(b, &s, work, free_b, total_b, err, errlen);
    long long cap = capacity_wanted(&s, b->set.max_batch);
    size_t avail = free_b > GPU_MEMORY_MARGIN ? free_b - GPU_MEMORY_MARGIN : 0;
    for (;;) {
        if (!b->mft && gpu_plan_estimate(&b->chk, b->npix, cap, work) != 0) return -1;
        size_t need = need_bytes(&s, cap, *work);
        if (need <= avail) break;
        if (cap == 1) {
            snprintf(err, errlen,
                     "gpu: not enough device memory for %dx%d images: need %.1f MiB, %.1f MiB "
                     "free of %.1f MiB",
                     b->npix, b->npix, need / 1048576.0, free_b / 1048576.0, total_b / 1048576.0);
            return -1;
        }
        cap = (cap + 1) / 2;
    }
    b->capacity = (int)cap;
    return 0;
}

/* Device bytes of the pupils kept, one per pitch (gpu/pupil.h): the index
 * over the grid (none on the single-image plan), and per open sample (at
 * most min(grid^2, (n + 2)^2)) its position, transmission, OPD and, up to
 * GPU_PUPIL_BASIS_MAX_BYTES, the basis values, 4 bytes each. */
static unsigned long long pupils_bytes(const psf_problem *set, const gpu_shape *s)
{
    unsigned long long n = set->pupil_samples > 0 ? (unsigned long long)set->pupil_samples : 0;
    unsigned long long open = n > 0 ? bytes_min(s->pplane, (n + 2) * (n + 2)) : s->pplane;
    unsigned long long basis = open * 4ULL * (unsigned long long)s->nterms;
    if (basis > GPU_PUPIL_BASIS_MAX_BYTES) basis = 0; /* evaluated per image instead */
    unsigned long long seg = open * 4ULL * (s->ncoeff > s->nterms ? 1 + set->seg_modes.nterms : 0);
    unsigned long long index = s->lean ? 0 : 4ULL * (s->pplane + 1); /* lean: none kept */
    unsigned long long one = index + open * 4ULL * (set->opd_map ? 3 : 2) + basis + seg;
    return bytes_mul(one, set->pupil_pitches > 0 ? (unsigned long long)set->pupil_pitches : 1);
}

/* Device bytes of the MFT matrices beyond the one need_bytes counts: one
 * per distinct a up to GPU_MFT_TABLES, about PSF_MFT_TABLE_BYTES of them
 * (table_for), but never fewer than one job's own (PSF_MAX_COMPONENTS). */
static unsigned long long tables_bytes(const psf_problem *set, const gpu_shape *s)
{
    unsigned long long one = gpu_mft_table_bytes(s->npix, s->grid);
    unsigned long long want = set->mft_matrices > 1 ? (unsigned long long)set->mft_matrices : 1;
    unsigned long long held = bytes_mul(one, bytes_min(want, GPU_MFT_TABLES));
    unsigned long long job = bytes_mul(one, bytes_min(want, PSF_MAX_COMPONENTS));
    unsigned long long cap = PSF_MFT_TABLE_BYTES + one > job ? PSF_MFT_TABLE_BYTES + one : job;
    return bytes_min(held, cap) - one;
}

/* psf_backend_ops.memory_need: on the device what create takes at the
 * capacity it wants (need_bytes; on a device with less room it takes
 * fewer images per pass), less cuFFT's work area, which only cuFFT knows
 * (create asks it), plus the pupils and MFT matrices run() adds; for the
 * single-image plan need_lean less the work area, the figure create's
 * refusal gives less the work area it names (two grid-sized buffers, 12 N^2
 * bytes, and the pupils' open samples). On the host the two pinned staging
 * buffers and the pass being filled. No CUDA call. */
int gpu_memory_need(const psf_problem *set, const psf_backend_options *options,
                    psf_memory_need *out, char *err, size_t errlen)
{
    (void)options;
    memset(out, 0, sizeof *out);
    gpu_shape s = shape_of(set);
    if (s.npix < 1 || s.npix > GPU_PUPIL_MAX_NPIX || s.grid < 1 || s.grid > GPU_PUPIL_MAX_NPIX) {
        snprintf(err, errlen, "gpu: grid %dx%d from a pupil grid %dx%d: outside 1..%d per side",
                 s.npix, s.npix, s.grid, s.grid, GPU_PUPIL_MAX_NPIX);
        return -1;
    }
    long long cap = s.lean ? 1 : capacity_wanted(&s, set->max_batch > 0 ? set->max_batch : 1);
    out->device =
        s.lean ? need_lean(&s, 0) : bytes_add(need_bytes(&s, cap, 0), pupils_bytes(set, &s));
    if (s.mft) out->device = bytes_add(out->device, tables_bytes(set, &s));
    out->host = 2 * gpu_pass_layout_for((int)cap, (int)cap, s.ncoeff, s.mft).bytes +
                gpu_pass_bytes((int)cap, s.ncoeff) + (size_t)cap * sizeof(int); /* + slot_pupil */
    return 0;
}
