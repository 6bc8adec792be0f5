/* SPDX-License-Identifier: BSD-3-Clause */
/* The fit's quasi-Newton method: limited-memory BFGS (Nocedal, Math. Comp.
 * 35, 773, 1980; Liu & Nocedal, Math. Prog. 45, 503, 1989) by liblbfgs
 * (Okazaki's C port, Debian's liblbfgs-dev), with its More-Thuente line
 * search, over fit_loss (lib/fit/fit.h). */
#include <lbfgs.h>
#include <math.h>

#include "lib/fit/fit.h"

typedef struct {
    fit_state *st;
    double *history;
    int max_history;
    int *nhistory;
    int *iterations;
} driver;

static lbfgsfloatval_t evaluate(void *instance, const lbfgsfloatval_t *x, lbfgsfloatval_t *g,
                                const int n, const lbfgsfloatval_t step)
{
    (void)step;
    driver *d = instance;
    if (d->st->failed) goto failed;
    double loss = fit_loss(d->st, x, g);
    if (!d->st->failed) return loss;
failed: /* a callback failed: no descent from here; progress() cancels */
    for (int i = 0; i < n; ++i)
        g[i] = 0;
    return INFINITY;
}

static int progress(void *instance, const lbfgsfloatval_t *x, const lbfgsfloatval_t *g,
                    const lbfgsfloatval_t fx, const lbfgsfloatval_t xnorm,
                    const lbfgsfloatval_t gnorm, const lbfgsfloatval_t step, int n, int k, int ls)
{
    (void)x, (void)g, (void)xnorm, (void)gnorm, (void)step, (void)n, (void)k, (void)ls;
    driver *d = instance;
    if (d->history && *d->nhistory < d->max_history) d->history[*d->nhistory] = fx;
    ++*d->nhistory;
    ++*d->iterations;
    return d->st->failed;
}

int fit_lbfgs(fit_state *st, double *p, int max_iterations, double tolerance, int memory,
              double *history, int max_history, int *nhistory, int *iterations)
{
    lbfgs_parameter_t param;
    lbfgs_parameter_init(&param);
    param.m = memory > 0 ? memory : 6;
    param.max_iterations = max_iterations;
    param.epsilon = tolerance; /* |g| < epsilon max(1, |x|) */
    param.past = 3;            /* (f(k-3) - f(k)) / f(k) < delta */
    param.delta = tolerance;
    /* A noiseless fit's last line search, at the loss's rounding floor,
     * otherwise spends liblbfgs's default 40 evaluations (a third of the
     * fit) to end at the same point (bench/retrieve_bench.py,
     * bench/RESULTS.md run 63); liblbfgs reports it as a rounding error.
     * A search that runs out of these tries elsewhere goes on below with
     * the default. SciPy's L-BFGS-B stops at 20. */
    param.max_linesearch = st->opt->max_linesearch > 0 ? st->opt->max_linesearch : 10;
    driver d = {st, history, max_history, nhistory, iterations};
    lbfgsfloatval_t fx = 0;
    int n = st->model->nparams;
    lbfgsfloatval_t *x = lbfgs_malloc(n); /* aligned as liblbfgs's SSE builds need */
    if (!x) return LBFGSERR_OUTOFMEMORY;
    for (int i = 0; i < n; ++i)
        x[i] = p[i];
    int before = *iterations;
    int rc = lbfgs(n, x, &fx, evaluate, progress, &d, &param);
    if (rc == LBFGSERR_MAXIMUMLINESEARCH && !st->failed && *iterations - before < max_iterations) {
        /* out of tries away from the floor (a hard search): once more
         * from the last point, with liblbfgs's own limit */
        param.max_linesearch = 40;
        param.max_iterations = max_iterations - (*iterations - before);
        rc = lbfgs(n, x, &fx, evaluate, progress, &d, &param);
    }
    for (int i = 0; i < n; ++i)
        p[i] = x[i];
    lbfgs_free(x);
    return rc;
}
