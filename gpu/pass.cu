/* SPDX-License-Identifier: BSD-3-Clause */
/* One pass of the CUDA backend: the fields of at most C components are
 * added on the host (pass_add; for an MFT set the matrices they use,
 * table_for), their tables staged and copied, then the pupil-field kernel
 * (whole grid, or only the open samples where each slot already holds its
 * pupil's field), the batched cuFFT or the MFT's two cuBLAS products, and
 * the intensity kernel are enqueued on the compute stream (pass_flush). */
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
}

#include "gpu/backend_state.h"
#include "gpu/batch.h"
#include "gpu/cuda_check.h"
#include "gpu/detector.h"
#include "gpu/intensity.h"
#include "gpu/mft.h"
#include "gpu/pass.h"
#include "gpu/plan_cache.h"
#include "gpu/pupil.h"
#include "gpu/set_data.h"

/* Every slot's contents unknown: the next pass writes whole fields. */
void slots_forget(psf_backend *b)
{
    for (int s = 0; s < b->capacity && b->slot_pupil; ++s)
        b->slot_pupil[s] = -1;
}

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
int tables_for_job(psf_backend *b, const psf_job *job, int q)
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
int pass_add(psf_backend *b, const psf_job *job, int c0, int n, int image)
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
int pass_dense(const psf_backend *b, size_t *max_open)
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
void pass_done(psf_backend *b)
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
int pass_enqueue(psf_backend *b, int r, const gpu_pass_layout *l, int nfields, int nimages,
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
int pass_flush(psf_backend *b, int q)
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
