/* SPDX-License-Identifier: BSD-3-Clause */
/* The matrix Fourier transform's speed (Soummer et al. 2007), in ms per
 * image of a backend's run() alone: set-up, plans and matrices made before
 * the clock starts (a first run of every image), then the best of three
 * runs of every image. The sets are obscured, aberrated pupils of n samples
 * across, through config -> image set -> backend as psfsim runs them.
 *  - cpu: the FFT at padding 2 (N = 2n, its plan measured as for a large
 *    set), the MFT onto the same N x N grid (forced) and onto a 128 x 128
 *    window of it, n = 64 .. 512;
 *  - gpu: the GPU's MFT against the CPU's, n = 128 .. 512 onto M = 2n
 *    pixels of 0.25 lambda/D, 16 images per run (images to host memory).
 * Usage: psfsim_bench_mft [cpu] [gpu]   (none: both; gpu needs the GPU
 * module and a CUDA device). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "app/config/config.h"
#include "app/select/gpu.h"
#include "app/set/image_set.h"

/* A set loaded for calling a backend's ops directly. */
typedef struct {
    psf_config cfg;
    image_set set;
    psf_problem problem;
    double *storage;
    psf_job *jobs;
    int nimages;
} bench_set;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void unload(bench_set *s)
{
    free(s->storage);
    free(s->jobs);
    image_set_free(&s->set);
    config_free(&s->cfg);
}

/* The config text's set, the MFT forced with force_mft (psf_config.mft_force),
 * every image in one run() and planned as for a set of plan_images. */
static int load(bench_set *s, const char *text, int force_mft, long long plan_images)
{
    memset(s, 0, sizeof *s);
    char path[] = "/tmp/psfsim_bench_mft_XXXXXX", err[1024];
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    int rc = f && fputs(text, f) >= 0 ? 0 : -1;
    if (f) rc |= fclose(f);
    if (rc == 0) rc = config_load(path, &s->cfg, err, sizeof err);
    if (fd >= 0) unlink(path);
    if (rc != 0) {
        fprintf(stderr, "bench_mft: config: %s\n", fd >= 0 ? err : "cannot write a temp file");
        return -1;
    }
    s->cfg.mft_force = force_mft;
    if (image_set_init(&s->set, &s->cfg, err, sizeof err) != 0) {
        fprintf(stderr, "bench_mft: %s\n", err);
        config_free(&s->cfg);
        return -1;
    }
    s->nimages = (int)s->set.nimages;
    image_set_problem(&s->set, s->nimages, &s->problem);
    s->problem.nimages = plan_images;
    size_t per = image_set_storage(&s->set);
    s->storage = calloc((size_t)s->nimages * per + 1, sizeof *s->storage);
    s->jobs = calloc((size_t)s->nimages, sizeof *s->jobs);
    for (int k = 0; rc == 0 && k < s->nimages; ++k) {
        image_info info;
        rc = s->storage && s->jobs ? image_set_job(&s->set, k, s->storage + (size_t)k * per,
                                                   &s->jobs[k], &info, err, sizeof err)
                                   : -1;
    }
    if (rc != 0) {
        fprintf(stderr, "bench_mft: jobs: %s\n", s->jobs ? err : "out of memory");
        unload(s);
    }
    return rc;
}

/* ms per image of ops's run() on s (see the header), or NaN on failure. */
static double ms_per_image(const bench_set *s, const psf_backend_ops *ops)
{
    char err[1024];
    psf_backend *b = NULL;
    if (ops->create(&s->problem, NULL, &b, err, sizeof err) != 0) {
        fprintf(stderr, "bench_mft: %s: %s\n", ops->name, err);
        return NAN;
    }
    size_t plane = (size_t)s->set.samp.npix * s->set.samp.npix;
    float *img = ops->alloc_images(b, (size_t)s->nimages * plane);
    int rc = img ? ops->run(b, s->jobs, s->nimages, img, err, sizeof err) : -1;
    double best = HUGE_VAL;
    for (int pass = 0; rc == 0 && pass < 3; ++pass) {
        double t0 = now_s();
        rc = ops->run(b, s->jobs, s->nimages, img, err, sizeof err);
        best = fmin(best, (now_s() - t0) / s->nimages);
    }
    if (rc != 0) fprintf(stderr, "bench_mft: %s run: %s\n", ops->name, img ? err : "no memory");
    if (img) ops->free_images(b, img);
    ops->destroy(b);
    return rc == 0 ? best * 1e3 : NAN;
}

