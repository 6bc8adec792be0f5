/* SPDX-License-Identifier: BSD-3-Clause */
/* The measured field model (see field_table.h). */
#include "app/set/field_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libqhull_r/qhull_ra.h>

#include "app/set/table.h"
#include "optics/aperture.h"

#define KEY "field.table"
/* A barycentric weight this far below 0 still counts as inside (rounding). */
#define FIELD_TABLE_EPS 1e-12

typedef struct {
    size_t npts;
    const double *x, *y;
    size_t *order; /* [npts] rows sorted by (x, y) */
    int ntri;
    int (*tri)[3]; /* [ntri] row indices */
} field_mesh;

/* Rows a, b by (x, y), then by row (qsort_r: the mesh is the context, so
 * sets opened on several threads sort apart). */
static int cmp_xy(const void *a, const void *b, void *ctx)
{
    const field_mesh *m = ctx;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    if (m->x[i] != m->x[j]) return m->x[i] < m->x[j] ? -1 : 1;
    if (m->y[i] != m->y[j]) return m->y[i] < m->y[j] ? -1 : 1;
    return i < j ? -1 : (i > j);
}

/* The row at (x, y) exactly, or -1 (binary search of order). */
static long long exact_row(const field_mesh *m, double x, double y)
{
    size_t lo = 0, hi = m->npts;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2, r = m->order[mid];
        if (m->x[r] < x || (m->x[r] == x && m->y[r] < y))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m->npts && m->x[m->order[lo]] == x && m->y[m->order[lo]] == y)
        return (long long)m->order[lo];
    return -1;
}

/* Qhull's Delaunay triangles of the points into m->tri. why gets Qhull's
 * message on failure. */
static int triangulate(field_mesh *m, char *why, size_t whylen)
{
    coordT *pts = malloc(m->npts * 2 * sizeof *pts);
    if (!pts) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < m->npts; ++i) {
        pts[2 * i] = m->x[i];
        pts[2 * i + 1] = m->y[i];
    }
    char *errtext = NULL;
    size_t errlen = 0;
    FILE *errfile = open_memstream(&errtext, &errlen);
    qhT qh_qh;
    qhT *qh = &qh_qh;
    qh_zero(qh, errfile);
    char cmd[] = "qhull d Qt Qbb Qc Qz";
    int rc = errfile ? qh_new_qhull(qh, 2, (int)m->npts, pts, False, cmd, NULL, errfile) : 1;
    if (rc == 0) {
        facetT *facet;
        int cap = 0;
        FORALLfacets
        {
            if (!facet->upperdelaunay) ++cap;
        }
        m->tri = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *m->tri);
        if (!m->tri) rc = -2;
        FORALLfacets
        {
            if (rc != 0 || facet->upperdelaunay) continue;
            vertexT *vertex, **vertexp;
            int k = 0, ok = 1, t[3] = {0, 0, 0};
            FOREACHvertex_(facet->vertices)
            {
                int id = qh_pointid(qh, vertex->point);
                if (k < 3) t[k] = id;
                ok &= id >= 0 && (size_t)id < m->npts;
                ++k;
            }
            if (ok && k == 3) memcpy(m->tri[m->ntri++], t, sizeof t);
        }
    }
    qh_freeqhull(qh, !qh_ALL);
    int curlong, totlong;
    qh_memfreeshort(qh, &curlong, &totlong);
    if (errfile) fclose(errfile);
    free(pts);
    if (rc == -2)
        snprintf(why, whylen, "out of memory");
    else if (rc != 0 || m->ntri == 0) {
        /* psfsim's sentence, then Qhull's error code (QH6154, QH6214, ...)
         * for whoever looks it up; Qhull's text is Qhull's options' talk. */
        char code[16] = "";
        const char *q = errtext ? strstr(errtext, "QH") : NULL;
        if (q && strspn(q + 2, "0123456789") == 4) snprintf(code, sizeof code, "%.6s", q);
        snprintf(why, whylen,
                 "the table's %zu points are collinear (or coincide): a triangulation needs "
                 "three points not on one line (Qhull %s)",
                 m->npts, code[0] ? code : "found no triangle");
        rc = -1;
    }
    free(errtext);
    return rc == 0 ? 0 : -1;
}

/* The triangle holding (x, y) and its weights: the one with the largest
 * smallest weight; -1 when that is below -FIELD_TABLE_EPS (outside). */
