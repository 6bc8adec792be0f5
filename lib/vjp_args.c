/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradients' structs and shape queries (lib/psfsim.h, API version 4):
 * psfsim_inputs_init_size, psfsim_gradients_init_size, psfsim_map_shape,
 * psfsim_segment_modes; a call's arguments checked (lib/vjp_priv.h). */
#include <stdio.h>
#include <string.h>

#include "lib/vjp_priv.h"
#include "optics/aperture.h"
#include "optics/zernike.h"

void psfsim_inputs_init_size(psfsim_inputs *inputs, size_t size)
{
    if (!inputs) return;
    size = size < sizeof *inputs ? size : sizeof *inputs;
    memset(inputs, 0, size);
    inputs->size = size;
}

void psfsim_gradients_init_size(psfsim_gradients *grads, size_t size)
{
    if (!grads) return;
    size = size < sizeof *grads ? size : sizeof *grads;
    memset(grads, 0, size);
    grads->size = size;
}

int psfsim_map_shape(const psfsim_set *set, const char *key, int *rows, int *cols, char *err,
                     size_t errlen)
{
    if (!set || !key || !rows || !cols)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set, key, rows or cols given");
    const image_set *s = &set->e.set;
    if (strcmp(key, "aberrations.opd_map.file") == 0) {
        *rows = s->opd_map ? s->opd_rows : 0;
        *cols = s->opd_map ? s->opd_cols : 0;
        return PSFSIM_OK;
    }
    if (strcmp(key, "optics.aperture.file") == 0) {
        int has = s->aperture.shape == APERTURE_FILE && s->aperture.map;
        *rows = has ? s->aperture.map_rows : 0;
        *cols = has ? s->aperture.map_cols : 0;
        return PSFSIM_OK;
    }
    return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                    "psfsim_map_shape: key \"%.100s\" is not \"aberrations.opd_map.file\" or "
                    "\"optics.aperture.file\"",
                    key);
}

int psfsim_segment_modes(const psfsim_set *set, int *segments, int *nterms, int *j, char *err,
                         size_t errlen)
{
    if (!set || !segments || !nterms)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set, segments or nterms given");
    const image_set *s = &set->e.set;
    int r = s->aperture.seg.rings;
    *segments = s->aperture.shape == APERTURE_SEGMENTED ? 1 + 3 * r * (r + 1) : 0;
    *nterms = *segments > 0 ? s->segterms.nterms : 0;
    for (int t = 0; j && t < *nterms; ++t)
        j[t] = s->segterms.j[t];
    return PSFSIM_OK;
}

/* *dst = the caller's struct of its own size (its first field), the rest
 * zero; NULL: all zero. */
static int copy_sized(void *dst, size_t size, const void *src, const char *what, char *err,
                      size_t errlen)
{
    memset(dst, 0, size);
    if (!src) return PSFSIM_OK;
    size_t have = *(const size_t *)src;
    if (have < sizeof(size_t) || have > 4096)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "%s: size %zu is not a struct's (call %s_init first)", what, have, what);
    memcpy(dst, src, have < size ? have : size);
    return PSFSIM_OK;
}

/* Terms j[count] of convention conv into n, m: each valid, once, of
 * radial order <= max_n. */
static int resolve_terms(zernike_convention conv, const int *j, int count, int max_n, int *n,
                         int *m, const char *what, char *err, size_t errlen)
{
    for (int t = 0; t < count; ++t) {
        if (zernike_index_to_nm(conv, j[t], &n[t], &m[t]) != 0 || n[t] > max_n)
            return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                            "%s[%d] = %d is not a valid Zernike index of the config's "
                            "convention%s",
                            what, t, j[t], max_n < 1000 ? " of radial order <= 4" : "");
        for (int u = 0; u < t; ++u)
            if (j[u] == j[t])
                return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "%s[%d] = %d is given twice",
                                what, t, j[t]);
    }
    return PSFSIM_OK;
}

