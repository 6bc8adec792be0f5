/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA backend against the CPU backend: the same images (relative L2
 * <= 1e-5) for every shipped config, odd, even and prime grid sizes, random
 * Zernike sets, a broadband set, output buffers poisoned with NaN, plans
 * reused across runs and batch sizes, and injected CUDA faults (every
 * checked call in turn fails cleanly and a fresh backend works after).
 * Large grids keep their field buffer's zeros through the out-of-place FFT
 * (the same bits for the same job, whatever ran before). Device selection:
 * device 0 named, a device that is not there refused, a backend created on
 * one thread and driven from others, and two backends on devices 0 and 1
 * giving the same images (skipped with fewer than two devices).
 * Skipped (exit 77) when psfsim has no GPU backend or no CUDA device. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "app/config/config.h"
#include "app/formats/fits.h"
#include "app/select/gpu.h"
#include "app/set/image_set.h"
#include "tests/support/psf_harness.h"
#include "tests/support/testutil.h"

#define TOL 1e-5

static const psf_backend_ops *gpu;

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

/* All images of cfg on the CPU and on the GPU agree to TOL; returns the
 * worst relative L2 difference. */
static double compare_all(const char *what, const char *cfg)
{
    long long n_cpu = 0, n_gpu = 0;
    int npix_cpu = 0, npix_gpu = 0;
    float *cpu = harness_compute_all(cfg, NULL, &n_cpu, &npix_cpu);
    float *gpuimg = harness_compute_all(cfg, gpu, &n_gpu, &npix_gpu);
    assert_non_null(cpu);
    assert_non_null(gpuimg);
    assert_int_equal(n_cpu, n_gpu);
    assert_int_equal(npix_cpu, npix_gpu);
    size_t plane = (size_t)npix_cpu * npix_cpu;
    double worst = 0.0;
    for (long long k = 0; k < n_cpu; ++k) {
        double d = tu_rel_l2(gpuimg + k * plane, cpu + k * plane, plane);
        if (!(d <= worst)) worst = d; /* NaN sticks */
    }
    printf("%-40s N=%-4d %3lld image(s): worst rel L2 %.3g\n", what, npix_cpu, n_cpu, worst);
    assert_true(worst <= TOL);
    free(cpu);
    free(gpuimg);
    return worst;
}

/* Every shipped config. */
static void test_shipped_configs(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/configs", tu_source_dir());
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int count = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".cfg") != 0) continue;
        char path[8300];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *text = read_text(path);
        assert_non_null(text);
        compare_all(e->d_name, text);
        free(text);
        ++count;
    }
    closedir(d);
    assert_true(count >= 1);
}

#define BASE                                                                                       \
    "name = \"t\"; optics: { wavelength_nm = 600; aperture: { diameter_m = 2.0; %s }; };"          \
    " sampling: { pupil_samples = %d; padding = %.6f; }; %s"

