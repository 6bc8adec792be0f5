/* SPDX-License-Identifier: BSD-3-Clause */
/* Queries of an open set (lib/psfsim.h): its shape, each image's
 * parameters, Zernike values (global and per segment) and detector
 * positions, the backend decision. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "app/set/field_grid.h"
#include "lib/set_priv.h"
#include "optics/zernike.h"

int psfsim_describe(const psfsim_set *set, psfsim_info *info, char *err, size_t errlen)
{
    if (!set || !info) return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set or no info given");
    const image_set *s = &set->e.set;
    const psf_config *cfg = &set->e.cfg;
    memset(info, 0, sizeof *info);
    info->count = s->nimages;
    info->npix = s->samp.npix;
    info->pupil_samples = s->samp.pupil_samples;
    info->fft_npix = s->fft_npix;
    info->mft = s->mft;
    info->padding = cfg->padding;
    info->diameter_m = s->samp.diameter_m;
    info->f_number = cfg->f_number;
    set_wavelength_list wl; /* images that take their own have one each */
    image_set_wavelengths(s, &wl);
    info->nwavelengths = wl.per_image ? 1 : wl.n;
    info->nterms = s->modes.nterms;
    info->nswept = cfg->n_sweep_zernike;
    info->png_bits = cfg->png_bits;
    info->name = cfg->name;
    info->normalization = cfg->normalization == NORM_SUM ? "sum" : "peak";
    info->random_count = cfg->random.count;
    info->seed = cfg->random.count > 0 ? cfg->random.seed : 0;
    return PSFSIM_OK;
}

/* Image k's job and record, in the queries' storage. */
static int image(psfsim_set *set, long long k, image_info *info, char *err, size_t errlen)
{
    psf_job job;
    char why[LIB_ERRLEN];
    if (image_set_job(&set->e.set, k, set->query_storage, &job, info, why, sizeof why) != 0)
        return lib_fail(err, errlen, PSFSIM_ERR_CONFIG, "%s", why);
    return PSFSIM_OK;
}

int psfsim_params_get(psfsim_set *set, long long first, long long count, psfsim_params *params,
                      char *err, size_t errlen)
{
    if (!set || (!params && count > 0))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set or no params given");
    int rc = lib_enter(set, "psfsim_params_get", err, errlen);
    if (rc != PSFSIM_OK) return rc;
    rc = lib_check_range(set, first, count, err, errlen);
    for (long long i = 0; rc == PSFSIM_OK && i < count; ++i) {
        image_info info;
        rc = image(set, first + i, &info, err, errlen);
        if (rc != PSFSIM_OK) break;
        params[i] = (psfsim_params){.index = first + i,
                                    .wavelength_nm = image_info_wavelength_nm(&info),
                                    .defocus = info.params.sweep_defocus,
                                    .focus_shift_um = info.params.sweep_focus_shift_um,
                                    .pixel_scale_lambda_d = info.pixel_lambda_d,
                                    .pixel_scale_arcsec = info.pixel_arcsec,
                                    .pixel_scale_um = info.pixel_um,
                                    .sampling_q = info.sampling_q,
                                    .table_row = info.params.table_row,
                                    .draw = info.params.draw};
    }
    lib_leave(set);
    return rc;
}

int psfsim_zernike_terms(const psfsim_set *set, int *swept_j, int *term_j, char *err, size_t errlen)
{
    if (!set) return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set given");
    const psf_config *cfg = &set->e.cfg;
    for (int i = 0; swept_j && i < cfg->n_sweep_zernike; ++i)
        swept_j[i] = cfg->sweep_zernike[i].j;
    const psf_modeset *m = &set->e.set.modes;
    for (int t = 0; term_j && t < m->nterms; ++t)
        term_j[t] = zernike_nm_to_index(cfg->zconv, m->n[t], m->m[t]);
    return PSFSIM_OK;
}

int psfsim_zernike(psfsim_set *set, long long first, long long count, double *swept, double *total,
                   char *err, size_t errlen)
{
    if (!set) return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set given");
    int rc = lib_enter(set, "psfsim_zernike", err, errlen);
    if (rc != PSFSIM_OK) return rc;
    rc = lib_check_range(set, first, count, err, errlen);
    int ns = set->e.cfg.n_sweep_zernike, nt = set->e.set.modes.nterms;
    for (long long i = 0; rc == PSFSIM_OK && i < count; ++i) {
        image_info info;
        rc = image(set, first + i, &info, err, errlen);
        if (rc != PSFSIM_OK) break;
        for (int j = 0; swept && j < ns; ++j)
            swept[i * ns + j] = info.params.sweep_zernike[j];
        for (int t = 0; total && t < nt; ++t)
            total[i * nt + t] = info.coeff_units[t];
    }
    lib_leave(set);
    return rc;
}