/* The global terms: the inputs', or the set's label terms. */
static int global_terms(const psfsim_set *set, vjp_args *a, char *err, size_t errlen)
{
    const psfsim_inputs *in = &a->in;
    if (in->nterms < 0 || in->nterms > VJP_MAX_TERMS || (in->nterms > 0 && !in->j))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "inputs.nterms %d: expected 0 .. %d, with j given", in->nterms,
                        VJP_MAX_TERMS);
    if (in->nterms == 0 && in->zernike)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "inputs.zernike given with nterms 0");
    a->terms.n = a->n;
    a->terms.m = a->m;
    if (in->nterms > 0) {
        a->terms.nterms = in->nterms;
        return resolve_terms(set->e.cfg.zconv, in->j, in->nterms, 1 << 20, a->n, a->m, "inputs.j",
                             err, errlen);
    }
    const set_labels *l = &set->e.set.labels;
    const psf_modeset *ms = &set->e.set.modes;
    a->terms.nterms = l->nterms;
    for (int t = 0; t < l->nterms; ++t) {
        a->n[t] = ms->n[l->mode[t]];
        a->m[t] = ms->m[l->mode[t]];
    }
    return PSFSIM_OK;
}

/* The per-segment terms: the inputs', or the set's segment modes. */
static int segment_terms(const psfsim_set *set, vjp_args *a, char *err, size_t errlen)
{
    const psfsim_inputs *in = &a->in;
    const image_set *s = &set->e.set;
    int r = s->aperture.seg.rings;
    a->segments = s->aperture.shape == APERTURE_SEGMENTED ? 1 + 3 * r * (r + 1) : 0;
    int wanted = in->seg_nterms != 0 || in->seg_zernike || a->gr.seg_zernike;
    if (wanted && a->segments == 0)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "segment terms (inputs.seg_zernike or gradients.seg_zernike) for a set "
                        "whose aperture is not segmented");
    if (in->seg_nterms < 0 || in->seg_nterms > VJP_MAX_SEG_TERMS ||
        (in->seg_nterms > 0 && !in->seg_j))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "inputs.seg_nterms %d: expected 0 .. %d, with seg_j given", in->seg_nterms,
                        VJP_MAX_SEG_TERMS);
    if (in->seg_nterms == 0 && in->seg_zernike)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "inputs.seg_zernike given with seg_nterms 0");
    a->terms.seg_n = a->seg_n;
    a->terms.seg_m = a->seg_m;
    if (!wanted) return PSFSIM_OK;
    if (in->seg_nterms > 0) {
        a->terms.seg_nterms = in->seg_nterms;
        return resolve_terms(set->e.cfg.zconv, in->seg_j, in->seg_nterms, 4, a->seg_n, a->seg_m,
                             "inputs.seg_j", err, errlen);
    }
    a->terms.seg_nterms = s->segterms.nterms;
    for (int t = 0; t < s->segterms.nterms; ++t) {
        a->seg_n[t] = s->segterms.n[t];
        a->seg_m[t] = s->segterms.m[t];
    }
    return PSFSIM_OK;
}

int vjp_args_get(const psfsim_set *set, const psfsim_inputs *inputs, const psfsim_gradients *grads,
                 vjp_args *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    int rc = copy_sized(&a->in, sizeof a->in, inputs, "psfsim_inputs", err, errlen);
    if (rc == PSFSIM_OK)
        rc = copy_sized(&a->gr, sizeof a->gr, grads, "psfsim_gradients", err, errlen);
    if (rc != PSFSIM_OK) return rc;
    const image_set *s = &set->e.set;
    if (a->gr.transmission && !(s->aperture.shape == APERTURE_FILE && s->aperture.map))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "gradients.transmission for a set without optics.aperture.file "
                        "(shape = \"file\")");
    a->terms.transmission = a->gr.transmission != NULL;
    if ((a->in.opd_map || a->gr.opd_map) && !set->e.set.opd_map)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "an OPD map input or gradient for a set without "
                        "aberrations.opd_map");
    a->terms.opd = a->in.opd_map || a->gr.opd_map;
    rc = global_terms(set, a, err, errlen);
    return rc == PSFSIM_OK ? segment_terms(set, a, err, errlen) : rc;
}
