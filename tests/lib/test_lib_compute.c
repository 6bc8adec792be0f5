/* SPDX-License-Identifier: BSD-3-Clause */
/* libpsfsim's computing (lib/psfsim.h): the images are the command's FITS
 * pixels and PNG levels, a cancel mid-set stops after the batch in
 * flight, two sets computed at once in two threads give the images
 * they give one after the other, and a GPU's first compute into a fresh
 * buffer (pre-faulted while the GPU starts) gives the images it gives into
 * a touched one and the CPU's; psfsim_compute_u16 by run_levels (issue 17)
 * gives its float path's levels and metrics, and a lane's two slots
 * overlapping (the default; PSFSIM_TEST_OVERLAP=off: one slot) the images
 * and metrics of one batch at a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fitsio.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/formats/png_io.h"
#include "lib/psfsim.h"
#include "tests/support/testutil.h"

/* Config text head followed by a defocus sweep of count values from
 * first on, 0.005 apart, into text[size]. */
static char *defocus_text(char *text, size_t size, const char *head, int count, double first)
{
    int n = snprintf(text, size, "%ssweep: { defocus = [", head);
    for (int i = 0; i < count; ++i)
        n += snprintf(text + n, size - (size_t)n, "%s%.4f", i ? ", " : "", first + i * 0.005);
    snprintf(text + n, size - (size_t)n, "]; };\n");
    return text;
}

/* 200 images of 64 x 64: four CPU batches of 64 or fewer. */
static char *many_text(void)
{
    static char text[8192];
    return defocus_text(text, sizeof text,
                        "name = \"many\";\n"
                        "optics: { wavelength_nm = 600.0; aperture: { diameter_m = 2.0; "
                        "obscuration = 0.3; spiders: { count = 3; width_m = 0.05; angle_deg = "
                        "10.0; }; }; };\n"
                        "sampling: { pupil_samples = 32; };\n",
                        200, -0.5);
}

static psfsim_set *open_text(const char *text)
{
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = "cpu";
    o.threads = 2; /* the CPU's batch of 64 (two slots of 32) on any machine (lib/lanes.c,
                    * cpu_batch) */
    psfsim_set *s = NULL;
    char err[1024] = "";
    if (psfsim_open_text(text, &o, &s, err, sizeof err) != PSFSIM_OK) fail_msg("open: %s", err);
    return s;
}

/* All of a set's images, malloc'd. */
static float *compute_all(psfsim_set *s, long long *count, int *npix)
{
    psfsim_info info;
    assert_int_equal(psfsim_describe(s, &info, NULL, 0), PSFSIM_OK);
    size_t n = (size_t)info.count * info.npix * info.npix;
    float *img = malloc(n * sizeof *img);
    assert_non_null(img);
    char err[512];
    if (psfsim_compute(s, 0, info.count, img, n, NULL, err, sizeof err) != PSFSIM_OK)
        fail_msg("compute: %s", err);
    *count = info.count;
    *npix = info.npix;
    return img;
}

static float *read_fits(const char *path, int npix)
{
    fitsfile *f = NULL;
    int status = 0, any = 0;
    float *img = malloc((size_t)npix * npix * sizeof *img);
    fits_open_file(&f, path, READONLY, &status);
    fits_read_img(f, TFLOAT, 1, (long long)npix * npix, NULL, img, &any, &status);
    fits_close_file(f, &status);
    if (status) fail_msg("cannot read %s (cfitsio status %d)", path, status);
    return img;
}

/* The command's FITS and PNG files of a set equal the library's floats
 * and levels bit for bit. */
