/* SPDX-License-Identifier: BSD-3-Clause */
/* A GPU module whose gradients (gpu_vjp_ops, backend/gpu_abi.h) run on the
 * host: gpu/adjoint.cu's arithmetic row by row, in double with FFTW (the
 * forward and backward DFTs, unnormalised), no CUDA. It lets machines
 * without a GPU test the library's side of the GPU's gradients
 * (lib/vjp_gpu.c: the rows, the stacked basis, the coefficients, the
 * chain to the inputs, the turn, the chunks) against the CPU's path
 * (tests/gpu/test_gpu_vjp.c run with PSFSIM_GPU_MODULE naming this file,
 * and python/tests/test_vjp.py's GPU cases with PSFSIM_VJP_HOST_MODULE=1).
 * Its backend only counts one device, so that a set opens with backend
 * "gpu"; nothing computes images through it. Its memory table calls the
 * blocks its alloc gives "device memory of device 0" (the rest host
 * memory) and copies with memmove, so that psfsim_vjp_device's checks
 * and both of its paths (run_device here; the host staging) run without
 * a GPU. */
#include <fftw3.h>

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu_abi.h"

typedef struct {
    size_t nopen;
    unsigned *dest;
    double *amp, *basis;
} host_pupil;

struct gpu_vjp {
    int n, k, npupils;
    host_pupil pup[64];
    gpu_vjp_detector det; /* det.m 0: none */
    double *otf;          /* [N][N/2 + 1] complex, or NULL */
};

static int device_count(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    return 1;
}

/* It computes no images: a set whose backend "auto" probes the GPU (on a
 * machine with an NVIDIA driver) gets this error and takes the CPU. */
static int no_create(const psf_problem *problem, const psf_backend_options *options,
                     psf_backend **out, char *err, size_t errlen)
{
    (void)problem;
    (void)options;
    *out = NULL;
    snprintf(err, errlen, "host-vjp: a test module that computes no images");
    return -1;
}

static const psf_backend_ops host_backend = {
    .name = "host-vjp", .preferred_batch = 1, .device_count = device_count, .create = no_create};

static int create(int device, int n, int nbasis, gpu_vjp **out, char *err, size_t errlen)
{
    (void)device;
    *out = calloc(1, sizeof **out);
    if (!*out) {
        snprintf(err, errlen, "host: out of memory");
        return -1;
    }
    (*out)->n = n;
    (*out)->k = nbasis;
    return 0;
}

static void destroy(gpu_vjp *v)
{
    if (v) free(v->otf);
    for (int p = 0; v && p < v->npupils; ++p) {
        free(v->pup[p].dest);
        free(v->pup[p].amp);
        free(v->pup[p].basis);
    }
    free(v);
}

static int add_pupil(gpu_vjp *v, size_t nopen, const unsigned *dest, const double *amp,
                     const double *basis, int *index, char *err, size_t errlen)
{
    if (v->npupils == 64) {
        snprintf(err, errlen, "host: more than 64 pupils");
        return -1;
    }
    host_pupil *p = &v->pup[v->npupils];
    size_t m = nopen ? nopen : 1;
    p->nopen = nopen;
    p->dest = malloc(m * sizeof *dest);
    p->amp = malloc(m * sizeof *amp);
    p->basis = malloc(m * v->k * sizeof *basis);
    if (!p->dest || !p->amp || !p->basis) {
        snprintf(err, errlen, "host: out of memory");
        return -1;
    }
    memcpy(p->dest, dest, nopen * sizeof *dest);
    memcpy(p->amp, amp, nopen * sizeof *amp);
    memcpy(p->basis, basis, nopen * v->k * sizeof *basis);
    *index = v->npupils++;
    return 0;
}

static int set_row(gpu_vjp *v, int pupil, int row, const double *values, char *err, size_t errlen)
{
    if (pupil < 0 || pupil >= v->npupils || row < 0 || row >= v->k) {
        snprintf(err, errlen, "host: row %d of pupil %d: out of range", row, pupil);
        return -1;
    }
    host_pupil *p = &v->pup[pupil];
    memcpy(p->basis + (size_t)row * p->nopen, values, p->nopen * sizeof *values);
    return 0;
}

