/* SPDX-License-Identifier: BSD-3-Clause */
#include "tests/support/levels_harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/formats/png_io.h"
#include "app/set/image_set.h"
#include "app/set/measure.h"
#include "backend/levels.h"
#include "tests/support/testutil.h"

/* One batch of nb images from image k0: both paths, compared into d. */
static int compare_batch(image_set *set, const psf_backend_ops *ops, psf_backend *b, long long k0,
                         int nb, double *storage, float *img, unsigned short *lev,
                         unsigned short *ref, double *meas, levels_diff *d)
{
    char err[1024];
    size_t per = image_set_storage(set), plane = (size_t)set->samp.npix * set->samp.npix;
    psf_job jobs[64];
    image_info infos[64], linfo;
    int rc = 0;
    for (int i = 0; i < nb && rc == 0; ++i)
        rc = image_set_job(set, k0 + i, storage + i * per, &jobs[i], &infos[i], err, sizeof err);
    if (rc == 0) rc = ops->run(b, jobs, nb, img, err, sizeof err);
    if (rc == 0) rc = ops->run_levels(b, jobs, nb, lev, meas, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "levels harness: %s\n", err);
        return -1;
    }
    const psf_config *cfg = set->cfg;
    for (int i = 0; i < nb; ++i) {
        float *im = img + (size_t)i * plane;
        const double *m = meas + (size_t)i * PSF_MEASURES;
        linfo = infos[i];
        double s0, a0, s1, a1;
        image_set_measure_levels(set, &linfo, m, &s1, &a1);
        image_set_measure(set, &infos[i], im, &s0, &a0); /* turns im for "poppy" */
        psf_png_stretch_levels(im, set->samp.npix, cfg->png_bits, cfg->png_stretch,
                               cfg->png_dynamic_range, ref);
        for (size_t p = 0; p < plane; ++p)
            d->levels_wrong += lev[(size_t)i * plane + p] != ref[p];
        d->levels += plane;
        int bad = memcmp(&s0, &s1, sizeof s0) != 0 || memcmp(&a0, &a1, sizeof a0) != 0 ||
                  m[PSF_MEASURE_NAN] + m[PSF_MEASURE_INF] + m[PSF_MEASURE_NEG] != 0.0;
        d->measures_wrong += bad;
        if (bad)
            printf("image %lld: strehl %.17g / %.17g, axial %.17g / %.17g\n", k0 + i, s0, s1, a0,
                   a1);
        if (cfg->normalization == NORM_PUPIL) {
            double r = fabs(linfo.captured_fraction - infos[i].captured_fraction) /
                       infos[i].captured_fraction;
            d->total_rel = r > d->total_rel || isnan(r) ? r : d->total_rel;
        }
    }
    return 0;
}

int levels_harness_compare(const char *cfg_text, const psf_backend_ops *ops, int batch,
                           levels_diff *out)
{
    memset(out, 0, sizeof *out);
    if (batch < 1 || batch > 64) batch = 64;
    char err[1024], *dir = tu_mkdtemp("levels"), path[4200];
    snprintf(path, sizeof path, "%s/t.cfg", dir);
    psf_config cfg;
    image_set set;
    memset(&set, 0, sizeof set);
    psf_backend *b = NULL;
    int rc = tu_write_file(path, cfg_text), cfg_ok = 0;
    if (rc == 0) rc = config_load(path, &cfg, err, sizeof err);
    cfg_ok = rc == 0;
    if (rc == 0) rc = image_set_init(&set, &cfg, err, sizeof err);
    psf_problem pb;
    if (rc == 0) {
        image_set_problem(&set, batch, &pb);
        if (!image_set_levels_out(&set, &pb.levels)) {
            snprintf(err, sizeof err, "the set is not one for the levels path");
            rc = -1;
        }
    }
    if (rc == 0) rc = ops->create(&pb, NULL, &b, err, sizeof err);
    if (rc != 0) fprintf(stderr, "levels harness: %s\n", err);
    size_t plane = rc == 0 ? (size_t)set.samp.npix * set.samp.npix : 0;
    float *img = rc == 0 ? ops->alloc_images(b, (size_t)batch * plane) : NULL;
    unsigned short *lev =
        rc == 0 ? (unsigned short *)ops->alloc_images(b, (size_t)batch * plane) : NULL;
    unsigned short *ref = malloc((plane ? plane : 1) * sizeof *ref);
    double *meas = malloc((size_t)batch * PSF_MEASURES * sizeof *meas);
    size_t per = rc == 0 ? image_set_storage(&set) : 1;
    double *storage = malloc((size_t)batch * (per ? per : 1) * sizeof *storage);
    if (rc == 0 && (!img || !lev || !ref || !meas || !storage)) rc = -1;
    if (rc == 0) {
        out->nimages = set.nimages;
        out->npix = set.samp.npix;
    }
    for (long long k0 = 0; rc == 0 && k0 < set.nimages; k0 += batch) {
        int nb = set.nimages - k0 < batch ? (int)(set.nimages - k0) : batch;
        rc = compare_batch(&set, ops, b, k0, nb, storage, img, lev, ref, meas, out);
    }
    if (img) ops->free_images(b, img);
    if (lev) ops->free_images(b, (float *)lev);
    free(ref);
    free(meas);
    free(storage);
    if (b) ops->destroy(b);
    image_set_free(&set);
    if (cfg_ok) config_free(&cfg);
    tu_rmtree(dir);
    free(dir);
    return rc;
}

void levels_case(int i, char *top, size_t toplen, char *out, size_t outlen)
{
    static const char *const png[] = {"bits = 8; stretch = \"linear\";",
                                      "bits = 16; stretch = \"linear\";",
                                      "bits = 8; stretch = \"log\"; dynamic_range = 1.0e3;",
                                      "bits = 16; stretch = \"log\"; dynamic_range = 1.0e6;",
                                      "bits = 8; stretch = \"sqrt\";",
                                      "bits = 16; stretch = \"sqrt\";"};
    static const char *const special[][2] = {
        {"", "png: { bits = 16; stretch = \"log\"; dynamic_range = 1.0e5; }; orientation = "
             "\"poppy\";"},
        {"normalization = \"pupil\";", "png: { bits = 16; stretch = \"sqrt\"; };"},
        {"normalization = \"pupil\";", "png: { bits = 8; }; orientation = \"poppy\";"}};
    snprintf(top, toplen, "%s", i >= 12 ? special[(i - 12) % 3][0] : "");
    if (i < 6)
        snprintf(out, outlen, "png: { %s };", png[i]);
    else if (i < 12)
        snprintf(out, outlen,
                 "png: { enabled = false; %s }; hdf5: { enabled = true; dtype = \"uint16\"; };",
                 png[i - 6]);
    else
        snprintf(out, outlen, "%s", special[(i - 12) % 3][1]);
}
