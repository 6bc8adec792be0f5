/* SPDX-License-Identifier: BSD-3-Clause */
/* A retrieval's evaluations on the GPU (lib/retrieve_priv.h; lib/fit's
 * fit_device; docs/design.md, "Phase retrieval on the GPU"). On the host
 * path each evaluation brings the K images up (K n doubles), makes the
 * cotangent on the host and sends it down again, and the gradient's call
 * computes the images a second time. Here the data and weights live on
 * the device, and an evaluation is one call of the module's
 * (fit_evaluate, through vjp_device_evaluate): the images of p written
 * there, each image's flux and background solved and the cotangent
 * written there, the backward from it; one wait, and only the
 * parameters, K x 3 numbers and the gradient cross the bus. The Fisher
 * step's P forward differences go into one device array and the module's
 * fit_fisher forms J^T W J there (cuBLAS), instead of P image transfers
 * and a host DSYRK. */
#include <stdlib.h>
#include <string.h>

#include "app/base/log.h"
#include "app/select/gpu.h"
#include "lib/retrieve_priv.h"
#include "lib/vjp_priv.h"

struct retrieve_gpu {
    set_model *m;
    const gpu_memory_ops *mem;
    int device;
    size_t npix, total;           /* n, K n */
    double *data, *w, *img, *cot; /* device [K n] each (one block from data) */
    int fit;                      /* fit_device.load's */
    double *fixed;                /* [K][2] */
    double *q;                    /* [P] the Fisher step's parameters */
    double *gscratch;             /* [P] the gradient of a pass's end's evaluation (unused) */
    /* where the evaluations' time goes (logged at the end): their calls,
     * and the module's runs inside them */
    double seconds, seconds_module;
    int evaluations;
};

void retrieve_gpu_close(retrieve_gpu *g)
{
    if (!g) return;
    log_info("retrieve: %d evaluations on the GPU, one call each: %.4f s (the module's %.4f s)",
             g->evaluations, g->seconds, g->seconds_module);
    if (g->data) g->mem->release(g->device, g->data);
    free(g->fixed);
    free(g->q);
    free(g->gscratch);
    free(g);
}

/* The images at p into img (device [K][n]): PSFSIM_OK, or an error
 * (PSFSIM_ERR_COMPUTE when the GPU did not take the call). */
static int images_at(retrieve_gpu *g, const double *p, double *img, char *err, size_t errlen)
{
    set_model *m = g->m;
    retrieve_rows(m, p);
    int done = 0;
    int rc = vjp_device_run(m->set, 0, m->count, &m->inputs, NULL, img, NULL, &done, err, errlen);
    if (rc == PSFSIM_OK && !done)
        rc = lib_fail(err, errlen, PSFSIM_ERR_COMPUTE,
                      "psfsim_retrieve: the GPU no longer takes the model's images");
    return rc;
}

/* The module's instance (kept on the set by the last call) and its ops. */
static gpu_vjp *instance(retrieve_gpu *g, const gpu_vjp_ops **ops, char *err, size_t errlen)
{
    gpu_vjp *v = vjp_gpu_instance(g->m->set, ops);
    if (!v || !(*ops)->fit_fisher)
        lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "psfsim_retrieve: no GPU gradients' instance");
    return v && (*ops)->fit_fisher ? v : NULL;
}

static int load(void *user, const double *data, const double *w, int fit, const double *fixed,
                char *err, size_t errlen)
{
    retrieve_gpu *g = ((set_model *)user)->gpu;
    size_t bytes = g->total * sizeof(double);
    g->fit = fit;
    memcpy(g->fixed, fixed, 2 * (size_t)g->m->count * sizeof(double));
    if (g->mem->copy(g->device, g->data, data, bytes, err, errlen) != 0 ||
        g->mem->copy(g->device, g->w, w, bytes, err, errlen) != 0) {
        g->m->status = PSFSIM_ERR_COMPUTE;
        return -1;
    }
    return 0;
}

/* An evaluation as the module's one call (fit_evaluate): the images at
 * p (left on the device unless want_images: then in g->img), their loss
 * and the cotangent, its gradients. */
static int evaluate(set_model *m, const double *p, double *out, double *grad, int want_images,
                    char *err, size_t errlen)
{
    retrieve_gpu *g = m->gpu;
    double t0 = fit_now(), m0 = vjp_gpu_seconds(m->set);
    retrieve_rows(m, p);
    psfsim_gradients gr;
    retrieve_gradients(m, grad, &gr);
    vjp_fit_io io = {g->npix, g->data, g->w, g->fit, g->fixed, g->cot, out, want_images};
    int done = 0;
    int rc =
        vjp_device_evaluate(m->set, m->count, &m->inputs, &io, g->img, &gr, &done, err, errlen);
    if (rc == PSFSIM_OK && !done)
        rc = lib_fail(err, errlen, PSFSIM_ERR_COMPUTE,
                      "psfsim_retrieve: the GPU no longer takes the model's evaluations");
    g->seconds += fit_now() - t0;
    g->seconds_module += vjp_gpu_seconds(m->set) - m0;
    return rc;
}

/* fit_device.loss: an evaluation; without grad (a pass's end) its images
 * brought to img instead (K n doubles, the pass's fitted images). */
