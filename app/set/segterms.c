/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-segment Zernike terms of an image set (see segterms.h). */
#include "app/set/segterms.h"

#include <math.h>
#include <stdarg.h>
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
static int label_nonzero(const set_axes *ax, const set_segterms *st, int k, int t)
{
    const psf_config *cfg = ax->cfg;
    int j = st->j[t];
    for (int i = 0; i < cfg->nseg_zernike; ++i)
        if (cfg->seg_zernike[i].segment == k && cfg->seg_zernike[i].j == j &&
            cfg->seg_zernike[i].coeff != 0.0)
            return 1;
    for (int i = 0; i < cfg->n_sweep_seg_zernike; ++i) {
        const cfg_segment_term *z = &cfg->sweep_seg_zernike[i];
        if (z->segment == k && z->j == j && any_nonzero(z->values, z->nvalues)) return 1;
    }
    for (int i = 0; i < st->ntable; ++i)
        if (st->table_seg[i] == k && st->table_j[i] == j &&
            any_nonzero(ax->table->cols[st->table_col[i]], (int)ax->nrows))
            return 1;
    for (int i = 0; i < cfg->random.nseg_zernike; ++i)
        if (cfg->random.seg_zernike[i].j == j && cfg->random.seg_zernike[i].width > 0.0 &&
            present(&cfg->aperture.seg, k))
            return 1;
    for (int i = 0; i < ax->nfsegs; ++i) {
        const axes_field_segterm *z = &ax->fsegs[i];
        if (z->segment != k || z->j != j) continue;
        for (long long f = 0; f < ax->nfield; ++f)
            if (ax->fsegvalues[f * ax->nfsegs + i] != 0.0) return 1;
    }
    return 0;
}

static int init_labels(set_segterms *st, const set_axes *ax, char *err, size_t errlen)
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
            if (!label_nonzero(ax, st, k, t)) continue;
            int at = st->nlabels++; /* ascending j within the segment */
            for (; at > first && st->label_j[at - 1] > st->j[t]; --at) {
                st->label_segment[at] = st->label_segment[at - 1];
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

/* "CFG:LINE: sweep.table: PATH:H:C (NAME): " then fmt into err. Returns -1. */
__attribute__((format(printf, 5, 6))) static int table_fail(const set_axes *ax, int col, char *err,
                                                            size_t errlen, const char *fmt, ...)
{
    char where[CFG_PATH_MAX + 32], msg[1024];
    config_key_where(ax->cfg, "sweep.table", where, sizeof where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "%.4200s: sweep.table: %.4200s:%zu:%d (%.200s): %s", where,
             ax->table->path, ax->table->header_line, col + 1, ax->table->names[col], msg);
    return -1;
}

/* Table column c, s<k>_z<j>: a present segment, radial order <= 4, not
 * swept too, every cell within the coefficient bound. */
static int check_table_column(const set_axes *ax, int c, int k, int j, int n, char *err,
                              size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    int nseg = aperture_segment_count(cfg->aperture.seg.rings);
    if (k >= nseg)
        return table_fail(ax, c, err, errlen, "segment %d is outside the %d ring%s (0 .. %d)", k,
                          cfg->aperture.seg.rings, cfg->aperture.seg.rings == 1 ? "" : "s",
                          nseg - 1);
    if (!present(&cfg->aperture.seg, k))
        return table_fail(ax, c, err, errlen,
                          "segment %d is left out (optics.aperture.segments.missing)", k);
    if (n > CFG_SEG_MAX_ORDER)
        return table_fail(ax, c, err, errlen,
                          "j = %d is of radial order %d: a segment's terms go up to radial order "
                          "%d",
                          j, n, CFG_SEG_MAX_ORDER);
    for (int i = 0; i < cfg->n_sweep_seg_zernike; ++i)
        if (cfg->sweep_seg_zernike[i].segment == k && cfg->sweep_seg_zernike[i].j == j)
            return table_fail(ax, c, err, errlen,
                              "the column is also given by sweep.segment_zernike; give the values "
                              "of a term in one place");
    char why[256];
    double lim = config_coeff_limit(cfg, axes_shortest_wavelength(ax), why, sizeof why);
    for (size_t r = 0; r < ax->table->nrows; ++r)
        if (axes_cell_bound(ax, c, r, -lim, lim, why, err, errlen)) return -1;
    return 0;
}

/* The table's s<k>_z<j> columns, their modes added. */
static int table_columns(set_segterms *st, const set_axes *ax, char *err, size_t errlen)
{
    const psf_table *t = ax->table;
    if (!t || ax->cfg->aperture.shape != APERTURE_SEGMENTED) return 0;
    size_t cap = t->ncols > 0 ? (size_t)t->ncols : 1;
    st->table_col = malloc(cap * sizeof *st->table_col);
    st->table_seg = malloc(cap * sizeof *st->table_seg);
    st->table_j = malloc(cap * sizeof *st->table_j);
    if (!st->table_col || !st->table_seg || !st->table_j) {
        snprintf(err, errlen, "out of memory for the table's segment columns");
        return -1;
    }
    for (int c = 0; c < t->ncols; ++c) {
        int k, n, m, j = table_segment_index(t->names[c], ax->cfg->zconv, &k);
        if (j < 0) continue;
        zernike_index_to_nm(ax->cfg->zconv, j, &n, &m);
        if (check_table_column(ax, c, k, j, n, err, errlen)) return -1;
        st->table_col[st->ntable] = c, st->table_seg[st->ntable] = k, st->table_j[st->ntable] = j;
        st->ntable++;
        add_mode(st, j, n, m);
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
    if (table_columns(st, ax, err, errlen)) {
        segterms_free(st);
        return -1;
    }
    for (int i = 0; i < cfg->random.nseg_zernike; ++i)
        add_mode(st, cfg->random.seg_zernike[i].j, cfg->random.seg_zernike[i].n,
                 cfg->random.seg_zernike[i].m);
    for (int i = 0; i < ax->nfsegs; ++i)
        add_mode(st, ax->fsegs[i].j, ax->fsegs[i].n, ax->fsegs[i].m);
    if (st->nterms == 0) return 0;
    st->nseg = aperture_segment_count(cfg->aperture.seg.rings);
    return init_labels(st, ax, err, errlen);
}

void segterms_free(set_segterms *st)
{
    if (!st) return;
    free(st->label_segment);
    free(st->label_j);
    free(st->label_index);
    free(st->table_col);
    free(st->table_seg);
    free(st->table_j);
    memset(st, 0, sizeof *st);
}

size_t segterms_count(const set_segterms *st)
{
    return (size_t)st->nseg * (size_t)st->nterms;
}

void segterms_coefficients(const set_axes *ax, const set_segterms *st, const psf_image_params *p,
                           const double *drawn, double wl_nm, double *out_waves, double *out_units)
{
    const double *swept = p->sweep_seg_zernike;
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
    for (int i = 0; p->table_row >= 0 && i < st->ntable; ++i)
        out_waves[(size_t)st->table_seg[i] * st->nterms + mode_of(st, st->table_j[i])] +=
            ax->table->cols[st->table_col[i]][p->table_row];
    for (size_t i = 0; drawn && i < n; ++i)
        out_waves[i] += drawn[i];
    for (int i = 0; p->field >= 0 && i < ax->nfsegs; ++i) {
        const axes_field_segterm *z = &ax->fsegs[i];
        out_waves[(size_t)z->segment * st->nterms + mode_of(st, z->j)] +=
            ax->fsegvalues[p->field * ax->nfsegs + i];
    }
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
