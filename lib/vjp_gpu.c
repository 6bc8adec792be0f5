/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim_vjp and psfsim_compute_inputs on the GPU (issue 28; lib/vjp.c's
 * one call, vjp_gpu_run; docs/design.md, "Gradients on the GPU"): for a set
 * whose backend is the GPU, in the scope below, the images of a call go in
 * chunks through the module's gpu_vjp_ops (gpu/adjoint.cu), each chunk one
 * run of rows (one per wavelength component of each image). The host makes
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
 * Scope (else the CPU's path, lib/vjp.c): an FFT set (not the MFT), no
 * active detector stage, no segment inputs or gradients, no transmission
 * gradient. A set whose backend is the CPU always takes the CPU's path.
 * For a GPU set, PSFSIM_VJP_BACKEND: "cpu" the CPU; "gpu" the GPU or an
 * error (PSFSIM_ERR_BACKEND: out of scope, no module; the GPU's error as
 * PSFSIM_ERR_COMPUTE); unset or "auto": the GPU in scope, the CPU out of
 * it or when the GPU fails (the reason logged at debug level). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/log.h"
#include "app/select/gpu.h"
#include "backend/detector.h"
#include "lib/vjp_priv.h"

/* Bytes of one chunk's images (and as many of cotangents) on the host and
 * the device. */
#define CHUNK_BYTES ((size_t)256 << 20)

typedef struct {
    psfsim_set *set;
    const vjp_args *a;
    const gpu_vjp_ops *ops;
    gpu_vjp *g;
    psf_problem problem;
    int n, own, k; /* N; the set's coefficients; basis rows K = own + nterms + 1 */
    adj_pupil pupils[PSF_MAX_COMPONENTS];
    int npupils;
    double *opd_sum[PSF_MAX_COMPONENTS]; /* [nopen] each pupil's OPD samples' gradient */
    /* a chunk's */
    gpu_vjp_row *rows;
    double *coeff, *gcoeff, *utw; /* [rows][K], [rows][K], [rows] */
    double *cot, *img;            /* [chunk][N N] */
    double *storage;
    int chunk, max_rows;
} vjp_gpu;

/* Why the set is outside the GPU's scope, or NULL. */
static const char *out_of_scope(const psfsim_set *set, const vjp_args *a)
{
    const image_set *s = &set->e.set;
    if (s->mft) return "an MFT set (the GPU's gradients are the FFT's)";
    psf_problem p;
    image_set_problem(s, 1, &p);
    if (psf_detector_active(&p.detector)) return "a detector stage";
    if (a->in.seg_zernike || a->gr.seg_zernike) return "segment inputs or gradients";
    if (a->gr.transmission) return "the transmission gradient";
    return NULL;
}

static void vjp_gpu_free(vjp_gpu *v)
{
    if (v->g) v->ops->destroy(v->g);
    for (int i = 0; i < v->npupils; ++i) {
        adj_pupil_free(&v->pupils[i]);
        free(v->opd_sum[i]);
    }
    free(v->rows);
    free(v->coeff);
    free(v->gcoeff);
    free(v->utw);
    free(v->cot);
    free(v->img);
    free(v->storage);
}

/* Pupil pp's basis rows [K][nopen] (the header's order). */
static void basis_of(const vjp_gpu *v, const adj_pupil *pp, double *b)
{
    const cpu_pupil *p = &pp->p;
    const psf_problem *pr = &v->problem;
    const adj_terms *t = &v->a->terms;
    size_t n = p->nopen;
    int nt = pr->modes.nterms, snt = pr->seg_modes.nterms;
    for (int r = 0; r < nt; ++r)
        for (size_t k = 0; k < n; ++k)
            b[(size_t)r * n + k] = p->basis[(size_t)r * n + k];
    for (int r = nt; r < v->own; ++r) { /* segment s's term q */
        int s = snt > 0 ? (r - nt) / snt : 0, q = snt > 0 ? (r - nt) % snt : 0;
        for (size_t k = 0; k < n; ++k)
            b[(size_t)r * n + k] =
                p->seg_nterms > 0 && p->seg[k] == s ? (double)p->seg_basis[(size_t)q * n + k] : 0.0;
    }
    for (int r = 0; r < t->nterms; ++r)
        memcpy(b + (size_t)(v->own + r) * n, pp->zb + (size_t)r * n, n * sizeof *b);
    double *o = b + (size_t)(v->k - 1) * n;
    const double *map = v->a->in.opd_map;
    for (size_t k = 0; k < n; ++k) {
        double x = p->opd ? p->opd[k] : 0.0;
        if (map && t->opd && pr->opd_map) {
            double s = 0.0;
            for (int q = 0; q < 4; ++q)
                s += pp->mw[4 * k + q] * map[pp->mw_idx[4 * k + q]];
            x += s;
        }
        o[k] = x;
    }
}

/* The pupil of pitch dx_m: its index, built (and given to the module) on
 * first use; -1 with err. */
static int pupil_of(vjp_gpu *v, double dx_m, char *err, size_t errlen)
{
    for (int i = 0; i < v->npupils; ++i)
        if (fabs(v->pupils[i].p.dx_m - dx_m) <= 1e-12 * dx_m) return i;
    if (v->npupils == PSF_MAX_COMPONENTS) {
        snprintf(err, errlen, "more than %d pupil pitches", PSF_MAX_COMPONENTS);
        return -1;
    }
    adj_pupil *pp = &v->pupils[v->npupils];
    if (adj_pupil_build(pp, &v->problem, dx_m, &v->a->terms, err, errlen) != 0) return -1;
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
        basis_of(v, pp, b);
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

/* Turn img[mm] by 180 degrees into out ("poppy"), or copy it. */
static void turned(const double *img, double *out, size_t mm, int poppy)
{
    for (size_t p = 0; p < mm; ++p)
        out[p] = poppy ? img[mm - 1 - p] : img[p];
}

/* Images [k0, k0 + nc) (rows i0 .. of the call's inputs): their rows, the
 * run, the gradients. Returns PSFSIM_OK or an error with err. */
static int chunk(vjp_gpu *v, long long k0, long long i0, int nc, const double *cotangent,
                 double *images, char *err, size_t errlen)
{
    const vjp_args *a = v->a;
    image_set *s = &v->set->e.set;
    size_t mm = (size_t)v->n * v->n, K = (size_t)v->k;
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
            int p = pupil_of(v, comp->dx_m, why, sizeof why);
            if (p < 0) return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
            double f = v->set->e.cfg.zunits == ZUNITS_NM ? 1.0 / info.params.wl_nm[c] : 1.0;
            v->rows[nrows] = (gpu_vjp_row){p, j, comp->scale, comp->opd_to_waves};
            v->utw[nrows] = f;
            double *cr = v->coeff + (size_t)nrows * K;
            memcpy(cr, comp->coeff_waves, (size_t)v->own * sizeof *cr);
            for (int t = 0; t < a->terms.nterms; ++t)
                cr[v->own + t] = zin ? zin[t] * f : 0.0;
            cr[K - 1] = comp->opd_to_waves;
            nrows++;
        }
        if (cotangent) turned(cotangent + (size_t)j * mm, v->cot + (size_t)j * mm, mm, poppy);
    }
    double *dopd[PSF_MAX_COMPONENTS] = {0};
    for (int p = 0; a->gr.opd_map && p < v->npupils; ++p)
        dopd[p] = v->opd_sum[p];
    if (v->ops->run(v->g, nc, cotangent ? v->cot : NULL, images ? v->img : NULL, nrows, v->rows,
                    v->coeff, v->gcoeff, dopd, why, sizeof why) != 0)
        return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
    for (int j = 0; images && j < nc; ++j)
        turned(v->img + (size_t)j * mm, images + (size_t)j * mm, mm, poppy);
    if (!cotangent || !a->gr.zernike) return PSFSIM_OK;
    size_t nt = (size_t)a->terms.nterms;
    for (int j = 0; j < nc; ++j)
        memset(a->gr.zernike + (size_t)(i0 + j) * nt, 0, nt * sizeof(double));
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
static void opd_scatter(const vjp_gpu *v)
{
    const image_set *s = &v->set->e.set;
    double *g = v->a->gr.opd_map;
    memset(g, 0, (size_t)s->opd_rows * s->opd_cols * sizeof *g);
    for (int i = 0; i < v->npupils; ++i) {
        const adj_pupil *pp = &v->pupils[i];
        for (size_t k = 0; k < pp->p.nopen; ++k)
            for (int q = 0; q < 4; ++q)
                g[pp->mw_idx[4 * k + q]] += v->opd_sum[i][k] * pp->mw[4 * k + q];
    }
}

static int setup(vjp_gpu *v, long long count, char *err, size_t errlen)
{
    psfsim_set *set = v->set;
    image_set_problem(&set->e.set, 1, &v->problem);
    v->n = v->problem.npix;
    v->own = psf_coeff_count(&v->problem);
    v->k = v->own + v->a->terms.nterms + 1;
    size_t mm = (size_t)v->n * v->n;
    long long c = (long long)(CHUNK_BYTES / (mm * sizeof(double)));
    c = c < 1 ? 1 : c > 4096 ? 4096 : c;
    v->chunk = (int)(count < c ? count : c);
    v->max_rows = v->chunk * PSF_MAX_COMPONENTS;
    size_t K = (size_t)v->k, r = (size_t)v->max_rows;
    v->rows = malloc(r * sizeof *v->rows);
    v->coeff = malloc(r * K * sizeof *v->coeff);
    v->gcoeff = malloc(r * K * sizeof *v->gcoeff);
    v->utw = malloc(r * sizeof *v->utw);
    v->cot = malloc((size_t)v->chunk * mm * sizeof *v->cot);
    v->img = malloc((size_t)v->chunk * mm * sizeof *v->img);
    v->storage = malloc(image_set_storage(&set->e.set) * sizeof *v->storage);
    if (!v->rows || !v->coeff || !v->gcoeff || !v->utw || !v->cot || !v->img || !v->storage)
        return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory for %d images of %d x %d",
                        v->chunk, v->n, v->n);
    const backend_decision *d = &set->e.decision;
    int device = d->ndevices > 0 ? d->devices[0] : 0;
    char why[LIB_ERRLEN];
    if (v->ops->create(device, v->n, v->k, &v->g, why, sizeof why) != 0)
        return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
    return PSFSIM_OK;
}

