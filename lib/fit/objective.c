/* SPDX-License-Identifier: BSD-3-Clause */
/* The fit's objective (lib/fit/fit.h): the weights of the noise model, and
 * the weighted least-squares loss of p with each image's flux and
 * background solved for (variable projection), with its gradient from one
 * vector-Jacobian product of the model. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "lib/fit/fit.h"

double fit_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void fit_weights(const fit_state *st, const double *m)
{
    const fit_options *o = st->opt;
    size_t total = (size_t)st->model->nimages * st->model->npix;
    if (o->noise != FIT_NOISE_PHOTON) {
        double s = o->sigma > 0 ? o->sigma : 1.0;
        for (size_t i = 0; i < total; ++i)
            st->w[i] = 1.0 / (s * s);
        return;
    }
    const double *src = m ? m : st->data;
    double gain = o->gain > 0 ? o->gain : 1.0;
    double read2 = o->sigma * o->sigma;
    double floor = o->floor > 0 ? o->floor : 1.0 / gain;
    for (size_t i = 0; i < total; ++i) {
        double v = (src[i] > 0 ? src[i] : 0.0) / gain + read2;
        st->w[i] = 1.0 / (v > floor ? v : floor);
    }
}

/* Image k's flux and background minimising sum w (d - f I - b)^2 for the
 * ones fitted, the others at their fixed values: the normal equations of
 * one or two unknowns. A degenerate system (an image of zeros) keeps the
 * fixed values. */
static void solve_linear(const fit_state *st, int k)
{
    const fit_options *o = st->opt;
    size_t n = st->model->npix;
    const double *w = st->w + (size_t)k * n, *im = st->img + (size_t)k * n,
                 *d = st->data + (size_t)k * n;
    double f = o->flux0 ? o->flux0[k] : 1.0, b = o->background0 ? o->background0[k] : 0.0;
    if (o->fit_flux || o->fit_background) {
        double sw = 0, swi = 0, swii = 0, swd = 0, swid = 0;
        for (size_t i = 0; i < n; ++i) {
            sw += w[i];
            swi += w[i] * im[i];
            swii += w[i] * im[i] * im[i];
            swd += w[i] * d[i];
            swid += w[i] * im[i] * d[i];
        }
        if (o->fit_flux && o->fit_background) {
            double det = sw * swii - swi * swi;
            if (det > 1e-12 * sw * swii) {
                f = (sw * swid - swi * swd) / det;
                b = (swii * swd - swi * swid) / det;
            }
        } else if (o->fit_flux) {
            if (swii > 0) f = (swid - b * swi) / swii;
        } else if (sw > 0) {
            b = (swd - f * swi) / sw;
        }
    }
    st->flux[k] = f;
    st->bkg[k] = b;
}

/* Image k's part of the loss, 1/2 sum w r^2 with r = d - (f I + b), and
 * its cotangent dL/dI = -f w r into st->cot. Four partial sums: a single
 * one is a chain of n dependent additions. */
static double residual(fit_state *st, int k)
{
    size_t n = st->model->npix, o = (size_t)k * n;
    const double *w = st->w + o, *im = st->img + o, *d = st->data + o;
    double *cot = st->cot + o, f = st->flux[k], b = st->bkg[k];
    double s[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < n; ++i) {
        double r = d[i] - (f * im[i] + b), wr = w[i] * r;
        s[i & 3] += wr * r;
        cot[i] = -f * wr;
    }
    return 0.5 * ((s[0] + s[1]) + (s[2] + s[3]));
}

double fit_loss(fit_state *st, const double *p, double *grad)
{
    const fit_model *m = st->model;
    st->evaluations++;
    double t0 = fit_now();
    int rc = m->forward(m->user, p, st->img, st->err, st->errlen);
    st->seconds_forward += fit_now() - t0;
    if (rc != 0) {
        st->failed = 1;
        return NAN;
    }
    double loss = 0;
    for (int k = 0; k < m->nimages; ++k) {
        solve_linear(st, k);
        loss += residual(st, k);
    }
    if (grad) {
        t0 = fit_now();
        rc = m->vjp(m->user, p, st->cot, grad, st->err, st->errlen);
        st->seconds_vjp += fit_now() - t0;
        if (rc != 0) {
            st->failed = 1;
            return NAN;
        }
    }
    const fit_options *o = st->opt;
    if (o->reg_lambda > 0)
        for (int i = o->reg_first; i < m->nparams; ++i) {
            loss += 0.5 * o->reg_lambda * p[i] * p[i];
            if (grad) grad[i] += o->reg_lambda * p[i];
        }
    return loss;
}
