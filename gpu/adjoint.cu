/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU's gradients: gpu_vjp_ops (backend/gpu_abi.h; gpu/adjoint.h).
 * An instance holds its device's stream, cuBLAS handle, Z2Z plans, the
 * pupils (samples' FFT indices, transmissions, basis [K][nopen], each with
 * its OPD samples' gradient) and the batch buffers, grown on need. A run
 * takes the rows pupil by pupil, in batches of at most max_rows: the
 * coefficients copied in, W = C B (DGEMM), the field, the forward Z2Z,
 * the intensities into the run's images, and with a cotangent its product,
 * the inverse Z2Z, dL/dW, dL/dc = dW B^T (DGEMM, copied out) and the OPD
 * samples' sum (DGEMV). With a detector stage (gpu/adjoint_detector.cu)
 * the cotangents' transpose through it comes first and the images go
 * through it last. run_device takes the cotangents from device memory and
 * writes the images there (float or double, turned or not: one conversion
 * kernel each way) instead of the host copies. Every call is checked
 * (gpu/cuda_check.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>

#include "gpu/adjoint.h"
#include "gpu/fit.h"

#define VJP_PUPILS 64
/* Bytes of complex grids per batch: the batch's rows. */
#define VJP_GRID_BYTES ((size_t)512 << 20)

typedef struct {
    size_t nopen;
    unsigned *dest;
    double *amp, *basis, *dopd; /* [nopen], [nopen], [K][nopen], [nopen] */
} vjp_pupil;

/* What a captured evaluation depends on beyond its staged values: its
 * shape and arguments, and every buffer, plan and pupil its nodes name
 * (compared bytewise: any reallocation, new plan or other arguments
 * make a new graph). */
typedef struct {
    int nimages, nrows, turn, fit, pupil, want, det_active, det_plan_batch, det_m, n, k;
    size_t npix, nopen;
    unsigned long long plans_made;
    const void *ptr[23];
} graph_key;

struct gpu_vjp {
    int device, n, k, max_rows;
    gpu_check chk;
    cudaStream_t stream;
    cublasHandle_t blas;
    int have_stream, have_blas;
    gpu_vjp_plans plans;
    gpu_vjp_det det;
    vjp_pupil pup[VJP_PUPILS];
    int npupils;
    /* the batch's device buffers, for cap_rows rows of cap_nopen samples;
     * coef, scale, ow and image point into stage (stage_layout) */
    cuDoubleComplex *grid;
    double *w, *gcoef, *stage;
    double *coef, *scale, *ow;
    int *image;
    int cap_rows;
    size_t cap_nopen;
    double *images, *cot; /* [cap_images][N N] */
    int cap_images;
    /* host staging for max_rows rows: h_coef, h_scale, h_ow and h_image
     * point into the pinned h_stage, laid out as stage */
    double *h_stage, *h_gcoef, *h_dopd;
    double *h_coef, *h_scale, *h_ow;
    int *h_image, *h_rows;
    size_t cap_h_dopd;
    gpu_fit fit; /* the retrieval's scratch (gpu/fit.h) */
    /* The last run, when it was a forward of one batch: its rows and
     * coefficients (host [kept_rows], [kept_rows][K]), whose fields E
     * (grid) and phases W (w) are still on the device, so that a backward
     * of the same rows starts from them (kept_from) instead of computing
     * them again: a forward then its gradient (a fit's evaluation, an
     * autograd step) pays for one forward, not two. */
    int kept, kept_rows, kept_images;
    int staged; /* a batch's copies from the pinned staging may be pending */
    gpu_vjp_row *kept_row;
    double *kept_coef;
    /* fit_evaluate as a CUDA graph (eval_graph): its key, and the key of
     * the last direct evaluation it may be captured from */
    int defer; /* a backward batch's gradient copy queued, not waited for or scattered */
    cudaGraphExec_t graph;
    int have_graph, have_direct, graph_off; /* graph_off: PSFSIM_GPU_EVAL_GRAPH=0 */
    graph_key gkey, direct_key;
};

static void free_batch(gpu_vjp *v)
{
    cudaFree(v->grid);
    cudaFree(v->w);
    cudaFree(v->gcoef);
    cudaFree(v->stage);
    v->grid = NULL;
    v->w = v->gcoef = v->stage = v->coef = v->scale = v->ow = NULL;
    v->image = NULL;
    v->cap_rows = 0;
    v->cap_nopen = 0;
}

/* The evaluation's graph, if one was made: it names the buffers and plans
 * of its capture, so it goes with any of them. */
static void drop_graph(gpu_vjp *v)
{
    if (v->have_graph) cudaGraphExecDestroy(v->graph);
    v->have_graph = 0;
}

static void vjp_destroy(gpu_vjp *v)
{
    if (!v) return;
    cudaSetDevice(v->device);
    if (v->have_stream) cudaStreamSynchronize(v->stream);
    free_batch(v);
    cudaFree(v->images);
    cudaFree(v->cot);
    for (int p = 0; p < v->npupils; ++p) {
        cudaFree(v->pup[p].dest);
        cudaFree(v->pup[p].amp);
        cudaFree(v->pup[p].basis);
        cudaFree(v->pup[p].dopd);
    }
    gpu_vjp_plans_free(&v->plans);
    gpu_vjp_det_free(&v->det);
    gpu_fit_free(&v->fit);
    drop_graph(v);
    free(v->kept_row);
    free(v->kept_coef);
    if (v->have_blas) cublasDestroy(v->blas);
    if (v->have_stream) cudaStreamDestroy(v->stream);
    cudaFreeHost(v->h_stage);
    cudaFreeHost(v->h_gcoef);
    free(v->h_dopd);
    free(v->h_rows);
    free(v);
}

/* Point the checker at this call's err and make the device current. */
static int enter(gpu_vjp *v, char *err, size_t errlen)
{
    gpu_check_init(&v->chk, v->device, err, errlen); /* each entry's calls counted afresh */
    return GPU_CUDA(&v->chk, cudaSetDevice(v->device));
}

/* Doubles of a staging block for rows rows of k coefficients
 * (stage_layout: the ints in the last (rows + 1) / 2). */
static size_t stage_doubles(size_t rows, int k)
{
    return rows * ((size_t)k + 2) + (rows + 1) / 2;
}

static int vjp_create(int device, int n, int nbasis, gpu_vjp **out, char *err, size_t errlen)
{
    *out = NULL;
    if (n < 1 || nbasis < 1 || (long long)n * n > (1LL << 30)) {
        snprintf(err, errlen, "gpu: gradients of a %d x %d grid with %d basis rows: out of range",
                 n, n, nbasis);
        return -1;
    }
    gpu_vjp *v = (gpu_vjp *)calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "gpu: out of host memory for the gradients' instance");
        return -1;
    }
    v->device = device;
    v->n = n;
    v->k = nbasis;
    const char *g = getenv("PSFSIM_GPU_EVAL_GRAPH"); /* 0: every evaluation queued directly */
    v->graph_off = g && strcmp(g, "0") == 0;
    size_t nn = (size_t)n * n;
    size_t rows = VJP_GRID_BYTES / (nn * sizeof(cuDoubleComplex));
    rows = rows < 1 ? 1 : rows > 1024 ? 1024 : rows;
    while (rows > 1 && rows * nn >= ((size_t)1 << 31)) /* cufftPlanMany's int sizes */
        rows /= 2;
    v->max_rows = (int)rows;
    gpu_check_init(&v->chk, device, err, errlen);
    if (GPU_CUDA(&v->chk, cudaSetDevice(device))) goto fail;
    /* pinned: a batch's small copies each way are then plain DMA, not a
     * staged copy that waits for the stream (a retrieval makes thousands) */
    if (GPU_CUDA(&v->chk,
                 cudaMallocHost(&v->h_stage, stage_doubles(rows, nbasis) * sizeof(double))) ||
        GPU_CUDA(&v->chk, cudaMallocHost(&v->h_gcoef, rows * nbasis * sizeof(double))))
        goto fail;
    v->kept_row = (gpu_vjp_row *)malloc(rows * sizeof *v->kept_row);
    v->kept_coef = (double *)malloc(rows * nbasis * sizeof(double));
    if (!v->kept_row || !v->kept_coef) {
        snprintf(err, errlen, "gpu: out of host memory for the gradients' batch of %zu rows", rows);
        goto fail;
    }
    if (GPU_CUDA(&v->chk, cudaStreamCreateWithFlags(&v->stream, cudaStreamNonBlocking))) goto fail;
    v->have_stream = 1;
    if (GPU_CUBLAS(&v->chk, cublasCreate(&v->blas))) goto fail;
    v->have_blas = 1;
    if (GPU_CUBLAS(&v->chk, cublasSetStream(v->blas, v->stream))) goto fail;
    gpu_vjp_plans_init(&v->plans, n, v->stream);
    *out = v;
    return 0;
fail:
    vjp_destroy(v);
    return -1;
}