int psfsim_label_terms(const psfsim_set *set, int *count, int *j, int *mode, char *err,
                       size_t errlen)
{
    if (!set || !count)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set or no count given");
    const set_labels *l = &set->e.set.labels;
    *count = l->nterms;
    for (int i = 0; j && i < l->nterms; ++i)
        j[i] = l->j[i];
    for (int i = 0; mode && i < l->nterms; ++i)
        mode[i] = l->mode[i];
    return PSFSIM_OK;
}

int psfsim_segment_terms(const psfsim_set *set, int *count, int *segment, int *j, char *err,
                         size_t errlen)
{
    if (!set || !count)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set or no count given");
    const set_segterms *st = &set->e.set.segterms;
    *count = st->nlabels;
    for (int i = 0; segment && i < st->nlabels; ++i)
        segment[i] = st->label_segment[i];
    for (int i = 0; j && i < st->nlabels; ++i)
        j[i] = st->label_j[i];
    return PSFSIM_OK;
}

int psfsim_segment_zernike(psfsim_set *set, long long first, long long count, double *total,
                           char *err, size_t errlen)
{
    if (!set) return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set given");
    const set_segterms *st = &set->e.set.segterms;
    int nl = st->nlabels;
    if (!total && nl > 0 && count > 0)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no total given");
    int rc = lib_enter(set, "psfsim_segment_zernike", err, errlen);
    if (rc != PSFSIM_OK) return rc;
    rc = lib_check_range(set, first, count, err, errlen);
    for (long long i = 0; rc == PSFSIM_OK && nl > 0 && i < count; ++i) {
        image_info info;
        rc = image(set, first + i, &info, err, errlen);
        if (rc != PSFSIM_OK) break;
        /* the label terms are non-zero somewhere, so the set has segment terms
         * and image_set_job gave seg_units (image_set.h) */
        for (int t = 0; t < nl; ++t)
            total[i * nl + t] = info.seg_units[st->label_index[t]];
    }
    lib_leave(set);
    return rc;
}

int psfsim_field_positions(const psfsim_set *set, long long first, long long count, int *present,
                           double *xy, char *err, size_t errlen)
{
    if (!set || (!xy && count > 0))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set or no xy given");
    int rc = lib_check_range(set, first, count, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    double x, y;
    int has = field_grid_position(&set->e.set.axes, 0, &x, &y);
    if (present) *present = has;
    for (long long i = 0; i < count; ++i) {
        if (!has || !field_grid_position(&set->e.set.axes, first + i, &xy[2 * i], &xy[2 * i + 1]))
            xy[2 * i] = xy[2 * i + 1] = NAN;
    }
    return PSFSIM_OK;
}

int psfsim_field_h(const psfsim_set *set, long long first, long long count, int *present,
                   double *hxhy, char *err, size_t errlen)
{
    if (!set || (!hxhy && count > 0))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set or no hxhy given");
    int rc = lib_check_range(set, first, count, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    double hx, hy;
    int has = field_grid_h(&set->e.set.axes, 0, &hx, &hy);
    if (present) *present = has;
    for (long long i = 0; i < count; ++i) {
        if (!has || !field_grid_h(&set->e.set.axes, first + i, &hxhy[2 * i], &hxhy[2 * i + 1]))
            hxhy[2 * i] = hxhy[2 * i + 1] = NAN;
    }
    return PSFSIM_OK;
}

int psfsim_decision_get(const psfsim_set *set, psfsim_decision *decision, char *err, size_t errlen)
{
    if (!set || !decision)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set or no decision given");
    /* the lanes change under a compute (a GPU's fall-back): not meanwhile;
     * the set is the caller's, never const itself (psfsim_open_*) */
    psfsim_set *own = (psfsim_set *)set;
    int rc = lib_enter(own, "psfsim_decision_get", err, errlen);
    if (rc != PSFSIM_OK) return rc;
    const backend_decision *d = &set->e.decision;
    memset(decision, 0, sizeof *decision);
    /* After a fall-back the lanes compute on the CPU: say what computes. */
    const char *name = set->nlanes > 0 ? set->lanes[0].eng.ops->name : d->ops->name;
    snprintf(decision->backend, sizeof decision->backend, "%s", name);
    snprintf(decision->reason, sizeof decision->reason, "%s", d->reason);
    snprintf(decision->probe, sizeof decision->probe, "%s", d->probe);
    decision->predicted_cpu_us = d->cpu_us;
    decision->predicted_gpu_us = d->gpu_us;
    int gpu = strcmp(d->ops->name, "cpu") != 0;
    decision->ndevices = gpu ? d->ndevices : 0;
    for (int i = 0; gpu && i < d->ndevices && i < 16; ++i)
        decision->devices[i] = d->devices[i];
    lib_leave(own);
    return PSFSIM_OK;
}
