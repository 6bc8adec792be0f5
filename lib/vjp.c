/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim_vjp and psfsim_compute_inputs (lib/psfsim.h, API version 4). */
#include "lib/set_priv.h"

int psfsim_compute_inputs(psfsim_set *set, long long first, long long count,
                          const psfsim_inputs *inputs, double *images, char *err, size_t errlen)
{
    (void)set, (void)first, (void)count, (void)inputs, (void)images;
    return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "psfsim_compute_inputs: not yet built");
}

int psfsim_vjp(psfsim_set *set, long long first, long long count, const psfsim_inputs *inputs,
               const double *cotangent, double *images, psfsim_gradients *grads, char *err,
               size_t errlen)
{
    (void)set, (void)first, (void)count, (void)inputs, (void)cotangent, (void)images, (void)grads;
    return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "psfsim_vjp: not yet built");
}