static int vjp_add_pupil(gpu_vjp *v, size_t nopen, const unsigned *dest, const double *amp,
                         const double *basis, int *index, char *err, size_t errlen)
{
    if (enter(v, err, errlen)) return -1;
    if (v->npupils == VJP_PUPILS) {
        snprintf(err, errlen, "gpu: more than %d pupils for the gradients", VJP_PUPILS);
        return -1;
    }
    if (nopen >= ((size_t)1 << 31) / (size_t)v->k) {
        snprintf(err, errlen, "gpu: a pupil of %zu samples is too large for the gradients", nopen);
        return -1;
    }
    vjp_pupil *p = &v->pup[v->npupils];
    memset(p, 0, sizeof *p);
    size_t m = nopen ? nopen : 1;
    if (GPU_CUDA(&v->chk, cudaMalloc(&p->dest, m * sizeof *p->dest)) ||
        GPU_CUDA(&v->chk, cudaMalloc(&p->amp, m * sizeof *p->amp)) ||
        GPU_CUDA(&v->chk, cudaMalloc(&p->basis, m * v->k * sizeof *p->basis)) ||
        GPU_CUDA(&v->chk, cudaMalloc(&p->dopd, m * sizeof *p->dopd)))
        goto fail;
    p->nopen = nopen;
    if (nopen &&
        (GPU_CUDA(&v->chk,
                  cudaMemcpy(p->dest, dest, nopen * sizeof *dest, cudaMemcpyHostToDevice)) ||
         GPU_CUDA(&v->chk, cudaMemcpy(p->amp, amp, nopen * sizeof *amp, cudaMemcpyHostToDevice)) ||
         GPU_CUDA(&v->chk, cudaMemcpy(p->basis, basis, nopen * v->k * sizeof *basis,
                                      cudaMemcpyHostToDevice))))
        goto fail;
    *index = v->npupils++;
    return 0;
fail:
    cudaFree(p->dest);
    cudaFree(p->amp);
    cudaFree(p->basis);
    cudaFree(p->dopd);
    memset(p, 0, sizeof *p);
    return -1;
}

