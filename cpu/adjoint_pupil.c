/* SPDX-License-Identifier: BSD-3-Clause */
/* The pupil field of the gradients' model and its adjoint (cpu/adjoint.h):
 * U = A exp(+i 2 pi W), W in waves, and dL/dW chained to the inputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/adjoint.h"
#include "optics/aperture_geom.h"
#include "optics/map_sample.h"
#include "optics/seg_wavefront.h"
#include "optics/zernike.h"

void adj_pupil_free(adj_pupil *pp)
{
    cpu_pupil_free(&pp->p);
    free(pp->row);
    free(pp->col);
    free(pp->zb);
    free(pp->seg);
    free(pp->sb);
    free(pp->mw_idx);
    free(pp->mw);
    free(pp->tg);
    free(pp->aw_idx);
    free(pp->aw);
    memset(pp, 0, sizeof *pp);
}

/* Each sample's grid row and column from its destination: the FFT's
 * ifftshifted index (i - N/2 mod N) N + (j - N/2 mod N), or the compact
 * box's (i - row0) cols + (j - col0) (cpu/pupil.c, collect_open). */
static void positions(adj_pupil *pp, int mft)
{
    const cpu_pupil *p = &pp->p;
    unsigned g = (unsigned)pp->grid;
    for (size_t k = 0; k < p->nopen; ++k) {
        unsigned d = p->dest[k];
        if (mft) {
            pp->row[k] = (int)(d / (unsigned)p->cols) + p->row0;
            pp->col[k] = (int)(d % (unsigned)p->cols) + p->col0;
        } else {
            pp->row[k] = (int)((d / g + g / 2) % g);
            pp->col[k] = (int)((d % g + g / 2) % g);
        }
    }
}

/* The input global terms at each sample (cpu/pupil.c's fill_basis, in
 * double). */
static void input_basis(adj_pupil *pp, const psf_problem *problem, const adj_terms *terms)
{
    size_t nopen = pp->p.nopen;
    double radius = 0.5 * problem->aperture.diameter_m, dx = pp->p.dx_m;
    for (size_t k = 0; k < nopen; ++k) {
        double x = (pp->col[k] - pp->grid / 2) * dx, y = (pp->row[k] - pp->grid / 2) * dx;
        double rho = sqrt(x * x + y * y) / radius, theta = atan2(y, x);
        for (int t = 0; t < terms->nterms; ++t)
            pp->zb[(size_t)t * nopen + k] = zernike_eval(terms->n[t], terms->m[t], rho, theta);
    }
}

/* The input segment terms at each sample (optics/seg_wavefront.h, as
 * cpu/pupil.c's fill_segments). */
static void input_segments(adj_pupil *pp, const psf_problem *problem, const adj_terms *terms)
{
    size_t nopen = pp->p.nopen;
    int nt = terms->seg_nterms;
    float v[64];
    psf_aperture_geom g;
    aperture_geom_init(&problem->aperture, &g);
    for (size_t k = 0; k < nopen; ++k) {
        double x = (pp->col[k] - pp->grid / 2) * pp->p.dx_m;
        double y = (pp->row[k] - pp->grid / 2) * pp->p.dx_m;
        pp->seg[k] = aps_segment_basis(&g.seg, nt, terms->seg_n, terms->seg_m, x, y, v, 1);
        for (int t = 0; t < nt; ++t)
            pp->sb[(size_t)t * nopen + k] = v[t];
    }
}

/* map_bilinear_wh (optics/map_sample.h) as weights: value(x, y) =
 * sum_q w[q] map[idx[q]], the same clamping, 0 outside the rectangle. */
static void map_weights(int rows, int cols, double width_m, double height_m, double x_m, double y_m,
                        int *idx, double *w)
{
    double half_w = 0.5 * width_m * (1.0 + 2e-9), half_h = 0.5 * height_m * (1.0 + 2e-9);
    for (int q = 0; q < 4; ++q) {
        idx[q] = 0;
        w[q] = 0.0;
    }
    if (fabs(x_m) > half_w || fabs(y_m) > half_h) return;
    double u = (x_m / width_m + 0.5) * cols - 0.5, v = (y_m / height_m + 0.5) * rows - 0.5;
    u = u < 0.0 ? 0.0 : (u > cols - 1 ? cols - 1 : u);
    v = v < 0.0 ? 0.0 : (v > rows - 1 ? rows - 1 : v);
    int c0 = (int)u, r0 = (int)v;
    int c1 = c0 + 1 < cols ? c0 + 1 : c0, r1 = r0 + 1 < rows ? r0 + 1 : r0;
    double fu = u - c0, fv = v - r0;
    idx[0] = r0 * cols + c0, w[0] = (1.0 - fu) * (1.0 - fv);
    idx[1] = r0 * cols + c1, w[1] = fu * (1.0 - fv);
    idx[2] = r1 * cols + c0, w[2] = (1.0 - fu) * fv;
    idx[3] = r1 * cols + c1, w[3] = fu * fv;
}

