/* SPDX-License-Identifier: BSD-3-Clause */
/* The fit's objective (lib/fit/fit.h): the weights of the noise model, and
 * the weighted least-squares loss of p with each image's flux and
 * background solved for (variable projection), with its gradient from one
 * vector-Jacobian product of the model. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "backend/fork_join.h"
#include "lib/fit/fit.h"

/* fit_loss's threads: up to FIT_LOSS_THREADS, the images dealt out among
 * them, for fits of FIT_LOSS_THREADED_PIXELS pixels or more (a thread's
 * start, ~30 us, against ~0.4 ms an image of 256^2). */
#define FIT_LOSS_THREADS 8
#define FIT_LOSS_THREADED_PIXELS ((size_t)1 << 15)

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
        /* four interleaved partial sums of each (a single sum is a chain
         * of n dependent additions), as residual's */
        double acc[5][4] = {{0}};
        for (size_t i = 0; i < n; ++i) {
            double wi = w[i] * im[i];
            acc[0][i & 3] += w[i];
            acc[1][i & 3] += wi;
            acc[2][i & 3] += wi * im[i];
            acc[3][i & 3] += w[i] * d[i];
            acc[4][i & 3] += wi * d[i];
        }
        double sum[5];
        for (int q = 0; q < 5; ++q)
            sum[q] = (acc[q][0] + acc[q][1]) + (acc[q][2] + acc[q][3]);
        double sw = sum[0], swi = sum[1], swii = sum[2], swd = sum[3], swid = sum[4];
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

/* Images k, k + step, ... of a fit_loss: each one's flux and background,
 * then its loss (into lossk[k]) and cotangent. */
typedef struct {
    fit_state *st;
    int k, step;
} loss_part;

static void *loss_images(void *arg)
{
    loss_part *q = arg;
    for (int k = q->k; k < q->st->model->nimages; k += q->step) {
        solve_linear(q->st, k);
        q->st->lossk[k] = residual(q->st, k);
    }
    return NULL;
}

/* Every image's loss into st->lossk, the images spread over up to
 * FIT_LOSS_THREADS threads: the two passes over the data, weights and
 * images (10.5 MB an evaluation at 3 images of 256^2) are memory-bound,
 * 1.2 ms on one core, the fit's largest cost beside the GPU's calls. Small
 * fits stay on this thread. A thread that cannot start: its part here. */
static void images_on_threads(fit_state *st)
{
    int K = st->model->nimages;
    int T = K < FIT_LOSS_THREADS ? K : FIT_LOSS_THREADS;
    if ((size_t)K * st->model->npix < FIT_LOSS_THREADED_PIXELS) T = 1;
    loss_part q[FIT_LOSS_THREADS];
    for (int t = 0; t < T; ++t)
        q[t] = (loss_part){st, t, T};
    psf_fork_join(loss_images, q, sizeof q[0], T);
}

int fit_load(fit_state *st)
{
    const fit_model *m = st->model;
    const fit_options *o = st->opt;
    if (!m->device) return 0;
    int K = m->nimages;
    double *fixed = st->out; /* [K][2] of its [K][3] */
    for (int k = 0; k < K; ++k) {
        fixed[2 * k] = o->flux0 ? o->flux0[k] : 1.0;
        fixed[2 * k + 1] = o->background0 ? o->background0[k] : 0.0;
    }
    int fit = (o->fit_flux ? 1 : 0) | (o->fit_background ? 2 : 0);
    if (m->device->load(m->user, st->data, st->w, fit, fixed, st->err, st->errlen) == 0) return 0;
    st->failed = 1;
    return -1;
}

/* The loss and gradient by the model's device (the weights fit_load's);
 * without grad the images into st->img instead. */
static double loss_there(fit_state *st, const double *p, double *grad)
{
    const fit_model *m = st->model;
    double t0 = fit_now();
    int rc = m->device->loss(m->user, p, st->out, grad, grad ? NULL : st->img, st->err, st->errlen);
    st->seconds_device += fit_now() - t0;
    if (rc != 0) {
        st->failed = 1;
        return NAN;
    }
    double loss = 0;
    for (int k = 0; k < m->nimages; ++k) { /* in order: the same sum every time */
        st->flux[k] = st->out[3 * k];
        st->bkg[k] = st->out[3 * k + 1];
        loss += st->out[3 * k + 2];
    }
    return loss;
}

/* The loss (and gradient) here: the model's images, the per-image
 * passes, the vector-Jacobian product. */
static double loss_here(fit_state *st, const double *p, double *grad)
{
    const fit_model *m = st->model;
    double t0 = fit_now();
    int rc = m->forward(m->user, p, st->img, st->err, st->errlen);
    st->seconds_forward += fit_now() - t0;
    if (rc != 0) {
        st->failed = 1;
        return NAN;
    }
    images_on_threads(st);
    double loss = 0;
    for (int k = 0; k < m->nimages; ++k) /* in order: the same sum every time */
        loss += st->lossk[k];
    if (grad) {
        t0 = fit_now();
        rc = m->vjp(m->user, p, st->cot, grad, st->err, st->errlen);
        st->seconds_vjp += fit_now() - t0;
        if (rc != 0) {
            st->failed = 1;
            return NAN;
        }
    }
    return loss;
}

double fit_loss(fit_state *st, const double *p, double *grad)
{
    const fit_model *m = st->model;
    st->evaluations++;
    double loss = m->device ? loss_there(st, p, grad) : loss_here(st, p, grad);
    if (st->failed) return NAN;
    const fit_options *o = st->opt;
    if (o->reg_lambda > 0)
        for (int i = o->reg_first; i < m->nparams; ++i) {
            loss += 0.5 * o->reg_lambda * p[i] * p[i];
            if (grad) grad[i] += o->reg_lambda * p[i];
        }
    return loss;
}