static int vjp_set_row(gpu_vjp *v, int pupil, int row, const double *values, char *err,
                       size_t errlen)
{
    if (enter(v, err, errlen)) return -1;
    if (pupil < 0 || pupil >= v->npupils || row < 0 || row >= v->k) {
        snprintf(err, errlen, "gpu: gradients' basis row %d of pupil %d: out of range", row, pupil);
        return -1;
    }
    size_t n = v->pup[pupil].nopen;
    v->kept = 0; /* the basis changes: W with it */
    if (n == 0) return 0;
    return GPU_CUDA(&v->chk, cudaMemcpy(v->pup[pupil].basis + (size_t)row * n, values,
                                        n * sizeof *values, cudaMemcpyHostToDevice));
}

static int vjp_set_detector(gpu_vjp *v, const gpu_vjp_detector *d, char *err, size_t errlen)
{
    if (enter(v, err, errlen)) return -1;
    v->kept = 0;
    /* its plans may be made again under the same batch count: no graph
     * of the old ones is replayed */
    drop_graph(v);
    v->have_direct = 0;
    return gpu_vjp_det_set(&v->det, &v->chk, v->n, d);
}

/* The batch buffers for rows rows of nopen samples. */
static int reserve_batch(gpu_vjp *v, int rows, size_t nopen)
{
    if (rows <= v->cap_rows && nopen <= v->cap_nopen) return 0;
    int r = rows > v->cap_rows ? rows : v->cap_rows;
    size_t m = nopen > v->cap_nopen ? nopen : v->cap_nopen;
    m = m ? m : 1;
    free_batch(v);
    size_t nn = (size_t)v->n * v->n;
    if (GPU_CUDA(&v->chk, cudaMalloc(&v->grid, (size_t)r * nn * sizeof *v->grid)) ||
        GPU_CUDA(&v->chk, cudaMalloc(&v->w, (size_t)r * m * sizeof *v->w)) ||
        GPU_CUDA(&v->chk, cudaMalloc(&v->gcoef, (size_t)r * v->k * sizeof *v->gcoef)) ||
        GPU_CUDA(&v->chk, cudaMalloc(&v->stage, stage_doubles(r, v->k) * sizeof *v->stage))) {
        free_batch(v);
        return -1;
    }
    v->cap_rows = r;
    v->cap_nopen = m;
    return 0;
}

/* The run's image and cotangent buffers for nimages images. */
static int reserve_images(gpu_vjp *v, int nimages)
{
    if (nimages <= v->cap_images) return 0;
    cudaFree(v->images);
    cudaFree(v->cot);
    v->images = v->cot = NULL;
    v->cap_images = 0;
    size_t bytes = (size_t)nimages * v->n * v->n * sizeof(double);
    if (GPU_CUDA(&v->chk, cudaMalloc(&v->images, bytes)) ||
        GPU_CUDA(&v->chk, cudaMalloc(&v->cot, bytes))) {
        cudaFree(v->images);
        v->images = NULL;
        return -1;
    }
    v->cap_images = nimages;
    return 0;
}

/* A batch of count rows' staging, host (pinned) and device alike:
 * [count][K] coefficients, [count] scales, [count] OPD weights, then
 * [count] image indices (ints): one block, so one copy carries it. */
