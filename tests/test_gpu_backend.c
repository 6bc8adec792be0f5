/* The CUDA backend against the CPU backend: the same images (relative L2
 * <= 1e-5) for every shipped config, odd, even and prime grid sizes, random
 * Zernike sets, a broadband set, output buffers poisoned with NaN, plans
 * reused across runs and batch sizes, and injected CUDA faults (every
 * checked call in turn fails cleanly and a fresh backend works after).
 * Skipped (exit 77) when psfsim has no GPU backend or no CUDA device. */
#include <dirent.h>
#include <math.h>
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

#include "app/backend.h"
#include "app/config.h"
#include "app/fits_io.h"
#include "app/image_set.h"
#include "psf_harness.h"
#include "testutil.h"

#define TOL 1e-5

static const psf_backend_ops *gpu;

static char *fmt(const char *f, ...)
{
    static char buf[8192];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

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
        compare_all(what, fmt(BASE, cases[i].aperture, cases[i].n, cases[i].q, cases[i].extra));
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
        compare_all("random Zernike set",
                    fmt(BASE, set == 1 ? "obscuration = 0.25;" : "", 96, 2.0 + 0.5 * set, extra));
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
 * a broadband set: the maps are sampled on the device with map_bilinear. */
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
    compare_all("maps: transmission file + OPD map",
                fmt("name = \"maps\"; optics: { wavelengths_nm = [500.0, 650.0];"
                    " aperture: { shape = \"file\"; file = \"%s\"; diameter_m = 1.0;"
                    " obscuration = 0.1; spiders: { count = 3; width_m = 0.02; angle_deg = 30; };"
                    " }; }; sampling: { pupil_samples = 60; padding = 2.0; };"
                    " aberrations: { zernike = ( (5, 0.05) ); opd_map: { file = \"%s\";"
                    " units = \"nm\"; }; }; sweep: { defocus = [0.0, 0.3]; };",
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
    compare_all("no basis (zernike_eval per image)",
                fmt(BASE, "obscuration = 0.3;", 80, 2.0,
                    "aberrations: { zernike = ( (4, 0.2), (7, -0.1), (12, 0.05), (22, 0.03) ); };"
                    " sweep: { defocus = [0.0, 0.4, 0.8]; };"));
    unsetenv("PSFSIM_GPU_BASIS_MAX_MB");
}

/* A config loaded for calling a backend's ops directly. */
typedef struct {
    psf_config cfg;
    image_set set;
    psf_set_desc desc;
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
    image_set_desc(&l->set, max_batch, &l->desc);
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
    assert_int_equal(gpu->create(&l.desc, &b, err, sizeof err), 0);
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
    assert_int_equal(gpu->create(&l.desc, &b, err, sizeof err), 0);
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
    int rc = gpu->create(&l->desc, &b, err, sizeof err);
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
    assert_int_equal(gpu->create(&l.desc, &b, err, sizeof err), 0);
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

/* Is there a GPU to test? why says what is missing. */
static int gpu_present(char *why, size_t whylen)
{
    gpu = psf_backend_gpu();
    if (!gpu) {
        snprintf(why, whylen, "psfsim was built without the CUDA backend");
        return 0;
    }
    psf_set_desc d;
    memset(&d, 0, sizeof d);
    d.npix = 16;
    d.aperture.shape = APERTURE_CIRCULAR;
    d.aperture.diameter_m = 1.0;
    d.max_batch = 1;
    d.nimages = 1;
    psf_backend *b = NULL;
    char err[1024];
    if (gpu->create(&d, &b, err, sizeof err) == 0) {
        gpu->destroy(b);
        return 1;
    }
    snprintf(why, whylen, "%s", err);
    /* Any other failure is a test failure, not a skip. */
    return strstr(err, "no CUDA device") ? 0 : 1;
}

int main(void)
{
    unsetenv("PSFSIM_GPU_FAIL_AT");
    unsetenv("PSFSIM_GPU_BASIS_MAX_MB");
    char why[1100];
    if (!gpu_present(why, sizeof why)) {
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
        cmocka_unit_test(test_poison_and_reuse),
        cmocka_unit_test(test_fault_injection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