/* Odd, even and prime N, N with large prime factors, all aperture features. */
static void test_grid_sizes(void **state)
{
    (void)state;
    static const struct {
        int n;
        double q;
        const char *aperture, *extra;
    } cases[] = {
        {64, 2.0, "", "aberrations: { zernike = ( (4, 0.2), (8, 0.05) ); };"},        /* N = 128 */
        {63, 1.0, "obscuration = 0.3;", "aberrations: { zernike = ( (5, 0.1) ); };"}, /* 63 */
        {61, 2.0, "shape = \"hexagon\";", "aberrations: { zernike = ( (7, -0.1) ); };"}, /* 122 */
        {50, 2.02, "obscuration = 0.2; spiders: { count = 3; width_m = 0.05; angle_deg = 10; };",
         "aberrations: { zernike = ( (2, 0.3), (3, -0.2), (11, 0.1) ); };"},          /* 101 */
        {37, 3.0, "edge = \"binary\";", "sweep: { defocus = [0.0, 0.5, 1.0]; };"},    /* 111 */
        {40, 1.5, "", "normalization = \"sum\"; sweep: { defocus = [-0.3, 0.3]; };"}, /* 60 */
        {16, 1.0, "", ""},                                                            /* 16 */
        {9, 1.0, "", "aberrations: { zernike = ( (6, 0.2) ); };"},                    /* 9 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char what[64];
        snprintf(what, sizeof what, "n=%d padding=%g", cases[i].n, cases[i].q);
        compare_all(what,
                    tu_format(BASE, cases[i].aperture, cases[i].n, cases[i].q, cases[i].extra));
    }
}

/* Random Zernike sets, a fresh seed per run (printed, so a failure can be
 * replayed with PSFSIM_TEST_SEED). */
static void test_random_zernike(void **state)
{
    (void)state;
    const char *env = getenv("PSFSIM_TEST_SEED");
    unsigned long seed =
        env ? strtoul(env, NULL, 10) : (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16);
    printf("random Zernike seed %lu (PSFSIM_TEST_SEED=%lu replays it)\n", seed, seed);
    srand((unsigned)seed);
    for (int set = 0; set < 3; ++set) {
        char terms[2048] = "";
        int nterm = 10 + rand() % 11;
        int js[45]; /* distinct terms: a shuffle of Noll 1..45 */
        for (int i = 0; i < 45; ++i)
            js[i] = i + 1;
        for (int i = 44; i > 0; --i) {
            int r = rand() % (i + 1), tmp = js[i];
            js[i] = js[r];
            js[r] = tmp;
        }
        for (int t = 0; t < nterm; ++t) {
            int j = js[t];
            double c = (rand() / (double)RAND_MAX - 0.5) * 0.6;
            size_t len = strlen(terms);
            snprintf(terms + len, sizeof terms - len, "%s(%d, %.5f)", t ? ", " : "", j, c);
        }
        char extra[2300];
        snprintf(extra, sizeof extra, "aberrations: { zernike = ( %s ); };", terms);
        printf("  set %d: %s\n", set, terms);
        compare_all("random Zernike set", tu_format(BASE, set == 1 ? "obscuration = 0.25;" : "", 96,
                                                    2.0 + 0.5 * set, extra));
    }
}

/* Several wavelengths per image: several pupils of different pitch. */
static void test_broadband(void **state)
{
    (void)state;
    compare_all("broadband 3 wavelengths",
                "name = \"bb\"; optics: { wavelengths_nm = [480.0, 550.0, 700.0];"
                " weights = [0.2, 0.5, 0.3]; aperture: { diameter_m = 1.0; obscuration = 0.2; };"
                " }; sampling: { pupil_samples = 64; padding = 2.5; };"
                " aberrations: { zernike = ( (4, 0.1), (9, 0.05) ); };"
                " sweep: { defocus = [0.0, 0.2, 0.4, 0.6, 0.8]; };");
}

/* A transmission map (aperture shape "file") and an OPD map, both FITS, on
 * a broadband set: the maps are sampled on the device with map_bilinear;
 * then placed at pixel scales (a monochromatic set). */
static void test_maps(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("gpu_maps");
    assert_non_null(dir);
    char tpath[4200], opath[4200], err[1024];
    snprintf(tpath, sizeof tpath, "%s/pupil.fits", dir);
    snprintf(opath, sizeof opath, "%s/opd.fits", dir);
    enum { MT = 64, MO = 48 };
    static float tm[MT * MT], om[MO * MO];
    for (int r = 0; r < MT; ++r)
        for (int c = 0; c < MT; ++c) {
            double x = (c + 0.5) / MT - 0.5, y = (r + 0.5) / MT - 0.5;
            tm[r * MT + c] =
                x * x + y * y < 0.25 ? (float)(0.6 + 0.4 * sin(7.0 * x) * cos(5.0 * y)) : 0.0f;
        }
    for (int r = 0; r < MO; ++r)
        for (int c = 0; c < MO; ++c) {
            double x = (c + 0.5) / MO - 0.5, y = (r + 0.5) / MO - 0.5;
            om[r * MO + c] = (float)(80.0 * sin(9.0 * x) * cos(6.0 * y) + 30.0 * x);
        }
    assert_int_equal(psf_fits_write_image(tpath, tm, MT, NULL, 0, err, sizeof err), 0);
    assert_int_equal(psf_fits_write_image(opath, om, MO, NULL, 0, err, sizeof err), 0);
    compare_all(
        "maps: transmission file + OPD map",
        tu_format("name = \"maps\"; optics: { wavelengths_nm = [500.0, 650.0];"
                  " aperture: { shape = \"file\"; file = \"%s\"; diameter_m = 1.0;"
                  " obscuration = 0.1; spiders: { count = 3; width_m = 0.02; angle_deg = 30; };"
                  " }; }; sampling: { pupil_samples = 60; padding = 2.0; };"
                  " aberrations: { zernike = ( (5, 0.05) ); opd_map: { file = \"%s\";"
                  " units = \"nm\"; }; }; sweep: { defocus = [0.0, 0.3]; };",
                  tpath, opath));
    /* The same maps placed at pixel scales (app/set/map_place.h): larger
     * than D, centred; the device samples them with map_bilinear_wh. */
    compare_all("maps placed at a pixel scale",
                tu_format("name = \"placed\"; optics: { wavelength_nm = 600.0;"
                          " aperture: { shape = \"file\"; file = \"%s\"; diameter_m = 1.0;"
                          " pixel_scale_m = 0.0208333; }; }; sampling: { pupil_samples = 60; };"
                          " aberrations: { opd_map: { file = \"%s\"; units = \"nm\";"
                          " pixel_scale_m = 0.025; }; };",
                          tpath, opath));
    tu_rmtree(dir);
    free(dir);
}

/* Pupils kept without their Zernike basis (as when it would not fit the
 * device): the field kernel evaluates zernike_eval itself. */
static void test_no_basis(void **state)
{
    (void)state;
    setenv("PSFSIM_GPU_BASIS_MAX_MB", "0", 1);
    compare_all(
        "no basis (zernike_eval per image)",
        tu_format(BASE, "obscuration = 0.3;", 80, 2.0,
                  "aberrations: { zernike = ( (4, 0.2), (7, -0.1), (12, 0.05), (22, 0.03) ); };"
                  " sweep: { defocus = [0.0, 0.4, 0.8]; };"));
    unsetenv("PSFSIM_GPU_BASIS_MAX_MB");
}

/* Per-segment terms (optics/seg_wavefront.h): the device's segment index
 * and segment basis per sample against the CPU's, FFT and MFT, with and
 * without the stored global basis, fixed and swept terms beside global
 * ones, a rotated array with a missing segment. */
#define SEGMENTED                                                                                  \
    "name = \"t\"; optics: { wavelength_nm = 800; aperture: { shape = \"segmented\";"              \
    " segments: { flat_to_flat_m = 1.0; gap_m = 0.02; rings = 2; missing = [0, 9];"                \
    " angle_deg = 7.0; zernike = ( (1, 1, 0.5), (3, 1, 0.5), (5, 1, 0.5), (7, 2, 0.1),"            \
    " (8, 3, -0.1), (12, 4, 0.05), (18, 11, 0.03) ); }; }; };"                                     \
    " aberrations: { zernike = ( (4, 0.1), (6, -0.05) ); };"                                       \
    " sampling: { pupil_samples = %d; padding = 2.0; }; %s"                                        \
    " sweep: { segment_zernike = ( (2, 1, [0.0, 0.25]), (14, 3, [0.2]) ); };"

static void test_segment_terms(void **state)
{
    (void)state;
    compare_all("segment terms, FFT", tu_format(SEGMENTED, 96, ""));
    compare_all("segment terms, MFT", tu_format(SEGMENTED, 90, "output: { npix = 100; };"));
    setenv("PSFSIM_GPU_BASIS_MAX_MB", "0", 1);
    compare_all("segment terms, no basis", tu_format(SEGMENTED, 96, ""));
    unsetenv("PSFSIM_GPU_BASIS_MAX_MB");
}

/* A config loaded for calling a backend's ops directly. */
typedef struct {
    psf_config cfg;
    image_set set;
    psf_problem desc;
    double *storage;
    psf_job *jobs;
    image_info *infos;
    int nimages, npix;
    size_t plane;
} loaded;

static void load(loaded *l, const char *text, int max_batch)
{
    memset(l, 0, sizeof *l);
    char err[1024], path[4200];
    char *dir = tu_mkdtemp("gpu_test");
    assert_non_null(dir);
    snprintf(path, sizeof path, "%s/t.cfg", dir);
    assert_int_equal(tu_write_file(path, text), 0);
    int rc = config_load(path, &l->cfg, err, sizeof err);
    if (rc == 0) rc = image_set_init(&l->set, &l->cfg, err, sizeof err);
    tu_rmtree(dir);
    free(dir);
    if (rc != 0) printf("load: %s\n", err);
    assert_int_equal(rc, 0);
    l->nimages = (int)l->set.nimages;
    l->npix = l->set.samp.npix;
    l->plane = (size_t)l->npix * l->npix;
    image_set_problem(&l->set, max_batch, &l->desc);
    size_t per = image_set_storage(&l->set);
    l->storage = calloc((size_t)l->nimages * per + 1, sizeof *l->storage);
    l->jobs = calloc((size_t)l->nimages, sizeof *l->jobs);
    l->infos = calloc((size_t)l->nimages, sizeof *l->infos);
    assert_true(l->storage && l->jobs && l->infos);
    for (int k = 0; k < l->nimages; ++k)
        assert_int_equal(image_set_job(&l->set, k, l->storage + (size_t)k * per, &l->jobs[k],
                                       &l->infos[k], err, sizeof err),
                         0);
}

static void unload(loaded *l)
{
    free(l->storage);
    free(l->jobs);
    free(l->infos);
    image_set_free(&l->set);
    config_free(&l->cfg);
}

/* Run all images of l through backend b in runs of `per` jobs into images. */
static int run_in_batches(const psf_backend_ops *ops, psf_backend *b, const loaded *l, int per,
                          float *images, char *err, size_t errlen)
{
    for (int k0 = 0; k0 < l->nimages; k0 += per) {
        int n = l->nimages - k0 < per ? l->nimages - k0 : per;
        if (ops->run(b, l->jobs + k0, n, images + (size_t)k0 * l->plane, err, errlen) != 0)
            return -1;
    }
    return 0;
}

static void fill_nan(float *p, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        p[i] = NAN;
}

static const char *REUSE_CFG =
    "name = \"reuse\"; optics: { wavelength_nm = 633; aperture: { diameter_m = 1.0;"
    " obscuration = 0.1; spiders: { count = 4; width_m = 0.02; angle_deg = 0; }; }; };"
    " sampling: { pupil_samples = 48; padding = 2.0; };"
    " aberrations: { zernike = ( (6, 0.05), (11, 0.03) ); };"
    " sweep: { defocus = [-0.4, -0.2, 0.0, 0.2, 0.4, 0.6, 0.8]; };";

/* Direct ops calls into pinned buffers poisoned with NaN; one backend for
 * runs of 1, 3 and all images, twice each; equal to a fresh backend's
 * images and to the CPU's. */
static void test_poison_and_reuse(void **state)
{
    (void)state;
    loaded l;
    load(&l, REUSE_CFG, 8);
    size_t total = (size_t)l.nimages * l.plane;
    char err[1024];
    long long n_cpu;
    int npix_cpu;
    float *cpu = harness_compute_all(REUSE_CFG, NULL, &n_cpu, &npix_cpu);
    assert_non_null(cpu);
    psf_backend *b = NULL;
    assert_int_equal(gpu->create(&l.desc, NULL, &b, err, sizeof err), 0);
    float *img = gpu->alloc_images(b, total);
    float *first = malloc(total * sizeof *first);
    assert_non_null(img);
    assert_non_null(first);
    static const int pers[] = {1, 3, 8, 3, 1, 8, 2};
    for (size_t i = 0; i < sizeof pers / sizeof pers[0]; ++i) {
        fill_nan(img, total);
        int rc = run_in_batches(gpu, b, &l, pers[i], img, err, sizeof err);
        if (rc != 0) printf("run: %s\n", err);
        assert_int_equal(rc, 0);
        for (size_t p = 0; p < total; ++p)
            if (!isfinite(img[p])) fail_msg("batch %d: pixel %zu is %g", pers[i], p, img[p]);
        double d_cpu = tu_rel_l2(img, cpu, total);
        if (i == 0) memcpy(first, img, total * sizeof *first);
        double d_first = tu_rel_l2(img, first, total);
        printf("runs of %d: rel L2 %.3g to the CPU, %.3g to the first run\n", pers[i], d_cpu,
               d_first);
        assert_true(d_cpu <= TOL);
        assert_true(d_first <= 1e-6);
        if (pers[i] == 1 && i > 0) /* the same plan again: the same bits */
            assert_memory_equal(img, first, total * sizeof *img);
    }
    gpu->free_images(b, img);
    gpu->destroy(b);
    /* A fresh backend, runs of 3: the same bits as the reused one gave. */
    assert_int_equal(gpu->create(&l.desc, NULL, &b, err, sizeof err), 0);
    float *again = malloc(total * sizeof *again), *reused = malloc(total * sizeof *reused);
    assert_true(again && reused);
    fill_nan(again, total);
    assert_int_equal(run_in_batches(gpu, b, &l, 3, again, err, sizeof err), 0);
    fill_nan(reused, total);
    assert_int_equal(run_in_batches(gpu, b, &l, 3, reused, err, sizeof err), 0);
    assert_memory_equal(again, reused, total * sizeof *again);
    assert_true(tu_rel_l2(again, first, total) <= 1e-6);
    gpu->destroy(b);
    free(again);
    free(reused);
    free(first);
    free(cpu);
    unload(&l);
}

static const char *FAULT_CFG =
    "name = \"fault\"; optics: { wavelengths_nm = [500.0, 600.0]; aperture: { diameter_m = 1.0;"
    " obscuration = 0.2; }; }; sampling: { pupil_samples = 32; padding = 2.0; };"
    " aberrations: { zernike = ( (4, 0.1) ); }; sweep: { defocus = [0.0, 0.1, 0.2, 0.3, 0.4]; };";

/* One create + runs of 4 and 1 (batched and single-image paths) + destroy
 * with PSFSIM_GPU_FAIL_AT=n. Returns 1 when something failed (with the
 * injected-fault message, checked here), 0 when all succeeded. */
static int fault_once(const loaded *l, long long n, float *images)
{
    char val[32], err[1024] = "", want[64];
    snprintf(val, sizeof val, "%lld", n);
    setenv("PSFSIM_GPU_FAIL_AT", val, 1);
    snprintf(want, sizeof want, "injected fault at CUDA call %lld (", n);
    psf_backend *b = NULL;
    int rc = gpu->create(&l->desc, NULL, &b, err, sizeof err);
    unsetenv("PSFSIM_GPU_FAIL_AT");
    const char *where = "create";
    if (rc == 0) {
        assert_non_null(b);
        where = "run";
        fill_nan(images, (size_t)l->nimages * l->plane);
        rc = run_in_batches(gpu, b, l, 4, images, err, sizeof err);
        gpu->destroy(b);
    } else {
        assert_null(b);
    }
    if (rc == 0) return 0;
    if (!strstr(err, want)) fail_msg("FAIL_AT=%lld: %s failed with \"%s\"", n, where, err);
    if (n <= 20 || n % 10 == 0) printf("FAIL_AT=%lld: %s: %s\n", n, where, err);
    return 1;
}

/* Every checked call in turn fails cleanly (create or run returns -1 with
 * the injected-fault message, nothing crashes); past the last call all
 * succeed, and a fresh backend without the variable is correct. */
static void test_fault_injection(void **state)
{
    (void)state;
    loaded l;
    load(&l, FAULT_CFG, 4);
    size_t total = (size_t)l.nimages * l.plane;
    float *images = malloc(total * sizeof *images);
    assert_non_null(images);
    static const long long listed[] = {1, 2, 5, 10, 20};
    for (size_t i = 0; i < sizeof listed / sizeof listed[0]; ++i)
        assert_int_equal(fault_once(&l, listed[i], images), 1);
    long long n = 1;
    while (n < 1000 && fault_once(&l, n, images))
        ++n;
    printf("the sequence makes %lld checked CUDA calls; each one failed cleanly in turn\n", n - 1);
    assert_true(n > 20 && n < 1000);
    /* Afterwards, without the variable: right images. */
    char err[1024];
    psf_backend *b = NULL;
    assert_int_equal(gpu->create(&l.desc, NULL, &b, err, sizeof err), 0);
    fill_nan(images, total);
    assert_int_equal(run_in_batches(gpu, b, &l, 4, images, err, sizeof err), 0);
    gpu->destroy(b);
    long long n_cpu;
    int npix_cpu;
    float *cpu = harness_compute_all(FAULT_CFG, NULL, &n_cpu, &npix_cpu);
    assert_non_null(cpu);
    double d = tu_rel_l2(images, cpu, total);
    printf("after the faults, a fresh backend: rel L2 %.3g to the CPU\n", d);
    assert_true(d <= TOL);
    free(cpu);
    free(images);
    unload(&l);
}

/* Same bits, printed where they differ first. */
static void assert_same_bits(const float *a, const float *b, size_t n, const char *what)
{
    if (memcmp(a, b, n * sizeof *a) == 0) return;
    size_t i = 0;
    while (i < n && memcmp(a + i, b + i, sizeof *a) == 0)
        ++i;
    fail_msg("%s: pixel %zu differs: %.9g vs %.9g", what, i, a[i], b[i]);
}

/* A set without a config: N x N, an obscured circular pupil of n = N/2
 * samples across D = 1 m, four Zernike modes (as bench/gpu_micro.cu). */
static int g_mode_n[4] = {2, 2, 3, 4}, g_mode_m[4] = {0, 2, 1, 0};

static void direct_desc(int npix, int max_batch, psf_problem *d)
{
    memset(d, 0, sizeof *d);
    d->npix = npix;
    d->aperture.shape = APERTURE_CIRCULAR;
    d->aperture.diameter_m = 1.0;
    d->aperture.obscuration = 0.3;
    d->modes.nterms = 4;
    d->modes.n = g_mode_n;
    d->modes.m = g_mode_m;
    d->max_batch = max_batch;
    d->nimages = 1000;
}

static void direct_job(psf_job *job, int npix, const double *coeff)
{
    memset(job, 0, sizeof *job);
    job->ncomp = 1;
    job->comp[0].wavelength_m = 500e-9;
    job->comp[0].dx_m = 2.0 / npix;
    job->comp[0].scale = 1e-9;
    job->comp[0].coeff_waves = coeff;
}

/* The FFT is out of place so that the field buffer keeps its zeros and the
 * field kernel writes only the open samples once a slot holds the pupil.
 * If cuFFT wrote into its input (it documents that for complex-to-real
 * transforms only), a job run after another would differ from the same job
 * run first: at large N (multi-pass transforms) and a non-power of 2, on
 * the single-image (graph) and the batched paths, the image of job A is the
 * same bits after A' and after A again, and as a fresh backend's. */
static void test_input_kept(void **state)
{
    (void)state;
    static const int sizes[] = {4096, 3000, 2048};
    static const double ca[4] = {0.05, -0.1, 0.08, 0.2}, cb[4] = {-0.2, 0.15, 0.0, -0.05};
    char err[1024];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
        int npix = sizes[i];
        size_t plane = (size_t)npix * npix;
        psf_problem d;
        direct_desc(npix, 2, &d);
        psf_job jobs[3];
        direct_job(&jobs[0], npix, ca);
        direct_job(&jobs[1], npix, cb);
        jobs[2] = jobs[0];
        psf_backend *b = NULL;
        int rc = gpu->create(&d, NULL, &b, err, sizeof err);
        if (rc != 0) printf("create: %s\n", err);
        assert_int_equal(rc, 0);
        float *img = gpu->alloc_images(b, 3 * plane), *first = malloc(plane * sizeof *first);
        assert_true(img && first);
        /* Single-image runs: A (whole grid written), A' (open samples), A. */
        for (int k = 0; k < 3; ++k)
            assert_int_equal(gpu->run(b, &jobs[k], 1, img + (size_t)k * plane, err, sizeof err), 0);
        memcpy(first, img, plane * sizeof *first);
        assert_same_bits(img + 2 * plane, first, plane, "A after A' (one image per run)");
        /* Batched runs (sub-batches of one at these sizes). */
        fill_nan(img, 3 * plane);
        assert_int_equal(gpu->run(b, jobs, 3, img, err, sizeof err), 0);
        assert_same_bits(img, first, plane, "A (batched)");
        assert_same_bits(img + 2 * plane, first, plane, "A after A' (batched)");
        gpu->free_images(b, img);
        gpu->destroy(b);
        /* A fresh backend's A: the same bits. */
        assert_int_equal(gpu->create(&d, NULL, &b, err, sizeof err), 0);
        float *fresh = malloc(plane * sizeof *fresh);
        assert_non_null(fresh);
        assert_int_equal(gpu->run(b, &jobs[0], 1, fresh, err, sizeof err), 0);
        gpu->destroy(b);
        assert_same_bits(fresh, first, plane, "a fresh backend's A");
        double peak = 0.0;
        for (size_t p = 0; p < plane; ++p)
            peak = fmax(peak, first[p]);
        printf("N = %d: the same bits for A first, after A', batched and fresh (peak %.6g)\n", npix,
               peak);
        assert_true(peak > 0.0);
        free(fresh);
        free(first);
    }
}

/* Calls of a backend from a thread of its own. */
typedef struct {
    int what; /* 0 create, 1 run in batches, 2 destroy */
    psf_problem desc;
    psf_backend_options opt;
    psf_backend *b;
    const loaded *l;
    int per;
    float *img;
    int rc;
    char err[1024];
} thread_call;

static void *thread_main(void *arg)
{
    thread_call *t = arg;
    if (t->what == 0)
        t->rc = gpu->create(&t->desc, &t->opt, &t->b, t->err, sizeof t->err);
    else if (t->what == 1)
        t->rc = run_in_batches(gpu, t->b, t->l, t->per, t->img, t->err, sizeof t->err);
    else
        gpu->destroy(t->b);
    return NULL;
}

static void on_thread(thread_call *t)
{
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, thread_main, t), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
}