static void stage_layout(gpu_vjp *v, int count)
{
    size_t c = (size_t)count, K = (size_t)v->k;
    v->h_coef = v->h_stage;
    v->h_scale = v->h_stage + c * K;
    v->h_ow = v->h_scale + c;
    v->h_image = (int *)(v->h_ow + c);
    v->coef = v->stage;
    v->scale = v->stage ? v->stage + c * K : NULL;
    v->ow = v->stage ? v->scale + c : NULL;
    v->image = v->stage ? (int *)(v->ow + c) : NULL;
}

/* Bytes of a batch of count rows' staging (stage_layout). */
static size_t stage_bytes(const gpu_vjp *v, int count)
{
    return (size_t)count * ((size_t)v->k + 2) * sizeof(double) + (size_t)count * sizeof(int);
}

/* The host's part of a batch's staging: rows v->h_rows[0 .. count)'s
 * coefficients, images, scales and OPD weights into the pinned buffer its
 * copy reads (a replayed graph's copy too). */
static void stage_rows(gpu_vjp *v, int count, const gpu_vjp_row *rows, const double *coeff)
{
    size_t K = (size_t)v->k;
    stage_layout(v, count);
    for (int j = 0; j < count; ++j) {
        int r = v->h_rows[j];
        memcpy(v->h_coef + j * K, coeff + (size_t)r * K, K * sizeof *coeff);
        v->h_image[j] = rows[r].image;
        v->h_scale[j] = rows[r].scale;
        v->h_ow[j] = rows[r].opd_weight;
    }
}

/* gcoeff's rows v->h_rows[0 .. count) from the batch's copy back. */
static void scatter_gcoef(const gpu_vjp *v, int count, double *gcoeff)
{
    size_t K = (size_t)v->k;
    for (int j = 0; j < count; ++j)
        memcpy(gcoeff + (size_t)v->h_rows[j] * K, v->h_gcoef + j * K, K * sizeof(double));
}

/* One batch: rows v->h_rows[0 .. count) of the run, all on pupil p;
 * from_kept: a backward from the kept forward's fields (the same rows:
 * its coefficients, images and scales already on the device). */
static int run_batch(gpu_vjp *v, int p, int count, const gpu_vjp_row *rows, const double *coeff,
                     int backward, int from_kept, double *gcoeff, double *dopd)
{
    vjp_pupil *pp = &v->pup[p];
    size_t K = (size_t)v->k;
    cudaStream_t s = v->stream;
    /* the staging is pinned: the last batch's copies from it must be done
     * before it is written (a backward from the kept fields writes none) */
    if (!from_kept && v->staged) {
        if (GPU_CUDA(&v->chk, cudaStreamSynchronize(s))) return -1;
        v->staged = 0;
    }
    if (!from_kept && reserve_batch(v, count, pp->nopen)) return -1;
    if (from_kept)
        stage_layout(v, count); /* the forward's, of count rows */
    else
        stage_rows(v, count, rows, coeff);
    if (!from_kept && GPU_CUDA(&v->chk, cudaMemcpyAsync(v->stage, v->h_stage, stage_bytes(v, count),
                                                        cudaMemcpyHostToDevice, s)))
        return -1;
    if (!from_kept) v->staged = 1;
    const double one = 1.0, zero = 0.0;
    int m = (int)pp->nopen, few = count <= GPU_VJP_FEW_ROWS;
    /* W (col-major nopen x R) = B (nopen x K, the row-major [K][nopen]) C (K x R);
     * for a few rows k_field forms it */
    if (!from_kept && m > 0 && !few &&
        GPU_CUBLAS(&v->chk, cublasDgemm(v->blas, CUBLAS_OP_N, CUBLAS_OP_N, m, count, (int)K, &one,
                                        pp->basis, m, v->coef, (int)K, &zero, v->w, m)))
        return -1;
    gpu_vjp_batch b = {v->n,
                       count,
                       pp->nopen,
                       pp->dest,
                       pp->amp,
                       v->w,
                       v->grid,
                       v->image,
                       v->scale,
                       v->images,
                       backward ? v->cot : NULL,
                       (int)K,
                       pp->basis,
                       !from_kept && few ? v->coef : NULL,
                       v->gcoef};
    cufftHandle plan;
    if (gpu_vjp_plan(&v->plans, &v->chk, count, &plan)) return -1;
    if (!from_kept && (gpu_vjp_field(&v->chk, s, &b) ||
                       GPU_CUFFT(&v->chk, cufftExecZ2Z(plan, v->grid, v->grid, CUFFT_FORWARD)) ||
                       gpu_vjp_intensity(&v->chk, s, &b)))
        return -1;
    if (!backward) return 0;
    if (gpu_vjp_cotangent(&v->chk, s, &b) ||
        GPU_CUFFT(&v->chk, cufftExecZ2Z(plan, v->grid, v->grid, CUFFT_INVERSE)) ||
        gpu_vjp_dw(&v->chk, s, &b))
        return -1;
    if (m == 0) {
        if (GPU_CUDA(&v->chk, cudaMemsetAsync(v->gcoef, 0, count * K * sizeof(double), s)))
            return -1;
    } else if (few) {
        if (gpu_vjp_gcoef(&v->chk, s, &b)) return -1;
    } else if (GPU_CUBLAS(&v->chk, cublasDgemm(v->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)K, count, m,
                                               &one, pp->basis, m, v->w, m, &zero, v->gcoef,
                                               (int)K))) /* G (K x R) = B^T dW */
        return -1;
    if (dopd && m > 0 &&
        GPU_CUBLAS(&v->chk, cublasDgemv(v->blas, CUBLAS_OP_N, m, count, &one, v->w, m, v->ow, 1,
                                        &one, pp->dopd, 1)))
        return -1;
    if (GPU_CUDA(&v->chk, cudaMemcpyAsync(v->h_gcoef, v->gcoef, count * K * sizeof(double),
                                          cudaMemcpyDeviceToHost, s)))
        return -1;
    if (v->defer) return 0; /* a graph's capture: its launch waits, then scatters */
    if (GPU_CUDA(&v->chk, cudaStreamSynchronize(s))) return -1;
    scatter_gcoef(v, count, gcoeff);
    return 0;
}