static void test_equals_command(void **state)
{
    (void)state;
    const char *bin = getenv("PSFSIM_BIN");
    if (!bin) skip();
    char *dir = tu_mkdtemp("libcmd");
    const char *text = "name = \"cmd\";\n"
                       "optics: { wavelengths_nm = [500.0, 600.0]; f_number = 8.0;\n"
                       "  aperture: { diameter_m = 1.0; obscuration = 0.25; }; };\n"
                       "sampling: { pupil_samples = 48; padding = 2.5; };\n"
                       "aberrations: { zernike = ( (7, 0.04) ); };\n"
                       "sweep: { focus_shift_um = [-40.0, 0.0, 40.0]; };\n"
                       "output: { png: { bits = 16; stretch = \"log\"; dynamic_range = 1.0e5; };\n"
                       "  fits: { enabled = true; }; };\n";
    char cfg[4200], cmd[9000];
    snprintf(cfg, sizeof cfg, "%s/cmd.cfg", dir);
    assert_int_equal(tu_write_file(cfg, text), 0);
    snprintf(cmd, sizeof cmd, "'%s' -c '%s' -o '%s/out' -q --backend cpu", bin, cfg, dir);
    assert_int_equal(system(cmd), 0);
    psfsim_set *s = NULL;
    char err[512];
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = "cpu";
    assert_int_equal(psfsim_open_file(cfg, &o, &s, err, sizeof err), PSFSIM_OK);
    long long count;
    int npix;
    float *img = compute_all(s, &count, &npix);
    size_t plane = (size_t)npix * npix;
    uint16_t *lv = malloc(count * plane * sizeof *lv);
    assert_int_equal(psfsim_compute_u16(s, 0, count, lv, count * plane, NULL, err, sizeof err),
                     PSFSIM_OK);
    for (long long k = 0; k < count; ++k) {
        char path[4400];
        snprintf(path, sizeof path, "%s/out/cmd_%lld.fits", dir, k);
        float *ref = read_fits(path, npix);
        assert_memory_equal(ref, img + k * plane, plane * sizeof *ref);
        free(ref);
        snprintf(path, sizeof path, "%s/out/cmd_%lld.png", dir, k);
        float *grey = NULL;
        int rows, cols, maxval;
        assert_int_equal(psf_png_read_gray(path, &grey, &rows, &cols, &maxval, err, sizeof err), 0);
        assert_int_equal(rows, npix);
        for (size_t i = 0; i < plane; ++i)
            if (grey[i] != (float)lv[k * plane + i])
                fail_msg("image %lld pixel %zu: PNG %g, library %u", k, i, grey[i],
                         lv[k * plane + i]);
        free(grey);
    }
    free(img);
    free(lv);
    psfsim_close(s);
    tu_rmtree(dir);
    free(dir);
}

/* Cancel from the progress callback after the first batch. */
typedef struct {
    psfsim_set *s;
    int calls;
    long long last_done;
} progress_state;

static int cancel_after_one(long long done, long long total, void *user)
{
    progress_state *p = user;
    assert_int_equal(total, 200);
    p->calls++;
    p->last_done = done;
    psfsim_cancel(p->s);
    return 0;
}

static int count_only(long long done, long long total, void *user)
{
    progress_state *p = user;
    p->calls++;
    p->last_done = done;
    return done >= total / 2; /* a non-zero return cancels too */
}

static void test_cancel_mid_set(void **state)
{
    (void)state;
    psfsim_set *s = open_text(many_text());
    long long count;
    int npix;
    float *all = compute_all(s, &count, &npix);
    size_t plane = (size_t)npix * npix;
    float *img = calloc(count * plane, sizeof *img);
    progress_state p = {.s = s};
    psfsim_set_progress(s, cancel_after_one, &p);
    char err[512];
    assert_int_equal(psfsim_compute(s, 0, count, img, count * plane, NULL, err, sizeof err),
                     PSFSIM_ERR_CANCELLED);
    /* the first slot's 32 (lib/compute.c, lane_slots): the next, taken
     * ahead meanwhile, is dropped at the boundary (lib/engine/batch.c) */
    assert_string_equal(err, "cancelled after 32 of 200 image(s)");
    assert_int_equal(p.calls, 1);
    assert_memory_equal(img, all, 32 * plane * sizeof *img); /* the batch done is valid */
    /* The cancel was consumed: the next call runs to the end. */
    psfsim_set_progress(s, NULL, NULL);
    assert_int_equal(psfsim_compute(s, 10, 150, img, count * plane, NULL, err, sizeof err),
                     PSFSIM_OK);
    assert_memory_equal(img, all + 10 * plane, 150 * plane * sizeof *img);
    /* A cancel before a call stops it at once. */
    psfsim_cancel(s);
    assert_int_equal(psfsim_compute(s, 0, 5, img, count * plane, NULL, err, sizeof err),
                     PSFSIM_ERR_CANCELLED);
    assert_string_equal(err, "cancelled after 0 of 5 image(s)");
    /* The callback's own cancel. */
    progress_state q = {.s = s};
    psfsim_set_progress(s, count_only, &q);
    assert_int_equal(psfsim_compute(s, 0, count, img, count * plane, NULL, err, sizeof err),
                     PSFSIM_ERR_CANCELLED);
    assert_int_equal(q.calls, 4); /* 32, 64, 96, 128 >= 100: cancelled */
    assert_int_equal(q.last_done, 128);
    free(img);
    free(all);
    psfsim_close(s);
}

