/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/fit: fitting the parameters of an image model to measured images by
 * weighted least squares (phase retrieval, lib/retrieve.c; docs/design.md,
 * "Phase retrieval"). Independent of the psfsim set: the model is two
 * callbacks (the images of a parameter vector, and a vector-Jacobian
 * product), so that the fit itself is tested on synthetic models
 * (tests/lib/fit).
 *
 * The model: K images of n pixels, I_k(p), of P parameters p. The fitted
 * images are m_k = f_k I_k(p) + b_k with a flux f_k and a background b_k
 * per image (each fitted or fixed). The loss is
 *     L(p, f, b) = 1/2 sum_k sum_i w_ki (d_ki - m_ki)^2,
 * chi2 = 2 L, with weights w = 1 / variance (fit_weights). Flux and
 * background enter linearly: for a given p they are solved for exactly,
 * image by image (a weighted linear least-squares problem of one or two
 * unknowns), so that the quasi-Newton method sees p alone, the variable
 * projection of Golub & Pereyra (SIAM J. Numer. Anal. 10, 413, 1973); by
 * the envelope theorem the gradient of the projected loss is the partial
 * gradient dL/dp = -sum_k f_k J_k^T (w_k r_k) at the solved f, b, one
 * vector-Jacobian product of the model. */
#ifndef PSFSIM_LIB_FIT_H
#define PSFSIM_LIB_FIT_H

#include <stddef.h>

/* A model that keeps its images where it computes them (a GPU:
 * lib/retrieve_gpu.c) evaluates the loss there too, so that an evaluation
 * moves P numbers, not K n pixels, each way. Each callback returns 0, or
 * non-zero with a message in err. */
typedef struct {
    /* The data and weights [K][n] for the evaluations after this call
     * (called again with each new weights); fit & 1 the flux fitted, & 2
     * the background; fixed [K][2] the flux and background of an image
     * where they are not fitted (or its system is degenerate). */
    int (*load)(void *user, const double *data, const double *w, int fit, const double *fixed,
                char *err, size_t errlen);
    /* At p: out [K][3] = each image's solved flux, background and loss
     * 1/2 sum w r^2, and grad [P] = the projected loss's gradient (the
     * vector-Jacobian product of the cotangent -f w r), both as
     * objective.c's; grad NULL: img [K][n] (host) = the images instead
     * (a pass's end: its fitted images). */
    int (*loss)(void *user, const double *p, double *out, double *grad, double *img, char *err,
                size_t errlen);
    /* The Fisher step's products at p (fisher.c): with the weighted
     * Jacobian U_j = sqrt(w) f_k (I_k(p + h e_j) - I_k(p)) / h over the
     * first nfisher parameters, G [nfisher][nfisher] = U^T U and y
     * [K][2][nfisher] = image k's U^T sqrt(w) I and U^T sqrt(w); flux
     * [K]. NULL: fisher.c's own forward differences. */
    int (*fisher)(void *user, const double *p, int nfisher, double h, const double *flux, double *G,
                  double *y, char *err, size_t errlen);
} fit_device;

/* The model's callbacks return 0, or non-zero with a message in err. */
typedef struct {
    int nimages; /* K >= 1 */
    size_t npix; /* n >= 1: pixels of each image */
    int nparams; /* P >= 1 */
    /* images[K][n] = I(p) */
    int (*forward)(void *user, const double *p, double *images, char *err, size_t errlen);
    /* grad[P] = sum_k sum_i cot[k][i] dI_ki/dp at p */
    int (*vjp)(void *user, const double *p, const double *cot, double *grad, char *err,
               size_t errlen);
    void *user;
    const fit_device *device; /* NULL: the loss on the host from forward and vjp */
} fit_model;

enum { FIT_NOISE_UNIFORM = 0, FIT_NOISE_PHOTON = 1 };

typedef struct {
    /* Weights. FIT_NOISE_UNIFORM: variance sigma^2 at every pixel (sigma
     * > 0; 1 when 0). FIT_NOISE_PHOTON: variance max(m, 0) / gain +
     * sigma^2 in data units (photon noise of gain photons per data unit,
     * read noise sigma), m the model's image: the first pass takes m = the
     * data, each of `passes` - 1 further passes the previous pass's fitted
     * images (iterative re-weighting); a variance below floor (> 0) is
     * taken as floor. */
    int noise;
    double sigma;
    double gain;
    double floor;
    int passes;
    int fit_flux, fit_background;      /* 1: solved for; 0: fixed at flux0 / background0 */
    const double *flux0, *background0; /* [K] or NULL: 1 and 0 */
    int max_iterations;                /* L-BFGS iterations per pass, >= 1 */
    double tolerance;   /* stop when the loss decreased by less than tolerance (relative)
                           over 3 iterations, or |grad| < tolerance max(1, |p|) */
    double fisher_step; /* h of the forward differences of the Fisher matrix (parameter
                           units) */
    int memory;         /* L-BFGS corrections kept (6 when 0) */
    int max_linesearch; /* tries of a line search (10 when 0); a search out of tries away
                           from the rounding floor goes on once with liblbfgs's 40 */
    /* Tikhonov regularisation: L += reg_lambda / 2 sum_{i >= reg_first} p_i^2
     * (reg_lambda 0: none); the parameters from reg_first on (an OPD map's
     * pixels) are left out of the Fisher matrix (held at their fit: the
     * others' uncertainties are conditional on them) when nfisher > 0:
     * the first nfisher parameters are in it (0: all P). */
    int reg_first;
    double reg_lambda;
    int nfisher;
    int skip_fisher; /* 1: no Fisher step (p_sigma, the sigmas and covariance NaN, fisher_ok
                        0) */
} fit_options;