/* Add pupil p's OPD samples' gradient into dopd. */
static int add_dopd(gpu_vjp *v, int p, double *dopd)
{
    size_t n = v->pup[p].nopen;
    if (n == 0) return 0;
    if (n > v->cap_h_dopd) {
        free(v->h_dopd);
        v->h_dopd = (double *)malloc(n * sizeof(double));
        v->cap_h_dopd = v->h_dopd ? n : 0;
        if (!v->h_dopd) {
            snprintf(v->chk.err, v->chk.errlen, "gpu: out of host memory for %zu OPD samples", n);
            return -1;
        }
    }
    if (GPU_CUDA(&v->chk, cudaMemcpyAsync(v->h_dopd, v->pup[p].dopd, n * sizeof(double),
                                          cudaMemcpyDeviceToHost, v->stream)) ||
        GPU_CUDA(&v->chk, cudaStreamSynchronize(v->stream)))
        return -1;
    for (size_t k = 0; k < n; ++k)
        dopd[k] += v->h_dopd[k];
    return 0;
}

/* Where a run's cotangents and images are: the host (double), or the
 * device (dtype 0 float, 1 double; turn: each image reversed). keep: a
 * forward's images stay in the instance's buffers (result_of), none
 * written out; in_place: a backward's cotangent is in the instance's
 * buffer already (cot_of; cotangent only marks a backward). */
typedef struct {
    int device, dtype, turn;
    const void *cotangent;
    void *images;
    int keep, in_place;
} run_io;

/* Values of one of the instance's output images: M M (the detector
 * stage's when active), else N N. */
static size_t out_values(const gpu_vjp *v)
{
    return v->det.active ? (size_t)v->det.m * v->det.m : (size_t)v->n * v->n;
}

/* The instance's images after a forward (the detector stage's when
 * active), and where a backward's cotangent goes: [nimages][M M] each. */
static double *result_of(gpu_vjp *v)
{
    return v->det.active ? v->det.out : v->images;
}

static double *cot_of(gpu_vjp *v)
{
    return v->det.active ? v->det.cot : v->cot;
}

/* Whether the kept forward's fields are those of these rows. */
static int kept_matches(const gpu_vjp *v, int nimages, int nrows, const gpu_vjp_row *rows,
                        const double *coeff)
{
    return v->kept && v->kept_images == nimages && v->kept_rows == nrows &&
           memcmp(v->kept_row, rows, (size_t)nrows * sizeof *rows) == 0 &&
           memcmp(v->kept_coef, coeff, (size_t)nrows * v->k * sizeof *coeff) == 0;
}

/* A run (vjp_run's, vjp_run_device's): its work queued on v->stream and,
 * with wait, waited for (without, a forward's images are complete only in
 * the stream's order: fit_evaluate queues the loss and backward behind). */