static void input_map(adj_pupil *pp, const psf_problem *problem)
{
    double d = problem->aperture.diameter_m, dx = pp->p.dx_m;
    double wm = map_extent_m(problem->opd_width_m, d), hm = map_extent_m(problem->opd_height_m, d);
    for (size_t k = 0; k < pp->p.nopen; ++k)
        map_weights(problem->opd_rows, problem->opd_cols, wm, hm, (pp->col[k] - pp->grid / 2) * dx,
                    (pp->row[k] - pp->grid / 2) * dx, pp->mw_idx + 4 * k, pp->mw + 4 * k);
}

/* The aperture map's part of each sample's transmission: A_n = tg_n m(x_n)
 * (optics/aperture.c, aperture_fill: the geometry's grey edge times the
 * map's bilinear value). */
static void input_transmission(adj_pupil *pp, const psf_problem *problem)
{
    const psf_aperture *a = &problem->aperture;
    psf_aperture_geom g;
    aperture_geom_init(a, &g);
    double d = a->diameter_m, dx = pp->p.dx_m;
    double wm = map_extent_m(a->map_width_m, d), hm = map_extent_m(a->map_height_m, d);
    for (size_t k = 0; k < pp->p.nopen; ++k) {
        int di = pp->row[k] - pp->grid / 2, dj = pp->col[k] - pp->grid / 2;
        pp->tg[k] = aperture_sample_index(&g, di, dj, dx);
        map_weights(a->map_rows, a->map_cols, wm, hm, dj * dx, di * dx, pp->aw_idx + 4 * k,
                    pp->aw + 4 * k);
    }
}

/* malloc of n (at least 1) items of size bytes. */
static void *alloc(size_t n, size_t size)
{
    return malloc((n ? n : 1) * size);
}

int adj_pupil_build(adj_pupil *pp, const psf_problem *problem, double dx_m, const adj_terms *terms,
                    char *err, size_t errlen)
{
    memset(pp, 0, sizeof *pp);
    pp->grid = problem->mft ? problem->pupil_npix : problem->npix;
    int rc = problem->mft ? cpu_pupil_build_compact(&pp->p, problem, pp->grid, dx_m, err, errlen)
                          : cpu_pupil_build(&pp->p, problem, dx_m, err, errlen);
    if (rc != 0) return -1;
    size_t n = pp->p.nopen;
    pp->row = alloc(n, sizeof *pp->row);
    pp->col = alloc(n, sizeof *pp->col);
    pp->zb = alloc(n * (size_t)terms->nterms, sizeof *pp->zb);
    pp->seg = alloc(n, sizeof *pp->seg);
    pp->sb = alloc(n * (size_t)terms->seg_nterms, sizeof *pp->sb);
    pp->mw_idx = alloc(4 * n, sizeof *pp->mw_idx);
    pp->mw = alloc(4 * n, sizeof *pp->mw);
    int tr = terms->transmission && problem->aperture.map;
    pp->tg = tr ? alloc(n, sizeof *pp->tg) : NULL;
    pp->aw_idx = tr ? alloc(4 * n, sizeof *pp->aw_idx) : NULL;
    pp->aw = tr ? alloc(4 * n, sizeof *pp->aw) : NULL;
    if (!pp->row || !pp->col || !pp->zb || !pp->seg || !pp->sb || !pp->mw_idx || !pp->mw ||
        (tr && (!pp->tg || !pp->aw_idx || !pp->aw))) {
        adj_pupil_free(pp);
        snprintf(err, errlen, "cpu: cannot allocate the gradients' pupil of %zu samples", n);
        return -1;
    }
    positions(pp, problem->mft);
    for (size_t k = 0; k < n; ++k) {
        pp->s1 += pp->p.amp[k];
        pp->s2 += (double)pp->p.amp[k] * pp->p.amp[k];
    }
    input_basis(pp, problem, terms);
    if (terms->seg_nterms > 0) input_segments(pp, problem, terms);
    if (terms->opd && problem->opd_map) input_map(pp, problem);
    if (tr) input_transmission(pp, problem);
    return 0;
}

