/* SPDX-License-Identifier: BSD-3-Clause */
#include "cpu/pupil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optics/aperture.h"
#include "optics/aperture_geom.h"
#include "optics/seg_wavefront.h"
#include "optics/map_sample.h"
#include "optics/wavefront.h"
#include "optics/zernike.h"

static int fail(cpu_pupil *pp, char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "cpu: cannot allocate %s", what);
    cpu_pupil_free(pp);
    return -1;
}

/* The smallest box of rows and columns holding every open sample. */
static void find_box(cpu_pupil *pp, const float *amp, int npix)
{
    int r0 = npix, r1 = -1, c0 = npix, c1 = -1;
    for (int i = 0; i < npix; ++i)
        for (int j = 0; j < npix; ++j) {
            if (amp[(size_t)i * npix + j] <= 0.0f) continue;
            r0 = i < r0 ? i : r0;
            r1 = i > r1 ? i : r1;
            c0 = j < c0 ? j : c0;
            c1 = j > c1 ? j : c1;
        }
    pp->grid = npix;
    pp->row0 = r1 < 0 ? 0 : r0;
    pp->col0 = c1 < 0 ? 0 : c0;
    pp->rows = r1 < 0 ? 0 : r1 - r0 + 1;
    pp->cols = c1 < 0 ? 0 : c1 - c0 + 1;
}

/* Index of the open samples and their destinations: FFT (compact = 0):
 * ifftshift onto the N x N grid; compact: the box of find_box. */
static int collect_open(cpu_pupil *pp, const float *amp, int npix, int compact)
{
    size_t n = (size_t)npix * npix, nopen = 0;
    for (size_t i = 0; i < n; ++i)
        nopen += amp[i] > 0.0f;
    pp->nopen = nopen;
    pp->dest = malloc((nopen ? nopen : 1) * sizeof *pp->dest);
    pp->amp = malloc((nopen ? nopen : 1) * sizeof *pp->amp);
    if (!pp->dest || !pp->amp) return -1;
    if (compact) find_box(pp, amp, npix);
    size_t k = 0;
    for (int i = 0; i < npix; ++i) {
        int di = (i - npix / 2 + npix) % npix;
        for (int j = 0; j < npix; ++j) {
            float a = amp[(size_t)i * npix + j];
            if (a <= 0.0f) continue;
            /* unsigned: (N - 1) N + N - 1 < 2^32 overflows int from N = 46341 */
            pp->dest[k] =
                compact ? (unsigned)((i - pp->row0) * pp->cols + (j - pp->col0))
                        : (unsigned)di * (unsigned)npix + (unsigned)((j - npix / 2 + npix) % npix);
            pp->amp[k++] = a;
        }
    }
    return 0;
}

/* Zernike values at the open samples, in the order of collect_open. */
static void fill_basis(cpu_pupil *pp, const psf_problem *set, int npix, const float *amp,
                       double dx_m)
{
    double radius = 0.5 * set->aperture.diameter_m;
    size_t nopen = pp->nopen, k = 0;
    for (int i = 0; i < npix; ++i) {
        double y = (i - npix / 2) * dx_m;
        for (int j = 0; j < npix; ++j) {
            if (amp[(size_t)i * npix + j] <= 0.0f) continue;
            double x = (j - npix / 2) * dx_m;
            double rho = sqrt(x * x + y * y) / radius, theta = atan2(y, x);
            for (int t = 0; t < set->modes.nterms; ++t)
                pp->basis[(size_t)t * nopen + k] =
                    (float)zernike_eval(set->modes.n[t], set->modes.m[t], rho, theta);
            ++k;
        }
    }
}

/* Each open sample's segment and segment terms (seg_wavefront.h), in the
 * order of collect_open. Returns 0, or -1 out of memory. */
