/* SPDX-License-Identifier: BSD-3-Clause */
/* The field model (see field_model.h). */
#include "app/set/field_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/set/field_table.h"

void field_model_h(const psf_config *cfg, long long f, double *hx, double *hy)
{
    const cfg_field *fd = &cfg->field;
    *hx = (fd->x_px[f] - fd->centre_px[0]) / fd->radius_px;
    *hy = (fd->y_px[f] - fd->centre_px[1]) / fd->radius_px;
}

/* The monomials of t at (hx, hy): 0.0 + c pow(hx, p) pow(hy, q) ... */
static double eval_mono(const cfg_field_monomial *mono, int n, double hx, double hy)
{
    double v = 0.0;
    for (int k = 0; k < n; ++k)
        v += mono[k].c * pow(hx, mono[k].p) * pow(hy, mono[k].q);
    return v;
}

/* The polynomials of field.zernike at every position. */
static void eval_polynomials(set_axes *ax)
{
    const cfg_field *fd = &ax->cfg->field;
    for (long long f = 0; f < ax->nfield; ++f) {
        double hx, hy;
        field_model_h(ax->cfg, f, &hx, &hy);
        for (int i = 0; i < fd->nterms; ++i)
            ax->fvalues[f * fd->nterms + i] =
                eval_mono(fd->terms[i].mono, fd->terms[i].nmono, hx, hy);
    }
}

/* field.segment_zernike at every position, after the table's segment
 * columns (field_table_interpolate makes room for them: nfsegs counts
 * both), each value within the bound; a (segment, j) the table gives too
 * is refused. */
static int eval_segment_terms(set_axes *ax, char *err, size_t errlen)
{
    const cfg_field *fd = &ax->cfg->field;
    int n = fd->nsegterms;
    if (n == 0) return 0;
    if (!ax->fsegs) {
        ax->fsegs = calloc((size_t)n, sizeof *ax->fsegs);
        ax->fsegvalues = malloc((size_t)ax->nfield * (size_t)n * sizeof *ax->fsegvalues);
        ax->nfsegs = n;
        if (!ax->fsegs || !ax->fsegvalues)
            return axes_fail(ax->cfg, "field.segment_zernike", err, errlen,
                             "out of memory for %lld positions", ax->nfield);
    }
    int base = ax->nfsegs - n, stride = ax->nfsegs;
    for (int i = 0; i < n; ++i) {
        const cfg_field_segterm *t = &fd->segterms[i];
        for (int q = 0; q < base; ++q)
            if (ax->fsegs[q].segment == t->segment && ax->fsegs[q].j == t->j)
                return axes_fail(
                    ax->cfg, "field.segment_zernike", err, errlen,
                    "segment %d's term j = %d is also a column of field.table (s%d_z%d):"
                    " give a term's field in one place",
                    t->segment, t->j, t->segment, t->j);
        ax->fsegs[base + i] = (axes_field_segterm){t->segment, t->j, t->n, t->m, -1};
    }
    char why[256];
    double lim = config_coeff_limit(ax->cfg, axes_shortest_wavelength(ax), why, sizeof why);
    for (long long f = 0; f < ax->nfield; ++f) {
        double hx, hy;
        field_model_h(ax->cfg, f, &hx, &hy);
        for (int i = 0; i < n; ++i) {
            const cfg_field_segterm *t = &fd->segterms[i];
            double v = eval_mono(t->mono, t->nmono, hx, hy);
            ax->fsegvalues[f * stride + base + i] = v;
            if (fabs(v) > lim)
                return axes_fail(ax->cfg, "field.segment_zernike", err, errlen,
                                 "segment %d's term j = %d at the position (%.17g, %.17g) px (hx "
                                 "%.6g, hy %.6g) is %.6g: must be in [%.6g, %.6g] (%s)",
                                 t->segment, t->j, fd->x_px[f], fd->y_px[f], hx, hy, v, -lim, lim,
                                 why);
        }
    }
    return 0;
}

/* Every value within the coefficient bound. */
static int check_values(set_axes *ax, const char *key, char *err, size_t errlen)
{
    char why[256];
    double lim = config_coeff_limit(ax->cfg, axes_shortest_wavelength(ax), why, sizeof why);
    for (long long f = 0; f < ax->nfield; ++f)
        for (int i = 0; i < ax->nfterms; ++i) {
            double v = ax->fvalues[f * ax->nfterms + i];
            if (fabs(v) <= lim) continue;
            double hx, hy;
            field_model_h(ax->cfg, f, &hx, &hy);
            return axes_fail(ax->cfg, key, err, errlen,
                             "term j = %d at the position (%.17g, %.17g) px (hx %.6g, hy %.6g) "
                             "is %.6g: must be in [%.6g, %.6g] (%s)",
                             ax->fterms[i].j, ax->cfg->field.x_px[f], ax->cfg->field.y_px[f], hx,
                             hy, v, -lim, lim, why);
        }
    int nts = ax->nfsegs - ax->cfg->field.nsegterms; /* the table's segment columns */
    for (long long f = 0; f < ax->nfield; ++f)
        for (int i = 0; i < nts; ++i) {
            double v = ax->fsegvalues[f * ax->nfsegs + i];
            if (fabs(v) <= lim) continue;
            return axes_fail(ax->cfg, key, err, errlen,
                             "segment %d's term j = %d at the position (%.17g, %.17g) px is %.6g: "
                             "must be in [%.6g, %.6g] (%s)",
                             ax->fsegs[i].segment, ax->fsegs[i].j, ax->cfg->field.x_px[f],
                             ax->cfg->field.y_px[f], v, -lim, lim, why);
        }
    return 0;
}

int field_model_init(set_axes *ax, char *err, size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    const cfg_field *fd = &cfg->field;
    if (!fd->enabled) return 0;
    if (fd->table_file[0]) {
        if (field_table_interpolate(ax, err, errlen) != 0 ||
            check_values(ax, "field.table", err, errlen) != 0)
            return -1;
        return eval_segment_terms(ax, err, errlen);
    }
    if (eval_segment_terms(ax, err, errlen) != 0) return -1;
    if (fd->nterms == 0) return 0;
    ax->fterms = calloc((size_t)fd->nterms, sizeof *ax->fterms);
    ax->fvalues = malloc((size_t)ax->nfield * (size_t)fd->nterms * sizeof *ax->fvalues);
    if (!ax->fterms || !ax->fvalues)
        return axes_fail(cfg, "field.zernike", err, errlen, "out of memory for %lld positions",
                         ax->nfield);
    ax->nfterms = fd->nterms;
    for (int i = 0; i < fd->nterms; ++i)
        ax->fterms[i] = (axes_table_term){-1, fd->terms[i].j, fd->terms[i].n, fd->terms[i].m};
    eval_polynomials(ax);
    return check_values(ax, "field.zernike", err, errlen);
}
