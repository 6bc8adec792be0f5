/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA backend: the table psf_gpu_module_entry hands out
 * (backend/gpu_module_abi.h), the twin of cpu/backend.c. Per set (create):
 * the device (options->device), the memory estimate, streams, events,
 * every buffer for the largest batch, the maps and Zernike modes on the
 * device. Per pitch (first use in run): the pupil, built on the device
 * (gpu/pupil.h). Per run: the jobs are split into sub-batches of whole
 * images; each sub-batch is one or more passes, their tables packed on the
 * host (gpu/batch.h), each pass one pupil-field kernel, one batched
 * out-of-place cuFFT (gpu/plan_cache.h) or, for an MFT set, two batched
 * cuBLAS products (gpu/mft.h), and one fused intensity kernel
 * (gpu/intensity.h), on the compute stream into one of two device image
 * buffers, whose copy to the host runs on the copy stream while the next
 * sub-batch computes. A single-image FFT run replays a CUDA graph of its
 * pass instead. With a detector stage (psf_detector) each sub-batch's
 * images pass through gpu/detector.h before their copy.
 *
 * The single-image plan (lean; an FFT set whose batch is one image from
 * N = 4096, or any FFT set from N = 32768, where the buffers of a batch no
 * longer fit beside each other): one complex grid, transformed in place, and
 * one image buffer, 12 N^2 bytes besides cuFFT's work area, instead of the
 * field, its transform and two image buffers (24 N^2) and a pupil build
 * over five more grids. Each field is written into the zeroed grid at its
 * open samples (gpu_pupil_field_open, so no pupil keeps an index over the
 * grid), transformed in place, and its intensity added into the image; a
 * pupil is built in the two buffers (gpu_pupil_build_in) before the passes.
 * One image at a time: its copy to the host ends before the next is made.
 *
 * The field buffer keeps its zeros: the FFT is out of place and the MFT's
 * products only read it, so once a slot holds a field of pupil p, the next
 * field of p there needs only its open samples written
 * (gpu_pupil_field_open); a slot that held another pupil, or whose state is
 * unknown (after create, after a failure), is rewritten whole
 * (gpu_pupil_field). At N = 4096 that is 18% of the samples instead of all.
 *
 * Every entry point selects the set's device first (cudaSetDevice), so
 * backends on several devices can be driven from any threads of one process.
 *
 * Every CUDA/cuFFT/cuBLAS call is checked (gpu/cuda_check.h); any failure
 * returns -1 with a message, and the app computes the remaining images on
 * the CPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

extern "C" {
#include "backend/backend.h"
#include "backend/bytes.h"
#include "backend/detector.h"
}
#include "backend/gpu_module_abi.h"

#include "gpu/batch.h"
#include "gpu/cuda_check.h"
#include "gpu/detector.h"
#include "gpu/mft.h"
#include "gpu/plan_cache.h"
#include "gpu/intensity.h"
#include "gpu/levels.h"
#include "gpu/probe.h"
#include "gpu/pupil.h"
#include "optics/map_sample.h"

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
/* MFT matrices kept at once: twice the components of one image, so that a
 * job's own matrices (at most PSF_MAX_COMPONENTS) never have to make room
 * for each other; and about PSF_MFT_TABLE_BYTES of them: past it the least
 * recently used is rebuilt when needed again. */
#define GPU_MFT_TABLES (2 * PSF_MAX_COMPONENTS)
/* The single-image plan from these many grid samples: N = 4096 for a set of
 * one image per run (no copy to overlap: one image buffer is enough),
 * N = 32768 for any set (two of the batch plan's image buffers alone are
 * then 8 GiB, its whole need past 40 GiB). */
#define GPU_LEAN_SINGLE_PLANE ((size_t)4096 * 4096)
#define GPU_LEAN_PLANE ((size_t)32768 * 32768)

/* A host buffer handed out by alloc_images. */
typedef struct host_buf {
    float *ptr;
    int pinned; /* 1: cudaHostAlloc, 0: malloc (pinned memory ran out) */
    struct host_buf *next;
} host_buf;

