/* SPDX-License-Identifier: BSD-3-Clause */
/* draws: Philox4x32-10 against Random123's known answers; the exact
 * algorithm against the Python reference (embedded values, and the script
 * itself when python3 is there); the distributions' moments and shape; the
 * independence of terms, draws and purposes; the spectrum's sigmas and
 * total RMS; determinism whatever the order of calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/set/draws.h"

#include "tests/support/testutil.h"

#define NDRAW 100000

typedef struct {
    uint32_t ctr[4], key[2], want[4];
} kat;

/* Random123's kat_vectors, philox4x32 10 rounds. */
static const kat kats[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

typedef struct {
    uint64_t seed, d;
    uint32_t term, purpose;
    uint32_t x[4];
    double u1, u2, z, u; /* z: draw_normal sigma 1; u: draw_uniform half-width 1 */
    int choice[2];       /* draw_choice n = 7, 1000003 */
} ref_draw;

static const int choice_n[2] = {7, 1000003};

/* Made by tests/app/set/draws_reference.py --c */
/* clang-format off */
static const ref_draw ref_draws[] = {
    {0x0ull, 0x0ull, 4u, 0u, {0xf2237f09u, 0x8f1a3087u, 0x06397290u, 0x13ce167au},
     0x1.e446fe478d185p-1, 0x1.8e5ca13ce1660p-6, 0x1.51b22563e2e7ap-2, 0x1.c88dfc8f1a30ap-1, {6, 945856}},
    {0x1ull, 0x0ull, 4u, 0u, {0xbb315460u, 0x70ae55c5u, 0x5fb941cdu, 0xae0508c1u},
     0x1.7662a8b8572afp-1, 0x1.7ee507ae0508ep-2, -0x1.1c8390262d11ap-1, 0x1.d98aa2e15cabcp-2, {5, 731223}},
    {0x1ull, 0x1ull, 4u, 0u, {0xe7d94e07u, 0x41eefac7u, 0x1e131774u, 0x866c39b5u},
     0x1.cfb29c20f77d7p-1, 0x1.e1317619b0e68p-4, 0x1.5135fcd9456d3p-2, 0x1.9f653841eefaep-1, {6, 905662}},
    {0x1ull, 0x0ull, 7u, 0u, {0x08e4d831u, 0x50d9a6a3u, 0xe1f3bcbau, 0x16d75aa2u},
     0x1.1c9b0286cd350p-5, 0x1.c3e7790b6bad5p-1, 0x1.eb2d7281bc5ffp+0, -0x1.dc6c9faf26596p-1, {0, 34741}},
    {0x1ull, 0x1869full, 36u, 0u, {0xf01f12d8u, 0x9aae8a1au, 0xa69a75d8u, 0xf2e90c28u},
     0x1.e03e25cd57451p-1, 0x1.4d34ebf974861p-1, -0x1.abd32245777aep-3, 0x1.c07c4b9aae8a2p-1, {6, 937976}},
    {0x2aull, 0x3039ull, 0u, 1u, {0x1cd1c640u, 0x356aa6c9u, 0xc4c2a395u, 0x3bb509f8u},
     0x1.cd1c64d5aa9b8p-4, 0x1.8985471dda84fp-1, 0x1.f2f7233b04b75p-3, -0x1.8cb8e6ca95592p-1, {0, 112576}},
    {0x2aull, 0x3039ull, 0u, 2u, {0x762f4605u, 0xc0a41d97u, 0x63cb53e4u, 0xe1db1977u},
     0x1.d8bd18c0a41dap-2, 0x1.8f2d4fe1db196p-2, -0x1.ea0a16886ac06p-1, -0x1.3a1739fadf130p-4, {3, 461660}},
    {0xffffffffffffffffull, 0xffffffffffffffffull, 11u, 0u, {0xf9874d48u, 0xc2476254u, 0x9ba78ae3u, 0x3e4e8d3bu},
     0x1.f30e9ae123b13p-1, 0x1.374f159f27469p-1, -0x1.68baf5fec3828p-3, 0x1.e61d35c247626p-1, {6, 974723}},
    {0x123456789abcdef0ull, 0x100000005ull, 22u, 0u, {0x5baa0d2au, 0x76c11181u, 0x931e0748u, 0x8b4201a0u},
     0x1.6ea83476c111ap-2, 0x1.263c0ec5a100dp-1, -0x1.473fcaf8f3867p+0, -0x1.22af97127ddccp-2, {2, 358064}},
    {0x7ull, 0x3ull, 0u, 3u, {0x5e5f8956u, 0xc1af85f3u, 0x372538ceu, 0x41295e28u},
     0x1.797e25c1af85ep-2, 0x1.b929c68252bc4p-3, 0x1.37ec5de4ee3bfp-2, -0x1.0d03b47ca0f44p-2, {2, 368646}},
};
static const double ref_sigma0[] = {
    0x1.86b7cb3894b3ep-5, 0x1.86b7cb3894b3ep-5, 0x1.86b7cb3894b3ep-5,
    0x1.5b4e09f967bc5p-6, 0x1.5b4e09f967bc5p-6, 0x1.5b4e09f967bc5p-6,
    0x1.5b4e09f967bc5p-6, 0x1.86b7cb3894b3ep-7, 0x1.86b7cb3894b3ep-7,
    0x1.86b7cb3894b3ep-7, 0x1.86b7cb3894b3ep-7, 0x1.86b7cb3894b3ep-7,
    0x1.f41e74c34db31p-8, 0x1.f41e74c34db31p-8, 0x1.f41e74c34db31p-8,
    0x1.f41e74c34db31p-8, 0x1.f41e74c34db31p-8, 0x1.f41e74c34db31p-8,
    0x1.5b4e09f967bc5p-8, 0x1.5b4e09f967bc5p-8, 0x1.5b4e09f967bc5p-8,
    0x1.5b4e09f967bc5p-8, 0x1.5b4e09f967bc5p-8, 0x1.5b4e09f967bc5p-8,
    0x1.5b4e09f967bc5p-8, 0x1.fe5352930b5ddp-9, 0x1.fe5352930b5ddp-9,
    0x1.fe5352930b5ddp-9, 0x1.fe5352930b5ddp-9, 0x1.fe5352930b5ddp-9,
    0x1.fe5352930b5ddp-9, 0x1.fe5352930b5ddp-9, 0x1.fe5352930b5ddp-9,
};
static const double ref_sigma1[] = {
    0x1.3a8fef1ea9615p-3, 0x1.3a8fef1ea9615p-3, 0x1.bcdbb24dcfd4fp-5,
    0x1.bcdbb24dcfd4fp-5, 0x1.bcdbb24dcfd4fp-5, 0x1.e44cdd765d429p-6,
    0x1.e44cdd765d429p-6, 0x1.e44cdd765d429p-6, 0x1.e44cdd765d429p-6,
    0x1.3a8fef1ea9615p-6, 0x1.3a8fef1ea9615p-6, 0x1.3a8fef1ea9615p-6,
    0x1.3a8fef1ea9615p-6, 0x1.3a8fef1ea9615p-6, 0x1.c22a32bba2e59p-7,
    0x1.c22a32bba2e59p-7, 0x1.c22a32bba2e59p-7, 0x1.c22a32bba2e59p-7,
    0x1.c22a32bba2e59p-7, 0x1.c22a32bba2e59p-7,
};
static const double ref_sigma2[] = {
    0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7,
    0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7,
    0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7,
    0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7,
    0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7,
    0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7,
    0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7,
    0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7,
    0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7,
    0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7,
    0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7, 0x1.18fbb85cc8741p-7,
    0x1.18fbb85cc8741p-7,
};
static const double ref_sigma3[] = {
    0x1.f82ec882c0f9ap-4, 0x1.f82ec882c0f9ap-4, 0x1.f82ec882c0f9ap-3,
    0x1.f82ec882c0f9ap-3, 0x1.f82ec882c0f9ap-3, 0x1.7a23166210bb4p-2,
    0x1.7a23166210bb4p-2, 0x1.7a23166210bb4p-2, 0x1.7a23166210bb4p-2,
    0x1.f82ec882c0f9ap-2,
};
/* clang-format on */

typedef struct {
    zernike_convention conv;
    int j_min, j_max;
    double total_rms, power;
    const double *sigma;
} ref_spectrum;

static const ref_spectrum ref_spectra[] = {
    {ZCONV_NOLL, 4, 36, 0.1, -2.0, ref_sigma0},
    {ZCONV_ANSI, 1, 20, 0.25, -1.5, ref_sigma1},
    {ZCONV_FRINGE, 4, 37, 0.05, 0.0, ref_sigma2},
    {ZCONV_NOLL, 2, 11, 1.0, 1.0, ref_sigma3},
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static draw_id id_of(const ref_draw *r)
{
    return (draw_id){r->seed, r->d, r->term, r->purpose};
}

static void test_philox_known_answers(void **state)
{
    (void)state;
    for (size_t i = 0; i < NELEM(kats); ++i) {
        uint32_t out[4];
        draw_philox4x32_10(kats[i].ctr, kats[i].key, out);
        for (int w = 0; w < 4; ++w)
            assert_int_equal(out[w], kats[i].want[w]);
    }
}

/* One reference draw: words, uniforms, values and choices, bit for bit. */
static void check_draw(const ref_draw *r)
{
    uint32_t x[4];
    draw_words(id_of(r), x);
    for (int w = 0; w < 4; ++w)
        assert_int_equal(x[w], r->x[w]);
    assert_true(same_bits(draw_u01(x[0], x[1]), r->u1));
    assert_true(same_bits(draw_u01(x[2], x[3]), r->u2));
    assert_true(same_bits(draw_normal(id_of(r), 1.0), r->z));
    assert_true(same_bits(draw_uniform(id_of(r), 1.0), r->u));
    for (int k = 0; k < 2; ++k)
        assert_int_equal(draw_choice(id_of(r), choice_n[k]), r->choice[k]);
}

static void check_spectrum(const ref_spectrum *s)
{
    double sigma[64];
    char err[256] = "";
    assert_int_equal(draw_spectrum_sigma(s->conv, s->j_min, s->j_max, s->total_rms, s->power, sigma,
                                         err, sizeof err),
                     0);
    for (int j = s->j_min; j <= s->j_max; ++j)
        assert_true(same_bits(sigma[j - s->j_min], s->sigma[j - s->j_min]));
}

static void test_reference_embedded(void **state)
{
    (void)state;
    for (size_t i = 0; i < NELEM(ref_draws); ++i)
        check_draw(&ref_draws[i]);
    for (size_t i = 0; i < NELEM(ref_spectra); ++i)
        check_spectrum(&ref_spectra[i]);
}

static zernike_convention conv_named(const char *s)
{
    return strcmp(s, "ansi") == 0     ? ZCONV_ANSI
           : strcmp(s, "fringe") == 0 ? ZCONV_FRINGE
                                      : ZCONV_NOLL;
}

/* A "draw" line of draws_reference.py: the fields after "draw". */
static void check_draw_line(char *p)
{
    ref_draw r;
    char *e;
    r.seed = strtoull(p, &e, 10);
    r.d = strtoull(e, &e, 10);
    r.term = (uint32_t)strtoul(e, &e, 10);
    r.purpose = (uint32_t)strtoul(e, &e, 10);
    for (int w = 0; w < 4; ++w)
        r.x[w] = (uint32_t)strtoul(e, &e, 16);
    r.u1 = strtod(e, &e);
    r.u2 = strtod(e, &e);
    r.z = strtod(e, &e);
    r.u = strtod(e, &e);
    for (int k = 0; k < 2; ++k)
        r.choice[k] = (int)strtol(e, &e, 10);
    check_draw(&r);
}

static void check_philox_line(char *p)
{
    uint32_t v[10], out[4];
    for (int k = 0; k < 10; ++k)
        v[k] = (uint32_t)strtoul(p, &p, 16);
    draw_philox4x32_10(v, v + 4, out);
    for (int w = 0; w < 4; ++w)
        assert_int_equal(out[w], v[6 + w]);
}

static void check_spectrum_line(char *p)
{
    char conv[16];
    int used = 0;
    ref_spectrum s;
    assert_int_equal(sscanf(p, "%15s %d %d%n", conv, &s.j_min, &s.j_max, &used), 3);
    char *e = p + used;
    s.conv = conv_named(conv);
    s.total_rms = strtod(e, &e);
    s.power = strtod(e, &e);
    double sigma[64];
    assert_true(s.j_max - s.j_min < 64);
    for (int j = s.j_min; j <= s.j_max; ++j)
        sigma[j - s.j_min] = strtod(e, &e);
    s.sigma = sigma;
    check_spectrum(&s);
}

/* The script's own output, when python3 runs it; skipped otherwise. */
static void test_reference_python(void **state)
{
    (void)state;
    const char *src = tu_source_dir();
    if (strchr(src, '\'')) skip();
    FILE *f =
        popen(tu_format("python3 '%s/tests/app/set/draws_reference.py' 2>/dev/null", src), "r");
    if (!f) skip();
    char line[4096];
    int nphilox = 0, ndraw = 0, nspectrum = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "philox ", 7) == 0) {
            check_philox_line(line + 7);
            ++nphilox;
        } else if (strncmp(line, "draw ", 5) == 0) {
            check_draw_line(line + 5);
            ++ndraw;
        } else if (strncmp(line, "spectrum ", 9) == 0) {
            check_spectrum_line(line + 9);
            ++nspectrum;
        }
    }
    int rc = pclose(f);
    if (rc != 0 && nphilox + ndraw + nspectrum == 0) skip(); /* no python3 */
    assert_int_equal(rc, 0);
    assert_int_equal(nphilox, (int)NELEM(kats));
    assert_int_equal(ndraw, (int)NELEM(ref_draws));
    assert_int_equal(nspectrum, (int)NELEM(ref_spectra));
}