static int set_detector(gpu_vjp *v, const gpu_vjp_detector *d, char *err, size_t errlen)
{
    size_t nc = (size_t)v->n * (size_t)(v->n / 2 + 1);
    v->det = *d;
    free(v->otf);
    v->otf = d->convolve ? malloc(2 * nc * sizeof *v->otf) : NULL;
    if (d->convolve && !v->otf) {
        snprintf(err, errlen, "host: out of memory");
        return -1;
    }
    if (d->convolve) memcpy(v->otf, d->otf, 2 * nc * sizeof *v->otf);
    return 0;
}

/* g[N N] = C2R(R2C(g) T) (or conj T): cpu/adjoint_detector.c's convolve. */
static void convolve(const gpu_vjp *v, double *g, int conj)
{
    int n = v->n;
    size_t nc = (size_t)n * (size_t)(n / 2 + 1);
    fftw_complex *spec = fftw_malloc(nc * sizeof *spec);
    double *real = fftw_malloc((size_t)n * n * sizeof *real);
    fftw_plan r2c = fftw_plan_dft_r2c_2d(n, n, real, spec, FFTW_ESTIMATE);
    fftw_plan c2r = fftw_plan_dft_c2r_2d(n, n, spec, real, FFTW_ESTIMATE);
    memcpy(real, g, (size_t)n * n * sizeof *real);
    fftw_execute(r2c);
    for (size_t i = 0; i < nc; ++i) {
        double a = spec[i][0], b = spec[i][1];
        double c = v->otf[2 * i], e = conj ? -v->otf[2 * i + 1] : v->otf[2 * i + 1];
        spec[i][0] = a * c - b * e;
        spec[i][1] = a * e + b * c;
    }
    fftw_execute(c2r);
    memcpy(g, real, (size_t)n * n * sizeof *real);
    fftw_destroy_plan(r2c);
    fftw_destroy_plan(c2r);
    fftw_free(spec);
    fftw_free(real);
}

/* out[M M] = the stage of grid[N N] (grid overwritten). */
static void det_forward(const gpu_vjp *v, double *grid, double *out)
{
    const gpu_vjp_detector *d = &v->det;
    int n = v->n, s = d->s, m = d->m;
    if (d->convolve) convolve(v, grid, 0);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < m; ++j) {
            if (!d->sample) {
                out[(size_t)i * m + j] = grid[(size_t)i * n + j];
                continue;
            }
            const double *p = grid + (size_t)(i * s + d->off) * n + (size_t)(j * s + d->off);
            double t = 0.0;
            for (int a = 0; d->bins && a < s; ++a)
                for (int b = 0; b < s; ++b)
                    t += p[(size_t)a * n + b];
            out[(size_t)i * m + j] = d->bins ? t : (double)s * s * p[0];
        }
}

/* grid[N N] = the stage's transpose of cot[M M]. */
static void det_adjoint(const gpu_vjp *v, const double *cot, double *grid)
{
    const gpu_vjp_detector *d = &v->det;
    int n = v->n, s = d->s, m = d->m;
    memset(grid, 0, (size_t)n * n * sizeof *grid);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < m; ++j) {
            double c = cot[(size_t)i * m + j];
            if (!d->sample) {
                grid[(size_t)i * n + j] = c;
                continue;
            }
            double *p = grid + (size_t)(i * s + d->off) * n + (size_t)(j * s + d->off);
            if (!d->bins) {
                p[0] += (double)s * s * c;
                continue;
            }
            for (int a = 0; a < s; ++a)
                for (int b = 0; b < s; ++b)
                    p[(size_t)a * n + b] += c;
        }
    if (d->convolve) convolve(v, grid, 1);
}

static size_t shift_of(size_t q, int n)
{
    size_t u = q / (size_t)n, w = q % (size_t)n, h = (size_t)(n / 2);
    return ((u + h) % (size_t)n) * (size_t)n + (w + h) % (size_t)n;
}

