/* SPDX-License-Identifier: BSD-3-Clause */
/* The PNG-encode ceiling for issue 5's benchmark: the same images that a
 * psfsim run writes, encoded and written by the same writer pool
 * (app/output/writer_pool.h), with no compute at all. The images are computed once
 * (CPU backend) and reused in turn.
 * Prints CSV rows: pipeline,npix,images,seconds_total,us_per_psf
 * Usage: psfsim_bench_writers CONFIG OUTDIR IMAGES [THREADS] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app/set/image_set.h"
#include "app/base/make_dir.h"
#include "app/output/outputs.h"
#include "app/output/writer_pool.h"

#define DISTINCT 64 /* distinct images cycled through */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s CONFIG OUTDIR IMAGES [THREADS]\n", argv[0]);
        return 2;
    }
    long long total = atoll(argv[3]);
    long nthreads = argc > 4 ? atol(argv[4]) : sysconf(_SC_NPROCESSORS_ONLN);
    char err[1024];
    psf_config cfg;
    image_set set;
    if (config_load(argv[1], &cfg, err, sizeof err) ||
        image_set_init(&set, &cfg, err, sizeof err) || make_dir(argv[2], err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    set.nimages = total; /* file names sized for the whole run */
    int npix = set.samp.npix, nd = set.nimages < DISTINCT ? (int)set.nimages : DISTINCT;
    size_t plane = (size_t)npix * npix, per = image_set_storage(&set);
    float *imgs = malloc((size_t)nd * plane * sizeof *imgs);
    double *storage = malloc((size_t)nd * per * sizeof *storage);
    psf_job *jobs = calloc((size_t)nd, sizeof *jobs);
    image_info *infos = calloc((size_t)nd, sizeof *infos);
    psf_problem desc;
    image_set_problem(&set, nd, &desc);
    psf_backend *b;
    if (psf_backend_cpu.create(&desc, NULL, &b, err, sizeof err)) return 1;
    for (int i = 0; i < nd; ++i)
        if (image_set_job(&set, i, storage + i * per, &jobs[i], &infos[i], err, sizeof err))
            return 1;
    if (psf_backend_cpu.run(b, jobs, nd, imgs, err, sizeof err)) return 1;
    psf_backend_cpu.destroy(b);
    /* Write total images, slot-bounded like psfsim's loop. */
    int dirfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) return 1;
    writer_pool *pool = writer_pool_create((int)nthreads, WRITER_SLOTS, &set, dirfd, argv[2]);
    enum { CHUNK = 256 };
    write_job *w = calloc(2 * CHUNK, sizeof *w);
    image_result *res = calloc(2 * CHUNK, sizeof *res);
    image_timing *tim = calloc(2 * CHUNK, sizeof *tim);
    double t0 = now_s();
    int slot = 0;
    for (long long k0 = 0; k0 < total; k0 += CHUNK, slot ^= 1) {
        writer_pool_wait_slot(pool, slot);
        for (int i = 0; i < CHUNK && k0 + i < total; ++i) {
            int j = slot * CHUNK + i, d = (int)((k0 + i) % nd);
            res[j] = (image_result){.backend = "none"};
            w[j] = (write_job){.k = k0 + i,
                               .img = imgs + (size_t)d * plane,
                               .info = &infos[d],
                               .res = &res[j],
                               .timing = &tim[j]};
            writer_pool_submit(pool, slot, &w[j]);
        }
    }
    writer_pool_wait_slot(pool, 0);
    writer_pool_wait_slot(pool, 1);
    double t = now_s() - t0;
    writer_pool_destroy(pool);
    close(dirfd);
    printf("png_ceiling_%ldthreads,%d,%lld,%.6f,%.2f\n", nthreads, npix, total, t, t / total * 1e6);
    free(w);
    free(res);
    free(tim);
    free(imgs);
    free(storage);
    free(jobs);
    free(infos);
    image_set_free(&set);
    config_free(&cfg);
    return 0;
}
