/* SPDX-License-Identifier: BSD-3-Clause */
/* One image on the CPU against FFTW's own transform of the same size, in
 * the same run (issue 17): psfsim's CPU backend computing one image per
 * run() call (a circular pupil of N/2 samples with defocus and coma, the
 * set's pupil_samples known; its plans are estimated, cpu/plan_cache.h) on
 * 1 thread and on all, and fftwf_plan_dft_2d's out-of-place N x N c2c
 * transform (FFTW_MEASURE) on the same thread counts. Median of repeats,
 * microseconds.
 * Prints CSV rows: pipeline,npix,images,seconds_total,us_per_psf with
 * pipeline psfsim_cpu_one_<T>t or fftw_c2c_2d_<T>t, then per N the ratio
 * psfsim / FFTW on 1 thread as a comment line.
 * Usage: psfsim_bench_cpu_single N [N ...]  (NumPy: bench/reference_numpy.py) */
#include <fftw3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "bench/bench_time.h"

static int reps_for(int npix)
{
    return npix <= 512 ? 51 : npix <= 2048 ? 15 : 7;
}

/* Median seconds of FFTW's measured 2D c2c of N on threads threads. */
static double fftw_2d(int npix, int threads)
{
    size_t n = (size_t)npix * npix;
    fftwf_complex *in = fftwf_malloc(n * sizeof *in), *out = fftwf_malloc(n * sizeof *out);
    fftwf_plan_with_nthreads(threads);
    fftwf_plan p = fftwf_plan_dft_2d(npix, npix, in, out, FFTW_FORWARD, FFTW_MEASURE);
    for (size_t i = 0; i < n; ++i)
        in[i][0] = in[i][1] = (i % 7 == 0) ? 1.0f : 0.0f;
    int reps = reps_for(npix);
    double t[51];
    for (int r = -3; r < reps; ++r) {
        double t0 = now_s();
        fftwf_execute(p);
        if (r >= 0) t[r] = now_s() - t0;
    }
    fftwf_destroy_plan(p);
    fftwf_plan_with_nthreads(1); /* psfsim's plans below N = 512 take FFTW's default */
    fftwf_free(in);
    fftwf_free(out);
    qsort(t, (size_t)reps, sizeof *t, cmp);
    return t[reps / 2];
}

/* Median seconds of psfsim's CPU backend on one image, or -1. */
static double psfsim_one(int npix, int threads)
{
    static const int zn[2] = {2, 3}, zm[2] = {0, 1};
    static const double coeff[2] = {0.3, 0.1};
    psf_problem d = {.npix = npix, .max_batch = 1, .nimages = 1, .pupil_samples = npix / 2};
    d.aperture = (psf_aperture){.shape = APERTURE_CIRCULAR, .diameter_m = 1.0};
    d.modes = (psf_modes){.nterms = 2, .n = zn, .m = zm};
    psf_backend_options opt = {.threads = threads};
    char err[1024];
    psf_backend *b;
    if (psf_backend_cpu.create(&d, &opt, &b, err, sizeof err) != 0) {
        fprintf(stderr, "cpu: %s\n", err);
        return -1.0;
    }
    psf_job job = {.ncomp = 1};
    job.comp[0] = (psf_component){
        .wavelength_m = 500e-9, .dx_m = 2.0 / npix, .scale = 1.0, .coeff_waves = coeff};
    float *img = psf_backend_cpu.alloc_images(b, (size_t)npix * npix);
    int rc = 0, reps = reps_for(npix);
    double t[51];
    for (int r = -3; r < reps && rc == 0; ++r) {
        double t0 = now_s();
        rc = psf_backend_cpu.run(b, &job, 1, img, err, sizeof err);
        if (r >= 0) t[r] = now_s() - t0;
    }
    if (rc != 0) fprintf(stderr, "cpu: %s\n", err);
    psf_backend_cpu.free_images(b, img);
    psf_backend_cpu.destroy(b);
    if (rc != 0) return -1.0;
    qsort(t, (size_t)reps, sizeof *t, cmp);
    return t[reps / 2];
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s N [N ...]\n", argv[0]);
        return 2;
    }
    if (!fftwf_init_threads()) return 1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int all = ncpu > 0 ? (int)ncpu : 1;
    int rc = 0;
    for (int i = 1; i < argc; ++i) {
        int npix = atoi(argv[i]);
        if (npix < 2) return 2;
        int tc[2] = {1, all};
        double one_thread[2] = {0, 0};
        for (int k = 0; k < (all > 1 ? 2 : 1); ++k) {
            double tf = fftw_2d(npix, tc[k]), tp = psfsim_one(npix, tc[k]);
            if (tp < 0) rc = 1;
            printf("fftw_c2c_2d_%dt,%d,1,%.6f,%.2f\n", tc[k], npix, tf, tf * 1e6);
            printf("psfsim_cpu_one_%dt,%d,1,%.6f,%.2f\n", tc[k], npix, tp, tp * 1e6);
            if (k == 0) one_thread[0] = tp, one_thread[1] = tf;
        }
        printf("# N = %d: psfsim one image / FFTW 2D c2c, 1 thread: %.2f\n", npix,
               one_thread[0] / one_thread[1]);
        fflush(stdout);
    }
    return rc;
}