static int fill_segments(cpu_pupil *pp, const psf_problem *set, int npix, const float *amp,
                         double dx_m)
{
    int nt = set->aperture.shape == APERTURE_SEGMENTED ? set->seg_modes.nterms : 0;
    if (nt <= 0) return 0;
    size_t nopen = pp->nopen, k = 0;
    pp->seg_nterms = nt;
    pp->seg = malloc((nopen ? nopen : 1) * sizeof *pp->seg);
    pp->seg_basis = malloc((nopen ? nopen : 1) * (size_t)nt * sizeof *pp->seg_basis);
    if (!pp->seg || !pp->seg_basis) return -1;
    psf_aperture_geom g;
    aperture_geom_init(&set->aperture, &g);
    for (int i = 0; i < npix; ++i)
        for (int j = 0; j < npix; ++j) {
            if (amp[(size_t)i * npix + j] <= 0.0f) continue;
            pp->seg[k] = aps_segment_basis(&g.seg, nt, set->seg_modes.n, set->seg_modes.m,
                                           (j - npix / 2) * dx_m, (i - npix / 2) * dx_m,
                                           pp->seg_basis + k, nopen);
            if (pp->seg[k] >= pp->seg_count) pp->seg_count = pp->seg[k] + 1;
            ++k;
        }
    return 0;
}

static void gather(const float *grid, const float *amp, size_t n, float *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; ++i)
        if (amp[i] > 0.0f) out[k++] = grid[i];
}

/* The pupil on the npix x npix grid, destinations for the FFT or compact. */
static int build(cpu_pupil *pp, const psf_problem *set, int npix, double dx_m, int compact,
                 char *err, size_t errlen)
{
    memset(pp, 0, sizeof *pp);
    pp->dx_m = dx_m;
    size_t n = (size_t)npix * npix;
    float *amp = malloc(n * sizeof *amp);
    if (!amp) return fail(pp, err, errlen, "the aperture grid");
    if (aperture_cache_fill(set->aperture_grids, &set->aperture, npix, dx_m, amp, err, errlen) !=
        0) {
        free(amp);
        cpu_pupil_free(pp);
        return -1;
    }
    if (collect_open(pp, amp, npix, compact) != 0) {
        free(amp);
        return fail(pp, err, errlen, "the pupil sample list");
    }
    size_t nb = (size_t)set->modes.nterms * pp->nopen;
    pp->basis = malloc((nb ? nb : 1) * sizeof *pp->basis);
    if (!pp->basis) {
        free(amp);
        return fail(pp, err, errlen, "the Zernike basis");
    }
    fill_basis(pp, set, npix, amp, dx_m);
    if (fill_segments(pp, set, npix, amp, dx_m) != 0) {
        free(amp);
        return fail(pp, err, errlen, "the segment terms");
    }
    if (set->opd_map) {
        float *grid = malloc(n * sizeof *grid);
        pp->opd = malloc((pp->nopen ? pp->nopen : 1) * sizeof *pp->opd);
        if (!grid || !pp->opd) {
            free(grid);
            free(amp);
            return fail(pp, err, errlen, "the OPD map");
        }
        const double d = set->aperture.diameter_m;
        wavefront_resample_map_wh(set->opd_map, set->opd_rows, set->opd_cols,
                                  map_extent_m(set->opd_width_m, d),
                                  map_extent_m(set->opd_height_m, d), npix, dx_m, grid);
        gather(grid, amp, n, pp->opd);
        free(grid);
    }
    free(amp);
    return 0;
}

int cpu_pupil_build(cpu_pupil *pp, const psf_problem *set, double dx_m, char *err, size_t errlen)
{
    return build(pp, set, set->npix, dx_m, 0, err, errlen);
}

int cpu_pupil_build_compact(cpu_pupil *pp, const psf_problem *set, int grid, double dx_m, char *err,
                            size_t errlen)
{
    if (grid < 1) {
        snprintf(err, errlen, "cpu: pupil grid %d x %d is empty", grid, grid);
        memset(pp, 0, sizeof *pp);
        return -1;
    }
    return build(pp, set, grid, dx_m, 1, err, errlen);
}

void cpu_pupil_clear(const cpu_pupil *pp, fftwf_complex *in)
{
    for (size_t k = 0; k < pp->nopen; ++k)
        in[pp->dest[k]][0] = in[pp->dest[k]][1] = 0.0f;
}

void cpu_pupil_free(cpu_pupil *pp)
{
    free(pp->dest);
    free(pp->amp);
    free(pp->basis);
    free(pp->opd);
    free(pp->seg);
    free(pp->seg_basis);
    memset(pp, 0, sizeof *pp);
}
