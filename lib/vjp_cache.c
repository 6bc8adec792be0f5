/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradients' models kept on a set between calls (lib/vjp_priv.h): a
 * model's pupils, plans and buffers take longer to make than a 256 x 256
 * image's VJP (the Zernike basis, the OPD map sampled, FFTW planning,
 * fresh pages: ~12 ms against ~5 ms on one thread), so a caller iterating
 * one image at a time (phase retrieval) reuses them. They are the set's
 * until psfsim_close, or until a call with other terms replaces them. */
#include <stdlib.h>
#include <string.h>

#include "lib/vjp_priv.h"

typedef struct vjp_cache {
    adj_terms key; /* what the models were built for; its arrays below */
    int n[VJP_MAX_TERMS], m[VJP_MAX_TERMS];
    int seg_n[VJP_MAX_SEG_TERMS], seg_m[VJP_MAX_SEG_TERMS];
    vjp_model *models[VJP_MAX_THREADS]; /* slot t: thread t's, NULL until made */
} vjp_cache;

static int same_ints(const int *x, const int *y, int n)
{
    return n == 0 || memcmp(x, y, (size_t)n * sizeof *x) == 0;
}

static int same_terms(const adj_terms *x, const adj_terms *y)
{
    return x->nterms == y->nterms && x->seg_nterms == y->seg_nterms && x->opd == y->opd &&
           x->transmission == y->transmission && same_ints(x->n, y->n, x->nterms) &&
           same_ints(x->m, y->m, x->nterms) && same_ints(x->seg_n, y->seg_n, x->seg_nterms) &&
           same_ints(x->seg_m, y->seg_m, x->seg_nterms);
}

void vjp_cache_free(struct vjp_cache *c)
{
    if (!c) return;
    for (int t = 0; t < VJP_MAX_THREADS; ++t)
        vjp_model_free(c->models[t]);
    free(c);
}

/* c's key := terms (copied into c's arrays). */
static void set_key(vjp_cache *c, const adj_terms *terms)
{
    c->key = *terms;
    memcpy(c->n, terms->n, (size_t)terms->nterms * sizeof *c->n);
    memcpy(c->m, terms->m, (size_t)terms->nterms * sizeof *c->m);
    memcpy(c->seg_n, terms->seg_n, (size_t)terms->seg_nterms * sizeof *c->seg_n);
    memcpy(c->seg_m, terms->seg_m, (size_t)terms->seg_nterms * sizeof *c->seg_m);
    c->key.n = c->n, c->key.m = c->m, c->key.seg_n = c->seg_n, c->key.seg_m = c->seg_m;
}

int vjp_cache_models(psfsim_set *set, const vjp_args *a, vjp_model ***models, char *err,
                     size_t errlen)
{
    vjp_cache *c = set->vjp;
    if (c && same_terms(&c->key, &a->terms)) {
        *models = c->models;
        return PSFSIM_OK;
    }
    vjp_cache_free(c);
    set->vjp = c = calloc(1, sizeof *c);
    if (!c) return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
    set_key(c, &a->terms);
    *models = c->models;
    return PSFSIM_OK;
}