static int run_any(gpu_vjp *v, int nimages, const run_io *io, int nrows, const gpu_vjp_row *rows,
                   const double *coeff, double *gcoeff, double *const *d_opd, int wait, char *err,
                   size_t errlen)
{
    if (enter(v, err, errlen)) return -1;
    for (int r = 0; r < nrows; ++r)
        if (rows[r].pupil < 0 || rows[r].pupil >= v->npupils || rows[r].image < 0 ||
            rows[r].image >= nimages) {
            snprintf(err, errlen, "gpu: gradients' row %d: pupil %d or image %d out of range", r,
                     rows[r].pupil, rows[r].image);
            return -1;
        } else if (r > 0 && rows[r].image < rows[r - 1].image) {
            snprintf(err, errlen, "gpu: gradients' row %d: image %d after image %d", r,
                     rows[r].image, rows[r - 1].image);
            return -1;
        }
    if (nimages < 1) return 0;
    if (!v->h_rows) {
        v->h_rows = (int *)malloc((size_t)v->max_rows * sizeof(int));
        if (!v->h_rows) {
            snprintf(err, errlen, "gpu: out of host memory for the gradients' rows");
            return -1;
        }
    }
    size_t plane = (size_t)v->n * v->n * sizeof(double);
    int backward = io->cotangent != NULL, det = v->det.active;
    /* a backward that wants no images, of the kept forward's rows: from its fields */
    int from_kept = backward && !io->images && kept_matches(v, nimages, nrows, rows, coeff);
    int batches = 0;
    v->kept = 0;
    size_t mm = out_values(v);
    size_t out = mm * sizeof(double);
    if (reserve_images(v, nimages) ||
        (det && gpu_vjp_det_reserve(&v->det, &v->chk, nimages, v->stream)) ||
        (!from_kept &&
         GPU_CUDA(&v->chk, cudaMemsetAsync(v->images, 0, nimages * plane, v->stream))))
        return -1;
    double *cot_in = cot_of(v); /* after the reserves: their buffers */
    if (backward && !io->device &&
        GPU_CUDA(&v->chk, cudaMemcpyAsync(cot_in, io->cotangent, nimages * out,
                                          cudaMemcpyHostToDevice, v->stream)))
        return -1;
    if (backward && io->device && !io->in_place &&
        gpu_vjp_convert(&v->chk, v->stream, cot_in, 1, io->cotangent, io->dtype == 1, nimages, mm,
                        io->turn))
        return -1;
    if (backward && det && gpu_vjp_det_adjoint(&v->det, &v->chk, v->stream, v->cot, nimages))
        return -1;
    for (int p = 0; p < v->npupils; ++p) {
        double *dopd = backward && d_opd ? d_opd[p] : NULL;
        if (dopd && v->pup[p].nopen &&
            GPU_CUDA(&v->chk, cudaMemsetAsync(v->pup[p].dopd, 0, v->pup[p].nopen * sizeof(double),
                                              v->stream)))
            return -1;
        int count = 0, used = 0;
        for (int r = 0; r <= nrows; ++r) {
            if (r < nrows && rows[r].pupil == p) {
                v->h_rows[count++] = r;
                used = 1;
            }
            if (count == v->max_rows || (r == nrows && count > 0)) {
                if (run_batch(v, p, count, rows, coeff, backward, from_kept, gcoeff, dopd))
                    return -1;
                count = 0;
                batches++;
            }
        }
        if (dopd && used && add_dopd(v, p, dopd)) return -1;
    }
    void *images = io->images;
    if (det && (images || io->keep) &&
        gpu_vjp_det_forward(&v->det, &v->chk, v->stream, v->images, nimages))
        return -1;
    const double *result = result_of(v);
    if (images && !io->device &&
        GPU_CUDA(&v->chk,
                 cudaMemcpyAsync(images, result, nimages * out, cudaMemcpyDeviceToHost, v->stream)))
        return -1;
    if (images && io->device &&
        gpu_vjp_convert(&v->chk, v->stream, images, io->dtype == 1, result, 1, nimages, mm,
                        io->turn))
        return -1;
    if (wait) {
        if (GPU_CUDA(&v->chk, cudaStreamSynchronize(v->stream))) return -1;
        v->staged = 0;
    }
    if (!backward && batches == 1) { /* its fields stay in grid and w until the next run */
        v->kept = 1;
        v->kept_rows = nrows;
        v->kept_images = nimages;
        memcpy(v->kept_row, rows, (size_t)nrows * sizeof *rows);
        memcpy(v->kept_coef, coeff, (size_t)nrows * v->k * sizeof *coeff);
    }
    return 0;
}

static int vjp_run(gpu_vjp *v, int nimages, const double *cotangent, double *images, int nrows,
                   const gpu_vjp_row *rows, const double *coeff, double *gcoeff,
                   double *const *d_opd, char *err, size_t errlen)
{
    run_io io = {0, 1, 0, cotangent, images, 0, 0};
    return run_any(v, nimages, &io, nrows, rows, coeff, gcoeff, d_opd, 1, err, errlen);
}

