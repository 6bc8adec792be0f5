/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-segment Zernike terms of an image set (see segterms.h). */
#include "app/set/segterms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optics/aperture.h"

static int mode_of(const set_segterms *st, int j)
{
    for (int t = 0; t < st->nterms; ++t)
        if (st->j[t] == j) return t;
    return -1;
}

static void add_mode(set_segterms *st, int j, int n, int m)
{
    if (mode_of(st, j) >= 0 || st->nterms == SEGTERMS_MAX_MODES) return;
    st->j[st->nterms] = j, st->n[st->nterms] = n, st->m[st->nterms] = m;
    st->nterms++;
}

static int any_nonzero(const double *v, int n)
{
    for (int i = 0; i < n; ++i)
        if (v[i] != 0.0) return 1;
    return 0;
}

static int present(const psf_segments *s, int k)
{
    return !((s->missing[k / 64] >> (k % 64)) & 1ULL);
}

/* Whether (segment k, mode t) is non-zero somewhere in the set. */
static int label_nonzero(const psf_config *cfg, const set_segterms *st, int k, int t)
{
    int j = st->j[t];
    for (int i = 0; i < cfg->nseg_zernike; ++i)
        if (cfg->seg_zernike[i].segment == k && cfg->seg_zernike[i].j == j &&
            cfg->seg_zernike[i].coeff != 0.0)
            return 1;
    for (int i = 0; i < cfg->n_sweep_seg_zernike; ++i) {
        const cfg_segment_term *z = &cfg->sweep_seg_zernike[i];
        if (z->segment == k && z->j == j && any_nonzero(z->values, z->nvalues)) return 1;
    }
    for (int i = 0; i < cfg->random.nseg_zernike; ++i)
        if (cfg->random.seg_zernike[i].j == j && cfg->random.seg_zernike[i].width > 0.0 &&
            present(&cfg->aperture.seg, k))
            return 1;
    return 0;
}

static int init_labels(set_segterms *st, const psf_config *cfg, char *err, size_t errlen)
{
    size_t cap = segterms_count(st) > 0 ? segterms_count(st) : 1;
    st->label_segment = malloc(cap * sizeof *st->label_segment);
    st->label_j = malloc(cap * sizeof *st->label_j);
    st->label_index = malloc(cap * sizeof *st->label_index);
    if (!st->label_segment || !st->label_j || !st->label_index) {
        segterms_free(st);
        snprintf(err, errlen, "out of memory for %zu segment label terms", cap);
        return -1;
    }
    for (int k = 0; k < st->nseg; ++k) {
        int first = st->nlabels;
        for (int t = 0; t < st->nterms; ++t) {
            if (!label_nonzero(cfg, st, k, t)) continue;
            int at = st->nlabels++; /* ascending j within the segment */
            for (; at > first && st->label_j[at - 1] > st->j[t]; --at) {
                st->label_j[at] = st->label_j[at - 1];
                st->label_index[at] = st->label_index[at - 1];
            }
            st->label_segment[at] = k;
            st->label_j[at] = st->j[t];
            st->label_index[at] = k * st->nterms + t;
        }
    }
    return 0;
}

int segterms_init(set_segterms *st, const set_axes *ax, char *err, size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    memset(st, 0, sizeof *st);
    for (int i = 0; i < cfg->nseg_zernike; ++i)
        add_mode(st, cfg->seg_zernike[i].j, cfg->seg_zernike[i].n, cfg->seg_zernike[i].m);
    for (int i = 0; i < cfg->n_sweep_seg_zernike; ++i)
        add_mode(st, cfg->sweep_seg_zernike[i].j, cfg->sweep_seg_zernike[i].n,
                 cfg->sweep_seg_zernike[i].m);
    for (int i = 0; i < cfg->random.nseg_zernike; ++i)
        add_mode(st, cfg->random.seg_zernike[i].j, cfg->random.seg_zernike[i].n,
                 cfg->random.seg_zernike[i].m);
    if (st->nterms == 0) return 0;
    st->nseg = aperture_segment_count(cfg->aperture.seg.rings);
    return init_labels(st, cfg, err, errlen);
}

void segterms_free(set_segterms *st)
{
    if (!st) return;
    free(st->label_segment);
    free(st->label_j);
    free(st->label_index);
    memset(st, 0, sizeof *st);
}

size_t segterms_count(const set_segterms *st)
{
    return (size_t)st->nseg * (size_t)st->nterms;
}

void segterms_coefficients(const set_axes *ax, const set_segterms *st, const double *swept,
                           const double *drawn, double wl_nm, double *out_waves, double *out_units)
{
    const psf_config *cfg = ax->cfg;
    size_t n = segterms_count(st);
    for (size_t i = 0; i < n; ++i)
        out_waves[i] = 0.0;
    for (int i = 0; i < cfg->nseg_zernike; ++i) {
        const cfg_segment_term *z = &cfg->seg_zernike[i];
        out_waves[(size_t)z->segment * st->nterms + mode_of(st, z->j)] += z->coeff;
    }
    for (int i = 0; swept && i < cfg->n_sweep_seg_zernike; ++i) {
        const cfg_segment_term *z = &cfg->sweep_seg_zernike[i];
        out_waves[(size_t)z->segment * st->nterms + mode_of(st, z->j)] += swept[i];
    }
    for (size_t i = 0; drawn && i < n; ++i)
        out_waves[i] += drawn[i];
    int nm_units = cfg->zunits == ZUNITS_NM;
    for (size_t i = 0; i < n; ++i) {
        if (out_units) out_units[i] = out_waves[i];
        if (nm_units) out_waves[i] /= wl_nm;
    }
}

void segterms_draw(const set_axes *ax, const set_segterms *st, uint64_t d, double *drawn)
{
    const cfg_random *r = &ax->cfg->random;
    const psf_segments *s = &ax->cfg->aperture.seg;
    size_t n = segterms_count(st);
    for (size_t i = 0; i < n; ++i)
        drawn[i] = 0.0;
    for (int k = 0; k < st->nseg; ++k) {
        if (!present(s, k)) continue;
        for (int i = 0; i < r->nseg_zernike; ++i) {
            const cfg_random_term *t = &r->seg_zernike[i];
            draw_id id = {(uint64_t)r->seed, d, (uint32_t)(k * 256 + t->j), DRAW_SEGMENT_ZERNIKE};
            drawn[(size_t)k * st->nterms + mode_of(st, t->j)] =
                draw_value(id, t->dist == CFG_DRAW_NORMAL ? DRAW_NORMAL : DRAW_UNIFORM, t->width);
        }
    }
}