/* device = 0 named: a backend created on one thread, run on this one and
 * on another, destroyed on a third, gives the CPU's images; a device that
 * is not there is refused with a message naming it. */
static void test_device_selection(void **state)
{
    (void)state;
    loaded l;
    load(&l, REUSE_CFG, 8);
    size_t total = (size_t)l.nimages * l.plane;
    long long n_cpu;
    int npix_cpu;
    float *cpu = harness_compute_all(REUSE_CFG, NULL, &n_cpu, &npix_cpu);
    assert_non_null(cpu);
    thread_call t;
    memset(&t, 0, sizeof t);
    t.desc = l.desc;
    t.opt.device = 0;
    on_thread(&t);
    if (t.rc != 0) printf("create on a thread: %s\n", t.err);
    assert_int_equal(t.rc, 0);
    psf_backend *b = t.b;
    float *img = gpu->alloc_images(b, total), *other = malloc(total * sizeof *other);
    assert_true(img && other);
    char err[1024];
    fill_nan(img, total);
    assert_int_equal(run_in_batches(gpu, b, &l, 3, img, err, sizeof err), 0);
    double d = tu_rel_l2(img, cpu, total);
    printf("device 0, created on another thread: rel L2 %.3g to the CPU\n", d);
    assert_true(d <= TOL);
    t.what = 1;
    t.l = &l;
    t.per = 3;
    t.img = other;
    fill_nan(other, total);
    on_thread(&t);
    assert_int_equal(t.rc, 0);
    assert_same_bits(other, img, total, "run on another thread");
    gpu->free_images(b, img);
    t.what = 2;
    on_thread(&t);
    static const int bad[] = {99, -1};
    for (int i = 0; i < 2; ++i) {
        psf_backend_options dd = {.device = bad[i]};
        psf_backend *nb = NULL;
        assert_int_equal(gpu->create(&l.desc, &dd, &nb, err, sizeof err), -1);
        assert_null(nb);
        printf("device %d: %s\n", bad[i], err);
        char want[64];
        snprintf(want, sizeof want, "CUDA device %d asked for", bad[i]);
        assert_non_null(strstr(err, want));
    }
    free(other);
    free(cpu);
    unload(&l);
}