typedef struct {
    const char *text;
    float *img;
    long long count;
    int npix;
} thread_job;

static void *compute_thread(void *arg)
{
    thread_job *j = arg;
    psfsim_set *s = open_text(j->text);
    j->img = compute_all(s, &j->count, &j->npix);
    psfsim_close(s);
    return NULL;
}

static void test_two_sets_two_threads(void **state)
{
    (void)state;
    const char *other = "name = \"other\";\n"
                        "optics: { wavelength_nm = 800.0; aperture: { shape = \"hexagon\"; "
                        "diameter_m = 1.5; }; };\n"
                        "sampling: { pupil_samples = 40; padding = 3.0; };\n"
                        "sweep: { zernike = ( (5, [0.0, 0.05, 0.1, 0.15]), (9, [0.0, 0.1]) ); };\n";
    thread_job seq[2] = {{.text = many_text()}, {.text = other}};
    for (int i = 0; i < 2; ++i)
        compute_thread(&seq[i]);
    thread_job par[2] = {{.text = many_text()}, {.text = other}};
    pthread_t t[2];
    for (int i = 0; i < 2; ++i)
        assert_int_equal(pthread_create(&t[i], NULL, compute_thread, &par[i]), 0);
    for (int i = 0; i < 2; ++i)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; ++i) {
        assert_int_equal(par[i].count, seq[i].count);
        size_t n = (size_t)seq[i].count * seq[i].npix * seq[i].npix;
        assert_memory_equal(par[i].img, seq[i].img, n * sizeof(float));
        free(par[i].img);
        free(seq[i].img);
    }
}

/* 320 images of 256 x 256 (80 MiB, above compute.c's PREFAULT_MIN_BYTES)
 * on the GPU, with backend ("gpu" or "cpu") and the config text more
 * (groups of its own: output, detector). PSFSIM_OK, PSFSIM_ERR_BACKEND
 * (no GPU module), else the test fails. */
static int open_large_with(const char *more, const char *backend, psfsim_set **s)
{
    static char head[2048], text[9000];
    snprintf(head, sizeof head,
             "name = \"large\";\n%s"
             "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 2.4; "
             "obscuration = 0.33; }; };\n"
             "sampling: { pupil_samples = 128; padding = 2.0; };\n",
             more);
    defocus_text(text, sizeof text, head, 320, -0.8);
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = backend;
    char err[1024] = "";
    int rc = psfsim_open_text(text, &o, s, err, sizeof err);
    if (rc != PSFSIM_OK && rc != PSFSIM_ERR_BACKEND) fail_msg("open: %s", err);
    return rc;
}

static int open_large(const char *backend, psfsim_set **s)
{
    return open_large_with("", backend, s);
}

/* A fresh buffer of a GPU set's first compute is pre-faulted while the GPU
 * starts (compute.c): the images are those computed into a buffer written
 * before (byte for byte) and the CPU's (to 1e-5 of the peak). Skipped
 * without a GPU. */