struct psf_backend {
    psf_problem set;
    gpu_check chk;
    int device;     /* CUDA device index (options->device) */
    int device_set; /* create got as far as selecting it */
    int mft;        /* set->mft: two matrix products instead of the FFT */
    int lean;       /* the single-image plan: spec is field, dimg[1] is dimg[0] */
    int npix;       /* N: the images' size (the FFT's, or the MFT's M) */
    size_t plane;   /* N * N: one image, one transformed field */
    int grid;       /* the pupil grid: N, or the MFT's G (set->pupil_npix) */
    int half_pixel; /* set->half_pixel (MFT): the image axis between pixels */
    size_t pplane;  /* grid * grid: one slot of the field buffer */
    int nterms;
    int ncoeff;   /* coefficients per field (psf_coeff_count): the pass's rows */
    int capacity; /* C: most fields per pass and images per sub-batch */
    cudaStream_t compute, copy;
    cudaEvent_t ev_done[2];   /* sub-batch's images are in dimg[q] */
    cudaEvent_t ev_copied[2]; /* dimg[q] has reached the host */
    cudaEvent_t ev_staged[2]; /* stage[r] has reached dstage[r] */
    cufftComplex *field;      /* device [C * grid^2]: the pass's pupil fields (zero where
                                 slot_pupil's pupil is closed) */
    cufftComplex *spec;       /* device [C * N*N]: their transforms (FFT out of place, or E) */
    cufftComplex *mft_t;      /* MFT: device [C * N*G], the products' intermediate T */
    int *slot_pupil;          /* [C]: the pupil whose field slot s holds, -1 = unknown */
    float *dimg[2];           /* device [C * N*N] each: a sub-batch's images */
    unsigned char *stage[2];  /* pinned host pass tables, stage_bytes each */
    unsigned char *dstage[2]; /* their device copies */
    size_t stage_bytes;
    gpu_pass pass; /* the pass being filled, on the host (gpu/batch.h) */
    int npass;     /* passes so far in this run: staging parity */
    int staged_pending[2], copy_pending[2];
    /* Set-wide device data and the pupils. */
    gpu_pupil_set pset;
    float *d_amp_map, *d_opd_map;
    int *d_modes;
    int *d_seg_modes; /* [2 * seg_modes.nterms], NULL without segment terms */
    gpu_pupil pupils[PSF_MAX_COMPONENTS];
    int npupils;
    gpu_pupil *d_pupils; /* device copy of pupils[] */
    int all_basis;       /* every pupil so far keeps its Zernike basis */
    /* MFT sets: cuBLAS on the compute stream, the matrices, and the one
     * each component of the job being added uses. */
    cublasHandle_t blas;
    gpu_mft_table tables[GPU_MFT_TABLES];
    unsigned long long table_tick, job_serial, pass_epoch;
    int job_table[PSF_MAX_COMPONENTS];
    gpu_plan_cache plans;
    int plans_ready;
    cufftHandle lean_plan; /* the single-image plan's transform, made by check_lean */
    int lean_plan_held;    /* ... and not yet in plans (gpu_plan_cache_adopt) */
    /* The single-image path's CUDA graph: one pass of graph_nfields fields. */
    cudaGraph_t graph;
    cudaGraphExec_t graph_exec;
    int graph_nfields;
    int graph_all_basis;
    int graph_dense;       /* captured with the whole-grid field kernel */
    size_t graph_max_open; /* ... or the open-sample one over this many samples */
    unsigned graph_generation;
    gpu_detector det; /* the detector stage (inactive without one) */
    int pack_pairs;   /* the sub-batch being computed is written as packed pairs
                         (gpu_detector_packs: its intensities by gpu_psf_intensity_pairs) */
    int fuse_rows;    /* the sub-batch being computed is one pass whose intensities go
                         straight into the detector stage's first pass
                         (gpu_detector_rows_from_fields; subbatch_fuses) */
    gpu_levels lev;   /* the levels output (inactive without one) */
    size_t out_plane; /* floats of one image run() returns (the detector's M^2, or N^2) */
    host_buf *buffers;
};

static void graph_release(psf_backend *b)
{
    if (b->graph_exec) cudaGraphExecDestroy(b->graph_exec);
    if (b->graph) cudaGraphDestroy(b->graph);
    b->graph_exec = NULL;
    b->graph = NULL;
    b->graph_nfields = 0;
}

/* Every slot's contents unknown: the next pass writes whole fields. */
static void slots_forget(psf_backend *b)
{
    for (int s = 0; s < b->capacity && b->slot_pupil; ++s)
        b->slot_pupil[s] = -1;
}

static void gpu_destroy(psf_backend *b)
{
    if (!b) return;
    if (b->device_set) cudaSetDevice(b->device); /* whatever thread calls: this device's */
    /* Nothing queued may outlive the memory it uses. */
    if (b->compute) cudaStreamSynchronize(b->compute);
    if (b->copy) cudaStreamSynchronize(b->copy);
    graph_release(b);
    gpu_detector_destroy(&b->det);
    gpu_levels_destroy(&b->lev);
    if (b->plans_ready) gpu_plan_cache_destroy(&b->plans);
    if (b->lean_plan_held) cufftDestroy(b->lean_plan);
    for (int i = 0; i < b->npupils; ++i)
        gpu_pupil_free(&b->pupils[i]);
    for (int i = 0; i < GPU_MFT_TABLES; ++i)
        gpu_mft_table_free(&b->tables[i]);
    if (b->blas) cublasDestroy(b->blas);
    cudaFree(b->d_pupils);
    cudaFree(b->d_modes);
    cudaFree(b->d_seg_modes);
    cudaFree(b->d_amp_map);
    cudaFree(b->d_opd_map);
    if (b->lean) { /* aliases of field and dimg[0] */
        b->spec = NULL;
        b->dimg[1] = NULL;
    }
    cudaFree(b->field);
    cudaFree(b->spec);
    cudaFree(b->mft_t);
    for (int q = 0; q < 2; ++q) {
        cudaFree(b->dimg[q]);
        cudaFree(b->dstage[q]);
        cudaFreeHost(b->stage[q]);
        if (b->ev_done[q]) cudaEventDestroy(b->ev_done[q]);
        if (b->ev_copied[q]) cudaEventDestroy(b->ev_copied[q]);
        if (b->ev_staged[q]) cudaEventDestroy(b->ev_staged[q]);
    }
    if (b->compute) cudaStreamDestroy(b->compute);
    if (b->copy) cudaStreamDestroy(b->copy);
    while (b->buffers) { /* buffers the caller did not give back */
        host_buf *h = b->buffers;
        b->buffers = h->next;
        if (h->pinned)
            cudaFreeHost(h->ptr);
        else
            free(h->ptr);
        free(h);
    }
    gpu_pass_free(&b->pass);
    free(b->slot_pupil);
    free(b);
    /* A failed call leaves its error as the thread's last error, which the
     * next launch check (cudaGetLastError) would report as its own. */
    (void)cudaGetLastError();
}

/* The sizes a problem is computed at, from the problem alone (create
 * keeps them in the backend; memory_need has no backend). */
typedef struct {
    int mft;                /* two matrix products instead of the FFT */
    int lean;               /* the single-image plan (GPU_LEAN_*) */
    int npix;               /* N: the images' size (the FFT's, or the MFT's M) */
    int grid;               /* the pupil grid: N, or the MFT's G */
    int nterms;             /* Zernike modes */
    int ncoeff;             /* coefficients per field (psf_coeff_count) */
    size_t plane;           /* N * N */
    size_t pplane;          /* grid * grid */
    size_t maps;            /* bytes of the aperture and OPD maps on the device */
    const psf_problem *set; /* for the detector stage's bytes (gpu_detector_bytes) */
} gpu_shape;

