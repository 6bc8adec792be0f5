/* SPDX-License-Identifier: BSD-3-Clause */
/* The pruned FFT (cpu/plan_cache.h: row DFTs of the pupil's rows only, then
 * the columns) is the same DFT as FFTW's whole 2D transform: compared on
 * random fields in the band (the pupil transposed), and through the backend (a set's images with
 * pupil_samples known, pruned, against the same set without it, unpruned)
 * to 1e-6 of the peak, for even and odd grids, broadband pupils of several
 * pitches and a pupil reaching past the band (the 2D plan's fallback); the
 * fused second pass with its intensity (cpu/band_image.h) against the 2D
 * transform's |.|^2 (cpu/intensity.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cpu/band_image.h"
#include "cpu/intensity.h"
#include "cpu/plan_cache.h"

/* max |a - b| / max |b| over n values. */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0.0, peak = 0.0;
    for (size_t i = 0; i < n; ++i) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        peak = fmax(peak, fabs((double)b[i]));
    }
    return d / peak;
}

/* x: random values on the band's rows and columns (the rest left as it
 * is: zero), and xt = X^T (its zeros written). */
static void fill_band(int npix, int band, unsigned *seed, fftwf_complex *x, fftwf_complex *xt)
{
    for (int r = 0; r < npix; ++r)
        for (int c = 0; c < npix; ++c)
            for (int k = 0; k < 2; ++k) {
                int in_band = (r < band || r >= npix - band) && (c < band || c >= npix - band);
                *seed = *seed * 1664525u + 1013904223u;
                float v = in_band ? (float)(*seed >> 8) / 16777216.0f - 0.5f : 0.0f;
                if (in_band) x[(size_t)r * npix + c][k] = v;
                xt[(size_t)c * npix + r][k] = v;
            }
}

/* X: random values on the planned band's rows and columns (the rest
 * zero). The pruned transform of X is the 2D DFT of X^T
 * (cpu/plan_cache.h): compared with a plain 2D plan's of X^T; and in is
 * all zero after it. band is asked for, planned is the band planned. */
static void plan_case_as(int npix, int band, int planned)
{
    char err[256];
    cpu_fft_plan pr, full;
    assert_int_equal(cpu_fft_plan_create_band(&pr, npix, band, 1, err, sizeof err), 0);
    assert_int_equal(pr.band, planned);
    assert_null(pr.plan);
    assert_int_equal(cpu_fft_plan_create(&full, npix, 1, err, sizeof err), 0);
    band = planned;
    unsigned seed = 7u;
    size_t n2 = (size_t)npix * npix;
    for (int rep = 0; rep < 2; ++rep) { /* in must be ready for the next transform */
        fill_band(npix, band, &seed, pr.in, full.in);
        cpu_fft_plan_execute(&pr);
        cpu_fft_plan_execute(&full);
        assert_true(rel_diff((const float *)pr.out, (const float *)full.out, 2 * n2) < 1e-6);
        for (size_t i = 0; i < n2; ++i)
            assert_true(pr.in[i][0] == 0.0f && pr.in[i][1] == 0.0f);
    }
    cpu_fft_plan_destroy(&pr);
    cpu_fft_plan_destroy(&full);
}

static void plan_case(int npix, int band)
{
    plan_case_as(npix, band, band); /* pruning applies at these sizes */
}

static void test_plan_pruned_is_the_dft(void **state)
{
    (void)state;
    plan_case(64, 18);
    plan_case(96, 26);
    plan_case(101, 27); /* odd N: the second band unaligned */
    plan_case(256, 66);
}

static void test_plan_band_not_worth_it(void **state)
{
    (void)state;
    char err[256];
    cpu_fft_plan p;
    assert_int_equal(cpu_fft_plan_create_band(&p, 64, 30, 1, err, sizeof err), 0);
    assert_int_equal(p.band, 0); /* 2 x 30 of 64 rows: the whole 2D plan */
    assert_non_null(p.plan);
    cpu_fft_plan_destroy(&p);
    /* From CPU_ROW_COLUMN_MIN_NPIX up, the row-column transform over the
     * whole grid instead (FFTW's estimated 2D plan is 4-5x slower there);
     * an odd N leaves the middle row and column out. */
    plan_case_as(CPU_ROW_COLUMN_MIN_NPIX, 110, CPU_ROW_COLUMN_MIN_NPIX / 2);
    plan_case_as(257, 0, 128);
}

/* cpu_band_image on random X in the band: the intensity of the 2D DFT of
 * X^T (a 2D plan's, through cpu_intensity_write), stored (streamed) then
 * added with a second scale, to 1e-6 of the peak, the second's scan the
 * image's largest value; in unchanged by it, block_in zero outside the
 * band. N = 101: the last block partial (and the scalar loops). */