/* The backend's own phase at sample k (cpu/pupil_field.c's W, in double). */
static double own_phase(const cpu_pupil *p, int nterms, const psf_component *comp, size_t k)
{
    double w = p->opd && comp->opd_to_waves != 0.0 ? p->opd[k] * comp->opd_to_waves : 0.0;
    for (int t = 0; t < nterms; ++t)
        w += comp->coeff_waves[t] * p->basis[(size_t)t * p->nopen + k];
    if (p->seg_nterms > 0 && p->seg[k] >= 0) {
        const double *c = comp->coeff_waves + nterms + (size_t)p->seg[k] * p->seg_nterms;
        for (int t = 0; t < p->seg_nterms; ++t)
            w += c[t] * p->seg_basis[(size_t)t * p->nopen + k];
    }
    return w;
}

/* The inputs' phase at sample k, waves. */
static double input_phase(const adj_pupil *pp, const adj_terms *terms, const psf_component *comp,
                          const adj_input *in, size_t k)
{
    size_t nopen = pp->p.nopen;
    double c = 0.0;
    for (int t = 0; in->zernike && t < terms->nterms; ++t)
        c += in->zernike[t] * pp->zb[(size_t)t * nopen + k];
    if (in->seg_zernike && terms->seg_nterms > 0 && pp->seg[k] >= 0) {
        const double *z = in->seg_zernike + (size_t)pp->seg[k] * terms->seg_nterms;
        for (int t = 0; t < terms->seg_nterms; ++t)
            c += z[t] * pp->sb[(size_t)t * nopen + k];
    }
    double w = c * in->units_to_waves;
    if (in->opd_map && terms->opd) {
        double o = 0.0;
        for (int q = 0; q < 4; ++q)
            o += pp->mw[4 * k + q] * in->opd_map[pp->mw_idx[4 * k + q]];
        w += o * comp->opd_to_waves;
    }
    return w;
}

void adj_pupil_field(const adj_pupil *pp, const psf_problem *problem, const adj_terms *terms,
                     const psf_component *comp, const adj_input *in, double *w, double complex *u)
{
    for (size_t k = 0; k < pp->p.nopen; ++k) {
        w[k] =
            own_phase(&pp->p, problem->modes.nterms, comp, k) + input_phase(pp, terms, comp, in, k);
        double ph = 2.0 * M_PI * (w[k] - floor(w[k])); /* one wave, as the backend's */
        u[k] = pp->p.amp[k] * (cos(ph) + I * sin(ph));
    }
}

void adj_pupil_grads(const adj_pupil *pp, const adj_terms *terms, const psf_component *comp,
                     const adj_input *in, const double complex *b, const double complex *u,
                     const adj_grads *g)
{
    size_t nopen = pp->p.nopen;
    double f = in->units_to_waves;
    for (size_t k = 0; k < nopen; ++k) {
        /* dL/dW_k = 4 pi Im(b conj(u)), written out (C's complex product
         * is a library call: cpu/adjoint_transform.c, cmul) */
        double dw = b ? 4.0 * M_PI * (cimag(b[k]) * creal(u[k]) - creal(b[k]) * cimag(u[k])) : 0.0;
        for (int t = 0; g->zernike && t < terms->nterms; ++t)
            g->zernike[t] += f * dw * pp->zb[(size_t)t * nopen + k];
        if (g->seg_zernike && terms->seg_nterms > 0 && pp->seg[k] >= 0) {
            double *s = g->seg_zernike + (size_t)pp->seg[k] * terms->seg_nterms;
            for (int t = 0; t < terms->seg_nterms; ++t)
                s[t] += f * dw * pp->sb[(size_t)t * nopen + k];
        }
        for (int q = 0; g->opd_map && terms->opd && q < 4; ++q)
            g->opd_map[pp->mw_idx[4 * k + q]] += comp->opd_to_waves * dw * pp->mw[4 * k + q];
        if (!g->transmission || !pp->tg) continue;
        double a = pp->p.amp[k];
        double da = g->t_alpha * a + g->t_beta;
        if (g->t_direct) da += 2.0 * (creal(b[k]) * creal(u[k]) + cimag(b[k]) * cimag(u[k])) / a;
        for (int q = 0; q < 4; ++q)
            g->transmission[pp->aw_idx[4 * k + q]] += da * pp->tg[k] * pp->aw[4 * k + q];
    }
}