static int locate(const field_mesh *m, double x, double y, double w[3])
{
    int best = -1;
    double best_min = -HUGE_VAL;
    for (int t = 0; t < m->ntri; ++t) {
        const int *v = m->tri[t];
        double x1 = m->x[v[0]], y1 = m->y[v[0]], x2 = m->x[v[1]], y2 = m->y[v[1]];
        double x3 = m->x[v[2]], y3 = m->y[v[2]];
        double d = (y2 - y3) * (x1 - x3) + (x3 - x2) * (y1 - y3);
        if (d == 0.0) continue; /* a flat triangle of Qt's */
        double l1 = ((y2 - y3) * (x - x3) + (x3 - x2) * (y - y3)) / d;
        double l2 = ((y3 - y1) * (x - x3) + (x1 - x3) * (y - y3)) / d;
        double l3 = 1.0 - l1 - l2;
        double mn = fmin(l1, fmin(l2, l3));
        if (mn > best_min) {
            best_min = mn;
            best = t;
            w[0] = l1;
            w[1] = l2;
            w[2] = l3;
        }
    }
    return best_min >= -FIELD_TABLE_EPS ? best : -1;
}

static int name_ok(const char *name, void *ctx)
{
    const psf_config *cfg = ctx;
    int k;
    return strcmp(name, "x_px") == 0 || strcmp(name, "y_px") == 0 ||
           table_zernike_index(name, cfg->zconv) >= 0 ||
           (cfg->aperture.shape == APERTURE_SEGMENTED &&
            table_segment_index(name, cfg->zconv, &k) >= 0);
}

/* Column c, s<k>_z<j>: a present segment of the rings, radial order <= 4. */
static int segment_column(set_axes *ax, const psf_table *t, int c, int k, int j, int n, char *err,
                          size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    int nseg = aperture_segment_count(cfg->aperture.seg.rings);
    const char *why = NULL;
    char msg[160];
    if (k >= nseg) {
        snprintf(msg, sizeof msg, "segment %d is outside the %d ring%s (0 .. %d)", k,
                 cfg->aperture.seg.rings, cfg->aperture.seg.rings == 1 ? "" : "s", nseg - 1);
        why = msg;
    } else if ((cfg->aperture.seg.missing[k / 64] >> (k % 64)) & 1ULL) {
        why = "the segment is left out (optics.aperture.segments.missing)";
    } else if (n > CFG_SEG_MAX_ORDER) {
        snprintf(msg, sizeof msg,
                 "j = %d is of radial order %d: a segment's terms go up to radial order %d", j, n,
                 CFG_SEG_MAX_ORDER);
        why = msg;
    }
    if (why)
        return axes_fail(cfg, KEY, err, errlen, "%s:%zu:%d (%.200s): %s", t->path, t->header_line,
                         c + 1, t->names[c], why);
    return 0;
}

/* The table's s<k>_z<j> columns into ax->fsegs, with room after them for
 * field.segment_zernike's terms (eval_segment_terms). */
static int segment_columns(set_axes *ax, const psf_table *t, char *err, size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    if (cfg->aperture.shape != APERTURE_SEGMENTED) return 0;
    int ntab = 0, cap = t->ncols + cfg->field.nsegterms;
    ax->fsegs = calloc((size_t)cap, sizeof *ax->fsegs);
    if (!ax->fsegs) return axes_fail(cfg, KEY, err, errlen, "out of memory");
    for (int c = 0; c < t->ncols; ++c) {
        int k, n, m, j = table_segment_index(t->names[c], cfg->zconv, &k);
        if (j < 0) continue;
        zernike_index_to_nm(cfg->zconv, j, &n, &m);
        if (segment_column(ax, t, c, k, j, n, err, errlen)) return -1;
        ax->fsegs[ntab++] = (axes_field_segterm){k, j, n, m, c};
    }
    if (ntab == 0) {
        free(ax->fsegs);
        ax->fsegs = NULL;
        return 0;
    }
    ax->nfsegs = ntab + cfg->field.nsegterms;
    ax->fsegvalues = malloc((size_t)ax->nfield * (size_t)ax->nfsegs * sizeof *ax->fsegvalues);
    if (!ax->fsegvalues) return axes_fail(cfg, KEY, err, errlen, "out of memory");
    return 0;
}

/* The columns: x_px, y_px, z<j> into ax->fterms. */
static int columns(set_axes *ax, const psf_table *t, int *cx, int *cy, char *err, size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    static const char *const conv_names[] = {"Noll", "ANSI", "Fringe"};
    char allowed[160], why[2048];
    zernike_convention conv = cfg->zconv;
    snprintf(allowed, sizeof allowed, "x_px, y_px, z<j>%s with j an index in the %s convention",
             cfg->aperture.shape == APERTURE_SEGMENTED ? " and s<segment>_z<j>" : "",
             conv_names[conv]);
    if (table_check_names(t, name_ok, (void *)cfg, allowed, why, sizeof why) != 0)
        return axes_fail(cfg, KEY, err, errlen, "%s", why);
    *cx = table_column(t, "x_px");
    *cy = table_column(t, "y_px");
    ax->fterms = calloc((size_t)t->ncols, sizeof *ax->fterms);
    if (!ax->fterms) return axes_fail(cfg, KEY, err, errlen, "out of memory");
    for (int c = 0; c < t->ncols; ++c) {
        int j = table_zernike_index(t->names[c], conv);
        if (j < 0) continue;
        axes_table_term *z = &ax->fterms[ax->nfterms++];
        z->col = c;
        z->j = j;
        zernike_index_to_nm(conv, j, &z->n, &z->m);
    }
    if (segment_columns(ax, t, err, errlen)) return -1;
    if (*cx < 0 || *cy < 0 || ax->nfterms + ax->nfsegs == 0)
        return axes_fail(cfg, KEY, err, errlen,
                         "%s: needs the columns x_px, y_px and at least one z<j> (the measured "
                         "points' positions, pixels, and their terms)",
                         t->path);
    return 0;
}

