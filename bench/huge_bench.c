/* SPDX-License-Identifier: BSD-3-Clause */
/* Issue 17's acceptance case: one N x N FFT image (N = 46341: 46341^2 =
 * 2147488281 samples, past 2^31) with a tilt that puts the PSF in the
 * last W x W pixels (rows and columns N - W .. N - 1, where the samples
 * numbered past 2^31 are), computed through the library (lib/psfsim.h,
 * psfsim_compute into a caller buffer) on the GPU and then on the CPU
 * (FFTW_ESTIMATE for a one-image set, cpu/plan_cache.c), and compared on
 * that window: the largest difference over the CPU's peak there and the
 * relative L2 difference. Prints the GPU backend's memory_need for the set
 * (gpu/memory_plan.cu: the single-image plan, less cuFFT's work area) and the
 * device memory the GPU's set took (cudaMemGetInfo before it opened and
 * after its compute, the backend still held: its buffers, work area, plans
 * and pupils).
 *
 * The pupil: n samples across D = 1 m, obscuration 0.2, 500 nm, padding
 * Q = N / n (pixel n/N lambda/D). The tilt: Noll 2 and 3 of a waves RMS
 * each move the PSF by 4a lambda/D along x and y (Z2 = 2 rho cos theta:
 * W = 4a x / D waves), so a = s n / (4 N) for a shift of s = N - W/2 - N/2
 * pixels from the axis (N/2, N/2) to the window's centre; s stays below
 * N/2 (the tilt's phase step, s / N waves per sample, below Nyquist's 1/2).
 *
 * Usage: psfsim_huge_bench [--cpu-only] [N [n [W [THREADS]]]]
 *   defaults 46341 4634 2048 16; --cpu-only skips the GPU (a check of the
 *   layout where there is none). Exit 0 when both ratios are at most 1e-4
 *   and the CPU's peak lies in the window, 1 otherwise, 2 on an error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <psfsim.h>

#include "app/config/config.h"
#include "app/select/gpu.h"
#include "app/set/image_set.h"
#include "backend/backend.h"
#include "bench/bench_time.h"

#ifdef PSFSIM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#define TOL 1e-4

typedef struct {
    int npix, n, win, threads;
    double tilt; /* a, waves RMS of Noll 2 and of Noll 3 */
    char text[1024];
} bench_case;

static void make_case(bench_case *c)
{
    double s = (double)(c->npix - c->win / 2) - (double)(c->npix / 2);
    c->tilt = s * c->n / (4.0 * c->npix);
    snprintf(c->text, sizeof c->text,
             "name = \"huge\"; optics: { wavelength_nm = 500.0; aperture: { diameter_m = 1.0;"
             " obscuration = 0.2; }; }; sampling: { pupil_samples = %d; padding = %.12f; };"
             " aberrations: { zernike = ( (2, %.9f), (3, %.9f) ); };",
             c->n, (double)c->npix / c->n, c->tilt, c->tilt);
}

/* The GPU backend's memory_need for the set (its batch on the GPU: one). */
static void print_need(const bench_case *c)
{
    const psf_backend_ops *gpu = psf_backend_gpu();
    psf_config cfg;
    image_set set;
    memset(&set, 0, sizeof set);
    char err[1024] = "";
    psf_memory_need m;
    int rc = config_load_text(c->text, "huge", NULL, &cfg, err, sizeof err);
    if (rc == 0) rc = image_set_init(&set, &cfg, err, sizeof err);
    if (rc == 0 && gpu) {
        psf_problem p;
        image_set_problem(&set, 1, &p);
        rc = gpu->memory_need(&p, NULL, &m, err, sizeof err);
        if (rc == 0)
            printf("memory_need (gpu): device %llu bytes (%.2f GiB) beside cuFFT's work area, "
                   "host %llu bytes\n",
                   m.device, m.device / 1073741824.0, m.host);
    }
    if (rc != 0 || !gpu) printf("memory_need (gpu): %s\n", gpu ? err : gpu_module_error());
    image_set_free(&set);
    config_free(&cfg);
}

/* The library's warnings and notes (a GPU's failure and the CPU's taking
 * over among them) on stderr. */
static void on_message(int level, const char *message, void *user)
{
    (void)user;
    fprintf(stderr, "psfsim (%d): %s\n", level, message);
}

