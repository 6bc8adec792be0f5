/* SPDX-License-Identifier: BSD-3-Clause */
/* One PNG's time, the writer before issue 17 (bench/png_ref.c) against
 * psfsim's, on the same images: the defocus config's HST pupil (through
 * focus, 8 images) at N = 2 x pupil_samples, 16-bit, log (dr 1e5) or linear
 * stretch, compression 1. Per size and stretch, REPS rounds; each round
 * writes the 8 images with the reference, then with psfsim, then times
 * psfsim's parts: the stretch (psf_png_stretch_levels), the file's bytes in
 * memory (png_encode_levels: scanlines, deflate, CRCs) and the file (atomic
 * open, one write, rename). Best round, us per image; bytes of the 8 files.
 * Times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID, user + system:
 * the machine may be shared). The two stretches' levels are compared
 * (levels_equal: 1 = identical).
 * Prints CSV: stretch,npix,ref_us,new_us,speedup,stretch_us,encode_us,
 *             file_us,ref_bytes,new_bytes,bytes_ratio,levels_equal
 * Usage: psfsim_bench_png OUTDIR [REPS] [SIZES...]   (default 64 .. 1024) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app/base/make_dir.h"
#include "app/formats/atomic_file.h"
#include "app/formats/png_encode.h"
#include "app/set/image_set.h"
#include "bench/png_ref.h"

#define NIMG 8

/* The calling thread's CPU seconds. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The defocus config (configs/defocus.cfg) at pupil_samples n/2. */
static int compute_images(int npix, float *imgs, char *err, size_t errlen)
{
    char text[1024];
    snprintf(text, sizeof text,
             "name = \"b\"; optics: { wavelength_nm = 550.0; f_number = 24.0; aperture: {"
             " diameter_m = 2.4; obscuration = 0.33; spiders: { count = 4; width_m = 0.0264;"
             " angle_deg = 45.0; }; }; }; sampling: { pupil_samples = %d; padding = 2.0; };"
             " sweep: { focus_shift_um = [-2000.0, -1500.0, -1000.0, -500.0, 0.0, 500.0,"
             " 1000.0, 1500.0]; }; output: { png: { bits = 16; }; };",
             npix / 2);
    psf_config cfg;
    image_set set;
    int rc = -1;
    if (config_load_text(text, "bench", NULL, &cfg, err, errlen) == 0 &&
        image_set_init(&set, &cfg, err, errlen) == 0) {
        size_t per = image_set_storage(&set);
        double *storage = malloc(NIMG * per * sizeof *storage);
        psf_job jobs[NIMG];
        image_info infos[NIMG];
        psf_problem desc;
        psf_backend *b = NULL;
        image_set_problem(&set, NIMG, &desc);
        rc = storage && !psf_backend_cpu.create(&desc, NULL, &b, err, errlen) ? 0 : -1;
        for (int i = 0; rc == 0 && i < NIMG; ++i)
            rc = image_set_job(&set, i, storage + i * per, &jobs[i], &infos[i], err, errlen);
        if (rc == 0) rc = psf_backend_cpu.run(b, jobs, NIMG, imgs, err, errlen);
        if (b) psf_backend_cpu.destroy(b);
        free(storage);
        image_set_free(&set);
    }
    config_free(&cfg);
    return rc;
}

static long long dir_bytes(const char *dir, const char *prefix)
{
    long long total = 0;
    char path[4200];
    for (int i = 0; i < NIMG; ++i) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s%d.png", dir, prefix, i);
        if (stat(path, &st) == 0) total += st.st_size;
    }
    return total;
}

typedef struct {
    double ref, whole, stretch, encode, file; /* seconds for NIMG images */
} round_times;