static int vjp_run_device(gpu_vjp *v, int nimages, int dtype, int turn, const void *cotangent,
                          void *images, int nrows, const gpu_vjp_row *rows, const double *coeff,
                          double *gcoeff, double *const *d_opd, char *err, size_t errlen)
{
    if (dtype != 0 && dtype != 1) {
        snprintf(err, errlen, "gpu: gradients' dtype %d: 0 (float) or 1 (double)", dtype);
        return -1;
    }
    run_io io = {1, dtype, turn != 0, cotangent, images, 0, 0};
    return run_any(v, nimages, &io, nrows, rows, coeff, gcoeff, d_opd, 1, err, errlen);
}

/* gpu_vjp_ops.fit_evaluate's arguments. */
typedef struct {
    int nimages, turn, nrows;
    const gpu_vjp_row *rows;
    const double *coeff;
    size_t npix;
    const double *data, *w;
    double *images;
    int fit;
    const double *fixed;
    double *cot, *out, *gcoeff;
    double *const *d_opd;
} eval_args;

/* The forward, the loss and the backward of an evaluation, queued in that
 * order on the one stream: the host queues the loss and the backward while
 * the device computes the forward. The backward starts from the forward's
 * kept fields when the forward was one batch. Unturned, the loss reads the
 * instance's images and writes its cotangent buffer: no conversion either
 * way (the images written out only when asked for). wait: the backward
 * waited for (its gradient scattered); else (a capture) only queued. */
static int eval_queue(gpu_vjp *v, const eval_args *a, int wait, char *err, size_t errlen)
{
    int direct = !a->turn;
    run_io fwd = {1, 1, a->turn != 0, NULL, a->images, 1, 0};
    run_io bwd = {1, 1, a->turn != 0, a->cot, NULL, 0, direct};
    return run_any(v, a->nimages, &fwd, a->nrows, a->rows, a->coeff, NULL, NULL, 0, err, errlen) ||
                   gpu_fit_loss_enqueue(&v->fit, &v->chk, v->stream, a->nimages, a->npix, a->data,
                                        a->w, direct ? result_of(v) : a->images, a->fit, a->fixed,
                                        direct ? cot_of(v) : a->cot) ||
                   run_any(v, a->nimages, &bwd, a->nrows, a->rows, a->coeff, a->gcoeff, a->d_opd,
                           wait, err, errlen)
               ? -1
               : 0;
}

/* The graph key of an evaluation (graph_key), or 0 when it is not one a
 * graph replays: one batch of at most GPU_VJP_FEW_ROWS rows on one pupil
 * (whose rows' order is then the batch's), no OPD gradient. */
static int eval_key(const gpu_vjp *v, const eval_args *a, graph_key *k)
{
    if (v->graph_off || a->nrows < 1 || a->nrows > GPU_VJP_FEW_ROWS || a->nrows > v->max_rows)
        return 0;
    int p = a->rows[0].pupil;
    if (p < 0 || p >= v->npupils || (a->d_opd && a->d_opd[p])) return 0;
    for (int r = 1; r < a->nrows; ++r)
        if (a->rows[r].pupil != p) return 0;
    const vjp_pupil *pp = &v->pup[p];
    const void *ptr[23] = {a->data,    a->w,        a->images,  a->cot,     v->grid,
                           v->w,       v->stage,    v->h_stage, v->gcoef,   v->h_gcoef,
                           v->images,  v->cot,      v->det.out, v->det.cot, v->det.spec,
                           v->det.otf, v->fit.part, v->fit.res, v->fit.fix, v->fit.host,
                           pp->dest,   pp->amp,     pp->basis};
    memset(k, 0, sizeof *k); /* compared bytewise: no stray padding */
    k->nimages = a->nimages;
    k->nrows = a->nrows;
    k->turn = a->turn;
    k->fit = a->fit;
    k->pupil = p;
    k->want = a->images != NULL;
    k->det_active = v->det.active;
    k->det_plan_batch = v->det.plan_batch;
    k->det_m = v->det.m;
    k->n = v->n;
    k->k = v->k;
    k->npix = a->npix;
    k->nopen = pp->nopen; /* a pupil rebuilt into its old buffers */
    k->plans_made = v->plans.made;
    memcpy(k->ptr, ptr, sizeof ptr);
    return 1;
}

/* The captured evaluation run: its staging written, one launch, one wait,
 * the gradient and the loss read back. */
static int eval_launch(gpu_vjp *v, const eval_args *a)
{
    if (GPU_CUDA(&v->chk, cudaGraphLaunch(v->graph, v->stream)) ||
        GPU_CUDA(&v->chk, cudaStreamSynchronize(v->stream))) {
        v->kept = 0;
        return -1;
    }
    v->staged = 0;
    v->kept = 0; /* as after a direct evaluation's backward */
    scatter_gcoef(v, a->nrows, a->gcoeff);
    gpu_fit_loss_collect(&v->fit, a->nimages, a->out);
    return 0;
}