typedef struct {
    double *p;                /* [P] in: the start; out: the fit */
    double *p_sigma;          /* [P] 1-sigma: sqrt(diag(F^-1)); NaN where F is singular (the first
                                 nfisher only; the others untouched) */
    double *flux;             /* [K] */
    double *flux_sigma;       /* [K]: 0 where fixed */
    double *background;       /* [K] */
    double *background_sigma; /* [K] */
    double *covariance;       /* NULL or [nfisher][nfisher]: F^-1's block of p */
    double *residuals;        /* NULL or [K][n]: d - m at the fit */
    double *history;          /* NULL or [max_history]: the loss after each iteration */
    int max_history;
    int nhistory;     /* out: iterations recorded (all passes; may exceed max_history) */
    double chi2;      /* out: sum w (d - m)^2 at the fit (2 L less the regularisation) */
    double dof;       /* out: K n - (P + fitted fluxes and backgrounds) */
    int iterations;   /* out: L-BFGS iterations, all passes */
    int evaluations;  /* out: loss-and-gradient evaluations */
    int lbfgs_status; /* out: liblbfgs's return of the last pass */
    int fisher_ok;    /* out: 1 when F was positive definite */
    /* out: wall seconds in the model's forward and vjp callbacks (the
     * fit's evaluations), in the Fisher step (its forwards included), and
     * in the whole fit: where a retrieval's time goes */
    double seconds_forward, seconds_vjp, seconds_fisher, seconds_total;
    double seconds_device; /* out: in the device's evaluations (fit_device.loss: images, loss and
                              gradient together) */
} fit_result;

/* Fit: L-BFGS (liblbfgs) over p from res->p, then the Fisher matrix
 * (fit_fisher) at the fit. data [K][n]. Returns 0, or -1 with err (a
 * model callback's message, out of memory, an argument). An L-BFGS stop
 * other than convergence (iterations exhausted, a line search that made
 * no progress: what a fit reaches at the rounding floor of noiseless data)
 * is no error: lbfgs_status says it. */
int fit_run(const fit_model *model, const double *data, const fit_options *opt, fit_result *res,
            char *err, size_t errlen);

/* ---- the parts (objective.c, lbfgs_driver.c, fisher.c) ---- */

/* The state of one evaluation: weights, the images of p, the solved
 * flux and background, the residuals. */
typedef struct {
    const fit_model *model;
    const double *data;
    const fit_options *opt;
    double *w;    /* [K n] weights */
    double *img;  /* [K n] I(p) */
    double *cot;  /* [K n] the vector-Jacobian product's cotangent */
    double *flux; /* [K] */
    double *bkg;  /* [K] */
    int evaluations;
    char *err;
    size_t errlen;
    int failed;                          /* a callback failed: err says why */
    double seconds_forward, seconds_vjp; /* in the callbacks, summed */
    double seconds_device;               /* in fit_device.loss */
    double *lossk; /* [K] each image's loss (fit_loss's threads write their images') */
    double *out;   /* [K][3] fit_device.loss's */
} fit_state;

/* The parameters in the Fisher matrix: the first opt->nfisher when that
 * is 1 .. P - 1, else all P. */
static inline int fit_nfisher(const fit_model *model, const fit_options *opt)
{
    return opt->nfisher > 0 && opt->nfisher < model->nparams ? opt->nfisher : model->nparams;
}

/* Monotonic wall-clock seconds (CLOCK_MONOTONIC). */
double fit_now(void);

/* w from the noise model, with m the images model (NULL: the data). */
void fit_weights(const fit_state *st, const double *m);

/* The model's device gets the data and st->w (a no-op without one).
 * 0, or -1 with st->failed and err. */
int fit_load(fit_state *st);

/* The projected loss at p: images, flux and background solved, and
 * grad[P] (NULL: no gradient). With the model's device, there: with a
 * gradient st->img and st->cot untouched, without one the images into
 * st->img; else here from forward and vjp. Returns L, or NaN with
 * st->failed. */
double fit_loss(fit_state *st, const double *p, double *grad);

/* The L-BFGS minimisation of fit_loss from p (in place); history as
 * fit_result's. Returns liblbfgs's status; *iterations. */
int fit_lbfgs(fit_state *st, double *p, int max_iterations, double tolerance, int memory,
              double *history, int max_history, int *nhistory, int *iterations);

/* The Fisher information of (p, fitted fluxes, fitted backgrounds) at the
 * state's last fit_loss point: F = J^T W J, J the fitted images' Jacobian,
 * dm/dp_j = f_k dI_k/dp_j by forward differences of the forward model
 * from the state's images (step h: P forward evaluations, error O(h)),
 * dm/df_k = I_k,
 * dm/db_k = 1; W the weights. Inverted by Cholesky (LAPACK dpotrf,
 * dpotri) after a diagonal scaling to unit diagonal. Fills res's sigmas
 * (and covariance); p_sigma NaN and fisher_ok 0 when F is not positive
 * definite. Returns 0, or -1 (a callback failed, memory) with err. */
int fit_fisher(fit_state *st, const double *p, double h, fit_result *res);

#endif