/* Two backends on devices 0 and 1 in one process: the same images, run one
 * after the other from this thread and at the same time from two threads.
 * Skipped with fewer than two devices. */
static void test_two_devices(void **state)
{
    (void)state;
    loaded l;
    load(&l, REUSE_CFG, 8);
    size_t total = (size_t)l.nimages * l.plane;
    char err[1024];
    psf_backend *b[2] = {NULL, NULL};
    for (int dev = 0; dev < 2; ++dev) {
        psf_backend_options d = {.device = dev};
        if (gpu->create(&l.desc, &d, &b[dev], err, sizeof err) != 0) {
            printf("device %d: %s\n", dev, err);
            assert_true(dev == 1 && strstr(err, "asked for, but"));
            gpu->destroy(b[0]);
            unload(&l);
            skip(); /* one device: nothing to compare */
        }
    }
    float *img[2], *again[2];
    for (int dev = 0; dev < 2; ++dev) {
        img[dev] = gpu->alloc_images(b[dev], total);
        again[dev] = gpu->alloc_images(b[dev], total);
        assert_true(img[dev] && again[dev]);
    }
    for (int round = 0; round < 2; ++round) /* alternate devices from this thread */
        for (int dev = 0; dev < 2; ++dev) {
            fill_nan(img[dev], total);
            assert_int_equal(run_in_batches(gpu, b[dev], &l, 3, img[dev], err, sizeof err), 0);
        }
    assert_same_bits(img[1], img[0], total, "device 1 vs device 0");
    thread_call t[2];
    pthread_t th[2];
    for (int dev = 0; dev < 2; ++dev) {
        memset(&t[dev], 0, sizeof t[dev]);
        t[dev].what = 1;
        t[dev].b = b[dev];
        t[dev].l = &l;
        t[dev].per = 3;
        t[dev].img = again[dev];
        fill_nan(again[dev], total);
        assert_int_equal(pthread_create(&th[dev], NULL, thread_main, &t[dev]), 0);
    }
    for (int dev = 0; dev < 2; ++dev) {
        assert_int_equal(pthread_join(th[dev], NULL), 0);
        assert_int_equal(t[dev].rc, 0);
        assert_same_bits(again[dev], img[0], total, "concurrent runs on two devices");
    }
    printf("devices 0 and 1: the same bits, one after the other and at the same time\n");
    for (int dev = 0; dev < 2; ++dev) {
        gpu->free_images(b[dev], img[dev]);
        gpu->free_images(b[dev], again[dev]);
        gpu->destroy(b[dev]);
    }
    unload(&l);
}

int main(void)
{
    unsetenv("PSFSIM_GPU_FAIL_AT");
    unsetenv("PSFSIM_GPU_BASIS_MAX_MB");
    char why[1100];
    if (!(gpu = harness_gpu(why, sizeof why))) { /* tests/support/psf_harness.h */
        printf("skipped: %s\n", why);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_configs),
        cmocka_unit_test(test_grid_sizes),
        cmocka_unit_test(test_random_zernike),
        cmocka_unit_test(test_broadband),
        cmocka_unit_test(test_maps),
        cmocka_unit_test(test_no_basis),
        cmocka_unit_test(test_segment_terms),
        cmocka_unit_test(test_poison_and_reuse),
        cmocka_unit_test(test_fault_injection),
        cmocka_unit_test(test_input_kept),
        cmocka_unit_test(test_device_selection),
        cmocka_unit_test(test_two_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