static void band_image_case(int npix, int band)
{
    char err[256];
    cpu_fft_plan pr, full;
    assert_int_equal(cpu_fft_plan_create_band(&pr, npix, band, 1, err, sizeof err), 0);
    assert_non_null(pr.block);
    assert_int_equal(cpu_fft_plan_create(&full, npix, 1, err, sizeof err), 0);
    size_t n2 = (size_t)npix * npix;
    unsigned seed = 11u;
    fill_band(npix, band, &seed, pr.in, full.in);
    fftwf_complex *kept = malloc(n2 * sizeof *kept);
    memcpy(kept, pr.in, n2 * sizeof *kept);
    float *got = malloc(n2 * sizeof *got), *want = malloc(n2 * sizeof *want);
    psf_image_scan scan = {-INFINITY, 1};
    cpu_intensity_op first = {.scale = 0.75f, .first = 1, .stream = 1},
                     second = {.scale = 0.5f, .scan = &scan};
    cpu_band_image(&pr, pr.in, pr.out, pr.block_in, pr.block_out, &first, got);
    cpu_intensity_fence();
    cpu_band_image(&pr, pr.in, pr.out, pr.block_in, pr.block_out, &second, got);
    cpu_fft_plan_execute(&full);
    cpu_intensity_write(full.out, npix, 0.75f, 1, want);
    cpu_intensity_write(full.out, npix, 0.5f, 0, want);
    assert_true(rel_diff(got, want, n2) < 1e-6);
    float peak = -INFINITY; /* the scan: the values written */
    for (size_t i = 0; i < n2; ++i)
        peak = got[i] > peak ? got[i] : peak;
    assert_true(scan.peak == peak && scan.in_range == 1);
    assert_memory_equal(kept, pr.in, n2 * sizeof *kept);
    for (int j = 0; j < CPU_FFT_BLOCK_ROWS; ++j)
        for (int r = band; r < npix - band; ++r)
            assert_true(pr.block_in[(size_t)j * npix + r][0] == 0.0f &&
                        pr.block_in[(size_t)j * npix + r][1] == 0.0f);
    free(kept);
    free(got);
    free(want);
    cpu_fft_plan_destroy(&pr);
    cpu_fft_plan_destroy(&full);
}

static void test_band_image_is_the_intensity(void **state)
{
    (void)state;
    band_image_case(64, 18);
    band_image_case(101, 27);
    band_image_case(256, 66);
}

/* A set's images through psf_backend_cpu with pupil_samples = hint (0 =
 * unknown: not pruned). Components: ncomp pitches 2/n .. 2/n * 0.8. */
static float *images(int npix, int n, int hint, int ncomp, int njobs)
{
    static const int zn[3] = {2, 3, 4}, zm[3] = {0, 1, -2};
    static const double coeff[2][3] = {{0.2, 0.15, -0.1}, {0.0, 0.0, 0.0}};
    psf_problem d = {.npix = npix, .max_batch = njobs, .nimages = njobs, .pupil_samples = hint};
    d.aperture = (psf_aperture){.shape = APERTURE_CIRCULAR, .diameter_m = 1.0, .obscuration = 0.3};
    d.modes = (psf_modes){.nterms = 3, .n = zn, .m = zm};
    char err[512];
    psf_backend *b;
    assert_int_equal(psf_backend_cpu.create(&d, NULL, &b, err, sizeof err), 0);
    psf_job *jobs = calloc((size_t)njobs, sizeof *jobs);
    for (int k = 0; k < njobs; ++k) {
        jobs[k].ncomp = ncomp;
        for (int c = 0; c < ncomp; ++c)
            jobs[k].comp[c] = (psf_component){.wavelength_m = 500e-9,
                                              .dx_m = 1.0 / n * (1.0 + 0.25 * c),
                                              .scale = 1.0 / (c + 1),
                                              .coeff_waves = coeff[k % 2]};
    }
    size_t plane = (size_t)npix * npix;
    float *img = malloc((size_t)njobs * plane * sizeof *img);
    assert_int_equal(psf_backend_cpu.run(b, jobs, njobs, img, err, sizeof err), 0);
    psf_backend_cpu.destroy(b);
    free(jobs);
    return img;
}

static void backend_case(int npix, int n, int hint, int ncomp, int njobs)
{
    float *pruned = images(npix, n, hint, ncomp, njobs), *full = images(npix, n, 0, ncomp, njobs);
    size_t plane = (size_t)npix * npix;
    for (int k = 0; k < njobs; ++k)
        assert_true(rel_diff(pruned + k * plane, full + k * plane, plane) < 1e-6);
    free(pruned);
    free(full);
}

static void test_backend_pruned_equals_unpruned(void **state)
{
    (void)state;
    backend_case(128, 64, 64, 1, 4);   /* Q = 2, image lanes */
    backend_case(125, 50, 50, 3, 3);   /* odd N, three pitches per image */
    backend_case(512, 128, 128, 2, 2); /* FFTW's threads inside each transform */
    backend_case(128, 64, 24, 2, 3);   /* hint too small: past the band, the 2D plan */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_pruned_is_the_dft),
        cmocka_unit_test(test_plan_band_not_worth_it),
        cmocka_unit_test(test_band_image_is_the_intensity),
        cmocka_unit_test(test_backend_pruned_equals_unpruned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