/* One round at npix: NIMG images each way, and psfsim's parts. */
static int one_round(int dirfd, const char *dir, const float *imgs, int npix, png_stretch s,
                     unsigned short *lv, round_times *t)
{
    const size_t plane = (size_t)npix * npix;
    char name[64], err[512];
    double t0 = cpu_s();
    for (int i = 0; i < NIMG; ++i) {
        snprintf(name, sizeof name, "ref%d.png", i);
        if (ref_png_write_image_at(dirfd, dir, name, imgs + i * plane, npix, 16, s, 1e5, 1))
            return -1;
    }
    double t1 = cpu_s();
    for (int i = 0; i < NIMG; ++i) {
        snprintf(name, sizeof name, "new%d.png", i);
        if (psf_png_write_image_at(dirfd, dir, name, imgs + i * plane, npix, 16, s, 1e5, 1, err,
                                   sizeof err))
            return -1;
    }
    double t2 = cpu_s();
    for (int i = 0; i < NIMG; ++i)
        psf_png_stretch_levels(imgs + i * plane, npix, 16, s, 1e5, lv + i * plane);
    double t3 = cpu_s();
    unsigned char *bytes[NIMG];
    size_t len[NIMG];
    for (int i = 0; i < NIMG; ++i)
        if (png_encode_levels(lv + i * plane, npix, 16, 1, &bytes[i], &len[i], NULL, 0)) return -1;
    double t4 = cpu_s();
    int rc = 0;
    for (int i = 0; i < NIMG; ++i) {
        atomic_file af;
        snprintf(name, sizeof name, "part%d.png", i);
        if (rc == 0 && (atomic_open_at(&af, dirfd, dir, name, err, sizeof err) ||
                        atomic_write_all(&af, bytes[i], len[i], err, sizeof err)))
            rc = -1;
    }
    double t5 = cpu_s();
    for (int i = 0; i < NIMG; ++i)
        free(bytes[i]);
    *t = (round_times){t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4};
    return rc;
}

static int bench_size(const char *dir, int dirfd, int npix, png_stretch s, int reps)
{
    const size_t plane = (size_t)npix * npix;
    float *imgs = malloc(NIMG * plane * sizeof *imgs);
    unsigned short *lv = malloc(NIMG * plane * sizeof *lv), *ref = malloc(plane * sizeof *ref);
    char err[1024];
    if (!imgs || !lv || !ref || compute_images(npix, imgs, err, sizeof err)) {
        fprintf(stderr, "%d: %s\n", npix, imgs && lv && ref ? err : "out of memory");
        return -1;
    }
    round_times best = {1e30, 1e30, 1e30, 1e30, 1e30}, t;
    for (int r = 0; r < reps; ++r) {
        if (one_round(dirfd, dir, imgs, npix, s, lv, &t)) return -1;
        best.ref = t.ref < best.ref ? t.ref : best.ref;
        best.whole = t.whole < best.whole ? t.whole : best.whole;
        best.stretch = t.stretch < best.stretch ? t.stretch : best.stretch;
        best.encode = t.encode < best.encode ? t.encode : best.encode;
        best.file = t.file < best.file ? t.file : best.file;
    }
    int equal = 1;
    for (int i = 0; i < NIMG; ++i) {
        ref_png_stretch_levels(imgs + i * plane, npix, 16, s, 1e5, ref);
        equal &= memcmp(ref, lv + i * plane, plane * sizeof *ref) == 0;
    }
    long long rb = dir_bytes(dir, "ref"), nb = dir_bytes(dir, "new");
    const double us = 1e6 / NIMG;
    printf("%s,%d,%.1f,%.1f,%.2f,%.1f,%.1f,%.1f,%lld,%lld,%.3f,%d\n",
           s == STRETCH_LOG ? "log" : "linear", npix, best.ref * us, best.whole * us,
           best.ref / best.whole, best.stretch * us, best.encode * us, best.file * us, rb, nb,
           (double)nb / (double)rb, equal);
    fflush(stdout);
    free(imgs);
    free(lv);
    free(ref);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUTDIR [REPS] [SIZES...]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    int sizes[16] = {64, 128, 256, 512, 1024}, nsizes = 5;
    if (argc > 3)
        for (nsizes = 0; nsizes < 16 && 3 + nsizes < argc; ++nsizes)
            sizes[nsizes] = atoi(argv[3 + nsizes]);
    char err[1024];
    if (make_dir(dir, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) return 1;
    printf("stretch,npix,ref_us,new_us,speedup,stretch_us,encode_us,file_us,ref_bytes,new_bytes,"
           "bytes_ratio,levels_equal\n");
    static const png_stretch stretches[] = {STRETCH_LOG, STRETCH_LINEAR};
    for (int si = 0; si < 2; ++si)
        for (int k = 0; k < nsizes; ++k)
            if (bench_size(dir, dirfd, sizes[k], stretches[si], reps)) return 1;
    close(dirfd);
    return 0;
}
