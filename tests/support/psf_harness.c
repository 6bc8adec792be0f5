/* SPDX-License-Identifier: BSD-3-Clause */
#include "tests/support/psf_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/select/gpu.h"
#include "optics/metrics.h"
#include "tests/support/testutil.h"

/* Load the config text and prepare its image set and backend. */
static int open_set(const char *cfg_text, const psf_backend_ops *ops, psf_config *cfg,
                    image_set *set, psf_backend **b, int batch)
{
    char err[1024];
    char *dir = tu_mkdtemp("harness");
    char path[4200];
    snprintf(path, sizeof path, "%s/t.cfg", dir);
    int rc = tu_write_file(path, cfg_text);
    if (rc == 0) rc = config_load(path, cfg, err, sizeof err);
    if (rc == 0) rc = image_set_init(set, cfg, err, sizeof err);
    if (rc == 0) {
        psf_problem desc;
        image_set_problem(set, batch, &desc);
        rc = ops->create(&desc, NULL, b, err, sizeof err);
    }
    tu_rmtree(dir);
    free(dir);
    if (rc != 0) fprintf(stderr, "harness: %s\n", err);
    return rc;
}

float *harness_compute_all(const char *cfg_text, const psf_backend_ops *ops, long long *nimages,
                           int *npix)
{
    if (!ops) ops = &psf_backend_cpu;
    psf_config cfg;
    image_set set;
    memset(&set, 0, sizeof set);
    psf_backend *b = NULL;
    float *imgs = NULL;
    char err[1024];
    if (open_set(cfg_text, ops, &cfg, &set, &b, 4) != 0) goto done;
    *nimages = set.nimages;
    *npix = set.samp.npix;
    size_t plane = (size_t)*npix * *npix, per = image_set_storage(&set);
    imgs = malloc((size_t)set.nimages * plane * sizeof *imgs);
    double *storage = malloc(4 * per * sizeof *storage);
    psf_job jobs[4];
    image_info infos[4];
    for (long long k0 = 0; k0 < set.nimages && imgs; k0 += 4) {
        int nb = set.nimages - k0 < 4 ? (int)(set.nimages - k0) : 4;
        int rc = 0;
        for (int i = 0; i < nb && rc == 0; ++i)
            rc = image_set_job(&set, k0 + i, storage + i * per, &jobs[i], &infos[i], err,
                               sizeof err);
        if (rc == 0) rc = ops->run(b, jobs, nb, imgs + (size_t)k0 * plane, err, sizeof err);
        for (int i = 0; i < nb && rc == 0; ++i) /* as run_sink.c: "sum" of an MFT image */
            image_set_finish_image(&set, &infos[i], imgs + (size_t)(k0 + i) * plane);
        if (rc != 0) {
            fprintf(stderr, "harness: %s\n", err);
            free(imgs);
            imgs = NULL;
        }
    }
    free(storage);
done:
    if (b) ops->destroy(b);
    image_set_free(&set);
    config_free(&cfg);
    return imgs;
}

int harness_compute(const char *cfg_text, long long k, const psf_backend_ops *ops, psf_result *out)
{
    if (!ops) ops = &psf_backend_cpu;
    memset(out, 0, sizeof *out);
    psf_config cfg;
    image_set set;
    memset(&set, 0, sizeof set);
    psf_backend *b = NULL;
    char err[1024];
    int rc = open_set(cfg_text, ops, &cfg, &set, &b, 1);
    double *storage = NULL;
    if (rc == 0) {
        out->npix = set.samp.npix;
        out->img = malloc((size_t)out->npix * out->npix * sizeof *out->img);
        storage = malloc(image_set_storage(&set) * sizeof *storage);
        psf_job job;
        image_info info;
        rc = image_set_job(&set, k, storage, &job, &info, err, sizeof err);
        if (rc == 0) rc = ops->run(b, &job, 1, out->img, err, sizeof err);
        if (rc == 0) image_set_finish_image(&set, &info, out->img);
        if (rc != 0) fprintf(stderr, "harness: %s\n", err);
        out->ref_peak = info.ref_peak;
        out->captured = info.captured_fraction;
        int h = out->npix / 2;
        out->strehl = metrics_peak(out->img, out->npix).value / info.ref_peak;
        out->axial = out->img[(size_t)h * out->npix + h] / info.ref_peak;
    }
    free(storage);
    if (b) ops->destroy(b);
    image_set_free(&set);
    config_free(&cfg);
    return rc;
}

void harness_free(psf_result *r)
{
    free(r->img);
    r->img = NULL;
}

const psf_backend_ops *harness_gpu(char *why, size_t whylen)
{
    const psf_backend_ops *gpu = psf_backend_gpu();
    if (!gpu) {
        snprintf(why, whylen, "psfsim was built without the CUDA backend");
        return NULL;
    }
    psf_problem d;
    memset(&d, 0, sizeof d);
    d.npix = 16;
    d.aperture.shape = APERTURE_CIRCULAR;
    d.aperture.diameter_m = 1.0;
    d.max_batch = 1;
    d.nimages = 1;
    psf_backend *b = NULL;
    char err[1024];
    if (gpu->create(&d, NULL, &b, err, sizeof err) == 0) {
        gpu->destroy(b);
        return gpu;
    }
    snprintf(why, whylen, "%s", err);
    return strstr(err, "no CUDA device") ? NULL : gpu;
}
