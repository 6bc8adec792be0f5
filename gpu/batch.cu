/* SPDX-License-Identifier: BSD-3-Clause */
/* A batch's jobs packed for the device (gpu/batch.h). Host code only. */
#include "gpu/batch.h"

#include <stdlib.h>
#include <string.h>

static size_t align16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

gpu_pass_layout gpu_pass_layout_for(int nfields, int nimages, int nterms, int mft)
{
    gpu_pass_layout l;
    l.desc = 0;
    l.scale = align16((size_t)nfields * sizeof(gpu_field_desc));
    l.images = align16(l.scale + (size_t)nfields * sizeof(float));
    l.coeff = align16(l.images + (size_t)nimages * sizeof(gpu_pass_image));
    l.ptrs = align16(l.coeff + (size_t)nfields * nterms * sizeof(double));
    l.bytes = mft ? l.ptrs + (size_t)GPU_MFT_PTRS * nfields * sizeof(void *)
                  : l.coeff + (size_t)nfields * nterms * sizeof(double);
    if (l.bytes == 0) l.bytes = 16;
    return l;
}

size_t gpu_pass_bytes(int capacity, int nterms)
{
    size_t cap = (size_t)capacity;
    return cap * (sizeof(gpu_field_desc) + sizeof(float) + sizeof(gpu_pass_image) +
                  GPU_MFT_PTRS * sizeof(void *)) +
           (cap * nterms + 1) * sizeof(double);
}

int gpu_pass_init(gpu_pass *p, int capacity, int nterms, int mft)
{
    memset(p, 0, sizeof *p);
    size_t cap = (size_t)capacity;
    p->capacity = capacity;
    p->nterms = nterms;
    p->mft = mft;
    p->desc = (gpu_field_desc *)malloc(cap * sizeof *p->desc);
    p->scale = (float *)malloc(cap * sizeof *p->scale);
    p->img = (gpu_pass_image *)malloc(cap * sizeof *p->img);
    p->coeff = (double *)malloc((cap * nterms + 1) * sizeof *p->coeff);
    p->ptr = (void **)malloc(GPU_MFT_PTRS * cap * sizeof *p->ptr);
    if (!p->desc || !p->scale || !p->img || !p->coeff || !p->ptr) {
        gpu_pass_free(p);
        return -1;
    }
    return 0;
}

void gpu_pass_free(gpu_pass *p)
{
    free(p->desc);
    free(p->scale);
    free(p->img);
    free(p->coeff);
    free(p->ptr);
    memset(p, 0, sizeof *p);
}

void gpu_pass_clear(gpu_pass *p)
{
    p->nfields = p->nimages = 0;
}

void gpu_pass_add_image(gpu_pass *p, int image, int nfields, int accumulate)
{
    gpu_pass_image *e = &p->img[p->nimages++];
    e->image = image;
    e->first_field = p->nfields;
    e->nfields = nfields;
    e->accumulate = accumulate;
}

int gpu_pass_add_field(gpu_pass *p, int pupil, const psf_component *comp)
{
    int f = p->nfields++;
    p->desc[f].pupil = pupil;
    p->desc[f].reserved = 0;
    p->desc[f].opd_to_waves = comp->opd_to_waves;
    p->scale[f] = (float)comp->scale;
    double *dst = p->coeff + (size_t)f * p->nterms;
    for (int t = 0; t < p->nterms; ++t)
        dst[t] = comp->coeff_waves ? comp->coeff_waves[t] : 0.0;
    return f;
}

void gpu_pass_set_mft(gpu_pass *p, int f, void *w, void *field, void *t, void *e)
{
    size_t cap = (size_t)p->capacity;
    p->ptr[0 * cap + f] = w;
    p->ptr[1 * cap + f] = field;
    p->ptr[2 * cap + f] = t;
    p->ptr[3 * cap + f] = e;
}

gpu_pass_layout gpu_pass_pack(const gpu_pass *p, unsigned char *stage)
{
    int nf = p->nfields;
    gpu_pass_layout l = gpu_pass_layout_for(nf, p->nimages, p->nterms, p->mft);
    memcpy(stage + l.desc, p->desc, (size_t)nf * sizeof *p->desc);
    memcpy(stage + l.scale, p->scale, (size_t)nf * sizeof *p->scale);
    memcpy(stage + l.images, p->img, (size_t)p->nimages * sizeof *p->img);
    memcpy(stage + l.coeff, p->coeff, (size_t)nf * p->nterms * sizeof *p->coeff);
    if (p->mft)
        for (int a = 0; a < GPU_MFT_PTRS; ++a)
            memcpy(stage + l.ptrs + (size_t)a * nf * sizeof(void *),
                   p->ptr + (size_t)a * p->capacity, (size_t)nf * sizeof(void *));
    return l;
}
