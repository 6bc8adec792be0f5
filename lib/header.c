/* SPDX-License-Identifier: BSD-3-Clause */
/* The FITS header of an image (lib/psfsim.h), built by the command's own
 * fits_header_build (app/output/fits_header.c, compiled into the library), so the
 * keywords are the files' whatever the caller makes of them (an astropy
 * HDUList in the Python package). */
#include <stdio.h>
#include <string.h>

#include "app/output/fits_header.h"
#include "lib/set_priv.h"

/* The captured fraction of image img as the command measures it (EEFIELD,
 * image_set_finish_image): the sum of its pixels in double, in the order
 * the backend wrote them, i.e. from the last pixel for "poppy" (which
 * turned the image by 180 degrees after the sum). */
static double image_sum(const psfsim_set *set, const float *img)
{
    size_t n = (size_t)set->e.set.samp.npix * set->e.set.samp.npix;
    double total = 0.0;
    if (set->e.cfg.orientation == ORIENT_POPPY)
        for (size_t i = n; i-- > 0;)
            total += img[i];
    else
        for (size_t i = 0; i < n; ++i)
            total += img[i];
    return total;
}

/* The header of image k into cards (psfsim_fits_header_image), the set
 * taken. */
static int header(psfsim_set *set, long long k, const psfsim_metrics *metrics, const float *image,
                  size_t capacity, psfsim_card *cards, int max, int *ncards, char *err,
                  size_t errlen)
{
    int rc = lib_check_range(set, k, 1, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    size_t plane = (size_t)set->e.set.samp.npix * set->e.set.samp.npix;
    if (image && capacity < plane)
        return lib_fail(err, errlen, PSFSIM_ERR_BUFFER,
                        "the image holds %zu values, fewer than its %d x %d", capacity,
                        set->e.set.samp.npix, set->e.set.samp.npix);
    psf_job job;
    image_info info;
    char why[LIB_ERRLEN];
    if (image_set_job(&set->e.set, k, set->query_storage, &job, &info, why, sizeof why) != 0)
        return lib_fail(err, errlen, PSFSIM_ERR_CONFIG, "%s", why);
    if (image && set->e.cfg.normalization == NORM_PUPIL)
        info.captured_fraction = image_sum(set, image);
    image_result res = {.strehl = metrics->strehl,
                        .axial_intensity = metrics->axial_intensity,
                        .backend = metrics->backend ? metrics->backend : ""};
    fits_kv kvs[FITS_HEADER_MAX];
    char zkeys[FITS_HEADER_MAX][12];
    int n = fits_header_build(&set->e.set, &info, &res, kvs, zkeys);
    if (n > max)
        return lib_fail(err, errlen, PSFSIM_ERR_BUFFER,
                        "the header has %d keywords, cards holds %d", n, max);
    for (int i = 0; i < n; ++i) {
        psfsim_card *c = &cards[i];
        memset(c, 0, sizeof *c);
        snprintf(c->key, sizeof c->key, "%s", kvs[i].key);
        c->type = kvs[i].type == FITS_KV_DOUBLE ? 'd' : kvs[i].type == FITS_KV_INT ? 'i' : 's';
        c->d = kvs[i].d;
        c->i = kvs[i].i;
        snprintf(c->s, sizeof c->s, "%s", kvs[i].s ? kvs[i].s : "");
        snprintf(c->comment, sizeof c->comment, "%s", kvs[i].comment ? kvs[i].comment : "");
    }
    *ncards = n;
    return PSFSIM_OK;
}

int psfsim_fits_header_image(psfsim_set *set, long long k, const psfsim_metrics *metrics,
                             const float *image, size_t capacity, psfsim_card *cards, int max,
                             int *ncards, char *err, size_t errlen)
{
    if (!set || !metrics || !cards || !ncards)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set, metrics, cards or count given");
    *ncards = 0;
    int rc = lib_enter(set, "psfsim_fits_header", err, errlen);
    if (rc != PSFSIM_OK) return rc;
    rc = header(set, k, metrics, image, capacity, cards, max, ncards, err, errlen);
    lib_leave(set);
    return rc;
}

int psfsim_fits_header(psfsim_set *set, long long k, const psfsim_metrics *metrics,
                       psfsim_card *cards, int max, int *ncards, char *err, size_t errlen)
{
    return psfsim_fits_header_image(set, k, metrics, NULL, 0, cards, max, ncards, err, errlen);
}