static void test_gpu_fresh_buffer(void **state)
{
    (void)state;
    psfsim_set *g = NULL;
    if (open_large("gpu", &g) != PSFSIM_OK) skip(); /* (a build without the GPU module) */
    psfsim_info info;
    assert_int_equal(psfsim_describe(g, &info, NULL, 0), PSFSIM_OK);
    long long count = info.count;
    int npix = info.npix;
    size_t n = (size_t)count * npix * npix;
    float *fresh = malloc(n * sizeof *fresh);
    assert_non_null(fresh);
    char err[512];
    int rc = psfsim_compute(g, 0, count, fresh, n, NULL, err, sizeof err);
    if (rc == PSFSIM_ERR_BACKEND) { /* the module, but no GPU */
        free(fresh);
        psfsim_close(g);
        skip();
    }
    if (rc != PSFSIM_OK) fail_msg("compute: %s", err);
    float *touched = calloc(n, sizeof *touched);
    assert_non_null(touched);
    psfsim_metrics *m = calloc((size_t)count, sizeof *m);
    assert_non_null(m);
    assert_int_equal(psfsim_compute(g, 0, count, touched, n, m, err, sizeof err), PSFSIM_OK);
    for (long long k = 0; k < count; ++k)
        assert_string_equal(m[k].backend, "gpu");
    assert_memory_equal(fresh, touched, n * sizeof *fresh);
    psfsim_close(g);
    psfsim_set *c = NULL;
    assert_int_equal(open_large("cpu", &c), PSFSIM_OK);
    float *cpu = compute_all(c, &count, &npix);
    /* The metrics of both slots' images (compute.c's lane_slot: 160 each)
     * are their own: the CPU's, to float rounding. */
    psfsim_metrics *mc = calloc((size_t)count, sizeof *mc);
    assert_non_null(mc);
    assert_int_equal(psfsim_compute(c, 0, count, touched, n, mc, err, sizeof err), PSFSIM_OK);
    for (long long k = 0; k < count; ++k)
        if (fabs(m[k].strehl - mc[k].strehl) > 1e-5 * mc[k].strehl)
            fail_msg("image %lld: Strehl ratio GPU %.9g, CPU %.9g", k, m[k].strehl, mc[k].strehl);
    free(m);
    free(mc);
    size_t plane = (size_t)npix * npix;
    for (long long k = 0; k < count; ++k) {
        float peak = 0.0f, diff = 0.0f;
        for (size_t i = 0; i < plane; ++i) {
            float a = cpu[(size_t)k * plane + i], b = fresh[(size_t)k * plane + i];
            peak = a > peak ? a : peak;
            diff = fabsf(a - b) > diff ? fabsf(a - b) : diff;
        }
        if (diff > 1e-5f * peak) fail_msg("image %lld: GPU - CPU %g, peak %g", k, diff, peak);
    }
    psfsim_close(c);
    free(cpu);
    free(touched);
    free(fresh);
}

/* psfsim_compute_u16 of 320 images of 256^2 with a detector stage (jitter,
 * charge diffusion, an IPC kernel: no levels on the device, so the GPU
 * lane's two slots hold floats that the host stretches) on backend. */
static uint16_t *u16_detector(const char *backend, long long *count, int *npix)
{
    psfsim_set *s = NULL;
    if (open_large_with("output: { png: { bits = 16; stretch = \"linear\"; }; };\n"
                        "detector: { jitter_lambda_d = 0.3; charge_diffusion_px = 0.4;\n"
                        "  ipc = [0.0, 0.01, 0.0, 0.01, 0.96, 0.01, 0.0, 0.01, 0.0]; };\n",
                        backend, &s) != PSFSIM_OK)
        return NULL;
    char err[1024] = "";
    psfsim_info info;
    assert_int_equal(psfsim_describe(s, &info, NULL, 0), PSFSIM_OK);
    size_t n = (size_t)info.count * info.npix * info.npix;
    uint16_t *lv = malloc(n * sizeof *lv);
    assert_non_null(lv);
    int rc = psfsim_compute_u16(s, 0, info.count, lv, n, NULL, err, sizeof err);
    psfsim_close(s);
    if (rc == PSFSIM_ERR_BACKEND) { /* the module, but no GPU */
        free(lv);
        return NULL;
    }
    if (rc != PSFSIM_OK) fail_msg("compute_u16 (%s): %s", backend, err);
    *count = info.count;
    *npix = info.npix;
    return lv;
}

