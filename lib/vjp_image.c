/* SPDX-License-Identifier: BSD-3-Clause */
/* One image of the gradients' model (lib/vjp_priv.h): its job
 * (image_set_job: the components, scales and coefficients psfsim_compute
 * uses), each component through cpu/adjoint.h's pupil field and transform,
 * the detector stage, then the image set's own steps: the MFT "sum"
 * normalisation (image_set_finish_image: I_n = I / S, S = sum I) and the
 * "poppy" turn (a 180-degree rotation). Backwards, in reverse order: the
 * turn (its own transpose), the normalisation's g' = (g - <g, I_n>) / S
 * (d(I_p / S)/dI_q = (delta_pq - I_n,p) / S, summed against g), the
 * detector's transpose, and per component B = F^H (scale g .* E) and the
 * chain to the inputs (cpu/adjoint.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/vjp_priv.h"

struct vjp_model {
    psfsim_set *set;
    psf_problem problem;
    adj_pupil pupils[PSF_MAX_COMPONENTS];
    int npupils;
    adj_transform tr;
    adj_detector det;
    double *grid;      /* [n n] the grid image; backwards its cotangent */
    double *out;       /* [m m] the written image (before the turn) */
    double *g;         /* [m m] the cotangent */
    double *w;         /* [cap] a component's phase */
    double complex *u; /* [cap] its field */
    double complex *b; /* [cap] its B */
    size_t cap;
    double *storage; /* image_set_storage doubles */
    double *tq;      /* [aperture map] the peak normalisation's part (transmission_scales) */
};

void vjp_model_free(vjp_model *v)
{
    if (!v) return;
    for (int i = 0; i < v->npupils; ++i)
        adj_pupil_free(&v->pupils[i]);
    lib_lock(); /* FFTW's planner state: plans are destroyed one at a time */
    adj_transform_free(&v->tr);
    adj_detector_free(&v->det);
    lib_unlock();
    free(v->grid);
    free(v->out);
    free(v->g);
    free(v->w);
    free(v->u);
    free(v->b);
    free(v->storage);
    free(v->tq);
    free(v);
}

int vjp_model_create(psfsim_set *set, const vjp_args *a, vjp_model **out, char *err, size_t errlen)
{
    *out = NULL;
    vjp_model *v = calloc(1, sizeof *v);
    if (!v) return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory");
    v->set = set;
    image_set_problem(&set->e.set, 1, &v->problem);
    char why[LIB_ERRLEN];
    lib_lock(); /* FFTW's planner is not thread-safe (FFTW manual 5.4) */
    int rc = adj_transform_init(&v->tr, &v->problem, why, sizeof why) != 0 ||
             adj_detector_init(&v->det, &v->problem, why, sizeof why) != 0;
    lib_unlock();
    if (rc) {
        vjp_model_free(v);
        return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
    }
    size_t n = (size_t)v->det.n, m = (size_t)v->det.m;
    v->grid = malloc(n * n * sizeof *v->grid);
    v->out = malloc(m * m * sizeof *v->out);
    v->g = malloc(m * m * sizeof *v->g);
    v->storage = malloc(image_set_storage(&set->e.set) * sizeof *v->storage);
    size_t map = (size_t)v->problem.aperture.map_rows * v->problem.aperture.map_cols;
    v->tq = a->gr.transmission ? malloc((map ? map : 1) * sizeof *v->tq) : NULL;
    if (!v->grid || !v->out || !v->g || !v->storage || (a->gr.transmission && !v->tq)) {
        vjp_model_free(v);
        return lib_fail(err, errlen, PSFSIM_ERR_MEMORY, "out of memory for a %d x %d image", (int)n,
                        (int)n);
    }
    *out = v;
    return PSFSIM_OK;
}

/* The pupil of pitch dx_m built already, or NULL. */
static adj_pupil *pupil_find(vjp_model *v, double dx_m)
{
    for (int i = 0; i < v->npupils; ++i)
        if (fabs(v->pupils[i].p.dx_m - dx_m) <= 1e-12 * dx_m) return &v->pupils[i];
    return NULL;
}

