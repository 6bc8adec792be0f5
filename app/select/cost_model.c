/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/select/cost_model.h"

#include <math.h>

/* Work of one N x N FFT in units of N^2 log2 N. */
static double fft_work(double npix)
{
    return npix * npix * log2(npix);
}

/* Interpolate y(N) given at the probe sizes: log-log between them, scaled
 * by FFT work beyond them. */
static double interp(const probe_figures *f, const double *y, int npix)
{
    int n = f->nsizes;
    if (npix <= f->npix[0]) return y[0] * fft_work(npix) / fft_work(f->npix[0]);
    if (npix >= f->npix[n - 1]) return y[n - 1] * fft_work(npix) / fft_work(f->npix[n - 1]);
    int i = 0;
    while (f->npix[i + 1] < npix)
        ++i;
    double t = log((double)npix / f->npix[i]) / log((double)f->npix[i + 1] / f->npix[i]);
    return exp(log(y[i]) + t * (log(y[i + 1]) - log(y[i])));
}

/* A set-up cost at N: interpolated between the probe sizes; beyond them
 * it grows with the grid's area (the pupil fill, the buffers, the plans'
 * memory: N^2 work, not the FFT's N^2 log N), and below them it stays
 * (fixed costs do not shrink). */
static double setup_us(const probe_figures *f, const double *y, int npix)
{
    int n = f->nsizes;
    if (npix <= f->npix[0]) return y[0];
    if (npix >= f->npix[n - 1]) {
        double r = (double)npix / f->npix[n - 1];
        return y[n - 1] * r * r;
    }
    return interp(f, y, npix);
}

double cost_cpu_image_us(const probe_figures *f, int npix)
{
    return interp(f, f->cpu_us, npix);
}

void cost_gpu_batch(const probe_figures *f, int npix, double *a_us, double *c_us)
{
    double a[PROBE_NSIZES] = {0}, c[PROBE_NSIZES] = {0};
    for (int i = 0; i < f->nsizes; ++i) {
        int b = f->big_batch[i];
        c[i] = (f->gpu_bb_us[i] - f->gpu_b1_us[i]) / (b - 1);
        if (c[i] < 0.01 * f->gpu_b1_us[i]) c[i] = 0.01 * f->gpu_b1_us[i]; /* noise guard */
        a[i] = f->gpu_b1_us[i] - c[i];
        if (a[i] < 1.0) a[i] = 1.0;
    }
    *c_us = interp(f, c, npix);
    /* The fixed cost is launch-bound, not FFT-bound: nearest probed size. */
    int best = 0;
    for (int i = 1; i < f->nsizes; ++i)
        if (fabs(log((double)f->npix[i] / npix)) < fabs(log((double)f->npix[best] / npix)))
            best = i;
    *a_us = a[best];
}

double cost_write_us(const probe_figures *f, int npix, int png, int fits)
{
    double mpix = (double)npix * npix * 1e-6;
    return (png ? f->png_us_per_mpix : 0.0) * mpix + (fits ? f->fits_us_per_mpix : 0.0) * mpix;
}

void cost_predict(const probe_figures *f, const cost_job *job, cost_prediction *p)
{
    int npix = job->npix, w = job->writers > 0 ? job->writers : 1;
    double k = (double)job->nimages, fields = k * (job->ncomp > 0 ? job->ncomp : 1);
    double write = k * job->write_us;
    double compute = fields * cost_cpu_image_us(f, npix);
    p->cpu_us = setup_us(f, f->cpu_create_us, npix) + job->write_us +
                (npix < 512 ? (compute + write) / w : fmax(compute, write / (w > 1 ? w - 1 : 1)));
    p->gpu_start_us = 0.0;
    p->gpu_us = INFINITY;
    if (f->have_gpu) {
        double a, c;
        cost_gpu_batch(f, npix, &a, &c);
        double nbatches = ceil(k / (job->batch > 0 ? job->batch : 1));
        p->gpu_start_us = job->gpu_started ? 0.0 : f->gpu_start_us;
        double speed = job->gpu_speed > 0 ? job->gpu_speed : 1.0;
        p->gpu_us = p->gpu_start_us + setup_us(f, f->gpu_create_us, npix) +
                    fmax((nbatches * a + fields * c) / speed, write / w) + job->write_us;
    }
    p->use_gpu = p->gpu_us < p->cpu_us;
}