/* ms per image of text's set on ops (NaN when it cannot be run); *npix the image size. */
static double time_set(const char *text, int force_mft, long long plan_images,
                       const psf_backend_ops *ops, int *npix)
{
    bench_set s;
    *npix = 0;
    if (load(&s, text, force_mft, plan_images) != 0) return NAN;
    double ms = ms_per_image(&s, ops);
    *npix = s.set.samp.npix;
    unload(&s);
    return ms;
}

#define PUPIL_TEXT                                                                                 \
    "name = \"t\"; optics: { wavelength_nm = 500; aperture: { diameter_m = 1.0; "                  \
    "obscuration = 0.3; }; }; sampling: { pupil_samples = %d; }; "                                 \
    "aberrations: { zernike = ((4, 0.1), (7, 0.05)); }; "

/* The CPU: FFT, MFT onto the FFT's grid, MFT onto a 128 x 128 window. */
static void bench_cpu(void)
{
    const int ns[] = {64, 128, 256, 512};
    for (int c = 0; c < 4; ++c) {
        char text[2048], window[2200];
        snprintf(text, sizeof text, PUPIL_TEXT "sweep: { defocus = [0.0, 0.01, 0.02, 0.03]; };",
                 ns[c]);
        snprintf(window, sizeof window, "%s output: { npix = 128; };", text);
        int nf, nm, nw;
        double fft = time_set(text, 0, 1000000, &psf_backend_cpu, &nf);
        double mft = time_set(text, 1, 1000000, &psf_backend_cpu, &nm);
        double win = time_set(window, 0, 1000000, &psf_backend_cpu, &nw);
        printf("n = %3d: FFT %4d^2 %8.3f ms/image; MFT %4d^2 %8.3f ms/image; MFT %d^2 window "
               "%7.3f ms/image\n",
               ns[c], nf, fft, nm, mft, nw, win);
    }
}

/* The GPU's MFT against the CPU's. Returns 0, or -1 without a GPU. */
static int bench_gpu(void)
{
    const psf_backend_ops *gpu = psf_backend_gpu();
    char why[512];
    if (!gpu || gpu->device_count(why, sizeof why) < 1) {
        fprintf(stderr, "bench_mft: no GPU: %s\n", gpu ? why : gpu_module_error());
        return -1;
    }
    static const int ns[] = {128, 256, 512}, ms[] = {256, 512, 1024};
    for (int c = 0; c < 3; ++c) {
        char text[2048];
        snprintf(text, sizeof text,
                 PUPIL_TEXT "sweep: { defocus = [0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, "
                            "0.08, 0.09, 0.1, 0.11, 0.12, 0.13, 0.14, 0.15]; }; "
                            "output: { npix = %d; pixel_scale = 0.25; };",
                 ns[c], ms[c]);
        bench_set s;
        if (load(&s, text, 0, 16) != 0) return -1;
        double tc = ms_per_image(&s, &psf_backend_cpu), tg = ms_per_image(&s, gpu);
        printf("MFT n = %3d (G = %d) onto %4d^2: CPU %8.3f ms/image, GPU %7.3f ms/image (to host "
               "memory): %.0fx\n",
               ns[c], s.problem.pupil_npix, ms[c], tc, tg, tc / tg);
        unload(&s);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int cpu = argc < 2, gpu = argc < 2;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "cpu"))
            cpu = 1;
        else if (!strcmp(argv[i], "gpu"))
            gpu = 1;
        else {
            fprintf(stderr, "usage: psfsim_bench_mft [cpu] [gpu]\n");
            return 2;
        }
    }
    if (cpu) bench_cpu();
    if (gpu && bench_gpu() != 0 && argc > 1) return 1; /* asked for, not there */
    return 0;
}
