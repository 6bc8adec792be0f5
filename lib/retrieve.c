/* SPDX-License-Identifier: BSD-3-Clause */
/* Phase retrieval (lib/psfsim.h, psfsim_retrieve): the set as the model of
 * lib/fit (its images from psfsim_compute_inputs, the gradient from
 * psfsim_vjp, the fitted coefficients added to every image's own), and
 * the options and results of the C API. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/log.h"
#include "lib/retrieve_priv.h"
#include "optics/zernike.h"

void psfsim_retrieve_options_init_size(psfsim_retrieve_options *opt, size_t size)
{
    if (!opt || size < sizeof(size_t)) return;
    psfsim_retrieve_options d = {0};
    d.size = size < sizeof d ? size : sizeof d;
    d.noise = PSFSIM_NOISE_UNIFORM;
    d.fit_flux = 1;
    d.uncertainties = 1;
    memcpy(opt, &d, d.size);
}

void retrieve_rows(set_model *m, const double *p)
{
    for (long long k = 0; k < m->count; ++k)
        memcpy(m->zern + k * m->nterms, p, sizeof(double) * m->nterms);
    if (m->fit_map) m->inputs.opd_map = p + m->nterms;
}

static int forward(void *user, const double *p, double *images, char *err, size_t errlen)
{
    set_model *m = user;
    retrieve_rows(m, p);
    int rc = psfsim_compute_inputs(m->set, 0, m->count, &m->inputs, images, err, errlen);
    if (rc != PSFSIM_OK) m->status = rc;
    return rc;
}

void retrieve_gradients(set_model *m, double *grad, psfsim_gradients *g)
{
    psfsim_gradients_init(g);
    g->zernike = m->gradk;
    if (m->fit_map) g->opd_map = grad + m->nterms;
}

void retrieve_sum(const set_model *m, double *grad)
{
    for (int j = 0; j < m->nterms; ++j)
        grad[j] = 0;
    for (long long k = 0; k < m->count; ++k)
        for (int j = 0; j < m->nterms; ++j)
            grad[j] += m->gradk[k * m->nterms + j];
}

static int vjp(void *user, const double *p, const double *cot, double *grad, char *err,
               size_t errlen)
{
    set_model *m = user;
    retrieve_rows(m, p);
    psfsim_gradients g;
    retrieve_gradients(m, grad, &g);
    int rc = psfsim_vjp(m->set, 0, m->count, &m->inputs, cot, NULL, &g, err, errlen);
    if (rc != PSFSIM_OK) {
        m->status = rc;
        return rc;
    }
    retrieve_sum(m, grad);
    return 0;
}

int psfsim_retrieve(psfsim_set *set, const double *data, const psfsim_retrieve_options *opt,
                    psfsim_retrieve_result *res, char *err, size_t errlen)
{
    if (!set || !data || !opt || !res || !res->coefficients || !res->uncertainties)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "psfsim_retrieve: no set, data, options, result, coefficients or "
                        "uncertainties given");
    psfsim_retrieve_options o;
    psfsim_retrieve_options_init(&o);
    if (opt->size < sizeof(size_t) || opt->size > sizeof o)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "psfsim_retrieve: options of an unknown size %zu (call "
                        "psfsim_retrieve_options_init)",
                        opt->size);
    memcpy(&o, opt, opt->size);
    const char *bad = NULL;
    if (o.nterms < 1 || o.nterms > 1024 || !o.j)
        bad = "nterms (1 .. 1024, with j)";
    else if (o.noise != PSFSIM_NOISE_UNIFORM && o.noise != PSFSIM_NOISE_PHOTON)
        bad = "noise";
    else if (!(o.sigma >= 0) || !isfinite(o.sigma))
        bad = "sigma (>= 0)";
    else if (!(o.gain >= 0) || !isfinite(o.gain))
        bad = "gain (>= 0)";
    else if (o.passes < 0 || o.passes > 100)
        bad = "passes (0 .. 100)";
    else if (o.max_iterations < 0)
        bad = "max_iterations (>= 0)";
    else if (!(o.tolerance >= 0) || !(o.fisher_step >= 0))
        bad = "tolerance or fisher_step (>= 0)";
    else if (o.uncertainties != 0 && o.uncertainties != 1)
        bad = "uncertainties (0 or 1)";
    else if (o.fit_opd_map && !(o.opd_regularization > 0 && isfinite(o.opd_regularization)))
        bad = "opd_regularization (> 0 with fit_opd_map)";
    else if (res->max_history < 0 || (res->max_history > 0 && !res->history))
        bad = "the result's history (max_history > 0 without history)";
    if (bad)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "psfsim_retrieve: bad option %s", bad);
    zernike_convention conv = set->e.cfg.zconv;
    static const char *const conv_name[] = {"Noll", "ANSI", "Fringe"};
    int piston = conv == ZCONV_ANSI ? 0 : 1;
    for (int t = 0; t < o.nterms; ++t) { /* an index of the convention, not piston */
        int zn = -1, zm;
        if (zernike_index_to_nm(conv, o.j[t], &zn, &zm) != 0)
            return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                            "psfsim_retrieve: j[%d] = %d is not an index of the %s convention "
                            "(j >= %d, radial order <= %d); the terms fitted start at %d",
                            t, o.j[t], conv_name[conv], piston, ZERNIKE_MAX_ORDER, piston + 1);
        if (zn == 0)
            return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                            "psfsim_retrieve: j[%d] = %d is piston in the %s convention: it "
                            "changes no image and cannot be fitted; the terms fitted start at %d",
                            t, o.j[t], conv_name[conv], piston + 1);
    }
    psfsim_info info;
    int rc = psfsim_describe(set, &info, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    long long K = info.count;
    size_t npix = (size_t)info.npix * info.npix;
    for (size_t i = 0; i < (size_t)K * npix; ++i) /* a NaN would poison every sum */
        if (!isfinite(data[i]))
            return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                            "psfsim_retrieve: data: %s at image %zu, row %zu, column %zu (mask "
                            "or replace such pixels first)",
                            isnan(data[i]) ? "NaN" : "an infinity", i / npix, i % npix / info.npix,
                            i % info.npix);
    double step = o.fisher_step;
    if (step == 0) { /* 1e-5 waves: in nm, at the set's first image's wavelength */
        psfsim_params par;
        rc = psfsim_params_get(set, 0, 1, &par, err, errlen);
        if (rc != PSFSIM_OK) return rc;
        step = set->e.cfg.zunits == ZUNITS_NM ? 1e-5 * par.wavelength_nm : 1e-5;
    }
    int rows = 0, cols = 0;
    if (o.fit_opd_map) {
        psfsim_map_shape(set, "aberrations.opd_map.file", &rows, &cols, NULL, 0);
        if (rows * cols == 0)
            return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                            "psfsim_retrieve: fit_opd_map: the set has no aberrations.opd_map "
                            "(give one to fit: a map of zeros is refused by the config, so "
                            "put a tiny value outside the aperture)");
    }
    size_t nmap = (size_t)rows * cols, np = (size_t)o.nterms + nmap;
    set_model m = {.set = set,
                   .count = K,
                   .nterms = o.nterms,
                   .nparams = np,
                   .fit_map = nmap > 0,
                   .status = PSFSIM_OK};
    psfsim_inputs_init(&m.inputs);
    double *buf = calloc((size_t)K * (2 * o.nterms + 4) + 2 * np, sizeof(double));
    double *resid = res->residuals;
    if (!buf) return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "psfsim_retrieve: out of memory");
    m.zern = buf;
    m.gradk = m.zern + K * o.nterms;
    double *flux = m.gradk + K * o.nterms, *flux_s = flux + K, *bkg = flux_s + K, *bkg_s = bkg + K,
           *sig = bkg_s + K, *pv = sig + np; /* pv: the coefficients, then the map */
    m.inputs.nterms = o.nterms;
    m.inputs.j = o.j;
    m.inputs.zernike = m.zern;
    if (np > INT32_MAX / 2) {
        free(buf);
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "psfsim_retrieve: an OPD map too large");
    }
    fit_model fm = {(int)K, npix, (int)np, forward, vjp, &m, NULL};
    fit_options fo = {.noise =
                          o.noise == PSFSIM_NOISE_PHOTON ? FIT_NOISE_PHOTON : FIT_NOISE_UNIFORM,
                      .sigma = o.sigma,
                      .gain = o.gain > 0 ? o.gain : 1,
                      .passes = o.passes > 0 ? o.passes : 2,
                      .fit_flux = o.fit_flux != 0,
                      .fit_background = o.fit_background != 0,
                      .flux0 = o.flux,
                      .background0 = o.background,
                      .max_iterations = o.max_iterations > 0 ? o.max_iterations : 200,
                      .tolerance = o.tolerance > 0 ? o.tolerance : 1e-10,
                      .fisher_step = step,
                      .reg_first = o.nterms,
                      .reg_lambda = nmap ? o.opd_regularization : 0,
                      .nfisher = o.nterms,
                      .skip_fisher = !o.uncertainties};
    for (int j = 0; j < o.nterms; ++j)
        pv[j] = o.initial ? o.initial[j] : 0.0;
    fit_result fr = {.p = pv,
                     .p_sigma = sig,
                     .flux = flux,
                     .flux_sigma = flux_s,
                     .background = bkg,
                     .background_sigma = bkg_s,
                     .covariance = res->covariance,
                     .residuals = resid,
                     .history = res->history,
                     .max_history = res->max_history};
    char why[LIB_ERRLEN] = "";
    retrieve_gpu *gpu = NULL;
    rc = retrieve_gpu_open(&m, npix, pv, &gpu, err, errlen);
    if (rc != PSFSIM_OK) {
        free(buf);
        return rc;
    }
    m.gpu = gpu;
    fm.device = gpu ? &retrieve_gpu_device : NULL;
    int fitted = fit_run(&fm, data, &fo, &fr, why, sizeof why);
    retrieve_gpu_close(gpu);
    if (fitted != 0) {
        free(buf);
        return lib_fail(err, errlen, m.status != PSFSIM_OK ? m.status : PSFSIM_ERR_MEMORY, "%s",
                        why);
    }
    log_info("retrieve: %d iterations, %d evaluations in %.3f s: on the %s %.3f s, images "
             "%.3f s, gradients %.3f s, the Fisher matrix %.3f s",
             fr.iterations, fr.evaluations, fr.seconds_total, gpu ? "GPU" : "host",
             fr.seconds_device, fr.seconds_forward, fr.seconds_vjp, fr.seconds_fisher);
    memcpy(res->coefficients, pv, sizeof(double) * o.nterms);
    memcpy(res->uncertainties, sig, sizeof(double) * o.nterms);
    if (nmap && res->opd_map) memcpy(res->opd_map, pv + o.nterms, sizeof(double) * nmap);
    double *outs[4] = {res->flux, res->flux_sigma, res->background, res->background_sigma};
    double *ins[4] = {flux, flux_s, bkg, bkg_s};
    for (int i = 0; i < 4; ++i)
        if (outs[i]) memcpy(outs[i], ins[i], sizeof(double) * K);
    res->nhistory = fr.nhistory;
    res->iterations = fr.iterations;
    res->evaluations = fr.evaluations;
    res->lbfgs_status = fr.lbfgs_status;
    res->fisher_ok = fr.fisher_ok;
    res->chi2 = fr.chi2;
    res->dof = fr.dof;
    free(buf);
    return PSFSIM_OK;
}
