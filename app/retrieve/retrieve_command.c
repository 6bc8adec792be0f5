/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim --retrieve (app/retrieve/retrieve_command.h). */
#include "app/retrieve/retrieve_command.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "app/base/log.h"
#include "app/base/make_dir.h"
#include "app/config/config.h"
#include "app/formats/atomic_file.h"
#include "app/formats/fits.h"
#include "lib/psfsim.h"

#define MAX_TERMS 1024
#define MAX_HISTORY 100000

int retrieve_parse_terms(const char *list, int *j, int max, char *err, size_t errlen)
{
    int n = 0;
    const char *p = list;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 1 || a > 100000) goto bad;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a || b > 100000) goto bad;
            p = end;
        }
        for (long v = a; v <= b; ++v) {
            for (int i = 0; i < n; ++i)
                if (j[i] == v) {
                    snprintf(err, errlen, "--terms: %ld listed twice (in \"%s\")", v, list);
                    return -1;
                }
            if (n == max) {
                snprintf(err, errlen, "--terms: more than %d terms", max);
                return -1;
            }
            j[n++] = (int)v;
        }
        if (*p == ',')
            ++p;
        else if (*p)
            goto bad;
    }
    if (n > 0) return n;
bad:
    snprintf(err, errlen,
             "--terms: expected j, ranges a-b, comma-separated, such as 4-15 or "
             "4,5,7-11 (got \"%s\")",
             list);
    return -1;
}