static int run(gpu_vjp *v, int nimages, const double *cotangent, double *images, int nrows,
               const gpu_vjp_row *rows, const double *coeff, double *gcoeff, double *const *d_opd,
               char *err, size_t errlen)
{
    size_t nn = (size_t)v->n * v->n, K = (size_t)v->k;
    size_t mm = v->det.m ? (size_t)v->det.m * v->det.m : nn;
    double *img = calloc((size_t)nimages * nn, sizeof *img);
    double *gcot = cotangent && v->det.m ? malloc((size_t)nimages * nn * sizeof *gcot) : NULL;
    for (int i = 0; gcot && i < nimages; ++i)
        det_adjoint(v, cotangent + (size_t)i * mm, gcot + (size_t)i * nn);
    if (gcot) cotangent = gcot;
    fftw_complex *buf = fftw_malloc(nn * sizeof *buf), *e = fftw_malloc(nn * sizeof *e);
    size_t most = 1;
    for (int p = 0; p < v->npupils; ++p)
        most = v->pup[p].nopen > most ? v->pup[p].nopen : most;
    double *w = malloc(most * sizeof *w);
    fftw_plan fwd = buf ? fftw_plan_dft_2d(v->n, v->n, buf, buf, FFTW_FORWARD, FFTW_ESTIMATE) : 0;
    fftw_plan bwd = buf ? fftw_plan_dft_2d(v->n, v->n, buf, buf, FFTW_BACKWARD, FFTW_ESTIMATE) : 0;
    int rc = img && buf && e && w && fwd && bwd ? 0 : -1;
    if (rc) snprintf(err, errlen, "host: out of memory");
    for (int r = 0; rc == 0 && r < nrows; ++r) {
        const host_pupil *p = &v->pup[rows[r].pupil];
        const double *c = coeff + (size_t)r * K;
        double *im = img + (size_t)rows[r].image * nn;
        for (size_t k = 0; k < p->nopen; ++k) {
            w[k] = 0.0;
            for (size_t t = 0; t < K; ++t)
                w[k] += c[t] * p->basis[t * p->nopen + k];
        }
        memset(buf, 0, nn * sizeof *buf);
        for (size_t k = 0; k < p->nopen; ++k) {
            double ph = 2.0 * M_PI * (w[k] - floor(w[k]));
            buf[p->dest[k]][0] = p->amp[k] * cos(ph);
            buf[p->dest[k]][1] = p->amp[k] * sin(ph);
        }
        fftw_execute(fwd);
        memcpy(e, buf, nn * sizeof *buf);
        for (size_t q = 0; q < nn; ++q)
            im[shift_of(q, v->n)] += rows[r].scale * (e[q][0] * e[q][0] + e[q][1] * e[q][1]);
        if (!cotangent) continue;
        const double *g = cotangent + (size_t)rows[r].image * nn;
        for (size_t q = 0; q < nn; ++q) {
            double s = rows[r].scale * g[shift_of(q, v->n)];
            buf[q][0] = s * e[q][0];
            buf[q][1] = s * e[q][1];
        }
        fftw_execute(bwd);
        double *gc = gcoeff + (size_t)r * K;
        memset(gc, 0, K * sizeof *gc);
        for (size_t k = 0; k < p->nopen; ++k) {
            double ph = 2.0 * M_PI * (w[k] - floor(w[k]));
            double complex u = p->amp[k] * (cos(ph) + I * sin(ph));
            double complex b = buf[p->dest[k]][0] + I * buf[p->dest[k]][1];
            double dw = 4.0 * M_PI * cimag(b * conj(u));
            for (size_t t = 0; t < K; ++t)
                gc[t] += dw * p->basis[t * p->nopen + k];
            if (d_opd && d_opd[rows[r].pupil]) d_opd[rows[r].pupil][k] += rows[r].opd_weight * dw;
        }
    }
    for (int i = 0; rc == 0 && images && i < nimages; ++i) {
        if (v->det.m)
            det_forward(v, img + (size_t)i * nn, images + (size_t)i * mm);
        else
            memcpy(images + (size_t)i * nn, img + (size_t)i * nn, nn * sizeof *img);
    }
    free(gcot);
    if (fwd) fftw_destroy_plan(fwd);
    if (bwd) fftw_destroy_plan(bwd);
    fftw_free(buf);
    fftw_free(e);
    free(w);
    free(img);
    return rc;
}

/* The "device" memory: blocks alloc gave, each [base, base + bytes). */
#define HOST_BLOCKS 256
static struct {
    const char *base;
    size_t bytes;
} blocks[HOST_BLOCKS];
static int waits; /* wait_stream's calls (psfsim_host_module_waits) */

static int pointer(const void *p, int *kind, int *device, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    *kind = 0;
    *device = -1;
    for (int i = 0; p && i < HOST_BLOCKS; ++i)
        if (blocks[i].base && (const char *)p >= blocks[i].base &&
            (const char *)p < blocks[i].base + blocks[i].bytes) {
            *kind = 1;
            *device = 0;
        }
    return 0;
}