static gpu_shape shape_of(const psf_problem *set)
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
static int choose_capacity(psf_backend *b, size_t *work, char *err, size_t errlen)
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
static int upload_set(psf_backend *b)
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

static int gpu_create(const psf_problem *set, const psf_backend_options *options, psf_backend **out,
                      char *err, size_t errlen)
{
    *out = NULL;
    int device = options ? options->device : 0;
    psf_backend *b = (psf_backend *)calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "gpu: out of host memory");
        return -1;
    }
    gpu_check_init(&b->chk, device, err, errlen);
    b->set = *set;
    if (b->set.max_batch < 1) b->set.max_batch = 1;
    b->device = device;
    b->mft = set->mft != 0;
    b->npix = set->npix;
    b->plane = (size_t)set->npix * (size_t)(set->npix > 0 ? set->npix : 0);
    b->grid = b->mft ? set->pupil_npix : set->npix;
    b->half_pixel = b->mft && set->half_pixel ? 1 : 0;
    b->pplane = (size_t)b->grid * (size_t)(b->grid > 0 ? b->grid : 0);
    b->nterms = set->modes.nterms > 0 ? set->modes.nterms : 0;
    b->ncoeff = psf_coeff_count(set) > 0 ? psf_coeff_count(set) : 0;
    b->lean = shape_of(&b->set).lean;
    b->all_basis = 1;
    b->pass_epoch = 1; /* tables start at epoch 0: in no pass */
    int ndev = 0;
    size_t work = 0;
    /* No device, no driver: say so plainly, it is the common case. */
    if (gpu_check_inject(&b->chk, "cudaGetDeviceCount", __FILE__, __LINE__)) goto fail;
    {
        cudaError_t e = cudaGetDeviceCount(&ndev);
        if (e != cudaSuccess || ndev < 1) {
            char why[128];
            gpu_no_device_reason(e, why, sizeof why);
            snprintf(err, errlen, "no CUDA device: %s", why);
            goto fail;
        }
    }
    if (device < 0 || device >= ndev) {
        snprintf(err, errlen, "gpu: CUDA device %d asked for, but %d device%s visible (0..%d)",
                 device, ndev, ndev == 1 ? " is" : "s are", ndev - 1);
        goto fail;
    }
    /* Everything below (context, memory, streams, plans, cuBLAS) is this device's. */
    if (GPU_CUDA(&b->chk, cudaSetDevice(b->device))) goto fail;
    b->device_set = 1;
    if (set->npix < 1 || set->npix > GPU_PUPIL_MAX_NPIX) {
        snprintf(err, errlen,
                 "gpu: grid %dx%d outside 1..%d per side (open samples are numbered "
                 "in 32 bits)",
                 set->npix, set->npix, GPU_PUPIL_MAX_NPIX);
        goto fail;
    }
    if (b->mft && (b->grid < 1 || b->grid > GPU_PUPIL_MAX_NPIX)) {
        snprintf(err, errlen, "gpu: MFT pupil grid %dx%d outside 1..%d per side", b->grid, b->grid,
                 GPU_PUPIL_MAX_NPIX);
        goto fail;
    }
    if (aperture_check(&set->aperture, err, errlen) != 0) goto fail;
    /* Load the kernels now (lazy module loading would put it on the first run). */
    if (gpu_pupil_load_kernels(&b->chk) || gpu_psf_load_kernels(&b->chk) ||
        (b->mft && gpu_mft_load_kernels(&b->chk)))
        goto fail;
    if (choose_capacity(b, &work, err, errlen) != 0) goto fail;
    if (GPU_CUDA(&b->chk, cudaStreamCreateWithFlags(&b->compute, cudaStreamNonBlocking)) ||
        GPU_CUDA(&b->chk, cudaStreamCreateWithFlags(&b->copy, cudaStreamNonBlocking)))
        goto fail;
    for (int q = 0; q < 2; ++q)
        if (GPU_CUDA(&b->chk, cudaEventCreateWithFlags(&b->ev_done[q], cudaEventDisableTiming)) ||
            GPU_CUDA(&b->chk, cudaEventCreateWithFlags(&b->ev_copied[q], cudaEventDisableTiming)) ||
            GPU_CUDA(&b->chk, cudaEventCreateWithFlags(&b->ev_staged[q], cudaEventDisableTiming)))
            goto fail;
    {
        size_t cap = (size_t)b->capacity;
        b->stage_bytes = gpu_pass_layout_for(b->capacity, b->capacity, b->ncoeff, b->mft).bytes;
        /* The single-image plan transforms the field in place. */
        if (GPU_CUDA(&b->chk, cudaMalloc(&b->field, cap * b->pplane * sizeof(cufftComplex))) ||
            (!b->lean &&
             GPU_CUDA(&b->chk, cudaMalloc(&b->spec, cap * b->plane * sizeof(cufftComplex)))))
            goto fail;
        if (b->lean) b->spec = b->field;
        if (b->mft && GPU_CUDA(&b->chk, cudaMalloc(&b->mft_t, cap * (size_t)b->npix * b->grid *
                                                                  sizeof(cufftComplex))))
            goto fail;
        /* One image more for the detector's packed pairs at an odd C. */
        size_t grid_images = (size_t)gpu_detector_grid_images(set, b->capacity);
        for (int q = 0; q < 2; ++q)
            if (((!b->lean || q == 0) &&
                 GPU_CUDA(&b->chk,
                          cudaMalloc(&b->dimg[q], grid_images * b->plane * sizeof(float)))) ||
                GPU_CUDA(&b->chk, cudaMalloc(&b->dstage[q], b->stage_bytes)) ||
                GPU_CUDA(&b->chk,
                         cudaHostAlloc(&b->stage[q], b->stage_bytes, cudaHostAllocDefault)))
                goto fail;
        if (b->lean) b->dimg[1] = b->dimg[0]; /* one image at a time (run_batched) */
        if (GPU_CUDA(&b->chk, cudaMalloc(&b->d_pupils, PSF_MAX_COMPONENTS * sizeof(gpu_pupil))))
            goto fail;
        b->slot_pupil = (int *)malloc(cap * sizeof *b->slot_pupil);
        if (gpu_pass_init(&b->pass, b->capacity, b->ncoeff, b->mft) != 0 || !b->slot_pupil) {
            snprintf(err, errlen, "gpu: out of host memory");
            goto fail;
        }
        slots_forget(b); /* cudaMalloc'd: contents unknown */
    }
    if (upload_set(b) != 0) goto fail;
    b->out_plane = (size_t)psf_detector_out_npix(set) * (size_t)psf_detector_out_npix(set);
    if (gpu_detector_create(&b->det, set, b->capacity, b->compute, &b->chk) != 0) goto fail;
    if (gpu_levels_create(&b->lev, set, b->capacity, b->lean ? 1 : 2, &b->chk) != 0) goto fail;
    if (b->mft) {
        /* cuBLAS on the compute stream, full single precision: DEFAULT_MATH
         * uses no reduced-precision (TF32) tensor cores, which the
         * comparison with the CPU's float products would notice. */
        if (GPU_CUBLAS(&b->chk, cublasCreate(&b->blas))) {
            b->blas = NULL;
            goto fail;
        }
        if (GPU_CUBLAS(&b->chk, cublasSetStream(b->blas, b->compute)) ||
            GPU_CUBLAS(&b->chk, cublasSetMathMode(b->blas, CUBLAS_DEFAULT_MATH)))
            goto fail;
    } else {
        gpu_plan_cache_init(&b->plans, b->npix, b->compute);
        b->plans_ready = 1;
        if (gpu_plan_cache_reserve(&b->plans, &b->chk, work) != 0) goto fail;
        /* The single-image plan's one transform, made by check_lean: the
         * cache owns it from here, whatever the call returns. */
        b->lean_plan_held = 0;
        if (b->lean && gpu_plan_cache_adopt(&b->plans, &b->chk, b->lean_plan, 1, work) != 0)
            goto fail;
    }
    b->chk.err = NULL; /* no message buffer between calls */
    *out = b;
    return 0;
