/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim_vjp and psfsim_compute_inputs (lib/psfsim.h, API version 4): the
 * arguments checked (lib/vjp_args.c), then image after image through the
 * double model (lib/vjp_image.c) on the calling thread. */
#include <stdlib.h>
#include <string.h>

#include "lib/vjp_priv.h"

/* The images [first, first + count) through the model: images (or NULL)
 * gets them; with cotangent the gradients of a->gr too. */
static int run(psfsim_set *set, long long first, long long count, const vjp_args *a,
               const double *cotangent, double *images, char *err, size_t errlen)
{
    int rc = lib_check_range(set, first, count, err, errlen);
    if (rc != PSFSIM_OK || count == 0) return rc;
    vjp_model *v;
    rc = vjp_model_create(set, a, &v, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    size_t mm = (size_t)set->e.set.samp.npix * set->e.set.samp.npix;
    if (a->gr.opd_map)
        memset(a->gr.opd_map, 0,
               (size_t)set->e.set.opd_rows * set->e.set.opd_cols * sizeof *a->gr.opd_map);
    for (long long i = 0; rc == PSFSIM_OK && i < count; ++i)
        rc = vjp_model_image(v, a, first + i, i, cotangent ? cotangent + i * mm : NULL,
                             images ? images + i * mm : NULL, err, errlen);
    vjp_model_free(v);
    return rc;
}

int psfsim_compute_inputs(psfsim_set *set, long long first, long long count,
                          const psfsim_inputs *inputs, double *images, char *err, size_t errlen)
{
    if (!set || (!images && count > 0))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set or no images given");
    lib_messages_init();
    vjp_args *a = malloc(sizeof *a);
    if (!a) return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
    int rc = vjp_args_get(set, inputs, NULL, a, err, errlen);
    if (rc == PSFSIM_OK) rc = lib_enter(set, "psfsim_compute_inputs", err, errlen);
    if (rc == PSFSIM_OK) {
        rc = run(set, first, count, a, NULL, images, err, errlen);
        lib_leave(set);
    }
    free(a);
    return rc;
}

int psfsim_vjp(psfsim_set *set, long long first, long long count, const psfsim_inputs *inputs,
               const double *cotangent, double *images, psfsim_gradients *grads, char *err,
               size_t errlen)
{
    if (!set || !grads || (!cotangent && count > 0))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set, cotangent or grads given");
    lib_messages_init();
    vjp_args *a = malloc(sizeof *a);
    if (!a) return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
    int rc = vjp_args_get(set, inputs, grads, a, err, errlen);
    if (rc == PSFSIM_OK) rc = lib_enter(set, "psfsim_vjp", err, errlen);
    if (rc == PSFSIM_OK) {
        rc = run(set, first, count, a, cotangent, images, err, errlen);
        lib_leave(set);
    }
    free(a);
    return rc;
}
