/* SPDX-License-Identifier: BSD-3-Clause */
/* fit_run (lib/fit/fit.h): the passes of L-BFGS with their weights, then
 * the residuals, chi2 and the Fisher matrix at the fit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fit/fit.h"

/* The Fisher step's outputs when it is skipped: unknown (NaN). */
static void no_fisher(const fit_model *model, const fit_options *opt, fit_result *res)
{
    int P = fit_nfisher(model, opt);
    for (int a = 0; a < P; ++a) {
        res->p_sigma[a] = NAN;
        for (int b = 0; res->covariance && b < P; ++b)
            res->covariance[(size_t)a * P + b] = NAN;
    }
    for (int k = 0; k < model->nimages; ++k) {
        res->flux_sigma[k] = opt->fit_flux ? NAN : 0;
        res->background_sigma[k] = opt->fit_background ? NAN : 0;
    }
    res->fisher_ok = 0;
}

int fit_run(const fit_model *model, const double *data, const fit_options *opt, fit_result *res,
            char *err, size_t errlen)
{
    if (!model || !data || !opt || !res || !res->p || !res->p_sigma || !res->flux ||
        !res->flux_sigma || !res->background || !res->background_sigma || model->nimages < 1 ||
        model->npix < 1 || model->nparams < 1 || opt->max_iterations < 1 ||
        !(opt->fisher_step > 0)) {
        snprintf(err, errlen, "fit: a missing buffer or a bad model size or option");
        return -1;
    }
    double t_start = fit_now();
    int K = model->nimages;
    size_t n = model->npix, total = (size_t)K * n;
    fit_state st = {.model = model, .data = data, .opt = opt, .err = err, .errlen = errlen};
    st.w = malloc(sizeof(double) * (4 * total + 6 * (size_t)K));
    if (!st.w) {
        snprintf(err, errlen, "out of memory for the fit (%zu pixels)", total);
        return -1;
    }
    st.img = st.w + total;
    st.cot = st.img + total;
    double *fitted = st.cot + total;
    st.flux = fitted + total;
    st.bkg = st.flux + K;
    st.lossk = st.bkg + K;
    st.out = st.lossk + K;
    res->nhistory = res->iterations = 0;
    int passes = opt->noise == FIT_NOISE_PHOTON && opt->passes > 1 ? opt->passes : 1;
    fit_weights(&st, NULL);
    int rc = fit_load(&st);
    for (int pass = 0; pass < passes && rc == 0; ++pass) {
        res->lbfgs_status =
            fit_lbfgs(&st, res->p, opt->max_iterations, opt->tolerance, opt->memory, res->history,
                      res->max_history, &res->nhistory, &res->iterations);
        fit_loss(&st, res->p, NULL); /* the images, flux and background of the fit */
        if (st.failed) rc = -1;
        for (size_t t = 0; rc == 0 && t < total; ++t)
            fitted[t] = st.flux[t / n] * st.img[t] + st.bkg[t / n];
        /* the next pass's weights, and the Fisher matrix's: the fitted model's */
        if (rc == 0 && opt->noise == FIT_NOISE_PHOTON) {
            fit_weights(&st, fitted);
            if (fit_load(&st) != 0) rc = -1;
            if (rc != 0 || pass + 1 < passes) continue;
            fit_loss(&st, res->p, NULL); /* flux and background under those weights */
            if (st.failed) rc = -1;
            for (size_t t = 0; rc == 0 && t < total; ++t)
                fitted[t] = st.flux[t / n] * st.img[t] + st.bkg[t / n];
        }
    }
    if (rc == 0) {
        double chi2 = 0;
        for (size_t t = 0; t < total; ++t) {
            double r = data[t] - fitted[t];
            chi2 += st.w[t] * r * r;
            if (res->residuals) res->residuals[t] = r;
        }
        res->chi2 = chi2;
        int nfree = fit_nfisher(model, opt);
        res->dof = (double)total - nfree - (opt->fit_flux ? K : 0) - (opt->fit_background ? K : 0);
        memcpy(res->flux, st.flux, sizeof(double) * K);
        memcpy(res->background, st.bkg, sizeof(double) * K);
        double t0 = fit_now();
        if (opt->skip_fisher)
            no_fisher(model, opt, res);
        else
            rc = fit_fisher(&st, res->p, opt->fisher_step, res);
        res->seconds_fisher = fit_now() - t0;
    }
    res->evaluations = st.evaluations;
    res->seconds_forward = st.seconds_forward;
    res->seconds_vjp = st.seconds_vjp;
    res->seconds_device = st.seconds_device;
    res->seconds_total = fit_now() - t_start;
    free(st.w);
    return rc;
}
