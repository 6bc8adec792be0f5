/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU backend's time per image in a large set, as psfsim runs it
 * (issue 26: what estimated plans cost against the measured ones a large
 * set got before): a circular pupil (obscuration 0.3) of N/Q samples with
 * defocus and coma, the set's pupil_samples known, a set of 100,000 images
 * (measure_plans set: a psfsim before issue 26 measured its plans; one
 * after reads it not), run() calls of 64 images (the command's batch) on
 * THREADS threads. The minimum over repeats of a call's time per image,
 * wall and CPU (the process's, all threads): the machine may be shared,
 * and other work only adds time (to the wall time most).
 * Prints CSV rows: pipeline,npix,q,threads,us_per_psf,cpu_us_per_psf.
 * Usage: psfsim_bench_cpu_set Q N:THREADS [N:THREADS ...] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/backend.h"
#include "bench/bench_time.h"

#define BATCH 64

/* The process's CPU seconds (all its threads). */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int bench(double q, int npix, int threads)
{
    static const int zn[2] = {2, 3}, zm[2] = {0, 1};
    static const double coeff[2] = {0.3, 0.1};
    int samples = (int)(npix / q + 0.5);
    psf_problem d = {.npix = npix, .max_batch = BATCH, .nimages = 100000, .pupil_samples = samples};
    d.aperture = (psf_aperture){.shape = APERTURE_CIRCULAR, .diameter_m = 1.0, .obscuration = 0.3};
    d.modes = (psf_modes){.nterms = 2, .n = zn, .m = zm};
    psf_backend_options opt = {.threads = threads, .measure_plans = 1};
    char err[1024];
    psf_backend *b;
    if (psf_backend_cpu.create(&d, &opt, &b, err, sizeof err) != 0) {
        fprintf(stderr, "cpu: %s\n", err);
        return -1;
    }
    psf_job jobs[BATCH] = {0};
    for (int i = 0; i < BATCH; ++i) {
        jobs[i].ncomp = 1;
        jobs[i].comp[0] = (psf_component){
            .wavelength_m = 500e-9, .dx_m = 1.0 / samples, .scale = 1.0, .coeff_waves = coeff};
    }
    float *img = psf_backend_cpu.alloc_images(b, (size_t)BATCH * npix * npix);
    int rc = img ? 0 : -1, reps = npix <= 256 ? 30 : npix <= 1024 ? 8 : 3;
    double best = 1e30, best_cpu = 1e30;
    for (int r = -1; r < reps && rc == 0; ++r) {
        double t0 = now_s(), c0 = cpu_s();
        rc = psf_backend_cpu.run(b, jobs, BATCH, img, err, sizeof err);
        double t = (now_s() - t0) / BATCH, c = (cpu_s() - c0) / BATCH;
        if (r >= 0 && t < best) best = t;
        if (r >= 0 && c < best_cpu) best_cpu = c;
    }
    if (rc != 0)
        fprintf(stderr, "cpu: %s\n", err);
    else
        printf("psfsim_cpu_set,%d,%g,%d,%.2f,%.2f\n", npix, q, threads, best * 1e6, best_cpu * 1e6);
    fflush(stdout);
    if (img) psf_backend_cpu.free_images(b, img);
    psf_backend_cpu.destroy(b);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s Q N:THREADS [N:THREADS ...]\n", argv[0]);
        return 2;
    }
    double q = atof(argv[1]);
    int rc = 0;
    for (int i = 2; i < argc; ++i) {
        int npix = 0, threads = 1;
        if (sscanf(argv[i], "%d:%d", &npix, &threads) < 1 || npix < 2 || !(q >= 1)) return 2;
        if (bench(q, npix, threads) != 0) rc = 1;
    }
    return rc;
}
