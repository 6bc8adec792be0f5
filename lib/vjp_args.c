/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradients' structs and shape queries (lib/psfsim.h, API version 4):
 * psfsim_inputs_init_size, psfsim_gradients_init_size, psfsim_map_shape,
 * psfsim_segment_modes. */
#include <stdio.h>
#include <string.h>

#include "lib/set_priv.h"
#include "optics/aperture.h"

void psfsim_inputs_init_size(psfsim_inputs *inputs, size_t size)
{
    if (!inputs) return;
    size = size < sizeof *inputs ? size : sizeof *inputs;
    memset(inputs, 0, size);
    inputs->size = size;
}

void psfsim_gradients_init_size(psfsim_gradients *grads, size_t size)
{
    if (!grads) return;
    size = size < sizeof *grads ? size : sizeof *grads;
    memset(grads, 0, size);
    grads->size = size;
}

int psfsim_map_shape(const psfsim_set *set, const char *key, int *rows, int *cols, char *err,
                     size_t errlen)
{
    if (!set || !key || !rows || !cols)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set, key, rows or cols given");
    const image_set *s = &set->e.set;
    if (strcmp(key, "aberrations.opd_map.file") == 0) {
        *rows = s->opd_map ? s->opd_rows : 0;
        *cols = s->opd_map ? s->opd_cols : 0;
        return PSFSIM_OK;
    }
    if (strcmp(key, "optics.aperture.file") == 0) {
        int has = s->aperture.shape == APERTURE_FILE && s->aperture.map;
        *rows = has ? s->aperture.map_rows : 0;
        *cols = has ? s->aperture.map_cols : 0;
        return PSFSIM_OK;
    }
    return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                    "psfsim_map_shape: key \"%.100s\" is not \"aberrations.opd_map.file\" or "
                    "\"optics.aperture.file\"",
                    key);
}

int psfsim_segment_modes(const psfsim_set *set, int *segments, int *nterms, int *j, char *err,
                         size_t errlen)
{
    if (!set || !segments || !nterms)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set, segments or nterms given");
    const image_set *s = &set->e.set;
    int r = s->aperture.seg.rings;
    *segments = s->aperture.shape == APERTURE_SEGMENTED ? 1 + 3 * r * (r + 1) : 0;
    *nterms = *segments > 0 ? s->segterms.nterms : 0;
    for (int t = 0; j && t < *nterms; ++t)
        j[t] = s->segterms.j[t];
    return PSFSIM_OK;
}