/* v, or null where it is not finite (JSON has no NaN: jansson refuses it). */
static json_t *number(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *array(const double *v, long long n)
{
    json_t *a = json_array();
    for (long long i = 0; a && i < n; ++i)
        json_array_append_new(a, number(v[i]));
    return a;
}

typedef struct {
    const retrieve_args *o;
    const char *name;
    const int *j;
    int nterms;
    long long K;
    int M;
    const psfsim_retrieve_result *r;
    double seconds;
    int rows, cols; /* the fitted OPD map's, 0 without */
} report;

static int write_json(int dirfd, const char *dir, const report *rp, char *err, size_t errlen)
{
    const psfsim_retrieve_result *r = rp->r;
    char name[512];
    snprintf(name, sizeof name, "%s_retrieve.json", rp->name);
    json_t *terms = json_array();
    for (int i = 0; terms && i < rp->nterms; ++i)
        json_array_append_new(terms, json_integer(rp->j[i]));
    json_t *cov = json_array();
    for (int i = 0; cov && i < rp->nterms; ++i)
        json_array_append_new(cov, array(r->covariance + (size_t)i * rp->nterms, rp->nterms));
    int nh = r->nhistory < r->max_history ? r->nhistory : r->max_history;
    json_t *root = json_pack(
        "{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:f, s:i, s:i, s:i, s:b, "
        "s:f, s:o, s:{s:s, s:f, s:f, s:b}}",
        "psfsim", psfsim_version(), "data", rp->o->data, "config", rp->o->config_path, "terms",
        terms, "coefficients", array(r->coefficients, rp->nterms), "uncertainties",
        array(r->uncertainties, rp->nterms), "covariance", cov, "flux", array(r->flux, rp->K),
        "flux_sigma", array(r->flux_sigma, rp->K), "background", array(r->background, rp->K),
        "background_sigma", array(r->background_sigma, rp->K), "chi2", number(r->chi2), "dof",
        r->dof, "iterations", r->iterations, "evaluations", r->evaluations, "lbfgs_status",
        r->lbfgs_status, "fisher_ok", r->fisher_ok, "seconds", rp->seconds, "history",
        array(r->history, nh), "options", "noise", rp->o->noise ? "photon" : "uniform", "sigma",
        rp->o->sigma, "gain", rp->o->gain, "fit_background", rp->o->fit_background);
    if (root && rp->rows > 0) { /* the map: rows of values, and its regularisation */
        json_t *map = json_array();
        for (int i = 0; map && i < rp->rows; ++i)
            json_array_append_new(map, array(r->opd_map + (size_t)i * rp->cols, rp->cols));
        json_object_set_new(root, "opd_map", map);
        json_object_set_new(json_object_get(root, "options"), "opd_regularization",
                            json_real(rp->o->opd_lambda));
    }
    if (!root) {
        snprintf(err, errlen, "cannot write %.1000s/%.500s: out of memory", dir, name);
        return -1;
    }
    atomic_file af;
    int rc = atomic_open_at(&af, dirfd, dir, name, err, errlen);
    if (rc == 0 && (json_dumpf(root, af.fp, JSON_INDENT(2) | JSON_ENSURE_ASCII) != 0 ||
                    fputc('\n', af.fp) == EOF)) {
        atomic_abort(&af);
        snprintf(err, errlen, "cannot write %.1000s/%.500s", dir, name);
        rc = -1;
    } else if (rc == 0) {
        rc = atomic_commit(&af, err, errlen);
    }
    json_decref(root);
    return rc;
}

static int write_residuals(int dirfd, const char *dir, const report *rp, char *err, size_t errlen)
{
    const psfsim_retrieve_result *r = rp->r;
    char name[512];
    snprintf(name, sizeof name, "%s_residuals.fits", rp->name);
    fits_kv kvs[] = {
        {"CHI2", FITS_KV_DOUBLE, r->chi2, 0, NULL, "weighted sum of squared residuals"},
        {"DOF", FITS_KV_DOUBLE, r->dof, 0, NULL, "pixels less fitted parameters"},
        {"NITER", FITS_KV_INT, 0, r->iterations, NULL, "L-BFGS iterations"},
    };
    psf_fits_cube *c = psf_fits_cube_open_at(dirfd, dir, name, rp->M, rp->K, kvs,
                                             (int)(sizeof kvs / sizeof kvs[0]), err, errlen);
    if (!c) return -1;
    size_t n = (size_t)rp->M * rp->M;
    float *plane = malloc(sizeof(float) * n);
    if (!plane) {
        psf_fits_cube_abort(c);
        snprintf(err, errlen, "cannot write %.1000s/%.500s: out of memory", dir, name);
        return -1;
    }
    for (long long k = 0; k < rp->K; ++k) {
        for (size_t i = 0; i < n; ++i)
            plane[i] = (float)r->residuals[(size_t)k * n + i];
        if (psf_fits_cube_write_plane(c, k, plane, err, errlen) != 0) {
            free(plane);
            psf_fits_cube_abort(c);
            return -1;
        }
    }
    free(plane);
    const char *names[] = {"flux", "flux_sigma", "background", "background_sigma"};
    const char *units[] = {"", "", "", ""};
    double *cols[] = {r->flux, r->flux_sigma, r->background, r->background_sigma};
    return psf_fits_cube_commit(c, 4, names, units, cols, err, errlen);
}

int retrieve_command(const retrieve_args *o)
{
    char err[2048];
    int status = 2;
    psf_config *cfg = calloc(1, sizeof *cfg);
    psfsim_set *set = NULL;
    float *cube = NULL;
    double *buf = NULL;
    int j[MAX_TERMS];
    int nterms = retrieve_parse_terms(o->terms ? o->terms : "4-15", j, MAX_TERMS, err, sizeof err);
    if (nterms < 0) goto fail;
    if (!cfg || config_load(o->config_path, cfg, err, sizeof err) != 0) goto fail;
    psfsim_options so;
    psfsim_options_init(&so);
    so.backend = "cpu"; /* psfsim_retrieve computes on the CPU, in double */
    if (psfsim_open_file(o->config_path, &so, &set, err, sizeof err) != PSFSIM_OK) goto fail;
    psfsim_info info;
    psfsim_describe(set, &info, NULL, 0);
    int planes, rows, cols;
    if (psf_fits_read_cube(o->data, &cube, &planes, &rows, &cols, err, sizeof err) != 0) goto fail;
    if (planes != info.count || rows != info.npix || cols != info.npix) {
        snprintf(err, sizeof err,
                 "%s: %d image(s) of %d x %d pixels, but the set %s has %lld of %d x %d", o->data,
                 planes, rows, cols, info.name, info.count, info.npix, info.npix);
        goto fail;
    }
    long long K = info.count;
    size_t total = (size_t)K * info.npix * info.npix;
    int mrows = 0, mcols = 0;
    if (o->opd_lambda > 0)
        psfsim_map_shape(set, "aberrations.opd_map.file", &mrows, &mcols, NULL, 0);
    size_t nb = total * 2 + (size_t)nterms * (nterms + 2) + 4 * (size_t)K + MAX_HISTORY +
                (size_t)mrows * mcols;
    buf = malloc(sizeof(double) * nb);
    if (!buf) {
        snprintf(err, sizeof err, "out of memory for %zu pixels", total);
        goto fail;
    }
    double *data = buf, *resid = data + total, *coef = resid + total, *sig = coef + nterms,
           *cov = sig + nterms, *flux = cov + (size_t)nterms * nterms, *fs = flux + K,
           *bkg = fs + K, *bs = bkg + K, *hist = bs + K, *opd = hist + MAX_HISTORY;
    for (size_t i = 0; i < total; ++i)
        data[i] = cube[i];
    psfsim_retrieve_options ro;
    psfsim_retrieve_options_init(&ro);
    ro.nterms = nterms;
    ro.j = j;
    ro.noise = o->noise ? PSFSIM_NOISE_PHOTON : PSFSIM_NOISE_UNIFORM;
    ro.sigma = o->sigma;
    ro.gain = o->gain;
    ro.fit_background = o->fit_background;
    ro.fit_opd_map = o->opd_lambda > 0;
    ro.opd_regularization = o->opd_lambda;
    psfsim_retrieve_result r = {.coefficients = coef,
                                .uncertainties = sig,
                                .covariance = cov,
                                .flux = flux,
                                .flux_sigma = fs,
                                .background = bkg,
                                .background_sigma = bs,
                                .residuals = resid,
                                .history = hist,
                                .max_history = MAX_HISTORY,
                                .opd_map = opd};
    log_info("retrieve: %d terms from %lld images of %d x %d (%s)", nterms, K, info.npix, info.npix,
             o->data);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = psfsim_retrieve(set, data, &ro, &r, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc != PSFSIM_OK) {
        status = rc == PSFSIM_ERR_ARGUMENT ? 2 : 3;
        goto fail;
    }
    status = 3;
    const char *dir = o->output_dir ? o->output_dir : cfg->output_dir;
    if (make_dir(dir, err, sizeof err) != 0) goto fail;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        snprintf(err, sizeof err, "cannot open %.1000s", dir);
        goto fail;
    }
    report rp = {.o = o,
                 .name = info.name,
                 .j = j,
                 .nterms = nterms,
                 .K = K,
                 .M = info.npix,
                 .r = &r,
                 .seconds =
                     (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
                 .rows = mrows,
                 .cols = mcols};
    rc = write_json(dirfd, dir, &rp, err, sizeof err);
    if (rc == 0) rc = write_residuals(dirfd, dir, &rp, err, sizeof err);
    close(dirfd);
    if (rc != 0) goto fail;
    if (!o->quiet) {
        printf("%s: %d terms from %lld images: chi2 %.6g, dof %.0f, %d iterations, %.3f s%s\n",
               info.name, nterms, K, r.chi2, r.dof, r.iterations, rp.seconds,
               r.fisher_ok ? "" : " (Fisher matrix singular: no uncertainties)");
        for (int i = 0; i < nterms; ++i)
            printf("  Z%-4d %+.6f +- %.6f\n", j[i], coef[i], sig[i]);
        printf("wrote %s/%s_retrieve.json and %s/%s_residuals.fits\n", dir, info.name, dir,
               info.name);
    }
    status = 0;
fail:
    if (status != 0) log_error("%s", err);
    free(buf);
    free(cube);
    psfsim_close(set);
    if (cfg) config_free(cfg);
    free(cfg);
    return status;
}