fail:
    b->chk.err = NULL;
    gpu_destroy(b);
    return -1;
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
static int pupil_for(psf_backend *b, double dx_m)
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

static int pass_flush(psf_backend *b, int q);

/* The MFT matrix for a = dx p / lambda, built on first use: a depends on
 * the pitch, the wavelength and the output pixel only through their ratio,
 * so (as on the CPU) a monochromatic sweep at a fixed pixel in lambda/D
 * shares one. When every slot is taken or the matrices would pass
 * PSF_MFT_TABLE_BYTES, the least recently used one that the job being
 * added does not need is replaced: after the pass being filled has been
 * enqueued, if it uses that one, and after the queued work that may read
 * it is done. q: the sub-batch's image buffer (that pass's). Returns the
 * slot, or -1 with chk's message. */
static int table_for(psf_backend *b, double a, int q)
{
    size_t one = gpu_mft_table_bytes(b->npix, b->grid), bytes = 0;
    int empty = -1, victim = -1;
    for (int i = 0; i < GPU_MFT_TABLES; ++i) {
        gpu_mft_table *t = &b->tables[i];
        if (!t->w) {
            if (empty < 0) empty = i;
            continue;
        }
        if (fabs(t->a - a) <= 1e-12 * a) {
            t->used = ++b->table_tick;
            t->job = b->job_serial;
            return i;
        }
        bytes += one;
        if (t->job != b->job_serial && (victim < 0 || t->used < b->tables[victim].used)) victim = i;
    }
    int slot = empty;
    if (victim >= 0 && (empty < 0 || bytes + one > PSF_MFT_TABLE_BYTES)) {
        if (b->tables[victim].epoch == b->pass_epoch && pass_flush(b, q)) return -1;
        if (GPU_CUDA(&b->chk, cudaStreamSynchronize(b->compute))) return -1;
        gpu_mft_table_free(&b->tables[victim]);
        slot = victim;
    }
    if (slot < 0) { /* cannot happen: a job holds at most half the slots */
        snprintf(b->chk.err, b->chk.errlen, "gpu: more than %d MFT matrices at once",
                 GPU_MFT_TABLES);
        return -1;
    }
    gpu_mft_table *t = &b->tables[slot];
    if (gpu_mft_table_build_centred(t, a, b->npix, 2 * (b->npix / 2) - b->half_pixel, b->grid,
                                    b->compute, &b->chk))
        return -1;
    t->used = ++b->table_tick;
    t->job = b->job_serial;
    return slot;
}

/* The matrices of every component of job, into job_table[] (MFT sets). */
static int tables_for_job(psf_backend *b, const psf_job *job, int q)
{
    ++b->job_serial;
    for (int c = 0; c < job->ncomp; ++c) {
        const psf_component *comp = &job->comp[c];
        int t = table_for(b, comp->dx_m * comp->out_pixel_rad / comp->wavelength_m, q);
        if (t < 0) return -1;
        b->job_table[c] = t;
    }
    return 0;
}

/* Add a job's fields comp[c0 .. c0+n-1] as image `image` of the pass (for
 * an MFT set, after tables_for_job for this job). */