/* The GPU's grey levels of a set with a detector stage (floats in the
 * lane's two slots, compute.c's batch_buffer) are the CPU's within one
 * level: linear, where the floats' agreement to ~1e-7 of the peak is
 * under a level (a log stretch over 4 decades makes that 2 levels in the
 * faint pixels). Skipped without a GPU. */
static void test_gpu_u16_detector(void **state)
{
    (void)state;
    long long count = 0, ccount = 0;
    int npix = 0, cnpix = 0;
    uint16_t *g = u16_detector("gpu", &count, &npix);
    if (!g) skip();
    uint16_t *c = u16_detector("cpu", &ccount, &cnpix);
    assert_int_equal(count, ccount);
    assert_int_equal(npix, cnpix);
    size_t n = (size_t)count * npix * npix, off = 0;
    for (size_t i = 0; i < n; ++i)
        if (abs((int)g[i] - (int)c[i]) > 1 && off++ < 5)
            printf("image %zu pixel %zu: GPU %u, CPU %u\n", i / ((size_t)npix * npix),
                   i % ((size_t)npix * npix), g[i], c[i]);
    free(g);
    free(c);
    if (off) fail_msg("%zu levels differ by more than 1", off);
}

/* A GPU that fails mid-set (PSFSIM_GPU_FAIL_AT=n, n = 20, 40, .., 600:
 * some in the backend's start, some in its first or second slot's run,
 * while the other slot is being finished) gives way to the CPU: every
 * image is there, the GPU's equal to the CPU's to 1e-5 of the peak and the
 * CPU's equal to them bit for bit, the backend column "gpu" up to a point
 * and "cpu" after it; at least one n falls back mid-set. A fault in the
 * start is PSFSIM_ERR_BACKEND ("gpu" asked for). Skipped without a GPU. */
static void test_gpu_fall_back_mid_set(void **state)
{
    (void)state;
    psfsim_set *c = NULL;
    assert_int_equal(open_large("cpu", &c), PSFSIM_OK);
    long long count;
    int npix;
    float *cpu = compute_all(c, &count, &npix);
    psfsim_close(c);
    size_t plane = (size_t)npix * npix, n = (size_t)count * plane;
    float *img = malloc(n * sizeof *img);
    psfsim_metrics *m = calloc((size_t)count, sizeof *m);
    assert_true(img && m);
    int mixed = 0, ran = 0;
    for (int at = 20; at <= 600; at += 20) {
        char val[16];
        snprintf(val, sizeof val, "%d", at);
        setenv("PSFSIM_GPU_FAIL_AT", val, 1);
        psfsim_set *g = NULL;
        int rc = open_large("gpu", &g);
        char err[1024] = "";
        if (rc == PSFSIM_OK) rc = psfsim_compute(g, 0, count, img, n, m, err, sizeof err);
        unsetenv("PSFSIM_GPU_FAIL_AT");
        psfsim_close(g);
        if (rc == PSFSIM_ERR_BACKEND) continue; /* no GPU, or the fault in its start */
        if (rc != PSFSIM_OK) fail_msg("FAIL_AT=%d: %s", at, err);
        ran++;
        long long ngpu = 0;
        while (ngpu < count && strcmp(m[ngpu].backend, "gpu") == 0)
            ngpu++;
        for (long long k = ngpu; k < count; ++k) {
            if (strcmp(m[k].backend, "cpu") != 0)
                fail_msg("FAIL_AT=%d: image %lld from %s after the fall-back", at, k, m[k].backend);
            if (memcmp(img + (size_t)k * plane, cpu + (size_t)k * plane, plane * sizeof *img))
                fail_msg("FAIL_AT=%d: image %lld (CPU) differs from the CPU run's", at, k);
        }
        for (size_t i = 0; i < (size_t)ngpu * plane; ++i)
            if (fabsf(img[i] - cpu[i]) > 1e-5f)
                fail_msg("FAIL_AT=%d: pixel %zu (GPU) %g, CPU %g", at, i, img[i], cpu[i]);
        mixed += ngpu > 0 && ngpu < count;
    }
    free(img);
    free(m);
    free(cpu);
    if (!ran) skip();
    if (!mixed) fail_msg("no FAIL_AT in 20..600 fell back mid-set (%d ran)", ran);
}