/* Free device memory now, bytes (0 without CUDA). */
static size_t device_free(void)
{
    size_t f = 0;
#ifdef PSFSIM_HAVE_CUDA
    size_t t = 0;
    if (cudaMemGetInfo(&f, &t) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
#endif
    return f;
}

/* The image of c on backend ("gpu" or "cpu") into img; seconds in *secs. */
static int compute(const bench_case *c, const char *backend, float *img, double *secs)
{
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = backend;
    o.threads = c->threads;
    o.name = "huge";
    psfsim_set *set = NULL;
    psfsim_info info;
    psfsim_metrics met;
    char err[1024] = "";
    size_t plane = (size_t)c->npix * c->npix, free0 = device_free();
    int rc = psfsim_open_text(c->text, &o, &set, err, sizeof err);
    if (rc == PSFSIM_OK) rc = psfsim_describe(set, &info, err, sizeof err);
    if (rc == PSFSIM_OK && (info.npix != c->npix || info.count != 1)) {
        snprintf(err, sizeof err, "the config gives %lld images of %d, not one of %d", info.count,
                 info.npix, c->npix);
        rc = PSFSIM_ERR_CONFIG;
    }
    double t0 = now_s();
    if (rc == PSFSIM_OK) rc = psfsim_compute(set, 0, 1, img, plane, &met, err, sizeof err);
    *secs = now_s() - t0;
    size_t free1 = device_free();
    if (rc == PSFSIM_OK && strcmp(met.backend, backend) != 0) {
        snprintf(err, sizeof err, "computed on the %s, not the %s", met.backend, backend);
        rc = PSFSIM_ERR_COMPUTE;
    }
    if (rc == PSFSIM_OK) printf("%s: %.2f s, Strehl %.6f", backend, *secs, met.strehl);
    if (rc == PSFSIM_OK && !strcmp(backend, "gpu"))
        printf(", device memory taken %lld bytes (%.2f GiB: %zu free before, %zu after)",
               (long long)free0 - (long long)free1, ((double)free0 - (double)free1) / 1073741824.0,
               free0, free1);
    if (rc == PSFSIM_OK) printf("\n");
    psfsim_close(set);
    if (rc != PSFSIM_OK) fprintf(stderr, "%s: %s: %s\n", backend, psfsim_status_name(rc), err);
    return rc;
}

/* Where the largest value of img is. */
static void peak_of(const float *img, size_t plane, int npix, int *r, int *col)
{
    size_t best = 0;
    for (size_t i = 1; i < plane; ++i)
        if (img[i] > img[best]) best = i;
    *r = (int)(best / (size_t)npix);
    *col = (int)(best % (size_t)npix);
}

/* The window's largest |g - c| over c's peak there and relative L2. */
static int compare(const bench_case *c, const float *g, const float *cpu)
{
    int n = c->npix, w0 = c->npix - c->win, pr, pc;
    double peak = 0.0, dmax = 0.0, d2 = 0.0, c2 = 0.0;
    for (int r = w0; r < n; ++r)
        for (int k = w0; k < n; ++k) {
            size_t i = (size_t)r * n + k; /* past 2^31 in the last row */
            double d = (double)g[i] - cpu[i];
            peak = fmax(peak, cpu[i]);
            dmax = fmax(dmax, fabs(d));
            d2 += d * d;
            c2 += (double)cpu[i] * cpu[i];
        }
    peak_of(cpu, (size_t)n * n, n, &pr, &pc);
    double l2 = sqrt(d2 / c2), rel = dmax / peak;
    size_t last = (size_t)n * n - 1;
    printf("window rows and columns %d..%d: CPU peak %.6g (whole image's at row %d, column %d), "
           "max |gpu - cpu| / peak %.3g, rel L2 %.3g; last pixel (index %zu) gpu %.6g cpu %.6g\n",
           w0, n - 1, peak, pr, pc, rel, l2, last, g[last], cpu[last]);
    int inside = pr >= w0 && pc >= w0;
    if (!inside) printf("the PSF is not in the window: the tilt's sign or size is off\n");
    int ok = inside && rel <= TOL && l2 <= TOL;
    printf("%s (tolerance %g)\n", ok ? "PASS" : "FAIL", TOL);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    int a = 1, cpu_only = argc > 1 && !strcmp(argv[1], "--cpu-only");
    a += cpu_only;
    bench_case c = {46341, 4634, 2048, 16, 0.0, ""};
    if (argc > a) c.npix = atoi(argv[a]);
    if (argc > a + 1) c.n = atoi(argv[a + 1]);
    if (argc > a + 2) c.win = atoi(argv[a + 2]);
    if (argc > a + 3) c.threads = atoi(argv[a + 3]);
    if (c.npix < 16 || c.n < 2 || c.n > c.npix || c.win < 1 || c.win > c.npix / 2 ||
        c.threads < 0) {
        fprintf(stderr, "usage: psfsim_huge_bench [--cpu-only] [N [n [W [THREADS]]]]\n");
        return 2;
    }
    make_case(&c);
    psfsim_set_message_handler(on_message, 3, NULL);
    printf("N = %d (%zu samples), n = %d, window %d, tilt %.6f waves RMS on Noll 2 and 3\n%s\n",
           c.npix, (size_t)c.npix * c.npix, c.n, c.win, c.tilt, c.text);
    print_need(&c);
    size_t plane = (size_t)c.npix * c.npix;
    float *g = malloc(plane * sizeof *g), *cpu = malloc(plane * sizeof *cpu);
    if (!g || !cpu) {
        fprintf(stderr, "cannot allocate two images of %zu bytes\n", plane * sizeof *g);
        return 2;
    }
    double tg = 0.0, tc = 0.0;
    if (!cpu_only && compute(&c, "gpu", g, &tg) != PSFSIM_OK) return 2;
    if (compute(&c, "cpu", cpu, &tc) != PSFSIM_OK) return 2;
    if (cpu_only) memcpy(g, cpu, plane * sizeof *g); /* the layout's check alone */
    int rc = compare(&c, g, cpu);
    free(g);
    free(cpu);
    return rc;
}