static void test_u01_bounds(void **state)
{
    (void)state;
    assert_true(draw_u01(0, 0) == 0x1p-53);
    assert_true(draw_u01(0xffffffffu, 0xffffffffu) == 1.0 - 0x1p-53);
    assert_true(draw_u01(0x80000000u, 0) == 0.5 + 0x1p-53); /* k = 2^51 */
    /* symmetric about 1/2: the complement of k is 1 - u */
    assert_true(draw_u01(0x12345678u, 0x9abcdef0u) + draw_u01(~0x12345678u, ~0x9abcdef0u) == 1.0);
}

/* mean and mean square of NDRAW values of term j, seed 1 */
static void moments(draw_dist dist, int j, double *mean, double *meansq)
{
    double s = 0, s2 = 0;
    for (uint64_t d = 0; d < NDRAW; ++d) {
        double v = draw_zernike(1, d, j, dist, 1.0);
        s += v;
        s2 += v * v;
    }
    *mean = s / NDRAW;
    *meansq = s2 / NDRAW;
}

/* 5-sigma sampling bounds: the mean of N values of variance v has standard
 * error sqrt(v / N); the mean square, sqrt((E x^4 - (E x^2)^2) / N). */
static void test_moments(void **state)
{
    (void)state;
    double m, m2;
    moments(DRAW_NORMAL, 4, &m, &m2);
    assert_true(fabs(m) < 5 * sqrt(1.0 / NDRAW));
    assert_true(fabs(m2 - 1.0) < 5 * sqrt(2.0 / NDRAW)); /* E z^4 = 3 */
    moments(DRAW_UNIFORM, 7, &m, &m2);
    assert_true(fabs(m) < 5 * sqrt(1.0 / 3 / NDRAW));
    assert_true(fabs(m2 - 1.0 / 3) < 5 * sqrt((1.0 / 5 - 1.0 / 9) / NDRAW));
    /* widths scale exactly */
    draw_id id = {9, 5, 4, DRAW_ZERNIKE};
    assert_true(draw_normal(id, 0.05) == 0.05 * draw_normal(id, 1.0));
    assert_true(draw_uniform(id, 0.25) == 0.25 * draw_uniform(id, 1.0));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double cdf_normal(double x)
{
    return 0.5 * erfc(-x / sqrt(2.0));
}
static double cdf_uniform(double x)
{
    return 0.5 * (x + 1.0);
}

/* Kolmogorov-Smirnov statistic of NDRAW values of term j, seed 7. */
static double ks(draw_dist dist, int j, double (*cdf)(double))
{
    double *v = malloc(NDRAW * sizeof *v);
    assert_non_null(v);
    for (uint64_t d = 0; d < NDRAW; ++d)
        v[d] = draw_zernike(7, d, j, dist, 1.0);
    qsort(v, NDRAW, sizeof *v, cmp_double);
    double dmax = 0;
    for (int i = 0; i < NDRAW; ++i) {
        double f = cdf(v[i]);
        dmax = fmax(dmax, fmax(fabs(f - (double)i / NDRAW), fabs((i + 1.0) / NDRAW - f)));
    }
    free(v);
    return dmax;
}

/* Fixed seeds, so the outcome is fixed; the bounds are the 0.1% points
 * (KS: 1.95 / sqrt(N); chi-square, 6 degrees of freedom: 22.46). */
static void test_distribution_shape(void **state)
{
    (void)state;
    assert_true(ks(DRAW_NORMAL, 4, cdf_normal) < 1.95 / sqrt(NDRAW));
    assert_true(ks(DRAW_UNIFORM, 11, cdf_uniform) < 1.95 / sqrt(NDRAW));
    long count[7] = {0};
    for (uint64_t d = 0; d < NDRAW; ++d) {
        int c = draw_choice((draw_id){3, d, 0, DRAW_WAVELENGTH}, 7);
        assert_in_range(c, 0, 6);
        ++count[c];
    }
    double chi2 = 0, e = NDRAW / 7.0;
    for (int k = 0; k < 7; ++k)
        chi2 += (count[k] - e) * (count[k] - e) / e;
    assert_true(chi2 < 22.46);
}

/* Sample correlation of NDRAW pairs (a(d), b(d)) of standard normals. */
static double correlation(draw_id a, draw_id b, uint64_t lag)
{
    double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
    for (uint64_t d = 0; d < NDRAW; ++d) {
        a.d = d;
        b.d = d + lag;
        double x = draw_normal(a, 1.0), y = draw_normal(b, 1.0);
        sa += x;
        sb += y;
        saa += x * x;
        sbb += y * y;
        sab += x * y;
    }
    double n = NDRAW, cov = sab / n - sa / n * sb / n;
    return cov / sqrt((saa / n - sa / n * sa / n) * (sbb / n - sb / n * sb / n));
}

/* Uncorrelated: |r| < 5 / sqrt(N) (r's standard error is 1 / sqrt(N)). */
static void test_independence(void **state)
{
    (void)state;
    double bound = 5 / sqrt(NDRAW);
    draw_id z4 = {1, 0, 4, DRAW_ZERNIKE}, z5 = {1, 0, 5, DRAW_ZERNIKE};
    draw_id f0 = {1, 0, 4, DRAW_FOCUS_SHIFT}, s2 = {2, 0, 4, DRAW_ZERNIKE};
    draw_id hi = {1ull << 32, 0, 4, DRAW_ZERNIKE};
    assert_true(fabs(correlation(z4, z5, 0)) < bound);          /* terms */
    assert_true(fabs(correlation(z4, z4, 1)) < bound);          /* successive draws */
    assert_true(fabs(correlation(z4, f0, 0)) < bound);          /* purposes */
    assert_true(fabs(correlation(z4, s2, 0)) < bound);          /* seeds */
    assert_true(fabs(correlation(z4, hi, 0)) < bound);          /* the seed's high word */
    assert_true(fabs(correlation(z4, z4, 1ull << 32)) < bound); /* d's high word */
    /* u1 and u2 of one draw */
    double s = 0;
    for (uint64_t d = 0; d < NDRAW; ++d) {
        uint32_t x[4];
        draw_words((draw_id){5, d, 4, DRAW_ZERNIKE}, x);
        s += (draw_u01(x[0], x[1]) - 0.5) * (draw_u01(x[2], x[3]) - 0.5);
    }
    assert_true(fabs(s / NDRAW * 12.0) < bound);
}

static void test_spectrum_total_rms(void **state)
{
    (void)state;
    double sigma[33];
    char err[256] = "";
    assert_int_equal(draw_spectrum_sigma(ZCONV_NOLL, 4, 36, 0.1, -2.0, sigma, err, sizeof err), 0);
    double s2 = 0, s4 = 0;
    for (int k = 0; k < 33; ++k) {
        s2 += sigma[k] * sigma[k];
        s4 += sigma[k] * sigma[k] * sigma[k] * sigma[k];
    }
    assert_true(fabs(sqrt(s2) - 0.1) <= 4 * 0x1p-52 * 0.1); /* a few ulp */
    /* sigma_j prop. to n^-2: n = 2 (j = 4..6) four times n = 4 (j = 11..15) */
    assert_true(fabs(sigma[0] / sigma[7] - 4.0) < 1e-14);
    assert_true(sigma[0] == sigma[2] && sigma[7] == sigma[11]);
    /* The sample mean of the total squared RMS: variance 2 sum sigma^4. */
    double mean = 0;
    for (uint64_t d = 0; d < NDRAW; ++d) {
        double t = 0;
        for (int j = 4; j <= 36; ++j) {
            double v = draw_zernike(11, d, j, DRAW_NORMAL, sigma[j - 4]);
            t += v * v;
        }
        mean += t / NDRAW;
    }
    assert_true(fabs(mean - s2) < 5 * sqrt(2 * s4 / NDRAW));
    /* every convention: sum sigma^2 = total_rms^2 */
    for (int c = 0; c < 3; ++c) {
        int j0 = c == ZCONV_ANSI ? 1 : 2;
        assert_int_equal(draw_spectrum_sigma((zernike_convention)c, j0, j0 + 32, 0.3, -1.0, sigma,
                                             err, sizeof err),
                         0);
        s2 = 0;
        for (int k = 0; k < 33; ++k)
            s2 += sigma[k] * sigma[k];
        assert_true(fabs(sqrt(s2) - 0.3) <= 4 * 0x1p-52 * 0.3);
    }
    /* power 0: every term alike; total_rms 0: all zero */
    assert_int_equal(draw_spectrum_sigma(ZCONV_ANSI, 3, 3, 0.2, 0.0, sigma, err, sizeof err), 0);
    assert_true(sigma[0] == 0.2);
    assert_int_equal(draw_spectrum_sigma(ZCONV_NOLL, 2, 3, 0.0, -2.0, sigma, err, sizeof err), 0);
    assert_true(sigma[0] == 0.0 && sigma[1] == 0.0);
}

/* Refused with this message, sigma untouched. */
static void refused(zernike_convention conv, int j0, int j1, double rms, double power,
                    const char *want)
{
    double sigma[4] = {-7, -7, -7, -7};
    char err[256] = "";
    assert_int_equal(draw_spectrum_sigma(conv, j0, j1, rms, power, sigma, err, sizeof err), -1);
    assert_string_equal(err, want);
    for (int k = 0; k < 4; ++k)
        assert_true(sigma[k] == -7);
}

static void test_spectrum_refused(void **state)
{
    (void)state;
    refused(ZCONV_NOLL, 5, 4, 0.1, -2, "spectrum: j_min (5) is above j_max (4)");
    refused(ZCONV_NOLL, 1, 4, 0.1, -2,
            "spectrum: j_min = 1 is piston (n = 0) in Noll; start at 2 (piston has no radial "
            "order to scale and does not change the PSF)");
    refused(ZCONV_ANSI, 0, 4, 0.1, -2,
            "spectrum: j_min = 0 is piston (n = 0) in ANSI; start at 1 (piston has no radial "
            "order to scale and does not change the PSF)");
    refused(ZCONV_FRINGE, 1, 1, 0.1, -2,
            "spectrum: j_min = 1 is piston (n = 0) in Fringe; start at 2 (piston has no radial "
            "order to scale and does not change the PSF)");
    refused(ZCONV_NOLL, 0, 4, 0.1, -2,
            "spectrum: j = 0 is not an index in the Noll convention (radial orders 0..100)");
    refused(ZCONV_ANSI, -1, 4, 0.1, -2,
            "spectrum: j = -1 is not an index in the ANSI convention (radial orders 0..100)");
    refused(ZCONV_NOLL, 4, 1000000, 0.1, -2,
            "spectrum: j = 1000000 is not an index in the Noll convention (radial orders 0..100)");
    refused(ZCONV_NOLL, 4, 8, -0.1, -2, "spectrum: total_rms = -0.1 must be finite and >= 0");
    refused(ZCONV_NOLL, 4, 8, INFINITY, -2, "spectrum: total_rms = inf must be finite and >= 0");
    refused(ZCONV_NOLL, 4, 8, NAN, -2, "spectrum: total_rms = nan must be finite and >= 0");
    refused(ZCONV_NOLL, 4, 8, 0.1, NAN, "spectrum: power = nan must be finite");
    refused(ZCONV_NOLL, 4, 8, 0.1, 2000,
            "spectrum: power = 2000 makes the sum of n^(2 power) over j = 4..8 overflow in "
            "double precision");
    refused(ZCONV_NOLL, 4, 8, 0.1, -2000,
            "spectrum: power = -2000 makes the sum of n^(2 power) over j = 4..8 underflow in "
            "double precision");
}

/* Same inputs, same bits, in whatever order the values are asked for. */
static void test_determinism(void **state)
{
    (void)state;
    enum { N = 1000, T = 5 };
    static double fwd[N][T];
    const int terms[T] = {4, 7, 11, 22, 36};
    for (int d = 0; d < N; ++d)
        for (int t = 0; t < T; ++t)
            fwd[d][t] =
                draw_zernike(42, (uint64_t)d, terms[t], t % 2 ? DRAW_UNIFORM : DRAW_NORMAL, 0.05);
    for (int t = T - 1; t >= 0; --t)
        for (int d = N - 1; d >= 0; d -= 3) {
            draw_dist dist = t % 2 ? DRAW_UNIFORM : DRAW_NORMAL;
            assert_true(same_bits(draw_zernike(42, (uint64_t)d, terms[t], dist, 0.05), fwd[d][t]));
        }
    draw_id id = {42, 17, 7, DRAW_ZERNIKE};
    assert_true(same_bits(draw_value(id, DRAW_UNIFORM, 0.05), fwd[17][1]));
    /* a different seed, draw, term or purpose gives another value */
    assert_false(draw_zernike(43, 17, 7, DRAW_UNIFORM, 0.05) == fwd[17][1]);
    assert_false(draw_zernike(42, 18, 7, DRAW_UNIFORM, 0.05) == fwd[17][1]);
    assert_false(draw_zernike(42, 17, 8, DRAW_UNIFORM, 0.05) == fwd[17][1]);
    id.purpose = DRAW_FOCUS_SHIFT;
    assert_false(draw_value(id, DRAW_UNIFORM, 0.05) == fwd[17][1]);
}

static void test_choice_and_names(void **state)
{
    (void)state;
    draw_id id = {1, 2, 0, DRAW_FOCUS_SHIFT};
    assert_int_equal(draw_choice(id, 1), 0);
    assert_int_equal(draw_choice(id, 0), 0);
    assert_int_equal(draw_choice(id, -3), 0);
    for (uint64_t d = 0; d < 1000; ++d) {
        id.d = d;
        assert_in_range(draw_choice(id, 2147483647), 0, 2147483646);
    }
    draw_dist dist = DRAW_UNIFORM;
    assert_int_equal(draw_dist_from_name("normal", &dist), 0);
    assert_int_equal(dist, DRAW_NORMAL);
    assert_int_equal(draw_dist_from_name("uniform", &dist), 0);
    assert_int_equal(dist, DRAW_UNIFORM);
    assert_int_equal(draw_dist_from_name("gaussian", &dist), -1);
    assert_int_equal(dist, DRAW_UNIFORM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_known_answers),
        cmocka_unit_test(test_reference_embedded),
        cmocka_unit_test(test_reference_python),
        cmocka_unit_test(test_u01_bounds),
        cmocka_unit_test(test_moments),
        cmocka_unit_test(test_distribution_shape),
        cmocka_unit_test(test_independence),
        cmocka_unit_test(test_spectrum_total_rms),
        cmocka_unit_test(test_spectrum_refused),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_choice_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
