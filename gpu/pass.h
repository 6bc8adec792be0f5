/* SPDX-License-Identifier: BSD-3-Clause */
/* One pass of the CUDA backend (gpu/pass.cu): at most C fields filled on
 * the host (the MFT matrices they use made first), their tables staged,
 * then one field kernel, one batched transform and one intensity kernel
 * enqueued on the compute stream. */
#ifndef PSFSIM_GPU_PASS_H
#define PSFSIM_GPU_PASS_H

#include <stddef.h>

#include "gpu/backend_state.h"
#include "gpu/batch.h"

/* Every slot's contents unknown: the next pass writes whole fields. */
void slots_forget(psf_backend *b);

/* The MFT matrices of every component of job, into b->job_table[]; q: the
 * sub-batch's image buffer. 0, or -1 with b->chk's message. */
int tables_for_job(psf_backend *b, const psf_job *job, int q);

/* Add job's fields comp[c0 .. c0+n-1] as image `image` of the pass being
 * filled. 0, or -1 with b->chk's message. */
int pass_add(psf_backend *b, const psf_job *job, int c0, int n, int image);

/* 1 when the pass being filled needs the whole-grid field kernel; *max_open:
 * the most open samples of its pupils. */
int pass_dense(const psf_backend *b, size_t *max_open);

/* The pass being filled is enqueued: its slots hold its pupils' fields. */
void pass_done(psf_backend *b);

/* Enqueue one pass whose tables are in dstage[r] (layout l) into out.
 * 0, or -1 with b->chk's message. */
int pass_enqueue(psf_backend *b, int r, const gpu_pass_layout *l, int nfields, int nimages,
                 float *out, int dense, size_t max_open);

/* Run the pass being filled into dimg[q]. 0, or -1 with b->chk's message. */
int pass_flush(psf_backend *b, int q);

#endif