/* The pupil of pitch dx_m, built on first use (with its buffers' room). */
static adj_pupil *pupil_for(vjp_model *v, const vjp_args *a, double dx_m, char *err, size_t errlen)
{
    adj_pupil *found = pupil_find(v, dx_m);
    if (found) return found;
    if (v->npupils == PSF_MAX_COMPONENTS) {
        snprintf(err, errlen, "more than %d pupil pitches", PSF_MAX_COMPONENTS);
        return NULL;
    }
    adj_pupil *pp = &v->pupils[v->npupils];
    if (adj_pupil_build(pp, &v->problem, dx_m, &a->terms, err, errlen) != 0) return NULL;
    v->npupils++;
    size_t n = pp->p.nopen ? pp->p.nopen : 1;
    if (n > v->cap) {
        free(v->w);
        free(v->u);
        free(v->b);
        v->w = malloc(n * sizeof *v->w);
        v->u = malloc(n * sizeof *v->u);
        v->b = malloc(n * sizeof *v->b);
        v->cap = v->w && v->u && v->b ? n : 0;
        if (!v->cap) {
            snprintf(err, errlen, "out of memory for a pupil of %zu samples", n);
            return NULL;
        }
    }
    return pp;
}

/* Image row i's inputs for component c of info's image. */
static adj_input input_of(const vjp_model *v, const vjp_args *a, const image_info *info, int c,
                          long long i)
{
    const psfsim_inputs *in = &a->in;
    adj_input r = {0};
    r.zernike = in->zernike ? in->zernike + (size_t)i * a->terms.nterms : NULL;
    r.seg_zernike =
        in->seg_zernike ? in->seg_zernike + (size_t)i * a->segments * a->terms.seg_nterms : NULL;
    r.opd_map = in->opd_map;
    r.units_to_waves = v->set->e.cfg.zunits == ZUNITS_NM ? 1.0 / info->params.wl_nm[c] : 1.0;
    return r;
}

/* Component c's field (v->u) and transform (v->tr.e). */
static int component(vjp_model *v, const vjp_args *a, const psf_job *job, const image_info *info,
                     int c, long long i, adj_pupil **pp, adj_input *in, char *err, size_t errlen)
{
    const psf_component *comp = &job->comp[c];
    *pp = pupil_for(v, a, comp->dx_m, err, errlen);
    if (!*pp) return -1;
    *in = input_of(v, a, info, c, i);
    adj_pupil_field(*pp, &v->problem, &a->terms, comp, in, v->w, v->u);
    return adj_transform_forward(&v->tr, *pp, comp, v->u, err, errlen);
}

/* Turn img[m m] by 180 degrees (image_set_measure's "poppy" orientation). */
static void rotate_180(double *img, size_t n)
{
    for (size_t p = 0, q = n ? n - 1 : 0; p < q; ++p, --q) {
        double t = img[p];
        img[p] = img[q];
        img[q] = t;
    }
}

/* The image set's steps after the backend: the MFT "sum" division (*sum
 * gets S, 0 when not divided), the turn. */
static void finish(const vjp_model *v, double *img, double *sum)
{
    const image_set *s = &v->set->e.set;
    size_t mm = (size_t)v->det.m * v->det.m;
    *sum = 0.0;
    if (s->mft && s->cfg->normalization == NORM_SUM) {
        double total = 0.0;
        for (size_t p = 0; p < mm; ++p)
            total += img[p];
        if (total > 0.0 && isfinite(total)) {
            for (size_t p = 0; p < mm; ++p)
                img[p] /= total;
            *sum = total;
        }
    }
    if (s->cfg->orientation == ORIENT_POPPY) rotate_180(img, mm);
}

/* finish's transpose on v->g (from the cotangent), img the finished image. */
static void finish_adjoint(vjp_model *v, const double *cot, const double *img, double sum)
{
    const image_set *s = &v->set->e.set;
    size_t mm = (size_t)v->det.m * v->det.m;
    memcpy(v->g, cot, mm * sizeof *v->g);
    int poppy = s->cfg->orientation == ORIENT_POPPY;
    if (sum > 0.0) { /* g' = (g - <g, I_n>) / S, I_n the divided image */
        double dot = 0.0;
        for (size_t p = 0; p < mm; ++p)
            dot += v->g[p] * img[p]; /* both turned alike: the same sum */
        for (size_t p = 0; p < mm; ++p)
            v->g[p] = (v->g[p] - dot) / sum;
    }
    if (poppy) rotate_180(v->g, mm);
}

/* Image row i's gradient destinations (its rows zeroed; the maps' shared
 * by the images, summed). */
static adj_grads grads_of(const vjp_args *a, long long i)
{
    adj_grads g = {0};
    const psfsim_gradients *gr = &a->gr;
    size_t nt = (size_t)a->terms.nterms, ns = (size_t)a->segments * a->terms.seg_nterms;
    if (gr->zernike) g.zernike = memset(gr->zernike + i * nt, 0, nt * sizeof(double));
    if (gr->seg_zernike) g.seg_zernike = memset(gr->seg_zernike + i * ns, 0, ns * sizeof(double));
    g.opd_map = gr->opd_map;
    g.transmission = gr->transmission;
    return g;
}