static int pass_add(psf_backend *b, const psf_job *job, int c0, int n, int image)
{
    gpu_pass_add_image(&b->pass, image, n, c0 > 0);
    for (int c = c0; c < c0 + n; ++c) {
        const psf_component *comp = &job->comp[c];
        int p = pupil_for(b, comp->dx_m); /* built before any pass: a lookup */
        if (p < 0) return -1;
        int f = gpu_pass_add_field(&b->pass, p, comp);
        if (b->mft) { /* gpu_mft_apply's w, p, t, e for slot f */
            gpu_mft_table *t = &b->tables[b->job_table[c]];
            t->epoch = b->pass_epoch; /* in use by this pass */
            gpu_pass_set_mft(&b->pass, f, t->w, b->field + (size_t)f * b->pplane,
                             b->mft_t + (size_t)f * b->npix * b->grid,
                             b->spec + (size_t)f * b->plane);
        }
    }
    return 0;
}

/* Whether the pass being filled needs the whole-grid field kernel: some
 * field's slot holds another pupil's field, or contents unknown. max_open:
 * the most open samples of its pupils (the open-sample kernel's grid). */
static int pass_dense(const psf_backend *b, size_t *max_open)
{
    int dense = 0;
    *max_open = 0;
    for (int f = 0; f < b->pass.nfields; ++f) {
        int p = b->pass.desc[f].pupil;
        dense |= b->slot_pupil[f] != p;
        if (b->pupils[p].nopen > *max_open) *max_open = b->pupils[p].nopen;
    }
    return dense;
}

/* The pass being filled is enqueued: its slots hold its pupils' fields. */
static void pass_done(psf_backend *b)
{
    for (int f = 0; f < b->pass.nfields; ++f)
        b->slot_pupil[f] = b->pass.desc[f].pupil;
}

/* The pass's pupil fields into the field buffer: the whole grid when dense,
 * else the open samples of at most max_open per pupil; on the single-image
 * plan, whose pupils keep no index and whose grid holds the last pass's
 * transform, zeros and then the open samples. */
static int fields_write(psf_backend *b, const gpu_field_desc *desc, const double *coeff,
                        int nfields, int dense, size_t max_open)
{
    if (b->lean)
        return GPU_CUDA(&b->chk, cudaMemsetAsync(b->field, 0,
                                                 (size_t)nfields * b->pplane * sizeof(cufftComplex),
                                                 b->compute)) ||
                       gpu_pupil_field_open(&b->pset, b->d_pupils, b->all_basis, desc, coeff,
                                            nfields, max_open, b->field, b->compute, &b->chk)
                   ? -1
                   : 0;
    return dense ? gpu_pupil_field(&b->pset, b->d_pupils, b->all_basis, desc, coeff, nfields,
                                   b->field, b->compute, &b->chk)
                 : gpu_pupil_field_open(&b->pset, b->d_pupils, b->all_basis, desc, coeff, nfields,
                                        max_open, b->field, b->compute, &b->chk);
}

/* Enqueue one pass whose tables are in dstage[r] (layout l) on the compute
 * stream: pupil fields (fields_write), the batched out-of-place FFT (in
 * place on the single-image plan) or the MFT's two products into spec,
 * intensities into out. */
static int pass_enqueue(psf_backend *b, int r, const gpu_pass_layout *l, int nfields, int nimages,
                        float *out, int dense, size_t max_open)
{
    unsigned char *d = b->dstage[r];
    if (nfields > 0) {
        const gpu_field_desc *desc = (const gpu_field_desc *)(d + l->desc);
        const double *coeff = (const double *)(d + l->coeff);
        if (fields_write(b, desc, coeff, nfields, dense, max_open)) return -1;
        if (b->mft) {
            void **ptrs = (void **)(d + l->ptrs); /* device addresses: not read here */
            size_t nf = (size_t)nfields;
            if (gpu_mft_apply(b->blas, b->npix, b->grid, (const cuComplex *const *)ptrs,
                              (const cuComplex *const *)(ptrs + nf),
                              (cuComplex *const *)(ptrs + 2 * nf),
                              (cuComplex *const *)(ptrs + 3 * nf), nfields, &b->chk))
                return -1;
        } else {
            cufftHandle plan;
            /* Out of place: the field buffer keeps its zeros for the next pass
             * (in place for the single-image plan: spec is field). */
            if (gpu_plan_cache_get(&b->plans, &b->chk, nfields, &plan) ||
                GPU_CUFFT(&b->chk, cufftExecC2C(plan, b->field, b->spec, CUFFT_FORWARD)))
                return -1;
        }
    }
    const float *scale = (const float *)(d + l->scale);
    const gpu_pass_image *img = (const gpu_pass_image *)(d + l->images);
    if (b->fuse_rows)
        return gpu_detector_rows_from_fields(&b->det, b->spec, scale, img, nimages, b->mft, out,
                                             &b->chk);
    if (b->pack_pairs)
        return gpu_psf_intensity_pairs(b->spec, scale, img, nimages, b->npix, b->mft, out,
                                       b->compute, &b->chk);
    return b->mft
               ? gpu_psf_intensity_centred(b->spec, scale, img, nimages, b->npix, out, b->compute,
                                           &b->chk)
               : gpu_psf_intensity(b->spec, scale, img, nimages, b->npix, out, b->compute, &b->chk);
}

