/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim --retrieve (app/retrieve/retrieve_command.h). */
#include "app/retrieve/retrieve_command.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* "--terms: WHY (got "LIST"); expected ...": the message of a list that
 * cannot be read, naming the option and the text given. */
static int bad_list(const char *list, const char *why, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "--terms: %s (got \"%.200s\"); expected j and ranges a-b separated by commas, "
             "such as 4-15 or 4,5,7-11",
             why, list);
    return -1;
}

/* The decimal digits at *p as a number (at most 9 digits: below INT_MAX),
 * *p moved past them; -1 when there are none or too many. */
static long digits(const char **p)
{
    const char *s = *p;
    long v = 0;
    int n = 0;
    for (; *s >= '0' && *s <= '9'; ++s, ++n)
        if (n < 9) v = 10 * v + (*s - '0');
    if (n == 0 || n > 9) return -1;
    *p = s;
    return v;
}

int retrieve_parse_terms(const char *list, int *j, int max, char *err, size_t errlen)
{
    char why[300];
    int n = 0;
    const char *p = list;
    if (!*p) return bad_list(list, "no terms", err, errlen);
    for (;;) {
        const char *item = p;
        if (*p == ',' || !*p)
            return bad_list(list,
                            p == list ? "an empty entry before the first comma"
                            : *p      ? "an empty entry between two commas"
                                      : "an empty entry after the last comma",
                            err, errlen);
        long a = digits(&p), b = a;
        if (a >= 0 && *p == '-') {
            ++p;
            b = *p == ',' || !*p ? -2 : digits(&p);
        }
        size_t len = strcspn(item, ",");
        if (a < 0 || b == -1 || (*p && *p != ',')) {
            snprintf(why, sizeof why, "\"%.*s\" is not a whole number j >= 0 or a range a-b",
                     (int)(len < 100 ? len : 100), item);
            return bad_list(list, why, err, errlen);
        }
        if (b == -2) {
            snprintf(why, sizeof why, "the range \"%.*s\" has no end", (int)(len < 100 ? len : 100),
                     item);
            return bad_list(list, why, err, errlen);
        }
        if (b < a) {
            snprintf(why, sizeof why, "the range \"%.*s\" runs backwards: write %ld-%ld",
                     (int)(len < 100 ? len : 100), item, b, a);
            return bad_list(list, why, err, errlen);
        }
        for (long v = a; v <= b; ++v) {
            for (int i = 0; i < n; ++i)
                if (j[i] == v) {
                    snprintf(err, errlen, "--terms: j = %ld listed twice (got \"%.200s\")", v,
                             list);
                    return -1;
                }
            if (n == max) {
                snprintf(err, errlen, "--terms: more than %d terms (got \"%.200s\")", max, list);
                return -1;
            }
            j[n++] = (int)v;
        }
        if (!*p) return n;
        ++p; /* the comma */
    }
}