static void *alloc(int device, size_t bytes, char *err, size_t errlen)
{
    (void)device;
    for (int i = 0; i < HOST_BLOCKS; ++i)
        if (!blocks[i].base) {
            char *p = malloc(bytes ? bytes : 1);
            if (!p) break;
            blocks[i].base = p;
            blocks[i].bytes = bytes ? bytes : 1;
            return p;
        }
    snprintf(err, errlen, "host: no \"device\" memory for %zu bytes", bytes);
    return NULL;
}

static void release(int device, void *p)
{
    (void)device;
    for (int i = 0; p && i < HOST_BLOCKS; ++i)
        if (blocks[i].base == p) {
            blocks[i].base = NULL;
            free(p);
        }
}

static int copy(int device, void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    (void)device;
    (void)err;
    (void)errlen;
    memmove(dst, src, bytes);
    return 0;
}

static int wait_stream(int device, void *stream, char *err, size_t errlen)
{
    (void)device;
    (void)stream;
    (void)err;
    (void)errlen;
    waits++;
    return 0;
}

/* wait_stream's calls so far (tests: psfsim_vjp_device waits once). */
__attribute__((visibility("default"))) int psfsim_host_module_waits(void);
int psfsim_host_module_waits(void)
{
    return waits;
}

/* "pinned" host memory: plain malloc here */
static void *host_alloc(size_t bytes, char *err, size_t errlen)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) snprintf(err, errlen, "out of memory");
    return p;
}

static void host_release(void *p)
{
    free(p);
}

static const gpu_memory_ops host_memory = {pointer,     alloc,      release,     copy,
                                           wait_stream, host_alloc, host_release};

/* run on "device" arrays (host memory here): the cotangent widened (and
 * turned) into double, run, the images narrowed (and turned) back. */
static int run_device(gpu_vjp *v, int nimages, int dtype, int turn, const void *cotangent,
                      void *images, int nrows, const gpu_vjp_row *rows, const double *coeff,
                      double *gcoeff, double *const *d_opd, char *err, size_t errlen)
{
    size_t mm = v->det.m ? (size_t)v->det.m * v->det.m : (size_t)v->n * v->n;
    size_t n = (size_t)nimages * mm;
    double *cot = cotangent ? malloc(n * sizeof *cot) : NULL;
    double *img = images ? malloc(n * sizeof *img) : NULL;
    if ((cotangent && !cot) || (images && !img)) {
        free(cot);
        free(img);
        snprintf(err, errlen, "host: out of memory");
        return -1;
    }
    for (size_t t = 0; cot && t < n; ++t) {
        size_t i = t / mm, p = t % mm, q = i * mm + (turn ? mm - 1 - p : p);
        cot[t] =
            dtype == 1 ? ((const double *)cotangent)[q] : (double)((const float *)cotangent)[q];
    }
    int rc = run(v, nimages, cot, img, nrows, rows, coeff, gcoeff, d_opd, err, errlen);
    for (size_t t = 0; rc == 0 && img && t < n; ++t) {
        size_t i = t / mm, p = t % mm, q = i * mm + (turn ? mm - 1 - p : p);
        if (dtype == 1)
            ((double *)images)[t] = img[q];
        else
            ((float *)images)[t] = (float)img[q];
    }
    free(cot);
    free(img);
    return rc;
}

/* fit_evaluate's loss on "device" arrays: lib/fit/objective.c's
 * arithmetic, one sum per quantity in pixel order. */
