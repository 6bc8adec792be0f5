/* SPDX-License-Identifier: BSD-3-Clause */
#include "optics/aperture_cache.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_MAX_GRIDS 64 /* one per pitch: a broadband set's wavelengths */

typedef struct {
    int npix;
    double dx_m;
    float *amp;
} grid;

struct aperture_cache {
    psf_aperture aperture;
    size_t max_bytes, bytes;
    int n;
    grid grids[CACHE_MAX_GRIDS];
    pthread_mutex_t mu;
};

aperture_cache *aperture_cache_create(const psf_aperture *a, size_t max_bytes)
{
    aperture_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->aperture = *a;
    c->max_bytes = max_bytes;
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void aperture_cache_free(aperture_cache *c)
{
    if (!c) return;
    for (int i = 0; i < c->n; ++i)
        free(c->grids[i].amp);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* The held grid for (npix, dx_m), or NULL (c->mu held). */
static const grid *find(const aperture_cache *c, int npix, double dx_m)
{
    for (int i = 0; i < c->n; ++i)
        if (c->grids[i].npix == npix && fabs(c->grids[i].dx_m - dx_m) <= 1e-12 * dx_m)
            return &c->grids[i];
    return NULL;
}

int aperture_cache_fill(aperture_cache *c, const psf_aperture *a, int npix, double dx_m, float *amp,
                        char *err, size_t errlen)
{
    if (!c) return aperture_fill(a, npix, dx_m, amp, err, errlen);
    size_t bytes = (size_t)npix * npix * sizeof *amp;
    pthread_mutex_lock(&c->mu);
    const grid *g = find(c, npix, dx_m);
    if (g) memcpy(amp, g->amp, bytes);
    pthread_mutex_unlock(&c->mu);
    if (g) return 0;
    /* Filled outside the lock: another thread may fill the same pitch at
     * the same time; the second copy is then simply not kept. */
    if (aperture_fill(&c->aperture, npix, dx_m, amp, err, errlen) != 0) return -1;
    pthread_mutex_lock(&c->mu);
    if (!find(c, npix, dx_m) && c->n < CACHE_MAX_GRIDS && c->bytes + bytes <= c->max_bytes) {
        float *copy = malloc(bytes);
        if (copy) {
            memcpy(copy, amp, bytes);
            c->grids[c->n++] = (grid){npix, dx_m, copy};
            c->bytes += bytes;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int aperture_cache_count(aperture_cache *c)
{
    pthread_mutex_lock(&c->mu);
    int n = c->n;
    pthread_mutex_unlock(&c->mu);
    return n;
}