int retrieve_check_terms(zernike_convention conv, const char *list, const int *j, int n, char *err,
                         size_t errlen)
{
    static const char *const names[] = {"Noll", "ANSI", "Fringe"};
    static const char *const keys[] = {"noll", "ansi", "fringe"};
    int first = conv == ZCONV_ANSI ? 0 : 1; /* the convention's piston */
    for (int i = 0; i < n; ++i) {
        int zn, zm;
        if (j[i] < first) {
            snprintf(err, errlen,
                     "--terms: j = %d is not a %s index (got \"%.200s\"): %s indices start at %d "
                     "(aberrations.convention = \"%s\"), and j = %d, piston, changes no image: "
                     "the terms fitted start at %d",
                     j[i], names[conv], list, names[conv], first, keys[conv], first, first + 1);
            return -1;
        }
        if (zernike_index_to_nm(conv, j[i], &zn, &zm) != 0) {
            snprintf(err, errlen,
                     "--terms: j = %d is beyond radial order %d, the largest supported (%s "
                     "convention; got \"%.200s\")",
                     j[i], ZERNIKE_MAX_ORDER, names[conv], list);
            return -1;
        }
        if (zn == 0) {
            snprintf(err, errlen,
                     "--terms: j = %d is piston in the %s convention (aberrations.convention = "
                     "\"%s\"; got \"%.200s\"): it changes no image and cannot be fitted; the "
                     "terms fitted start at %d",
                     j[i], names[conv], keys[conv], list, first + 1);
            return -1;
        }
    }
    return 0;
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

/* The options as given and as used: psfsim_retrieve_options' zeros mean
 * defaults (lib/psfsim.h: uniform sigma 0 = 1; photon gain 0 = 1, the read
 * noise sigma as given, 2 passes, each variance at least 1 / gain as
 * lib/fit's weights take it), so "sigma": 0 alone would not say which
 * weights the fit had. */
static json_t *options_json(const retrieve_args *o)
{
    int photon = o->noise != 0;
    double sigma_used = photon || o->sigma > 0 ? o->sigma : 1.0;
    double gain_used = o->gain > 0 ? o->gain : 1.0;
    return json_pack("{s:s, s:f, s:f, s:f, s:o, s:s, s:i, s:b, s:b}", "noise",
                     photon ? "photon" : "uniform", "sigma_given", o->sigma, "gain_given", o->gain,
                     "sigma_used", sigma_used, "gain_used",
                     photon ? json_real(gain_used) : json_null(), "variance",
                     photon ? "max(model, 0) / gain_used + sigma_used^2, at least 1 / gain_used"
                            : "sigma_used^2",
                     "passes", photon ? 2 : 1, "fit_flux", 1, "fit_background", o->fit_background);
}

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
        "s:f, s:o, s:o}",
        "psfsim", psfsim_version(), "data", rp->o->data, "config", rp->o->config_path, "terms",
        terms, "coefficients", array(r->coefficients, rp->nterms), "uncertainties",
        array(r->uncertainties, rp->nterms), "covariance", cov, "flux", array(r->flux, rp->K),
        "flux_sigma", array(r->flux_sigma, rp->K), "background", array(r->background, rp->K),
        "background_sigma", array(r->background_sigma, rp->K), "chi2", number(r->chi2), "dof",
        r->dof, "iterations", r->iterations, "evaluations", r->evaluations, "lbfgs_status",
        r->lbfgs_status, "fisher_ok", r->fisher_ok, "seconds", rp->seconds, "history",
        array(r->history, nh), "options", options_json(rp->o));
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

/* The retrieval's own files of set name in the directory dirfd (dir: for
 * messages), looked at without following a link: -1 with "output
 * directory DIR already holds ..." when one is there (a symbolic link, a
 * directory, anything), as a run refuses an earlier set without --force
 * (app/output/outputs.c). */
static int refuse_earlier(int dirfd, const char *dir, const char *name, char *err, size_t errlen)
{
    static const char *const suffix[] = {"_retrieve.json", "_residuals.fits"};
    char found[2][340];
    int n = 0;
    for (int i = 0; i < 2; ++i) {
        char file[300];
        struct stat st;
        snprintf(file, sizeof file, "%s%s", name, suffix[i]);
        if (fstatat(dirfd, file, &st, AT_SYMLINK_NOFOLLOW) == 0)
            snprintf(found[n++], sizeof found[0], "%s%s", file,
                     S_ISLNK(st.st_mode)   ? ", a symbolic link"
                     : S_ISREG(st.st_mode) ? ""
                                           : ", not a regular file");
    }
    if (n == 0) return 0;
    snprintf(err, errlen,
             "output directory %.1000s already holds a retrieval of set \"%s\" (%s%s%s); use "
             "--force to overwrite it or -o to choose another directory",
             dir, name, found[0], n > 1 ? " and " : "", n > 1 ? found[1] : "");
    return -1;
}

/* Before the fit: refuse_earlier (unless force) when the directory is
 * there already; one that cannot be opened (not a directory, not
 * readable) is refused now too, not after the fit. */
static int refuse_earlier_at(const char *dir, const char *name, int force, char *err, size_t errlen)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return 0; /* made after the fit */
    if (fd < 0) {
        snprintf(err, errlen, "output directory %.1000s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = force ? 0 : refuse_earlier(fd, dir, name, err, errlen);
    close(fd);
    return rc;
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
    if (retrieve_check_terms(cfg->zconv, o->terms ? o->terms : "4-15", j, nterms, err,
                             sizeof err) != 0)
        goto fail;
    const char *dir = o->output_dir ? o->output_dir : cfg->output_dir;
    if (refuse_earlier_at(dir, cfg->name, o->force, err, sizeof err) != 0) goto fail;
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
    if (make_dir(dir, err, sizeof err) != 0) goto fail;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        snprintf(err, sizeof err, "cannot open %.1000s", dir);
        goto fail;
    }
    if (!o->force && refuse_earlier(dirfd, dir, info.name, err, sizeof err) != 0) {
        close(dirfd); /* made meanwhile, by another run: still not ours to replace */
        status = 2;
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