static int fit_loss(gpu_vjp *v, int nimages, size_t npix, const double *data, const double *w,
                    const double *images, int fit, const double *fixed, double *cot, double *out,
                    char *err, size_t errlen)
{
    (void)v, (void)err, (void)errlen;
    for (int k = 0; k < nimages; ++k) {
        size_t o = (size_t)k * npix;
        double s[5] = {0, 0, 0, 0, 0}, f = fixed[2 * k], b = fixed[2 * k + 1], loss = 0;
        for (size_t i = o; i < o + npix; ++i) {
            s[0] += w[i];
            s[1] += w[i] * images[i];
            s[2] += w[i] * images[i] * images[i];
            s[3] += w[i] * data[i];
            s[4] += w[i] * images[i] * data[i];
        }
        double det = s[0] * s[2] - s[1] * s[1];
        if ((fit & 3) == 3 && det > 1e-12 * s[0] * s[2]) {
            f = (s[0] * s[4] - s[1] * s[3]) / det;
            b = (s[2] * s[3] - s[1] * s[4]) / det;
        } else if (fit == 1 && s[2] > 0) {
            f = (s[4] - b * s[1]) / s[2];
        } else if (fit == 2 && s[0] > 0) {
            b = (s[3] - f * s[1]) / s[0];
        }
        for (size_t i = o; i < o + npix; ++i) {
            double r = data[i] - (f * images[i] + b);
            loss += w[i] * r * r;
            cot[i] = -f * w[i] * r;
        }
        out[3 * k] = f;
        out[3 * k + 1] = b;
        out[3 * k + 2] = 0.5 * loss;
    }
    return 0;
}

/* fit_fisher on "device" arrays: lib/fit/fisher.c's columns and products
 * as plain sums. */
static int fit_fisher(gpu_vjp *v, int nimages, size_t npix, int nparams, const double *w,
                      const double *images, double *plus, const double *flux, double h, double *G,
                      double *y, char *err, size_t errlen)
{
    (void)v, (void)err, (void)errlen;
    size_t total = (size_t)nimages * npix;
    for (int j = 0; j < nparams; ++j)
        for (size_t t = 0; t < total; ++t) {
            double *u = plus + (size_t)j * total + t;
            *u = sqrt(w[t]) * (flux[t / npix] / h) * (*u - images[t]);
        }
    for (int a = 0; a < nparams; ++a)
        for (int b = 0; b < nparams; ++b) {
            double g = 0;
            for (size_t t = 0; t < total; ++t)
                g += plus[(size_t)a * total + t] * plus[(size_t)b * total + t];
            G[(size_t)a * nparams + b] = g;
        }
    for (int k = 0; k < nimages; ++k)
        for (int a = 0; a < nparams; ++a) {
            double yi = 0, y1 = 0;
            for (size_t i = (size_t)k * npix; i < (size_t)(k + 1) * npix; ++i) {
                double u = plus[(size_t)a * total + i], sw = sqrt(w[i]);
                yi += u * sw * images[i];
                y1 += u * sw;
            }
            y[((size_t)k * 2) * nparams + a] = yi;
            y[((size_t)k * 2 + 1) * nparams + a] = y1;
        }
    return 0;
}

/* fit_evaluate as its three calls, in order (the module's contract). */
static int fit_evaluate(gpu_vjp *v, int nimages, int turn, int nrows, const gpu_vjp_row *rows,
                        const double *coeff, size_t npix, const double *data, const double *w,
                        double *images, int fit, const double *fixed, double *cot, double *out,
                        double *gcoeff, double *const *d_opd, char *err, size_t errlen)
{
    size_t mm = v->det.m ? (size_t)v->det.m * v->det.m : (size_t)v->n * v->n;
    if (npix != mm) {
        snprintf(err, errlen, "host: the fit's images of %zu values, the model's of %zu", npix, mm);
        return -1;
    }
    if (!cot || (turn && !images)) {
        snprintf(err, errlen, "host: an evaluation needs its cotangent (and turned, its images)");
        return -1;
    }
    double *img = images ? images : malloc((size_t)nimages * npix * sizeof *img);
    if (!img) {
        snprintf(err, errlen, "host: out of memory");
        return -1;
    }
    int rc =
        run_device(v, nimages, 1, turn, NULL, img, nrows, rows, coeff, NULL, NULL, err, errlen) ||
                fit_loss(v, nimages, npix, data, w, img, fit, fixed, cot, out, err, errlen) ||
                run_device(v, nimages, 1, turn, cot, NULL, nrows, rows, coeff, gcoeff, d_opd, err,
                           errlen)
            ? -1
            : 0;
    if (img != images) free(img);
    return rc;
}

static const gpu_vjp_ops host_vjp = {create,  add_pupil,  set_row,    set_detector, run,
                                     destroy, run_device, fit_fisher, fit_evaluate};

__attribute__((visibility("default"))) const gpu_module_ops psf_gpu_module_entry = {
    .abi = GPU_MODULE_ABI,
    .size = sizeof(gpu_module_ops),
    .backend = &host_backend,
    .memory = &host_memory,
    .vjp = &host_vjp,
};