/* psfsim_compute_u16 of set text with PSFSIM_LEVELS = mode ("on": the
 * CPU's run_levels, issue 17; "off": its floats and the host's stretch),
 * levels and metrics malloc'd into *lv, *m. */
static long long u16_with(const char *text, const char *mode, uint16_t **lv, psfsim_metrics **m)
{
    setenv("PSFSIM_LEVELS", mode, 1);
    psfsim_set *s = open_text(text);
    psfsim_info info;
    assert_int_equal(psfsim_describe(s, &info, NULL, 0), PSFSIM_OK);
    size_t n = (size_t)info.count * info.npix * info.npix;
    *lv = malloc(n * sizeof **lv);
    *m = malloc((size_t)info.count * sizeof **m);
    char err[512];
    if (psfsim_compute_u16(s, 0, info.count, *lv, n, *m, err, sizeof err) != PSFSIM_OK)
        fail_msg("compute_u16: %s", err);
    psfsim_close(s);
    unsetenv("PSFSIM_LEVELS");
    return (long long)n;
}

/* The levels path of psfsim_compute_u16 gives its float path's levels
 * and metrics bit for bit: log, sqrt with "poppy" (the levels turned by
 * the backend) and "pupil" (the same Strehl ratios). */
static void test_u16_levels_path(void **state)
{
    (void)state;
    const char *outs[] = {
        "output: { png: { bits = 16; stretch = \"log\"; dynamic_range = 1e5; }; };\n",
        "normalization = \"pupil\";\noutput: { png: { bits = 8; stretch = \"sqrt\"; "
        "}; orientation = \"poppy\"; };\n"};
    for (size_t t = 0; t < sizeof outs / sizeof outs[0]; ++t) {
        char head[2048], text[8192];
        snprintf(head, sizeof head,
                 "name = \"u\";\n%soptics: { wavelength_nm = 600.0; aperture: { diameter_m = 2.0; "
                 "obscuration = 0.3; }; };\nsampling: { pupil_samples = 32; };\n",
                 outs[t]);
        defocus_text(text, sizeof text, head, 150, -0.5);
        uint16_t *a, *b;
        psfsim_metrics *ma, *mb;
        long long n = u16_with(text, "off", &a, &ma);
        assert_int_equal(u16_with(text, "on", &b, &mb), n);
        assert_memory_equal(a, b, (size_t)n * sizeof *a);
        for (int k = 0; k < 150; ++k) {
            assert_memory_equal(&ma[k].strehl, &mb[k].strehl, sizeof ma[k].strehl);
            assert_memory_equal(&ma[k].axial_intensity, &mb[k].axial_intensity,
                                sizeof ma[k].axial_intensity);
            assert_string_equal(mb[k].backend, "cpu");
        }
        free(a);
        free(b);
        free(ma);
        free(mb);
    }
}

/* A progress callback's calls: done rises, and ends at total. */
static int rising(long long done, long long total, void *user)
{
    progress_state *p = user;
    assert_true(done > p->last_done && done <= total);
    p->calls++;
    p->last_done = done;
    return 0;
}

/* Floats or (levels 1, 2) grey levels of 200 images of 64 x 64, metrics and
 * progress, with PSFSIM_TEST_OVERLAP = mode: "on" (the default) splits the
 * CPU lane's batches of 64 into slots of 32, finishes one on its own
 * thread and makes the next one's jobs on another while the other computes
 * (lib/engine/batch.c's lane_loop); "off" one batch at a time. */