static int eval_replay(gpu_vjp *v, const eval_args *a)
{
    if (v->staged && GPU_CUDA(&v->chk, cudaStreamSynchronize(v->stream))) return -1;
    v->staged = 0;
    for (int j = 0; j < a->nrows; ++j) /* one pupil: the batch's rows in order */
        v->h_rows[j] = j;
    stage_rows(v, a->nrows, a->rows, a->coeff);
    gpu_fit_stage(&v->fit, a->nimages, a->fixed);
    return eval_launch(v, a);
}

/* Capture an evaluation whose buffers, plans and arguments the last
 * direct one had (nothing is allocated or planned inside the capture),
 * then run it. Captured relaxed, as gpu/run.cu's graph: a caller's other
 * threads in the global mode (PyTorch's) are then not refused their
 * calls while it runs. Its host work (the staging) runs now, at the capture; a
 * replay redoes it (eval_replay). */
static int eval_capture(gpu_vjp *v, const eval_args *a, const graph_key *k, char *err,
                        size_t errlen)
{
    drop_graph(v);
    if (v->staged && GPU_CUDA(&v->chk, cudaStreamSynchronize(v->stream))) return -1;
    v->staged = 0;
    if (GPU_CUDA(&v->chk, cudaStreamBeginCapture(v->stream, cudaStreamCaptureModeRelaxed)))
        return -1;
    v->defer = 1;
    int rc = eval_queue(v, a, 0, err, errlen);
    v->defer = 0;
    cudaGraph_t g = NULL;
    if (rc == 0)
        rc = GPU_CUDA(&v->chk, cudaStreamEndCapture(v->stream, &g));
    else
        (void)cudaStreamEndCapture(v->stream, &g); /* out of capture; the error is rc's */
    if (rc == 0) rc = GPU_CUDA(&v->chk, cudaGraphInstantiate(&v->graph, g, 0));
    if (g) cudaGraphDestroy(g);
    if (rc != 0) {
        (void)cudaGetLastError();
        v->kept = v->staged = 0; /* nothing captured ran */
        return -1;
    }
    v->have_graph = 1;
    v->gkey = *k;
    return eval_launch(v, a);
}

/* gpu_vjp_ops.fit_evaluate. A retrieval's evaluations repeat one shape on
 * the same buffers, so from the second on they are one CUDA graph's
 * launches (eval_capture, eval_replay): the same kernels and copies as
 * eval_queue's, without their launches' host cost. Other evaluations, and
 * the first, are queued directly. */
static int vjp_fit_evaluate(gpu_vjp *v, int nimages, int turn, int nrows, const gpu_vjp_row *rows,
                            const double *coeff, size_t npix, const double *data, const double *w,
                            double *images, int fit, const double *fixed, double *cot, double *out,
                            double *gcoeff, double *const *d_opd, char *err, size_t errlen)
{
    if (enter(v, err, errlen)) return -1;
    size_t mm = out_values(v);
    if (npix != mm) {
        snprintf(err, errlen, "gpu: the fit's images of %zu values, the model's of %zu", npix, mm);
        return -1;
    }
    if ((turn && !images) || !cot) {
        snprintf(err, errlen,
                 "gpu: an evaluation needs its cotangent array (and turned, its "
                 "images array)");
        return -1;
    }
    eval_args a = {nimages, turn, nrows, rows, coeff, npix,   data, w,
                   images,  fit,  fixed, cot,  out,   gcoeff, d_opd};
    graph_key k;
    int graphable = eval_key(v, &a, &k);
    if (graphable && v->have_graph && memcmp(&k, &v->gkey, sizeof k) == 0)
        return eval_replay(v, &a);
    if (graphable && v->have_direct && memcmp(&k, &v->direct_key, sizeof k) == 0) {
        v->have_direct = 0;
        return eval_capture(v, &a, &k, err, errlen);
    }
    v->have_direct = 0;
    if (eval_queue(v, &a, 1, err, errlen)) return -1;
    gpu_fit_loss_collect(&v->fit, nimages, out); /* the backward's wait covered its copy */
    v->have_direct = graphable && eval_key(v, &a, &v->direct_key); /* its buffers now */
    return 0;
}

static int vjp_fit_fisher(gpu_vjp *v, int nimages, size_t npix, int nparams, const double *w,
                          const double *images, double *plus, const double *flux, double h,
                          double *G, double *y, char *err, size_t errlen)
{
    if (enter(v, err, errlen)) return -1;
    return gpu_fit_fisher(&v->fit, &v->chk, v->stream, v->blas, nimages, npix, nparams, w, images,
                          plus, flux, h, G, y);
}

const gpu_vjp_ops gpu_vjp_table = {vjp_create,       vjp_add_pupil,  vjp_set_row,
                                   vjp_set_detector, vjp_run,        vjp_destroy,
                                   vjp_run_device,   vjp_fit_fisher, vjp_fit_evaluate};