static int loss(void *user, const double *p, double *out, double *grad, double *img, char *err,
                size_t errlen)
{
    set_model *m = user;
    retrieve_gpu *g = m->gpu;
    int rc = evaluate(m, p, out, grad ? grad : g->gscratch, !grad, err, errlen);
    g->evaluations++;
    if (rc == PSFSIM_OK && !grad &&
        g->mem->copy(g->device, img, g->img, g->total * sizeof(double), err, errlen) != 0)
        rc = PSFSIM_ERR_COMPUTE;
    if (rc != PSFSIM_OK) {
        m->status = rc;
        return rc;
    }
    if (grad) retrieve_sum(m, grad);
    return 0;
}

static int fisher(void *user, const double *p, int nfisher, double h, const double *flux, double *G,
                  double *y, char *err, size_t errlen)
{
    set_model *m = user;
    retrieve_gpu *g = m->gpu;
    /* I(p), then I(p + h e_j) for j < nfisher: one run of the module, or
     * (more than one chunk of it) a forward each */
    double *img =
        g->mem->alloc(g->device, (size_t)(nfisher + 1) * g->total * sizeof(double), err, errlen);
    double *plus = img ? img + g->total : NULL;
    double t0 = fit_now();
    int rc = img ? PSFSIM_OK : PSFSIM_ERR_MEMORY, done = 0;
    retrieve_rows(m, p);
    if (rc == PSFSIM_OK)
        rc = vjp_device_steps(m->set, m->count, &m->inputs, nfisher, h, img, &done, err, errlen);
    if (rc == PSFSIM_OK && !done) rc = images_at(g, p, img, err, errlen);
    memcpy(g->q, p, m->nparams * sizeof(double));
    for (int j = 0; rc == PSFSIM_OK && !done && j < nfisher; ++j) {
        g->q[j] = p[j] + h;
        rc = images_at(g, g->q, plus + (size_t)j * g->total, err, errlen);
        g->q[j] = p[j];
    }
    const gpu_vjp_ops *ops = NULL;
    gpu_vjp *v = NULL;
    double t1 = fit_now();
    if (rc == PSFSIM_OK && !(v = instance(g, &ops, err, errlen))) rc = PSFSIM_ERR_COMPUTE;
    if (rc == PSFSIM_OK && ops->fit_fisher(v, (int)m->count, g->npix, nfisher, g->w, img, plus,
                                           flux, h, G, y, err, errlen) != 0)
        rc = PSFSIM_ERR_COMPUTE;
    log_info("retrieve: the Fisher step on the GPU: %d + 1 forwards (%s) %.4f s, the products "
             "%.4f s",
             nfisher, done ? "one run" : "one each", t1 - t0, fit_now() - t1);
    if (img) g->mem->release(g->device, img);
    retrieve_rows(m, p);
    if (rc != PSFSIM_OK) m->status = rc;
    return rc;
}

const fit_device retrieve_gpu_device = {load, loss, fisher};

int retrieve_gpu_open(set_model *m, size_t npix, const double *p0, retrieve_gpu **out, char *err,
                      size_t errlen)
{
    *out = NULL;
    const backend_decision *d = &m->set->e.decision;
    if (d->ops == &psf_backend_cpu) return PSFSIM_OK;
    const gpu_vjp_ops *ops = gpu_module_vjp();
    const gpu_memory_ops *mem = gpu_module_memory();
    if (!ops || !ops->fit_evaluate || !ops->fit_fisher || !mem) return PSFSIM_OK;
    retrieve_gpu *g = calloc(1, sizeof *g);
    if (!g) return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "psfsim_retrieve: out of memory");
    *g = (retrieve_gpu){.m = m,
                        .mem = mem,
                        .device = d->ndevices > 0 ? d->devices[0] : 0,
                        .npix = npix,
                        .total = (size_t)m->count * npix};
    g->fixed = malloc(2 * (size_t)m->count * sizeof(double));
    g->q = malloc(m->nparams * sizeof(double));
    g->gscratch = malloc(m->nparams * sizeof(double));
    char why[LIB_ERRLEN] = "";
    g->data = g->fixed && g->q && g->gscratch
                  ? mem->alloc(g->device, 4 * g->total * sizeof(double), why, sizeof why)
                  : NULL;
    if (!g->data) {
        retrieve_gpu_close(g);
        return lib_fail(err, errlen, PSFSIM_ERR_MEMORY,
                        "psfsim_retrieve: no memory for the GPU's evaluations: %s", why);
    }
    g->w = g->data + g->total;
    g->img = g->w + g->total;
    g->cot = g->img + g->total;
    retrieve_rows(m, p0); /* whether the GPU takes this model's images */
    int done = 0;
    int rc =
        vjp_device_run(m->set, 0, m->count, &m->inputs, NULL, g->img, NULL, &done, why, sizeof why);
    if (rc != PSFSIM_OK || !done) {
        retrieve_gpu_close(g);
        if (rc != PSFSIM_OK) return lib_fail(err, errlen, rc, "psfsim_retrieve: %s", why);
        log_debug("retrieve: the evaluations on the host: the GPU does not take the model");
        return PSFSIM_OK;
    }
    *out = g;
    return PSFSIM_OK;
}