/* Run the pass being filled: stage its tables, enqueue it into dimg[q]. */
static int pass_flush(psf_backend *b, int q)
{
    if (b->pass.nimages == 0) return 0;
    int r = b->npass++ & 1;
    /* stage[r] may still be on its way to the device for the pass before last. */
    if (b->staged_pending[r] && GPU_CUDA(&b->chk, cudaEventSynchronize(b->ev_staged[r]))) return -1;
    size_t max_open;
    int dense = pass_dense(b, &max_open);
    gpu_pass_layout l = gpu_pass_pack(&b->pass, b->stage[r]);
    if (GPU_CUDA(&b->chk, cudaMemcpyAsync(b->dstage[r], b->stage[r], l.bytes,
                                          cudaMemcpyHostToDevice, b->compute)) ||
        GPU_CUDA(&b->chk, cudaEventRecord(b->ev_staged[r], b->compute)))
        return -1;
    b->staged_pending[r] = 1;
    int rc = pass_enqueue(b, r, &l, b->pass.nfields, b->pass.nimages, b->dimg[q], dense, max_open);
    if (rc == 0) pass_done(b);
    gpu_pass_clear(&b->pass);
    b->pass_epoch++;
    return rc;
}

/* Images jobs[0 .. njobs-1] into dimg[q] (njobs <= C), in passes of at
 * most C fields; a job whose fields straddle passes is accumulated. */
static int subbatch_compute(psf_backend *b, const psf_job *jobs, int njobs, int q)
{
    int cap = b->capacity;
    for (int j = 0; j < njobs; ++j) {
        const psf_job *job = &jobs[j];
        /* A job that fits a pass is not split over two: passes of like jobs
         * then repeat one layout, each slot keeps its pupil (the open-sample
         * kernel), and a job's intensities add up in the CPU's order. */
        if (job->ncomp <= cap && b->pass.nfields + job->ncomp > cap && pass_flush(b, q)) return -1;
        if (b->mft && tables_for_job(b, job, q)) return -1;
        if (job->ncomp == 0) { /* an image with no light: zeros */
            if (pass_add(b, job, 0, 0, j)) return -1;
        }
        for (int c = 0; c < job->ncomp;) {
            int take =
                job->ncomp - c < cap - b->pass.nfields ? job->ncomp - c : cap - b->pass.nfields;
            if (pass_add(b, job, c, take, j)) return -1;
            c += take;
            if ((b->pass.nfields == cap || b->pass.nimages == cap) && pass_flush(b, q)) return -1;
        }
        if (b->pass.nimages == cap && pass_flush(b, q)) return -1;
    }
    return pass_flush(b, q);
}

/* 1 when jobs[0 .. njobs-1] (njobs <= C) may fuse their intensities into
 * the detector stage (gpu_detector_fuses): FFT sets whose fields fit one
 * pass of C, so subbatch_compute makes one pass and no image accumulates
 * over two. */
static int subbatch_fuses(const psf_backend *b, const psf_job *jobs, int njobs)
{
    if (b->mft || !gpu_detector_fuses(&b->det)) return 0;
    long long fields = 0;
    for (int j = 0; j < njobs; ++j)
        fields += jobs[j].ncomp;
    return fields <= b->capacity;
}

/* Sub-batch size for a run of njobs: at most C, and at least two sub-batches
 * when there are two images, so that copy and compute overlap; sizes evened
 * out so that a run needs at most two FFT plans. */
static int subbatch_size(const psf_backend *b, int njobs)
{
    if (njobs <= 1) return 1;
    int s = (njobs + 1) / 2 < b->capacity ? (njobs + 1) / 2 : b->capacity;
    int nsub = (njobs + s - 1) / s;
    return (njobs + nsub - 1) / nsub;
}

/* Sub-batch q's n images (src) to the host at image j0 on the copy stream:
 * the floats into images, or (levels run) their levels, and their measures
 * into the pinned staging (b->lev.host_meas at image j0). */
static int subbatch_copy(psf_backend *b, const float *src, int j0, int n, int q, float *images,
                         unsigned short *levels)
{
    if (!levels)
        return GPU_CUDA(&b->chk, cudaMemcpyAsync(images + (size_t)j0 * b->out_plane, src,
                                                 (size_t)n * b->out_plane * sizeof(float),
                                                 cudaMemcpyDeviceToHost, b->copy));
    return GPU_CUDA(&b->chk, cudaMemcpyAsync(levels + (size_t)j0 * b->plane, b->lev.lev[q],
                                             (size_t)n * b->plane * sizeof(unsigned short),
                                             cudaMemcpyDeviceToHost, b->copy)) ||
                   GPU_CUDA(&b->chk, cudaMemcpyAsync(b->lev.host_meas + (size_t)j0 * PSF_MEASURES,
                                                     b->lev.meas[q],
                                                     (size_t)n * PSF_MEASURES * sizeof(double),
                                                     cudaMemcpyDeviceToHost, b->copy))
               ? -1
               : 0;
}

/* The batched path: sub-batches computed on the compute stream, copied on
 * the copy stream while the next computes; with levels (a levels run,
 * images NULL) each sub-batch's levels and measures are made on the
 * device (gpu/levels.h) and copied instead of its floats. */