static int run_gpu(vjp_gpu *v, long long first, long long count, const double *cotangent,
                   double *images, char *err, size_t errlen)
{
    int rc = setup(v, count, err, errlen);
    size_t mm = (size_t)v->n * v->n;
    for (long long i = 0; rc == PSFSIM_OK && i < count; i += v->chunk) {
        int nc = (int)(count - i < v->chunk ? count - i : v->chunk);
        rc = chunk(v, first + i, i, nc, cotangent ? cotangent + (size_t)i * mm : NULL,
                   images ? images + (size_t)i * mm : NULL, err, errlen);
    }
    if (rc == PSFSIM_OK && cotangent && v->a->gr.opd_map) opd_scatter(v);
    return rc;
}

int vjp_gpu_run(psfsim_set *set, long long first, long long count, const vjp_args *a,
                const double *cotangent, double *images, int *done, char *err, size_t errlen)
{
    *done = 0;
    const char *mode = getenv("PSFSIM_VJP_BACKEND");
    int required = mode && strcmp(mode, "gpu") == 0;
    if ((mode && strcmp(mode, "cpu") == 0) || set->e.decision.ops == &psf_backend_cpu)
        return PSFSIM_OK;
    const char *why = out_of_scope(set, a);
    const gpu_vjp_ops *ops = why ? NULL : gpu_module_vjp();
    if (!why && !ops) why = "the GPU module has no gradients (gpu_module_ops.vjp)";
    if (why) {
        if (!required) return PSFSIM_OK;
        *done = 1;
        return lib_fail(err, errlen, PSFSIM_ERR_BACKEND,
                        "PSFSIM_VJP_BACKEND=gpu: the gradients cannot run on the GPU: %s", why);
    }
    vjp_gpu v = {.set = set, .a = a, .ops = ops};
    char msg[LIB_ERRLEN] = "";
    int rc = run_gpu(&v, first, count, cotangent, images, msg, sizeof msg);
    vjp_gpu_free(&v);
    if (rc == PSFSIM_OK || required) {
        *done = 1;
        return rc == PSFSIM_OK ? rc : lib_fail(err, errlen, rc, "%s", msg);
    }
    log_debug("gradients on the CPU: the GPU's failed: %s", msg);
    return PSFSIM_OK;
}
