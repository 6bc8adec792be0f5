/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA backend's state (struct psf_backend), private to the files that
 * make it up: backend.cu (the ops table, create, destroy), memory_plan.cu
 * (the sizes and the capacity), set_data.cu (the set's data and pupils on
 * the device), pass.cu (one pass of fields) and run.cu (a run: the
 * sub-batches and the single-image graph). */
#ifndef PSFSIM_GPU_BACKEND_STATE_H
#define PSFSIM_GPU_BACKEND_STATE_H

#include <stddef.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

extern "C" {
#include "backend/backend.h"
}

#include "gpu/batch.h"
#include "gpu/cuda_check.h"
#include "gpu/detector.h"
#include "gpu/levels.h"
#include "gpu/mft.h"
#include "gpu/plan_cache.h"
#include "gpu/pupil.h"

/* MFT matrices kept at once: twice the components of one image, so that a
 * job's own matrices (at most PSF_MAX_COMPONENTS) never have to make room
 * for each other; and about PSF_MFT_TABLE_BYTES of them: past it the least
 * recently used is rebuilt when needed again. */
#define GPU_MFT_TABLES (2 * PSF_MAX_COMPONENTS)

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

#endif
