/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim_vjp and psfsim_compute_inputs on the GPU (issue 28; lib/vjp.c's
 * one call, vjp_gpu_run; docs/design.md, "Gradients on the GPU"): for a set
 * whose backend is the GPU, in the scope below, the images of a call go in
 * chunks through the module's gpu_vjp_ops (gpu/adjoint.cu), each chunk one
 * run of rows (one per wavelength component of each image). The module's
 * instance, with its pupils, plans and buffers, is kept on the set from
 * call to call (psfsim_close frees it: vjp_gpu_close) while the call's
 * input terms stay the same; an OPD map input only rewrites the pupils'
 * OPD rows (set_row). The host makes
 * what the CPU's model makes (lib/vjp_image.c): each image's job
 * (image_set_job: components, scales, coefficients), each pitch's pupil
 * (adj_pupil_build: the backend's samples, the input terms' basis, the OPD
 * map's bilinear weights), the "poppy" turn of the images and cotangents,
 * and the chain from the rows' gradients to the inputs': the Zernike
 * terms' (times 1/lambda_nm for nm units) and the OPD map's (the samples'
 * sums scattered through the bilinear weights).
 *
 * Each pupil's basis B [K][nopen] stacks the set's own coefficients' rows
 * (psf_coeff_count: its modes, then each segment's modes on that
 * segment), the input terms' Z_t, and one OPD row (the set's OPD map value
 * plus the input map's, both bilinear samples, in map units); a row's
 * coefficients are the component's coeff_waves, the inputs' times
 * units_to_waves, and opd_to_waves, so W = C B is the CPU's phase.
 *
 * Scope (else the CPU's path, lib/vjp.c): an FFT set (not the MFT), with
 * or without the detector stage (the module's, gpu_vjp_detector: the
 * transfer function psf_detector_otf_double, the sampling), no segment
 * inputs or gradients, no transmission gradient. A set whose backend is the CPU always takes the
 * CPU's path. For a GPU set, PSFSIM_VJP_BACKEND: "cpu" the CPU; "gpu" the GPU or an error
 * (PSFSIM_ERR_BACKEND: out of scope, no module; the GPU's error as PSFSIM_ERR_COMPUTE); unset or
 * "auto": the GPU in scope, the CPU out of it or when the GPU fails (the reason logged at debug
 * level). psfsim_vjp_device's device arrays (vjp_device_io) go to the module's run_device, which
 * reads and writes them on the device (the "poppy" turn and float's conversion there); out of
 * scope (or on another device than the set's first GPU) lib/vjp.c takes them through the host. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/log.h"
#include "app/select/gpu.h"
#include "backend/detector.h"
#include "lib/fit/fit.h"
#include "lib/vjp_priv.h"

/* Bytes of one chunk's images on the host and the device. */
#define CHUNK_BYTES ((size_t)256 << 20)

/* The kept state (psfsim_set.vjp_gpu). */
typedef struct {
    const gpu_vjp_ops *ops;
    gpu_vjp *g;
    int device;
    psf_problem problem;
    int n, m, own, k; /* N, M (the detector stage's output); the set's coefficients;
                         basis rows K = own + nterms + 1 */
    int nterms, tn[VJP_MAX_TERMS], tm[VJP_MAX_TERMS], opd; /* the terms it was made for */
    int opd_input;                                         /* the OPD rows hold an input map */
    adj_pupil pupils[PSF_MAX_COMPONENTS];
    int npupils;
    double *opd_sum[PSF_MAX_COMPONENTS]; /* [nopen] each pupil's OPD samples' gradient */
    double *row;                         /* [most nopen] an OPD row */
    size_t cap_row;
    /* a chunk's, for cap_images images */
    gpu_vjp_row *rows;
    double *coeff, *gcoeff, *utw; /* [rows][K], [rows][K], [rows] */
    double *cot, *img;            /* [chunk][N N]: the "poppy" turn's */
    double *storage;
    int cap_images, chunk;
    double seconds_run; /* in the module's run and run_device, summed (vjp_gpu_seconds) */
} vjp_gpu;

/* Why the set is outside the GPU's scope, or NULL. */
static const char *out_of_scope(const psfsim_set *set, const vjp_args *a)
{
    const image_set *s = &set->e.set;
    if (s->mft) return "an MFT set (the GPU's gradients are the FFT's)";
    if (a->in.seg_zernike || a->gr.seg_zernike) return "segment inputs or gradients";
    if (a->gr.transmission) return "the transmission gradient";
    return NULL;
}

static void state_free(vjp_gpu *v)
{
    if (!v) return;
    if (v->g) v->ops->destroy(v->g);
    for (int i = 0; i < v->npupils; ++i) {
        adj_pupil_free(&v->pupils[i]);
        free(v->opd_sum[i]);
    }
    free(v->row);
    free(v->rows);
    free(v->coeff);
    free(v->gcoeff);
    free(v->utw);
    free(v->cot);
    free(v->img);
    free(v->storage);
    free(v);
}

void vjp_gpu_close(psfsim_set *set)
{
    state_free(set->vjp_gpu);
    set->vjp_gpu = NULL;
}

/* Pupil pp's OPD row [nopen]: the set's map value plus the input map's
 * (map units; the row's coefficient is opd_to_waves). */
static void opd_row(const vjp_gpu *v, const vjp_args *a, const adj_pupil *pp, double *o)
{
    const cpu_pupil *p = &pp->p;
    const double *map = a->in.opd_map;
    for (size_t k = 0; k < p->nopen; ++k) {
        double x = p->opd ? p->opd[k] : 0.0;
        if (map && v->opd && v->problem.opd_map) {
            double s = 0.0;
            for (int q = 0; q < 4; ++q)
                s += pp->mw[4 * k + q] * map[pp->mw_idx[4 * k + q]];
            x += s;
        }
        o[k] = x;
    }
}

/* Pupil pp's basis rows [K][nopen] (the header's order). */
static void basis_of(const vjp_gpu *v, const vjp_args *a, const adj_pupil *pp, double *b)
{
    const cpu_pupil *p = &pp->p;
    size_t n = p->nopen;
    int nt = v->problem.modes.nterms, snt = v->problem.seg_modes.nterms;
    for (int r = 0; r < nt; ++r)
        for (size_t k = 0; k < n; ++k)
            b[(size_t)r * n + k] = p->basis[(size_t)r * n + k];
    for (int r = nt; r < v->own; ++r) { /* segment s's term q */
        int s = snt > 0 ? (r - nt) / snt : 0, q = snt > 0 ? (r - nt) % snt : 0;
        for (size_t k = 0; k < n; ++k)
            b[(size_t)r * n + k] =
                p->seg_nterms > 0 && p->seg[k] == s ? (double)p->seg_basis[(size_t)q * n + k] : 0.0;
    }
    for (int r = 0; r < v->nterms; ++r)
        memcpy(b + (size_t)(v->own + r) * n, pp->zb + (size_t)r * n, n * sizeof *b);
    opd_row(v, a, pp, b + (size_t)(v->k - 1) * n);
}

/* The pupil of pitch dx_m: its index, built (and given to the module) on
 * first use; -1 with err. */
static int pupil_of(vjp_gpu *v, const vjp_args *a, double dx_m, char *err, size_t errlen)
{
    for (int i = 0; i < v->npupils; ++i)
        if (fabs(v->pupils[i].p.dx_m - dx_m) <= 1e-12 * dx_m) return i;
    if (v->npupils == PSF_MAX_COMPONENTS) {
        snprintf(err, errlen, "more than %d pupil pitches", PSF_MAX_COMPONENTS);
        return -1;
    }
    adj_pupil *pp = &v->pupils[v->npupils];
    if (adj_pupil_build(pp, &v->problem, dx_m, &a->terms, err, errlen) != 0) return -1;
    int i = v->npupils++;
    size_t n = pp->p.nopen;
    double *amp = malloc((n ? n : 1) * sizeof *amp);
    double *b = malloc((n ? n : 1) * (size_t)v->k * sizeof *b);
    v->opd_sum[i] = calloc(n ? n : 1, sizeof(double));
    int rc = -1, index = -1;
    if (!amp || !b || !v->opd_sum[i]) {
        snprintf(err, errlen, "out of memory for a pupil of %zu samples", n);
    } else {
        for (size_t k = 0; k < n; ++k)
            amp[k] = pp->p.amp[k];
        basis_of(v, a, pp, b);
        rc = v->ops->add_pupil(v->g, n, pp->p.dest, amp, b, &index, err, errlen);
        if (rc == 0 && index != i) {
            snprintf(err, errlen, "gpu: pupil %d numbered %d", i, index);
            rc = -1;
        }
    }
    free(amp);
    free(b);
    return rc == 0 ? i : -1;
}

/* Turn img[mm] by 180 degrees into out ("poppy"). */
static void turned(const double *img, double *out, size_t mm)
{
    for (size_t p = 0; p < mm; ++p)
        out[p] = img[mm - 1 - p];
}

/* The rows of dev's steps after the nrows rows of the chunk's nc images:
 * step t's copy of each row adds nc * t to its image and raises input
 * term t - 1 by dev->step (in the inputs' units, as the row's others). */
static void steps(vjp_gpu *v, const vjp_args *a, const vjp_device_io *dev, int nc, int nrows)
{
    size_t K = (size_t)v->k, nt = (size_t)a->terms.nterms;
    for (int t = 1; t <= dev->steps; ++t)
        for (int r = 0; r < nrows; ++r) {
            int q = t * nrows + r;
            v->rows[q] = v->rows[r];
            v->rows[q].image += t * nc;
            v->utw[q] = v->utw[r];
            double *cq = v->coeff + (size_t)q * K;
            memcpy(cq, v->coeff + (size_t)r * K, K * sizeof *cq);
            const double *zin = a->in.zernike ? a->in.zernike + v->rows[r].image * nt : NULL;
            cq[v->own + t - 1] = ((zin ? zin[t - 1] : 0.0) + dev->step) * v->utw[r];
        }
}

/* Images [k0, k0 + nc) (rows i0 .. of the call's inputs): their rows, the
 * run, the gradients. Returns PSFSIM_OK or an error with err. */
static int chunk(vjp_gpu *v, psfsim_set *set, const vjp_args *a, long long k0, long long i0, int nc,
                 const double *cotangent, double *images, const vjp_device_io *dev, char *err,
                 size_t errlen)
{
    image_set *s = &set->e.set;
    size_t mm = (size_t)v->m * v->m, K = (size_t)v->k;
    int poppy = s->cfg->orientation == ORIENT_POPPY, nrows = 0;
    char why[LIB_ERRLEN];
    for (int j = 0; j < nc; ++j) {
        psf_job job;
        image_info info;
        if (image_set_job(s, k0 + j, v->storage, &job, &info, why, sizeof why) != 0)
            return lib_fail(err, errlen, PSFSIM_ERR_CONFIG, "%s", why);
        const double *zin =
            a->in.zernike ? a->in.zernike + (size_t)(i0 + j) * a->terms.nterms : NULL;
        for (int c = 0; c < job.ncomp; ++c) {
            const psf_component *comp = &job.comp[c];
            int p = pupil_of(v, a, comp->dx_m, why, sizeof why);
            if (p < 0) return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
            double f = set->e.cfg.zunits == ZUNITS_NM ? 1.0 / info.params.wl_nm[c] : 1.0;
            v->rows[nrows] = (gpu_vjp_row){p, j, comp->scale, comp->opd_to_waves};
            v->utw[nrows] = f;
            double *cr = v->coeff + (size_t)nrows * K;
            memcpy(cr, comp->coeff_waves, (size_t)v->own * sizeof *cr);
            for (int t = 0; t < a->terms.nterms; ++t)
                cr[v->own + t] = zin ? zin[t] * f : 0.0;
            cr[K - 1] = comp->opd_to_waves;
            nrows++;
        }
        if (cotangent && poppy && !dev)
            turned(cotangent + (size_t)j * mm, v->cot + (size_t)j * mm, mm);
    }
    int nimages = nc;
    if (dev && dev->steps > 0) {
        steps(v, a, dev, nc, nrows);
        nrows *= dev->steps + 1;
        nimages *= dev->steps + 1;
    }
    double *dopd[PSF_MAX_COMPONENTS] = {0};
    for (int p = 0; a->gr.opd_map && p < v->npupils; ++p)
        dopd[p] = v->opd_sum[p];
    if (dev) { /* the device's arrays, turned there; chunk i0's rows at their offset */
        size_t off = (size_t)i0 * mm * (dev->dtype == 1 ? sizeof(double) : sizeof(float));
        const char *dc = dev->cotangent ? (const char *)dev->cotangent + off : NULL;
        char *di = dev->images ? (char *)dev->images + off : NULL;
        double t0 = fit_now();
        const vjp_fit_io *f = dev->fit;
        size_t o = (size_t)i0 * (f ? f->npix : mm); /* the module checks npix against M M */
        int rc = f ? v->ops->fit_evaluate(v->g, nimages, poppy, nrows, v->rows, v->coeff, f->npix,
                                          f->data + o, f->w + o,
                                          f->want_images || poppy ? (double *)di : NULL, f->fit,
                                          f->fixed + 2 * i0, f->cot + o, f->out + 3 * i0, v->gcoeff,
                                          dopd, why, sizeof why)
                   : v->ops->run_device(v->g, nimages, dev->dtype, poppy, dc, di, nrows, v->rows,
                                        v->coeff, v->gcoeff, dopd, why, sizeof why);
        v->seconds_run += fit_now() - t0;
        if (rc != 0) return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
        cotangent = f ? f->cot + o : dc ? (const double *)dc : NULL; /* tested for NULL below */
    } else {
        const double *cot = cotangent && poppy ? v->cot : cotangent;
        double *img = images && poppy ? v->img : images;
        if (v->ops->run(v->g, nc, cot, img, nrows, v->rows, v->coeff, v->gcoeff, dopd, why,
                        sizeof why) != 0)
            return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
        for (int j = 0; images && poppy && j < nc; ++j)
            turned(v->img + (size_t)j * mm, images + (size_t)j * mm, mm);
    }
    if (!cotangent || !a->gr.zernike) return PSFSIM_OK;
    size_t nt = (size_t)a->terms.nterms;
    memset(a->gr.zernike + (size_t)i0 * nt, 0, (size_t)nc * nt * sizeof(double));
    for (int r = 0; r < nrows; ++r) {
        double *g = a->gr.zernike + (size_t)(i0 + v->rows[r].image) * nt;
        const double *gc = v->gcoeff + (size_t)r * K + v->own;
        for (size_t t = 0; t < nt; ++t)
            g[t] += v->utw[r] * gc[t];
    }
    return PSFSIM_OK;
}

/* The OPD map's gradient: each pupil's samples' sums through their
 * bilinear weights (cpu/adjoint_pupil.c's scatter). */
static void opd_scatter(const vjp_gpu *v, const psfsim_set *set, const vjp_args *a)
{
    const image_set *s = &set->e.set;
    double *g = a->gr.opd_map;
    memset(g, 0, (size_t)s->opd_rows * s->opd_cols * sizeof *g);
    for (int i = 0; i < v->npupils; ++i) {
        const adj_pupil *pp = &v->pupils[i];
        for (size_t k = 0; k < pp->p.nopen; ++k)
            for (int q = 0; q < 4; ++q)
                g[pp->mw_idx[4 * k + q]] += v->opd_sum[i][k] * pp->mw[4 * k + q];
        memset(v->opd_sum[i], 0, pp->p.nopen * sizeof(double));
    }
}

/* Whether v was made for a's terms on device. */
static int state_fits(const vjp_gpu *v, const vjp_args *a, int device)
{
    if (v->device != device || v->nterms != a->terms.nterms || v->opd != a->terms.opd) return 0;
    for (int t = 0; t < v->nterms; ++t)
        if (v->tn[t] != a->terms.n[t] || v->tm[t] != a->terms.m[t]) return 0;
    return 1;
}

/* The problem's detector stage to the module (cpu/adjoint_detector.c's
 * description: backend/detector.h), v->m its output. 0, or -1 with err. */
static int detector(vjp_gpu *v, char *err, size_t errlen)
{
    const psf_detector *det = &v->problem.detector;
    v->m = v->n;
    if (!psf_detector_active(det)) return 0;
    if (psf_detector_check(det, v->n, err, errlen) != 0) return -1;
    gpu_vjp_detector d = {.m = psf_detector_out_npix(&v->problem),
                          .s = det->oversample > 1 ? det->oversample : 1,
                          .off = psf_detector_sample_offset(det, v->n),
                          .sample = det->sample,
                          .bins = psf_detector_bins(det),
                          .convolve = psf_detector_convolves(det)};
    double *otf = NULL;
    if (d.convolve) {
        otf = malloc(2 * (size_t)v->n * (size_t)(v->n / 2 + 1) * sizeof *otf);
        if (!otf) {
            snprintf(err, errlen, "out of memory for a %d x %d transfer function", v->n, v->n);
            return -1;
        }
        psf_detector_otf_double(det, v->n, otf);
    }
    d.otf = otf;
    int rc = v->ops->set_detector(v->g, &d, err, errlen);
    free(otf);
    v->m = d.m;
    return rc;
}

/* A new state for a's terms: the module's instance on device. */
static int state_new(psfsim_set *set, const vjp_args *a, const gpu_vjp_ops *ops, int device,
                     vjp_gpu **out, char *err, size_t errlen)
{
    vjp_gpu *v = calloc(1, sizeof *v);
    if (!v) return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
    v->ops = ops;
    v->device = device;
    image_set_problem(&set->e.set, 1, &v->problem);
    v->n = v->problem.npix;
    v->own = psf_coeff_count(&v->problem);
    v->nterms = a->terms.nterms;
    for (int t = 0; t < v->nterms; ++t) {
        v->tn[t] = a->terms.n[t];
        v->tm[t] = a->terms.m[t];
    }
    v->opd = a->terms.opd;
    v->k = v->own + v->nterms + 1;
    v->storage = malloc(image_set_storage(&set->e.set) * sizeof *v->storage);
    if (!v->storage) {
        state_free(v);
        return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
    }
    char why[LIB_ERRLEN];
    if (ops->create(device, v->n, v->k, &v->g, why, sizeof why) != 0 ||
        detector(v, why, sizeof why) != 0) {
        state_free(v);
        return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
    }
    *out = v;
    return PSFSIM_OK;
}

/* The chunk's host buffers for count images of the call. */
static int reserve(vjp_gpu *v, const psfsim_set *set, long long count, char *err, size_t errlen)
{
    long long c = vjp_gpu_chunk_images(set);
    v->chunk = (int)(count < c ? count : c);
    if (v->chunk <= v->cap_images) return PSFSIM_OK;
    size_t K = (size_t)v->k, r = (size_t)v->chunk * PSF_MAX_COMPONENTS;
    int poppy = set->e.set.cfg->orientation == ORIENT_POPPY;
    free(v->rows);
    free(v->coeff);
    free(v->gcoeff);
    free(v->utw);
    free(v->cot);
    free(v->img);
    v->rows = malloc(r * sizeof *v->rows);
    v->coeff = malloc(r * K * sizeof *v->coeff);
    v->gcoeff = malloc(r * K * sizeof *v->gcoeff);
    v->utw = malloc(r * sizeof *v->utw);
    size_t out = (size_t)v->m * v->m;
    v->cot = poppy ? malloc((size_t)v->chunk * out * sizeof *v->cot) : NULL;
    v->img = poppy ? malloc((size_t)v->chunk * out * sizeof *v->img) : NULL;
    v->cap_images = 0;
    if (!v->rows || !v->coeff || !v->gcoeff || !v->utw || (poppy && (!v->cot || !v->img)))
        return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory for %d images of %d x %d",
                        v->chunk, v->n, v->n);
    v->cap_images = v->chunk;
    return PSFSIM_OK;
}

/* The pupils' OPD rows for this call's input map (when it or the last
 * call's had one). */
static int opd_rows(vjp_gpu *v, const vjp_args *a, char *err, size_t errlen)
{
    int input = a->in.opd_map != NULL;
    if (!input && !v->opd_input) return PSFSIM_OK;
    char why[LIB_ERRLEN];
    for (int i = 0; i < v->npupils; ++i) {
        size_t n = v->pupils[i].p.nopen;
        if (n > v->cap_row) {
            free(v->row);
            v->row = malloc(n * sizeof *v->row);
            v->cap_row = v->row ? n : 0;
            if (!v->row) return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
        }
        opd_row(v, a, &v->pupils[i], v->row);
        if (v->ops->set_row(v->g, i, v->k - 1, v->row, why, sizeof why) != 0)
            return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
    }
    v->opd_input = input;
    return PSFSIM_OK;
}

static int run_gpu(psfsim_set *set, const vjp_args *a, const gpu_vjp_ops *ops, long long first,
                   long long count, const double *cotangent, double *images,
                   const vjp_device_io *dev, char *err, size_t errlen)
{
    const backend_decision *d = &set->e.decision;
    int device = d->ndevices > 0 ? d->devices[0] : 0;
    vjp_gpu *v = set->vjp_gpu;
    if (v && !state_fits(v, a, device)) vjp_gpu_close(set);
    int rc = PSFSIM_OK;
    if (!set->vjp_gpu) {
        rc = state_new(set, a, ops, device, &v, err, errlen);
        if (rc != PSFSIM_OK) return rc;
        set->vjp_gpu = v;
    }
    v = set->vjp_gpu;
    long long need = dev && dev->steps > 0 ? count * (dev->steps + 1) : count;
    rc = reserve(v, set, need, err, errlen);
    if (rc == PSFSIM_OK && need > v->chunk)
        rc = lib_fail(err, errlen, PSFSIM_ERR_RANGE, "%lld images of steps in one chunk of %d",
                      need, v->chunk);
    if (rc == PSFSIM_OK) rc = opd_rows(v, a, err, errlen);
    size_t mm = (size_t)v->m * v->m;
    for (long long i = 0; rc == PSFSIM_OK && i < count; i += v->chunk) {
        int nc = (int)(count - i < v->chunk ? count - i : v->chunk);
        rc = chunk(v, set, a, first + i, i, nc, cotangent ? cotangent + (size_t)i * mm : NULL,
                   images ? images + (size_t)i * mm : NULL, dev, err, errlen);
    }
    int backward = dev ? dev->cotangent != NULL || dev->fit : cotangent != NULL;
    if (rc == PSFSIM_OK && backward && a->gr.opd_map) opd_scatter(v, set, a);
    if (rc != PSFSIM_OK) vjp_gpu_close(set); /* its state unknown: made afresh next time */
    return rc;
}

int vjp_gpu_run(psfsim_set *set, long long first, long long count, const vjp_args *a,
                const double *cotangent, double *images, const vjp_device_io *dev, int *done,
                char *err, size_t errlen)
{
    *done = 0;
    const char *mode = getenv("PSFSIM_VJP_BACKEND");
    int required = mode && strcmp(mode, "gpu") == 0;
    if ((mode && strcmp(mode, "cpu") == 0) || set->e.decision.ops == &psf_backend_cpu)
        return PSFSIM_OK;
    const char *why = out_of_scope(set, a);
    const backend_decision *d = &set->e.decision;
    if (!why && dev && dev->device != (d->ndevices > 0 ? d->devices[0] : 0))
        why = "the device arrays are on another CUDA device than the set's first GPU";
    const gpu_vjp_ops *ops = why ? NULL : gpu_module_vjp();
    if (!why && !ops) why = "the GPU module has no gradients (gpu_module_ops.vjp)";
    if (!why && dev && !ops->run_device) why = "the GPU module has no device gradients";
    if (!why && dev && dev->fit && (!ops->fit_evaluate || !dev->images))
        why = "the GPU module has no fit_evaluate";
    if (why) {
        if (!required) return PSFSIM_OK;
        *done = 1;
        return lib_fail(err, errlen, PSFSIM_ERR_BACKEND,
                        "PSFSIM_VJP_BACKEND=gpu: the gradients cannot run on the GPU: %s", why);
    }
    char msg[LIB_ERRLEN] = "";
    int rc = run_gpu(set, a, ops, first, count, cotangent, images, dev, msg, sizeof msg);
    if (rc == PSFSIM_OK || required) {
        *done = 1;
        return rc == PSFSIM_OK ? rc : lib_fail(err, errlen, rc, "%s", msg);
    }
    log_debug("gradients on the CPU: the GPU's failed: %s", msg);
    return PSFSIM_OK;
}

gpu_vjp *vjp_gpu_instance(const psfsim_set *set, const gpu_vjp_ops **ops)
{
    const vjp_gpu *v = set->vjp_gpu;
    *ops = v ? v->ops : NULL;
    return v ? v->g : NULL;
}

double vjp_gpu_seconds(const psfsim_set *set)
{
    const vjp_gpu *v = set->vjp_gpu;
    return v ? v->seconds_run : 0.0;
}

long long vjp_gpu_chunk_images(const psfsim_set *set)
{
    const vjp_gpu *v = set->vjp_gpu;
    if (!v) return 0;
    long long c = (long long)(CHUNK_BYTES / ((size_t)v->n * v->n * sizeof(double)));
    return c < 1 ? 1 : c > 4096 ? 4096 : c;
}