static int run_batched(psf_backend *b, const psf_job *jobs, int njobs, float *images,
                       unsigned short *levels, double *measures)
{
    int per = subbatch_size(b, njobs);
    if (levels && (size_t)njobs > b->lev.host_meas_jobs) {
        snprintf(b->chk.err, b->chk.errlen, "gpu: %d images in one call, past max_batch %zu", njobs,
                 b->lev.host_meas_jobs);
        return -1;
    }
    for (int j0 = 0, k = 0; j0 < njobs; j0 += per, ++k) {
        int n = njobs - j0 < per ? njobs - j0 : per, q = b->lean ? 0 : k & 1;
        /* dimg[q] still holds the images of the sub-batch before last until
         * their copy is done (the single-image plan: the one before, q = 0). */
        if (b->copy_pending[q] &&
            GPU_CUDA(&b->chk, cudaStreamWaitEvent(b->compute, b->ev_copied[q], 0)))
            return -1;
        float *src;
        int fused = b->fuse_rows = subbatch_fuses(b, jobs + j0, n);
        b->pack_pairs = !fused && gpu_detector_packs(&b->det, n);
        int rc = subbatch_compute(b, jobs + j0, n, q);
        b->pack_pairs = b->fuse_rows = 0;
        if (rc ||
            (fused ? gpu_detector_finish(&b->det, b->dimg[q], n, q, &src, &b->chk)
                   : gpu_detector_apply(&b->det, b->dimg[q], n, b->spec, q, &src, &b->chk)) ||
            (levels && gpu_levels_apply(&b->lev, src, n, q, b->compute, &b->chk)))
            return -1;
        if (GPU_CUDA(&b->chk, cudaEventRecord(b->ev_done[q], b->compute)) ||
            GPU_CUDA(&b->chk, cudaStreamWaitEvent(b->copy, b->ev_done[q], 0)) ||
            subbatch_copy(b, src, j0, n, q, images, levels) ||
            GPU_CUDA(&b->chk, cudaEventRecord(b->ev_copied[q], b->copy)))
            return -1;
        b->copy_pending[q] = 1;
    }
    if (GPU_CUDA(&b->chk, cudaStreamSynchronize(b->copy))) return -1;
    if (levels) /* the measures came to the pinned staging (gpu/levels.h) */
        memcpy(measures, b->lev.host_meas, (size_t)njobs * PSF_MEASURES * sizeof(double));
    return 0;
}

/* Capture one pass of nfields fields for one image from stage[0] into
 * dimg[0] as a CUDA graph (the H2D copy of the tables, the pupil kernel,
 * cuFFT, the intensity kernel): one launch instead of four or five. */
static int graph_make(psf_backend *b, int nfields, int dense, size_t max_open)
{
    graph_release(b);
    cufftHandle plan;
    /* Plan first: planning allocates, which a capturing stream forbids. */
    if (gpu_plan_cache_get(&b->plans, &b->chk, nfields, &plan)) return -1;
    gpu_pass_layout l = gpu_pass_layout_for(nfields, 1, b->ncoeff, 0);
    if (GPU_CUDA(&b->chk, cudaStreamBeginCapture(b->compute, cudaStreamCaptureModeThreadLocal)))
        return -1;
    int rc = GPU_CUDA(&b->chk, cudaMemcpyAsync(b->dstage[0], b->stage[0], l.bytes,
                                               cudaMemcpyHostToDevice, b->compute));
    if (rc == 0) rc = pass_enqueue(b, 0, &l, nfields, 1, b->dimg[0], dense, max_open);
    cudaGraph_t g = NULL;
    if (rc != 0) { /* leave the stream usable */
        cudaStreamEndCapture(b->compute, &g);
        if (g) cudaGraphDestroy(g);
        return -1;
    }
    if (GPU_CUDA(&b->chk, cudaStreamEndCapture(b->compute, &g))) {
        cudaStreamCaptureStatus st;
        if (cudaStreamIsCapturing(b->compute, &st) == cudaSuccess &&
            st != cudaStreamCaptureStatusNone)
            cudaStreamEndCapture(b->compute, &g); /* the checked call was skipped */
        if (g) cudaGraphDestroy(g);
        return -1;
    }
    b->graph = g;
    if (GPU_CUDA(&b->chk, cudaGraphInstantiate(&b->graph_exec, g, 0))) {
        b->graph_exec = NULL;
        graph_release(b);
        return -1;
    }
    b->graph_nfields = nfields;
    b->graph_all_basis = b->all_basis;
    b->graph_dense = dense;
    b->graph_max_open = max_open;
    b->graph_generation = b->plans.generation;
    return 0;
}

/* One image whose fields fit one pass (FFT sets): replay the graph, copy,
 * wait. The graph is re-made when the pass's shape changes, e.g. from the
 * whole-grid field kernel (first image) to the open-sample one (the next). */
static int run_single(psf_backend *b, const psf_job *job, float *image)
{
    if (pass_add(b, job, 0, job->ncomp, 0)) return -1;
    int nfields = b->pass.nfields;
    size_t max_open;
    int dense = pass_dense(b, &max_open);
    gpu_pass_pack(&b->pass, b->stage[0]);
    if ((!b->graph_exec || b->graph_nfields != nfields || b->graph_all_basis != b->all_basis ||
         b->graph_generation != b->plans.generation || b->graph_dense != dense ||
         (!dense && b->graph_max_open != max_open)) &&
        graph_make(b, nfields, dense, max_open))
        return -1;
    float *src;
    int rc = GPU_CUDA(&b->chk, cudaGraphLaunch(b->graph_exec, b->compute)) ||
                     gpu_detector_apply(&b->det, b->dimg[0], 1, b->spec, 0, &src, &b->chk) ||
                     GPU_CUDA(&b->chk, cudaMemcpyAsync(image, src, b->out_plane * sizeof(float),
                                                       cudaMemcpyDeviceToHost, b->compute)) ||
                     GPU_CUDA(&b->chk, cudaStreamSynchronize(b->compute))
                 ? -1
                 : 0;
    if (rc == 0) pass_done(b);
    gpu_pass_clear(&b->pass);
    return rc;
}

/* Check a job's components as the CPU does (cpu_run_one_mft), so both
 * backends refuse the same jobs. */
static int check_job(psf_backend *b, const psf_job *job, int j)
{
    if (job->ncomp < 0 || job->ncomp > PSF_MAX_COMPONENTS) {
        snprintf(b->chk.err, b->chk.errlen, "gpu: job %d has %d components (0..%d)", j, job->ncomp,
                 PSF_MAX_COMPONENTS);
        return -1;
    }
    for (int c = 0; c < job->ncomp && b->mft; ++c) {
        const psf_component *comp = &job->comp[c];
        if (!(comp->out_pixel_rad > 0.0) || !(comp->wavelength_m > 0.0) || !(comp->dx_m > 0.0) ||
            !isfinite(comp->dx_m * comp->out_pixel_rad / comp->wavelength_m)) {
            snprintf(b->chk.err, b->chk.errlen,
                     "gpu: MFT component %d of job %d without a positive pixel, wavelength and "
                     "pitch",
                     c, j);
            return -1;
        }
    }
    return 0;
}

