/* SPDX-License-Identifier: BSD-3-Clause */
/* What psfsim_vjp and psfsim_compute_inputs share (lib/vjp.c): a call's
 * checked arguments (lib/vjp_args.c) and the per-image model
 * (lib/vjp_image.c: the CPU's double model, cpu/adjoint.h, with the image
 * set's normalisation and orientation). Not installed. */
#ifndef PSFSIM_LIB_VJP_PRIV_H
#define PSFSIM_LIB_VJP_PRIV_H

#include <pthread.h>

#include "backend/gpu_abi.h"
#include "cpu/adjoint.h"
#include "lib/set_priv.h"

#define VJP_MAX_TERMS 1024   /* psfsim_inputs.nterms at most */
#define VJP_MAX_SEG_TERMS 15 /* per-segment terms: radial order <= 4 */
#define VJP_MAX_THREADS 64   /* threads a call spreads its images over, at most */

/* A call's arguments, checked, the structs copied at their callers' sizes
 * (fields past a smaller size: their defaults). */
typedef struct {
    psfsim_inputs in;    /* all zero for NULL inputs */
    psfsim_gradients gr; /* all zero for no gradients (psfsim_compute_inputs) */
    adj_terms terms;     /* the inputs' terms, or the defaults (the label terms, the
                            set's segment modes) */
    int n[VJP_MAX_TERMS], m[VJP_MAX_TERMS];
    int seg_n[VJP_MAX_SEG_TERMS], seg_m[VJP_MAX_SEG_TERMS];
    int segments; /* S, 0 when not segmented */
} vjp_args;

/* Check and resolve a call's inputs and grads (grads NULL: a forward).
 * PSFSIM_OK, or PSFSIM_ERR_ARGUMENT with err naming what is wrong. */
int vjp_args_get(const psfsim_set *set, const psfsim_inputs *inputs, const psfsim_gradients *grads,
                 vjp_args *a, char *err, size_t errlen);

/* The per-image model (lib/vjp_image.c): one thread's pupils (for a's
 * terms), plans and buffers. */
typedef struct vjp_model vjp_model;

/* For set and a's terms (a->terms; a->gr.transmission: its buffer).
 * PSFSIM_OK, or PSFSIM_ERR_MEMORY / _COMPUTE with err (*out NULL). */
int vjp_model_create(psfsim_set *set, const vjp_args *a, vjp_model **out, char *err, size_t errlen);
void vjp_model_free(vjp_model *v);

/* Image k (row i = k - first of the call's inputs) into image[M M] as
 * psfsim_compute writes it, in double; with cotangent (M M, not NULL) the
 * gradients too: image i's rows of a->gr's zernike and seg_zernike
 * (overwritten), the maps' (added). jobs (may be NULL) is held while the
 * image's job is made (image_set_job is not thread-safe: its aperture
 * sums). PSFSIM_OK or an error with err. */
int vjp_model_image(vjp_model *v, const vjp_args *a, pthread_mutex_t *jobs, long long k,
                    long long i, const double *cotangent, double *image, char *err, size_t errlen);

/* The models kept on set (lib/vjp_cache.c) for a's terms: *models, an
 * array of VJP_MAX_THREADS slots (slot t thread t's; NULL: not made yet,
 * the thread makes it and leaves it there), the set's kept ones when they
 * were made for the same terms, else fresh (the others freed). PSFSIM_OK
 * or PSFSIM_ERR_MEMORY. Under the set's busy flag (one call at a time). */
int vjp_cache_models(psfsim_set *set, const vjp_args *a, vjp_model ***models, char *err,
                     size_t errlen);

/* The call on the GPU (lib/vjp_gpu.c) when the set's backend is the GPU
 * and the call is in its scope: *done 1 and the call's status, or *done 0
 * (PSFSIM_OK) when the CPU's path is to run it (out of scope, no module,
 * PSFSIM_VJP_BACKEND=cpu, or the GPU failed unless PSFSIM_VJP_BACKEND=gpu).
 * The arguments as lib/vjp.c's run. */
/* A psfsim_vjp_device call's cotangents and images: CUDA device memory of
 * device `device`, dtype 0 float or 1 double (the module's run_device). */
