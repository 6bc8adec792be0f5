/* SPDX-License-Identifier: BSD-3-Clause */
/* A batch's images checked before they go to the writers (app/run/run_check.h). */
#include "app/run/run_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "app/output/outputs.h"
#include "app/set/set_detector.h"
#include "backend/levels.h"

int run_check_images(run_state *r, int s, int nb, int first_bad, char *err, size_t errlen)
{
    size_t side = (size_t)set_detector_backend_npix(&r->e.set), n = side * side;
    size_t nan = 0, inf = 0, neg = 0;
    int i = 0;
    if (r->slots[s].on_levels) { /* the backend counted them */
        for (; i < nb; ++i) {
            const double *m = r->slots[s].measures + (size_t)i * PSF_MEASURES;
            nan = (size_t)m[PSF_MEASURE_NAN], inf = (size_t)m[PSF_MEASURE_INF];
            neg = (size_t)m[PSF_MEASURE_NEG];
            if (nan + inf + neg > 0) break;
        }
        if (i >= nb) return 0;
    } else {
        i = first_bad;
        if (i < 0 || i >= nb) return 0;
        const float *img = r->slots[s].images + (size_t)i * n;
        for (size_t p = 0; p < n; ++p) {
            nan += isnan(img[p]) != 0;
            inf += isinf(img[p]) != 0;
            neg += img[p] < 0.0f;
        }
    }
    long long k = r->slots[s].infos[i].params.index;
    char name[300];
    outputs_image_name(&r->e.cfg, k, r->e.set.nimages, "", name, sizeof name);
    name[strlen(name) - 1] = '\0'; /* the '.' before the (empty) extension */
    snprintf(err, errlen,
             "image %lld (%s): NaN/negative pixels (%zu NaN, %zu infinite, %zu negative of "
             "%zu); not written",
             k, name, nan, inf, neg, n);
    return -1;
}