/* run and run_levels: into images (floats: one FFT image by the graph,
 * else batched), or (levels non-NULL) into levels and measures, always by
 * the batched path. */
static int run_any(psf_backend *b, const psf_job *jobs, int njobs, float *images,
                   unsigned short *levels, double *measures, char *err, size_t errlen)
{
    b->chk.err = err;
    b->chk.errlen = errlen;
    b->npass = 0;
    gpu_pass_clear(&b->pass);
    memset(b->staged_pending, 0, sizeof b->staged_pending);
    memset(b->copy_pending, 0, sizeof b->copy_pending);
    /* This thread may have another device current (backend/backend.h: any thread). */
    int rc = GPU_CUDA(&b->chk, cudaSetDevice(b->device));
    /* Every pupil first: building one waits for the device. */
    for (int j = 0; j < njobs && rc == 0; ++j) {
        rc = check_job(b, &jobs[j], j);
        for (int c = 0; c < jobs[j].ncomp && rc == 0; ++c)
            if (pupil_for(b, jobs[j].comp[c].dx_m) < 0) rc = -1;
    }
    if (rc == 0 && !levels && !b->mft && !b->lean && njobs == 1 && jobs[0].ncomp >= 1 &&
        jobs[0].ncomp <= b->capacity)
        rc = run_single(b, &jobs[0], images);
    else if (rc == 0 && njobs > 0)
        rc = run_batched(b, jobs, njobs, images, levels, measures);
    if (rc != 0) {
        /* No copy may land in images after we return: the caller reuses them. */
        cudaStreamSynchronize(b->compute);
        cudaStreamSynchronize(b->copy);
        slots_forget(b);          /* what the failed pass left in the field buffer is unknown */
        (void)cudaGetLastError(); /* not the next call's error */
    }
    b->chk.err = NULL;
    return rc;
}

static int gpu_run(psf_backend *b, const psf_job *jobs, int njobs, float *images, char *err,
                   size_t errlen)
{
    return run_any(b, jobs, njobs, images, NULL, NULL, err, errlen);
}

/* psf_backend_ops.run_levels (backend/backend.h): the batched path with
 * the levels kernel; a single image goes that way too (one sub-batch). */
static int gpu_run_levels(psf_backend *b, const psf_job *jobs, int njobs, unsigned short *levels,
                          double *measures, char *err, size_t errlen)
{
    if (!b->lev.active || b->det.active) {
        snprintf(err, errlen, "gpu: no levels output for this set (%s)",
                 !b->lev.active ? "levels.bits 0" : "a detector stage");
        return -1;
    }
    return run_any(b, jobs, njobs, NULL, levels, measures, err, errlen);
}

/* Pinned memory, so the copies run at full speed and asynchronously; plain
 * memory when pinned memory runs out (copies then wait for the host). */
static float *gpu_alloc_images(psf_backend *b, size_t nfloats)
{
    host_buf *h = (host_buf *)calloc(1, sizeof *h);
    if (!h) return NULL;
    char err[256];
    b->chk.err = err;
    b->chk.errlen = sizeof err;
    void *p = NULL;
    if (GPU_CUDA(&b->chk, cudaSetDevice(b->device)) == 0 &&
        GPU_CUDA(&b->chk, cudaHostAlloc(&p, nfloats * sizeof(float), cudaHostAllocDefault)) == 0) {
        h->pinned = 1;
    } else {
        (void)cudaGetLastError(); /* absorbed: not the next call's error */
        p = malloc(nfloats * sizeof(float));
    }
    b->chk.err = NULL;
    if (!p) {
        free(h);
        return NULL;
    }
    h->ptr = (float *)p;
    h->next = b->buffers;
    b->buffers = h;
    return h->ptr;
}

static void gpu_free_images(psf_backend *b, float *images)
{
    if (cudaSetDevice(b->device) != cudaSuccess) (void)cudaGetLastError();
    for (host_buf **pp = &b->buffers; *pp; pp = &(*pp)->next) {
        host_buf *h = *pp;
        if (h->ptr != images) continue;
        *pp = h->next;
        if (h->pinned)
            cudaFreeHost(h->ptr);
        else
            free(h->ptr);
        free(h);
        return;
    }
}

static int gpu_device_count(char *err, size_t errlen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        char why[128];
        gpu_no_device_reason(e, why, sizeof why);
        snprintf(err, errlen, "no CUDA device: %s", why);
        return -1;
    }
    return n;
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
static int gpu_memory_need(const psf_problem *set, const psf_backend_options *options,
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

/* Filled field by field, so that the table stays right if backend/backend.h
 * reorders or adds members. */
static psf_backend_ops make_ops(void)
{
    psf_backend_ops o;
    memset(&o, 0, sizeof o);
    o.name = "gpu";
    o.create = gpu_create;
    o.run = gpu_run;
    o.destroy = gpu_destroy;
    o.alloc_images = gpu_alloc_images;
    o.free_images = gpu_free_images;
    o.preferred_batch = PSF_GPU_PREFERRED_BATCH; /* gpu_module_abi.h: the cost model uses it too */
    o.device_count = gpu_device_count;
    o.memory_need = gpu_memory_need;
    o.run_levels = gpu_run_levels;
    return o;
}

static const psf_backend_ops gpu_ops = make_ops();

/* The module's one exported symbol (the rest is built hidden). */
extern "C" GPU_MODULE_EXPORT const gpu_module_ops psf_gpu_module_entry = {
    GPU_MODULE_ABI, sizeof(gpu_module_ops), &gpu_ops, gpu_probe_basics, gpu_library_versions};
