/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim_retrieve (lib/psfsim.h, issue 28) on a through-focus set of three
 * 64 x 64 images (defocus -0.5, 0, +0.5 waves RMS): measured images made
 * by psfsim_compute from a config with known Noll 4..15 coefficients; the
 * model set is the same config without them. Noiseless: the coefficients
 * to 1e-3 waves RMS in all; photon noise (peak 1e5, seeded): the errors
 * against the uncertainties the fit reports; and the arguments refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/psfsim.h"

#define BASE                                                                                       \
    "name = \"retrieve\";\n"                                                                       \
    "optics: { wavelength_nm = 600.0; f_number = 20.0;\n"                                          \
    "  aperture: { diameter_m = 1.0; obscuration = 0.2; }; };\n"                                   \
    "sampling: { pupil_samples = 32; padding = 2.0; };\n"                                          \
    "sweep: { defocus = [-0.5, 0.0, 0.5]; };\n"

enum { NT = 12, KIMG = 3, M = 64 };
static const int TERMS[NT] = {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
static const double TRUTH[NT] = {0.04,  -0.06, 0.05, 0.03,  -0.04, 0.02,
                                 -0.03, 0.035, 0.02, -0.02, 0.015, -0.01};

static psfsim_set *open_text(const char *text)
{
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = "cpu";
    psfsim_set *s = NULL;
    char err[1024] = "";
    int rc = psfsim_open_text(text, &o, &s, err, sizeof err);
    if (rc != PSFSIM_OK) fail_msg("open: %s: %s", psfsim_status_name(rc), err);
    return s;
}

/* The measured images: the set with TRUTH in aberrations.zernike, by
 * psfsim_compute (float32), as double. */
static void truth_images(double *out)
{
    char text[2048];
    int n = snprintf(text, sizeof text, "%saberrations: { zernike = (", BASE);
    for (int i = 0; i < NT; ++i)
        n += snprintf(text + n, sizeof text - n, "%s(%d, %.17g)", i ? ", " : " ", TERMS[i],
                      TRUTH[i]);
    snprintf(text + n, sizeof text - n, " ); };\n");
    psfsim_set *s = open_text(text);
    float *img = malloc(sizeof(float) * KIMG * M * M);
    char err[1024];
    assert_int_equal(psfsim_compute(s, 0, KIMG, img, (size_t)KIMG * M * M, NULL, err, sizeof err),
                     PSFSIM_OK);
    for (int i = 0; i < KIMG * M * M; ++i)
        out[i] = img[i];
    free(img);
    psfsim_close(s);
}

typedef struct {
    double c[NT], sigma[NT], flux[KIMG], fs[KIMG], bkg[KIMG], bs[KIMG], hist[1000];
    psfsim_retrieve_result r;
} result_store;

static psfsim_retrieve_result *result(result_store *s)
{
    memset(s, 0, sizeof *s);
    s->r = (psfsim_retrieve_result){.coefficients = s->c,
                                    .uncertainties = s->sigma,
                                    .flux = s->flux,
                                    .flux_sigma = s->fs,
                                    .background = s->bkg,
                                    .background_sigma = s->bs,
                                    .history = s->hist,
                                    .max_history = 1000};
    return &s->r;
}

static void noiseless(void **state)
{
    (void)state;
    double *data = malloc(sizeof(double) * KIMG * M * M);
    double *resid = malloc(sizeof(double) * KIMG * M * M);
    truth_images(data);
    for (int i = 0; i < KIMG * M * M; ++i)
        data[i] = 2000.0 * data[i] + 5.0; /* a flux and a background to find */
    psfsim_set *s = open_text(BASE);
    psfsim_retrieve_options o;
    psfsim_retrieve_options_init(&o);
    o.nterms = NT;
    o.j = TERMS;
    o.fit_background = 1;
    result_store st;
    psfsim_retrieve_result *r = result(&st);
    r->residuals = resid;
    char err[1024] = "";
    int rc = psfsim_retrieve(s, data, &o, r, err, sizeof err);
    if (rc != PSFSIM_OK) fail_msg("retrieve: %s: %s", psfsim_status_name(rc), err);
    double e2 = 0, rmax = 0;
    for (int i = 0; i < NT; ++i)
        e2 += (st.c[i] - TRUTH[i]) * (st.c[i] - TRUTH[i]);
    for (int i = 0; i < KIMG * M * M; ++i)
        rmax = fabs(resid[i]) > rmax ? fabs(resid[i]) : rmax;
    printf("noiseless: error %.3g waves RMS, %d iterations, %d evaluations, chi2 %.3g, max "
           "residual %.3g, status %d\n",
           sqrt(e2), r->iterations, r->evaluations, r->chi2, rmax, r->lbfgs_status);
    assert_true(sqrt(e2) <= 1e-3);
    for (int k = 0; k < KIMG; ++k) {
        assert_true(fabs(st.flux[k] - 2000.0) < 1.0);
        assert_true(fabs(st.bkg[k] - 5.0) < 0.01);
    }
    assert_true(rmax < 1e-2 * 2000.0); /* d - m: float rounding of the data, and the fit's */
    assert_int_equal(r->fisher_ok, 1);
    assert_true(r->nhistory == r->iterations && r->nhistory > 2);
    assert_true(st.hist[r->nhistory - 1] < 1e-6 * st.hist[0]);
    psfsim_close(s);
    free(data);
    free(resid);
}

/* splitmix64, its normal and Poisson draws (the normal approximation above
 * a mean of 100: its error is far below the statistics tested here). */
static uint64_t rng_state;
static double uniform01(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}
static double poisson(double mean)
{
    if (mean > 100) {
        double g = sqrt(-2 * log(uniform01())) * cos(2 * M_PI * uniform01());
        double v = floor(mean + sqrt(mean) * g + 0.5);
        return v > 0 ? v : 0;
    }
    double l = exp(-mean), t = uniform01();
    int k = 0;
    while (t > l) {
        t *= uniform01();
        ++k;
    }
    return k;
}

/* Peak 1e5 photons (the brightest image's), photon weights: over a few
 * noise draws the errors, in units of the reported uncertainties, have an
 * RMS of 1 (within 2: the bound; and above 0.5: uncertainties not
 * inflated). */
static void photon_noise(void **state)
{
    (void)state;
    double *clean = malloc(sizeof(double) * KIMG * M * M);
    double *data = malloc(sizeof(double) * KIMG * M * M);
    truth_images(clean);
    double peak = 0;
    for (int i = 0; i < KIMG * M * M; ++i)
        peak = clean[i] > peak ? clean[i] : peak;
    psfsim_set *s = open_text(BASE);
    psfsim_retrieve_options o;
    psfsim_retrieve_options_init(&o);
    o.nterms = NT;
    o.j = TERMS;
    o.noise = PSFSIM_NOISE_PHOTON;
    o.fit_background = 1;
    const int draws = 4;
    double z2 = 0, zmax = 0, smean = 0;
    for (int t = 0; t < draws; ++t) {
        rng_state = 1000 + t;
        for (int i = 0; i < KIMG * M * M; ++i)
            data[i] = poisson(1e5 * clean[i] / peak + 2.0);
        result_store st;
        psfsim_retrieve_result *r = result(&st);
        char err[1024] = "";
        int rc = psfsim_retrieve(s, data, &o, r, err, sizeof err);
        if (rc != PSFSIM_OK) fail_msg("retrieve: %s: %s", psfsim_status_name(rc), err);
        assert_int_equal(r->fisher_ok, 1);
        /* chi2 per degree of freedom near 1: the weights are the noise's */
        assert_true(fabs(r->chi2 / r->dof - 1) < 0.1);
        for (int i = 0; i < NT; ++i) {
            double z = (st.c[i] - TRUTH[i]) / st.sigma[i];
            z2 += z * z;
            zmax = fabs(z) > zmax ? fabs(z) : zmax;
            smean += st.sigma[i] / (draws * NT);
        }
    }
    double zrms = sqrt(z2 / (draws * NT));
    printf("photon noise: errors / uncertainty RMS %.3f (max %.3f), mean uncertainty %.3g "
           "waves\n",
           zrms, zmax, smean);
    assert_true(zrms < 2.0 && zrms > 0.5);
    assert_true(smean > 1e-5 && smean < 1e-2);
    psfsim_close(s);
    free(clean);
    free(data);
}

static void arguments(void **state)
{
    (void)state;
    psfsim_set *s = open_text(BASE);
    double data[KIMG * M * M] = {0};
    psfsim_retrieve_options o;
    psfsim_retrieve_options_init(&o);
    assert_int_equal(o.fit_flux, 1);
    assert_int_equal(o.fit_background, 0);
    result_store st;
    psfsim_retrieve_result *r = result(&st);
    char err[1024] = "";
    assert_int_equal(psfsim_retrieve(s, data, &o, r, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    assert_string_equal(err, "psfsim_retrieve: bad option nterms (1 .. 1024, with j)");
    o.nterms = NT;
    o.j = TERMS;
    o.sigma = -1;
    assert_int_equal(psfsim_retrieve(s, data, &o, r, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    assert_string_equal(err, "psfsim_retrieve: bad option sigma (>= 0)");
    o.sigma = 0;
    assert_int_equal(o.uncertainties, 1); /* the default: the Fisher step */
    o.uncertainties = 2;
    st.c[0] = 7.0; /* nothing is written on a refusal */
    assert_int_equal(psfsim_retrieve(s, data, &o, r, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    assert_string_equal(err, "psfsim_retrieve: bad option uncertainties (0 or 1)");
    assert_true(st.c[0] == 7.0 && r->iterations == 0);
    o.uncertainties = 1;
    assert_int_equal(psfsim_retrieve(s, NULL, &o, r, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    int twice[2] = {4, 4};
    o.nterms = 2;
    o.j = twice; /* psfsim_compute_inputs' own check */
    assert_int_equal(psfsim_retrieve(s, data, &o, r, err, sizeof err), PSFSIM_ERR_ARGUMENT);
    printf("twice: %s\n", err);
    psfsim_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(arguments),
        cmocka_unit_test(noiseless),
        cmocka_unit_test(photon_noise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