typedef struct {
    int device, dtype;
    const void *cotangent;
    void *images; /* NULL: not wanted */
    /* a forward's finite-difference steps (lib/retrieve_gpu.c's Fisher
     * step): with steps > 0 images gets [steps + 1][count][M M], the
     * call's images, then those with input term t raised by step, t <
     * steps, in one run of the module */
    int steps;
    double step;
    /* a retrieval's evaluation (vjp_device_evaluate): the forward, the
     * loss of vjp_fit_io and the backward of its cotangent into the
     * call's gradients, in one module call (fit_evaluate) */
    const struct vjp_fit_io *fit;
} vjp_device_io;

/* A retrieval's loss on the device (gpu_vjp_ops.fit_evaluate's
 * arguments): data, w and cot device [count][npix] double, fixed host
 * [count][2], out host [count][3]; want_images: the call's images array
 * written (else the module may keep them in its own buffers). */
typedef struct vjp_fit_io {
    size_t npix;
    const double *data, *w;
    int fit;
    const double *fixed;
    double *cot, *out;
    int want_images;
} vjp_fit_io;

/* dev: NULL, or the call's device arrays (cotangent and images then
 * ignored); *done 0 for them too when out of the GPU's scope, on another
 * device than the set's first GPU, or the GPU failed (auto): the caller
 * then goes through the host. */
int vjp_gpu_run(psfsim_set *set, long long first, long long count, const vjp_args *a,
                const double *cotangent, double *images, const vjp_device_io *dev, int *done,
                char *err, size_t errlen);

/* psfsim_vjp_device for the library's own arrays (lib/retrieve_gpu.c):
 * cotangent (NULL: a forward) and images (NULL: not wanted) double, in
 * the device memory of the set's first GPU, unturned by the caller (the
 * "poppy" turn is made on the device); grads NULL for a forward. *done 1
 * with the call's status when the GPU took it; *done 0 (PSFSIM_OK) when
 * it is the CPU's (out of the GPU's scope, PSFSIM_VJP_BACKEND=cpu, the
 * GPU failed under "auto"), nothing computed then. Errors as psfsim_vjp
 * (arguments, a busy set). */
int vjp_device_run(psfsim_set *set, long long first, long long count, const psfsim_inputs *inputs,
                   const double *cotangent, double *images, psfsim_gradients *grads, int *done,
                   char *err, size_t errlen);

/* vjp_device_run's forward with steps (vjp_device_io.steps, step) into
 * images [steps + 1][count][M M] (device, double): *done 0 when the GPU
 * does not take it (as vjp_device_run's, and when the images exceed one
 * of the module's chunks: vjp_gpu_chunk_images). */
int vjp_device_steps(psfsim_set *set, long long count, const psfsim_inputs *inputs, int steps,
                     double step, double *images, int *done, char *err, size_t errlen);

/* One evaluation of a retrieval (lib/retrieve_gpu.c): vjp_device_run's
 * forward of images [0, count) into images (device, double), the loss of
 * fit (vjp_fit_io) and vjp_device_run's backward of its cotangent into
 * grads, as the module's fit_evaluate (one call, one wait). *done 0 when
 * the GPU does not take it (as vjp_device_run's, or a module without
 * fit_evaluate): nothing computed then. */
int vjp_device_evaluate(psfsim_set *set, long long count, const psfsim_inputs *inputs,
                        const vjp_fit_io *fit, double *images, psfsim_gradients *grads, int *done,
                        char *err, size_t errlen);

/* Images of the set's kept GPU instance's grid in one chunk (0 without
 * one). */
long long vjp_gpu_chunk_images(const psfsim_set *set);

/* The GPU module's gradients instance kept on set (by the last call the
 * GPU ran) and its ops into *ops, or NULL (none kept). */
gpu_vjp *vjp_gpu_instance(const psfsim_set *set, const gpu_vjp_ops **ops);

/* Seconds in the module's runs on the set's kept instance so far (0
 * without one): where a caller's time goes. */
double vjp_gpu_seconds(const psfsim_set *set);

#endif