static void *overlap_run(const char *mode, int levels, psfsim_metrics *m, progress_state *p)
{
    setenv("PSFSIM_TEST_OVERLAP", mode, 1);
    /* 1: the CPU's run_levels into its slots; 2: its floats into its slots,
     * stretched into the caller's levels */
    if (levels) setenv("PSFSIM_LEVELS", levels == 1 ? "on" : "off", 1);
    /* Random draws at three wavelengths onto a pixel of fixed size (the
     * MFT), "pupil": every image's record (its reference peak, its
     * captured fraction) is its own, so a slot's image measured with
     * another's record shows. */
    const char *text =
        "name = \"slots\";\nnormalization = \"pupil\";\n"
        "output: { npix = 64; pixel_scale_um = 1.5; png: { bits = 16; stretch = \"sqrt\"; }; "
        "};\noptics: { wavelength_nm = 600.0; f_number = 10.0; aperture: { diameter_m = 2.0; "
        "obscuration = 0.3; }; };\nsampling: { pupil_samples = 32; };\n"
        "sweep: { random: { count = 200; seed = 7; zernike = ((4, \"normal\", 0.1), "
        "(7, \"uniform\", 0.1)); wavelength_nm = [500.0, 600.0, 800.0]; }; };\n";
    psfsim_set *s = open_text(text);
    psfsim_set_progress(s, rising, p);
    size_t n = (size_t)200 * 64 * 64;
    void *out = malloc(n * (levels ? sizeof(uint16_t) : sizeof(float)));
    assert_non_null(out);
    char err[512];
    int rc = levels ? psfsim_compute_u16(s, 0, 200, out, n, m, err, sizeof err)
                    : psfsim_compute(s, 0, 200, out, n, m, err, sizeof err);
    if (rc != PSFSIM_OK) fail_msg("compute (%s): %s", mode, err);
    psfsim_close(s);
    unsetenv("PSFSIM_TEST_OVERLAP");
    unsetenv("PSFSIM_LEVELS");
    return out;
}

/* Two slots overlapping give the images, levels and metrics of one batch
 * at a time, byte for byte, and the progress callback its counts in
 * order up to the total. */
static void test_overlapping_slots(void **state)
{
    (void)state;
    for (int levels = 0; levels < 3; ++levels) {
        psfsim_metrics ma[200], mb[200];
        progress_state pa = {0}, pb = {0};
        void *a = overlap_run("off", levels, ma, &pa);
        void *b = overlap_run("on", levels, mb, &pb);
        size_t bytes = (size_t)200 * 64 * 64 * (levels ? sizeof(uint16_t) : sizeof(float));
        assert_memory_equal(a, b, bytes);
        for (int k = 0; k < 200; ++k) {
            assert_memory_equal(&ma[k].strehl, &mb[k].strehl, sizeof ma[k].strehl);
            assert_memory_equal(&ma[k].axial_intensity, &mb[k].axial_intensity,
                                sizeof ma[k].axial_intensity);
            if (!(ma[k].strehl > 0.0 && ma[k].strehl <= 1.0 + 1e-6))
                fail_msg("image %d: strehl %.9g", k, ma[k].strehl); /* measured, not NaN */
        }
        assert_int_equal(pa.last_done, 200);
        assert_int_equal(pb.last_done, 200);
        assert_int_equal(pa.calls, 4); /* batches of 64, 64, 64, 8 */
        assert_int_equal(pb.calls, 7); /* slots of 32: six and 8 */
        free(a);
        free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equals_command),        cmocka_unit_test(test_cancel_mid_set),
        cmocka_unit_test(test_two_sets_two_threads),  cmocka_unit_test(test_gpu_fresh_buffer),
        cmocka_unit_test(test_u16_levels_path),       cmocka_unit_test(test_overlapping_slots),
        cmocka_unit_test(test_gpu_fall_back_mid_set), cmocka_unit_test(test_gpu_u16_detector),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
