/* SPDX-License-Identifier: BSD-3-Clause */
/* What psfsim_retrieve (lib/retrieve.c) and its evaluations on the GPU
 * (lib/retrieve_gpu.c) share: the set as lib/fit's model. Not
 * installed. */
#ifndef PSFSIM_LIB_RETRIEVE_PRIV_H
#define PSFSIM_LIB_RETRIEVE_PRIV_H

#include "lib/fit/fit.h"
#include "lib/set_priv.h"

typedef struct retrieve_gpu retrieve_gpu;

/* The model: the set's K images with the fitted coefficients (and OPD
 * map) added as inputs. */
typedef struct {
    psfsim_set *set;
    long long count;
    int nterms;
    size_t nparams; /* P: the coefficients, then the map's values */
    psfsim_inputs inputs;
    double *zern;      /* [K][P]: p on every row */
    int fit_map;       /* p holds an OPD map after the P coefficients */
    double *gradk;     /* [K][P]: psfsim_vjp's per image */
    int status;        /* the last failing call's psfsim_status */
    retrieve_gpu *gpu; /* the evaluations on the device, or NULL */
} set_model;

/* p's coefficients on every row of m->zern (and its map as the input
 * OPD map). */
void retrieve_rows(set_model *m, const double *p);

/* g for a gradient call of m: the per-image Zernike rows into m->gradk,
 * the OPD map's (summed over the images by the call) into grad after the
 * coefficients. */
void retrieve_gradients(set_model *m, double *grad, psfsim_gradients *g);

/* grad [nterms] = m->gradk's rows summed: the coefficients are every
 * image's. */
void retrieve_sum(const set_model *m, double *grad);

/* The evaluations on the device for m, whose images have npix values,
 * from p0 (lib/fit's fit_device, retrieve_gpu_device, whose callbacks
 * take m as their user, with m->gpu = *out): *out NULL when the set's GPU does not take them (a CPU
 * set, a call out of the GPU's gradients' scope, PSFSIM_VJP_BACKEND=cpu, a module without them, the
 * GPU failing under "auto": the host's path then). PSFSIM_OK, or an error (memory, a CUDA call)
 * with err. */
int retrieve_gpu_open(set_model *m, size_t npix, const double *p0, retrieve_gpu **out, char *err,
                      size_t errlen);
void retrieve_gpu_close(retrieve_gpu *g);

extern const fit_device retrieve_gpu_device;

#endif
