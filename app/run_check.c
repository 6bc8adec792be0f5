/* SPDX-License-Identifier: BSD-3-Clause */
/* A batch's images checked before they go to the writers (app/run_check.h). */
#include "app/run_check.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "app/outputs.h"
#include "app/set/set_detector.h"
#include "backend/levels.h"

/* Whether every pixel of img[0 .. n) is in [0, FLT_MAX] (NaN is not: its
 * comparisons are false), in one pass the compiler vectorises: the three
 * counts below are made only for a bad image, to name its faults. */
static int all_good(const float *img, size_t n)
{
    int bad = 0;
    for (size_t p = 0; p < n; ++p)
        bad |= !(img[p] >= 0.0f && img[p] <= FLT_MAX);
    return !bad;
}

/* The first image of a batch with a bad pixel, from parts checked side by
 * side (host_pool_run): the least index any part found, nb for none. */
typedef struct {
    const float *images;
    size_t n; /* pixels per image */
    atomic_int first_bad;
} check_ctx;

static void check_part(void *arg, int begin, int end)
{
    check_ctx *c = arg;
    for (int i = begin; i < end; ++i) {
        if (all_good(c->images + (size_t)i * c->n, c->n)) continue;
        int seen = atomic_load(&c->first_bad);
        while (i < seen && !atomic_compare_exchange_weak(&c->first_bad, &seen, i)) {
        }
        return; /* later images of this part cannot come first */
    }
}

int run_check_images(run_state *r, int s, int nb, char *err, size_t errlen)
{
    size_t side = (size_t)set_detector_backend_npix(&r->set), n = side * side;
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
        check_ctx c = {.images = r->slots[s].images, .n = n};
        atomic_init(&c.first_bad, nb);
        host_pool_run(r->host, nb, check_part, &c);
        i = atomic_load(&c.first_bad);
        if (i >= nb) return 0;
        const float *img = r->slots[s].images + (size_t)i * n;
        for (size_t p = 0; p < n; ++p) {
            nan += isnan(img[p]) != 0;
            inf += isinf(img[p]) != 0;
            neg += img[p] < 0.0f;
        }
    }
    long long k = r->slots[s].infos[i].params.index;
    char name[300];
    outputs_image_name(&r->cfg, k, r->set.nimages, "", name, sizeof name);
    name[strlen(name) - 1] = '\0'; /* the '.' before the (empty) extension */
    snprintf(err, errlen,
             "image %lld (%s): NaN/negative pixels (%zu NaN, %zu infinite, %zu negative of "
             "%zu); not written",
             k, name, nan, inf, neg, n);
    return -1;
}
