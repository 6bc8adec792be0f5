/* SPDX-License-Identifier: BSD-3-Clause */
/* The label terms of an image set (see labels.h). */
#include "app/set/labels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int any_nonzero(const double *v, long long n)
{
    for (long long i = 0; i < n; ++i)
        if (v[i] != 0.0) return 1;
    return 0;
}

/* Z(2, 0) from the defocus and focus-shift lists and columns. */
static int focus_nonzero(const set_axes *ax)
{
    const psf_config *cfg = ax->cfg;
    const psf_table *t = ax->table;
    return any_nonzero(cfg->sweep_defocus, cfg->n_sweep_defocus) ||
           any_nonzero(cfg->sweep_focus_shift_um, cfg->n_sweep_focus_shift) ||
           any_nonzero(cfg->random.focus_shift_um, cfg->random.n_focus_shift) ||
           (ax->col_defocus >= 0 && any_nonzero(t->cols[ax->col_defocus], ax->nrows)) ||
           (ax->col_focus_shift >= 0 && any_nonzero(t->cols[ax->col_focus_shift], ax->nrows));
}

/* Whether mode (n, m) is non-zero somewhere in the set (labels.h). */
static int term_nonzero(const set_axes *ax, int n, int m)
{
    const psf_config *cfg = ax->cfg;
    for (int i = 0; i < cfg->nzernike; ++i)
        if (cfg->zernike[i].n == n && cfg->zernike[i].m == m && cfg->zernike[i].coeff != 0.0)
            return 1;
    for (int i = 0; i < cfg->n_sweep_zernike; ++i) {
        const cfg_zernike_sweep *z = &cfg->sweep_zernike[i];
        if (z->n == n && z->m == m && any_nonzero(z->values, z->nvalues)) return 1;
    }
    for (int i = 0; i < ax->nzcols; ++i)
        if (ax->zcols[i].n == n && ax->zcols[i].m == m &&
            any_nonzero(ax->table->cols[ax->zcols[i].col], ax->nrows))
            return 1;
    for (int i = 0; i < ax->nrandom; ++i)
        if (ax->random[i].n == n && ax->random[i].m == m && ax->random[i].width > 0.0) return 1;
    for (int i = 0; i < ax->nfterms; ++i)
        if (ax->fterms[i].n == n && ax->fterms[i].m == m)
            for (long long f = 0; f < ax->nfield; ++f)
                if (ax->fvalues[f * ax->nfterms + i] != 0.0) return 1;
    return n == 2 && m == 0 && focus_nonzero(ax);
}

int set_labels_init(set_labels *l, const set_axes *ax, const psf_modeset *ms, char *err,
                    size_t errlen)
{
    memset(l, 0, sizeof *l);
    size_t cap = ms->nterms > 0 ? (size_t)ms->nterms : 1;
    l->j = malloc(cap * sizeof *l->j);
    l->mode = malloc(cap * sizeof *l->mode);
    if (!l->j || !l->mode) {
        set_labels_free(l);
        snprintf(err, errlen, "out of memory for %zu label terms", cap);
        return -1;
    }
    zernike_convention conv = ax->cfg->zconv;
    for (int t = 0; t < ms->nterms; ++t) {
        if (!term_nonzero(ax, ms->n[t], ms->m[t])) continue;
        int j = zernike_nm_to_index(conv, ms->n[t], ms->m[t]), at = l->nterms++;
        /* Insertion in ascending j: the modes are distinct, so are their j. */
        for (; at > 0 && l->j[at - 1] > j; --at) {
            l->j[at] = l->j[at - 1];
            l->mode[at] = l->mode[at - 1];
        }
        l->j[at] = j;
        l->mode[at] = t;
    }
    return 0;
}

void set_labels_free(set_labels *l)
{
    if (!l) return;
    free(l->j);
    free(l->mode);
    memset(l, 0, sizeof *l);
}

double set_labels_total(const set_labels *l, const double *coeff_units, int i)
{
    return coeff_units[l->mode[i]];
}
