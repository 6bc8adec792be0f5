/* SPDX-License-Identifier: BSD-3-Clause */
/* A batch's jobs packed for the device. Each pass of a sub-batch
 * (gpu/pass.cu) is described to its kernels by small tables: per field
 * (a job's component) its pupil and OPD scale (gpu_field_desc, gpu/pupil.h),
 * its scale and Zernike coefficients; per image the fields it sums
 * (gpu_pass_image, gpu/intensity.h); for an MFT set the four pointer arrays
 * of the batched products (gpu/mft.h). They are filled on the host as jobs
 * are added, then packed into one staging buffer that a single copy takes
 * to the device. The CPU needs no such tables: its lanes read the jobs
 * where they are (cpu/backend.c). */
#ifndef PSFSIM_GPU_BATCH_H
#define PSFSIM_GPU_BATCH_H

#include <stddef.h>

#include "gpu/intensity.h"
#include "gpu/pupil.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "backend/backend.h"

/* The pointer arrays of an MFT pass: the fields' W, P (pupil field), T
 * and E (gpu_mft_apply's w, p, t, e). */
#define GPU_MFT_PTRS 4

/* Where the tables of one pass lie in a staging buffer, bytes from its
 * start, each 16-aligned: desc [nfields] gpu_field_desc, scale [nfields]
 * float, images [nimages] gpu_pass_image, coeff [nfields * nterms] double
 * (field f's at f * nterms), and for MFT sets ptrs: GPU_MFT_PTRS arrays of
 * nfields device pointers, array a at ptrs + a * nfields. bytes: the
 * whole, at least 16. */
typedef struct {
    size_t desc, scale, images, coeff, ptrs, bytes;
} gpu_pass_layout;

/* The pass being filled, on the host: at most capacity fields and images. */
typedef struct {
    int capacity; /* C */
    int nterms;
    int mft;
    gpu_field_desc *desc; /* [C] */
    float *scale;         /* [C] */
    gpu_pass_image *img;  /* [C] */
    double *coeff;        /* [C * nterms] */
    void **ptr;           /* MFT: [GPU_MFT_PTRS * C], array a's entry f at a * C + f */
    int nfields, nimages;
} gpu_pass;

/* The layout of a pass of nfields fields and nimages images. */
gpu_pass_layout gpu_pass_layout_for(int nfields, int nimages, int nterms, int mft);

/* Host bytes gpu_pass_init allocates for capacity and nterms. */
size_t gpu_pass_bytes(int capacity, int nterms);

/* An empty pass for capacity fields of nterms modes. Returns 0, or -1 when
 * host memory runs out (p then holds nothing). */
int gpu_pass_init(gpu_pass *p, int capacity, int nterms, int mft);
void gpu_pass_free(gpu_pass *p);

/* Empty p again (its tables kept). */
void gpu_pass_clear(gpu_pass *p);

/* Start image `image` of the output buffer: its fields are the nfields
 * added next; accumulate 1 adds them to what earlier passes left there
 * (a job split over passes). At most capacity images. */
void gpu_pass_add_image(gpu_pass *p, int image, int nfields, int accumulate);

/* Add comp as the next field, of pupil `pupil` (the device pupil table's
 * index): its scale, OPD scale and coefficients (0 without coeff_waves).
 * Returns the field's slot f. At most capacity fields. */
int gpu_pass_add_field(gpu_pass *p, int pupil, const psf_component *comp);

/* MFT: slot f's matrix w, pupil field, intermediate t and output e (device). */
void gpu_pass_set_mft(gpu_pass *p, int f, void *w, void *field, void *t, void *e);

/* Pack p's tables into stage (at least gpu_pass_layout_for(C, C, ...).bytes)
 * and return their layout. */
gpu_pass_layout gpu_pass_pack(const gpu_pass *p, unsigned char *stage);

#ifdef __cplusplus
}
#endif

#endif