/* The peak normalisation's share r_c = P_c / P of component c (P_c =
 * scale_c S1_c^2: its part of the unaberrated peak the scales divide by). */
static double peak_share(vjp_model *v, const psf_job *job, int c)
{
    double total = 0.0, own = 0.0;
    for (int e = 0; e < job->ncomp; ++e) {
        const adj_pupil *pp = pupil_find(v, job->comp[e].dx_m);
        double p = pp ? job->comp[e].scale * pp->s1 * pp->s1 : 0.0;
        total += p;
        own += e == c ? p : 0.0;
    }
    return total > 0.0 ? own / total : 0.0;
}

/* The transmission's gradient through the scales (docs/design.md,
 * "Gradients"): scale_c = w_c / (n_c^2 S2_c) (over the unaberrated peak P
 * for "peak"), so with G_c = dL/dscale_c = <g, |E_c|^2>, dL/dA_n gets
 * -2 G_c scale_c A_n / S2_c from component c's own S2; "peak" adds, over
 * log P, Q r_c (2 A_n / S2_c - 2 / S1_c) with Q = sum_e G_e scale_e (its
 * part is scattered into v->tq and multiplied by Q once every G_e is
 * known). */
static void transmission_scales(vjp_model *v, const vjp_args *a, const psf_job *job, int c,
                                const adj_pupil *pp, const adj_input *in, adj_grads *g, double *q)
{
    const psf_component *comp = &job->comp[c];
    double gc = adj_transform_dot(&v->tr, v->grid);
    *q += gc * comp->scale;
    g->t_alpha = -2.0 * gc * comp->scale / pp->s2;
    g->t_beta = 0.0;
    g->t_direct = 1;
    if (v->set->e.cfg.normalization != NORM_PEAK) return;
    double r = peak_share(v, job, c);
    adj_grads tq = {
        .transmission = v->tq, .t_alpha = 2.0 * r / pp->s2, .t_beta = -2.0 * r / pp->s1};
    adj_pupil_grads(pp, &a->terms, comp, in, NULL, NULL, &tq);
}

static int backward(vjp_model *v, const vjp_args *a, const psf_job *job, const image_info *info,
                    long long i, char *err, size_t errlen)
{
    adj_detector_adjoint(&v->det, v->g, v->grid);
    adj_grads g = grads_of(a, i);
    size_t map = (size_t)v->problem.aperture.map_rows * v->problem.aperture.map_cols;
    if (g.transmission) memset(v->tq, 0, map * sizeof *v->tq);
    double q = 0.0;
    for (int c = 0; c < job->ncomp; ++c) { /* the forward field again, then B */
        adj_pupil *pp;
        adj_input in;
        if (component(v, a, job, info, c, i, &pp, &in, err, errlen) != 0) return -1;
        if (g.transmission) transmission_scales(v, a, job, c, pp, &in, &g, &q);
        adj_transform_adjoint(&v->tr, pp, v->grid, job->comp[c].scale, v->b);
        adj_pupil_grads(pp, &a->terms, &job->comp[c], &in, v->b, v->u, &g);
    }
    for (size_t p = 0; g.transmission && p < map; ++p)
        g.transmission[p] += q * v->tq[p];
    return 0;
}

int vjp_model_image(vjp_model *v, const vjp_args *a, pthread_mutex_t *jobs, long long k,
                    long long i, const double *cotangent, double *image, char *err, size_t errlen)
{
    psf_job job;
    image_info info;
    char why[LIB_ERRLEN];
    if (jobs) pthread_mutex_lock(jobs);
    int rc = image_set_job(&v->set->e.set, k, v->storage, &job, &info, why, sizeof why);
    if (jobs) pthread_mutex_unlock(jobs);
    if (rc != 0) return lib_fail(err, errlen, PSFSIM_ERR_CONFIG, "%s", why);
    size_t nn = (size_t)v->det.n * v->det.n, mm = (size_t)v->det.m * v->det.m;
    memset(v->grid, 0, nn * sizeof *v->grid);
    for (int c = 0; c < job.ncomp; ++c) {
        adj_pupil *pp;
        adj_input in;
        if (component(v, a, &job, &info, c, i, &pp, &in, why, sizeof why) != 0)
            return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
        adj_transform_intensity(&v->tr, job.comp[c].scale, v->grid);
    }
    adj_detector_forward(&v->det, v->grid, v->out);
    double sum;
    finish(v, v->out, &sum);
    if (image) memcpy(image, v->out, mm * sizeof *image);
    if (!cotangent) return PSFSIM_OK;
    finish_adjoint(v, cotangent, v->out, sum);
    if (backward(v, a, &job, &info, i, why, sizeof why) != 0)
        return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
    return PSFSIM_OK;
}