/* Distinct points (order sorted). */
static int check_distinct(set_axes *ax, const psf_table *t, const field_mesh *m, char *err,
                          size_t errlen)
{
    for (size_t i = 1; i < m->npts; ++i) {
        size_t a = m->order[i - 1], b = m->order[i];
        if (m->x[a] == m->x[b] && m->y[a] == m->y[b])
            return axes_fail(ax->cfg, KEY, err, errlen,
                             "%s:%zu: the point (%.17g, %.17g) repeats line %zu's (one value per "
                             "point)",
                             t->path, t->line[b], m->x[b], m->y[b], t->line[a]);
    }
    return 0;
}

static int interpolate(set_axes *ax, const psf_table *t, field_mesh *m, char *err, size_t errlen)
{
    const cfg_field *fd = &ax->cfg->field;
    for (long long f = 0; f < ax->nfield; ++f) {
        double x = fd->x_px[f], y = fd->y_px[f], *out = ax->fvalues + f * ax->nfterms;
        double *sout = ax->fsegvalues ? ax->fsegvalues + f * ax->nfsegs : NULL;
        int nts = ax->nfsegs - ax->cfg->field.nsegterms; /* the table's segment columns */
        long long r = exact_row(m, x, y);
        if (r >= 0) {
            for (int i = 0; i < ax->nfterms; ++i)
                out[i] = t->cols[ax->fterms[i].col][r];
            for (int i = 0; sout && i < nts; ++i)
                sout[i] = t->cols[ax->fsegs[i].col][r];
            continue;
        }
        double w[3] = {0.0, 0.0, 0.0};
        int tr = locate(m, x, y, w);
        if (tr < 0)
            return axes_fail(ax->cfg, KEY, err, errlen,
                             "%s: the position (%.17g, %.17g) px is outside the convex hull of "
                             "the table's %zu points (interpolated only inside them: measure the "
                             "field out to the set's positions, or move the positions in)",
                             t->path, x, y, m->npts);
        const int *v = m->tri[tr];
        for (int i = 0; i < ax->nfterms; ++i) {
            const double *z = t->cols[ax->fterms[i].col];
            out[i] = w[0] * z[v[0]] + w[1] * z[v[1]] + w[2] * z[v[2]];
        }
        for (int i = 0; sout && i < nts; ++i) {
            const double *z = t->cols[ax->fsegs[i].col];
            sout[i] = w[0] * z[v[0]] + w[1] * z[v[1]] + w[2] * z[v[2]];
        }
    }
    return 0;
}

int field_table_interpolate(set_axes *ax, char *err, size_t errlen)
{
    const psf_config *cfg = ax->cfg;
    psf_table *t = NULL;
    char why[2048];
    if (table_load_rows(cfg->field.table_file, "one measured field point per row", &t, why,
                        sizeof why) != 0)
        return axes_fail(cfg, KEY, err, errlen, "%s", why);
    field_mesh m = {0};
    int cx = -1, cy = -1, rc = columns(ax, t, &cx, &cy, err, errlen);
    if (rc == 0) {
        m.npts = t->nrows;
        m.x = t->cols[cx];
        m.y = t->cols[cy];
        m.order = malloc(m.npts * sizeof *m.order);
        ax->fvalues = malloc(((size_t)ax->nfield * (size_t)ax->nfterms + 1) * sizeof *ax->fvalues);
        if (!m.order || !ax->fvalues) rc = axes_fail(cfg, KEY, err, errlen, "out of memory");
    }
    if (rc == 0) {
        for (size_t i = 0; i < m.npts; ++i)
            m.order[i] = i;
        qsort_r(m.order, m.npts, sizeof *m.order, cmp_xy, &m);
        rc = check_distinct(ax, t, &m, err, errlen);
    }
    if (rc == 0 && triangulate(&m, why, sizeof why) != 0)
        rc = axes_fail(cfg, KEY, err, errlen, "%s: %s", t->path, why);
    if (rc == 0) rc = interpolate(ax, t, &m, err, errlen);
    free(m.order);
    free(m.tri);
    table_free(t);
    return rc;
}
