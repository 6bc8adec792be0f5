/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/output/manifest.h"
#include "app/output/csv_exact.h"
#include "app/set/field_grid.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

const char manifest_header[] =
    "index,png,fits,wavelength_nm,defocus,focus_shift_um,zernike_j,zernike_coeff,pupil_samples,"
    "npix,pixel_scale_lambda_d,pixel_scale_arcsec,pixel_scale_um,strehl,axial_intensity,backend,"
    "config_hash\n";

void csv_number(char *out, size_t outlen, double v)
{
    if (isnan(v))
        out[0] = '\0';
    else
        snprintf(out, outlen, "%.10g", v);
}

const char *csv_cell_text(csv_cell *c, double v, int fixed3)
{
    if (!c->set || memcmp(&c->v, &v, sizeof v) != 0) {
        if (fixed3)
            csv_fixed3(c->s, sizeof c->s, v);
        else
            csv_number(c->s, sizeof c->s, v);
        c->v = v;
        c->set = 1;
    }
    return c->s;
}

/* The header: manifest_header, then the label columns of a table or random
 * set, the segment label columns s<k>_z<j> of any set with segment terms,
 * then captured_fraction with normalization "pupil". malloc'd; NULL when
 * out of memory. */
static char *header_for(const image_set *s)
{
    const set_labels *l = &s->labels;
    const set_segterms *st = &s->segterms;
    int dataset = axes_is_dataset(&s->axes);
    size_t base = strlen(manifest_header),
           len = base + 80 + 16 * (size_t)l->nterms + 24 * (size_t)st->nlabels;
    char *h = malloc(len);
    if (!h) return NULL;
    memcpy(h, manifest_header, base + 1);
    int pupil = s->cfg->normalization == NORM_PUPIL;
    if (!dataset && !pupil && st->nlabels == 0) return h;
    size_t at = base - 1; /* over the newline */
    if (dataset && s->cfg->random.count > 0) at += (size_t)snprintf(h + at, len - at, ",draw,seed");
    for (int i = 0; dataset && i < l->nterms; ++i)
        at += (size_t)snprintf(h + at, len - at, ",z%d", l->j[i]);
    for (int i = 0; i < st->nlabels; ++i)
        at += (size_t)snprintf(h + at, len - at, ",s%d_z%d", st->label_segment[i], st->label_j[i]);
    double fx, fy; /* the table's detector positions, labels too */
    if (field_grid_position(&s->axes, 0, &fx, &fy))
        at += (size_t)snprintf(h + at, len - at, ",field_x_px,field_y_px");
    if (field_grid_h(&s->axes, 0, &fx, &fy)) /* the field group's (hx, hy) */
        at += (size_t)snprintf(h + at, len - at, ",field_hx,field_hy");
    /* normalization "pupil": captured_fraction last, after the label columns */
    if (pupil) at += (size_t)snprintf(h + at, len - at, ",captured_fraction");
    snprintf(h + at, len - at, "\n");
    return h;
}

int manifest_open(manifest_writer *w, const image_set *s, int dirfd, const char *dir,
                  const char *name, const char *hash, char *const *keep, long long nkeep, char *err,
                  size_t errlen)
{
    memset(w, 0, sizeof *w);
    snprintf(w->hash, sizeof w->hash, "%s", hash);
    char *header = header_for(s);
    if (!header) {
        snprintf(err, errlen, "out of memory for the manifest's header");
        return -1;
    }
    int rc = journal_create(&w->j, dirfd, dir, name, header, keep, nkeep, err, errlen);
    free(header);
    return rc;
}

size_t manifest_label_bytes(const image_set *s)
{
    int dataset = axes_is_dataset(&s->axes);
    if (!dataset && s->segterms.nlabels == 0) return 1;
    /* ,draw,seed: 2 x (comma + 20 digits); a z<j> or s<k>_z<j> cell: comma
     * + 24; the field positions and (hx, hy) 4 x 25; and the 32 bytes
     * csv_exact wants for its fast path at the last cell */
    return 42 + 25 * ((size_t)(dataset ? s->labels.nterms : 0) + (size_t)s->segterms.nlabels) +
           100 + 32;
}

/* One exact cell ",v" at out + *at (room checked by manifest_label_bytes). */
static void exact_cell(char *out, size_t outlen, size_t *at, double v)
{
    out[(*at)++] = ',';
    csv_exact(out + *at, outlen - *at, v);
    *at += strlen(out + *at);
}

void manifest_label_text(const image_set *s, const image_info *info, char *out, size_t outlen)
{
    size_t at = 0;
    out[0] = '\0';
    if (outlen < manifest_label_bytes(s)) return;
    if (axes_is_dataset(&s->axes)) {
        if (s->cfg->random.count > 0)
            at +=
                (size_t)snprintf(out, outlen, ",%lld,%llu", info->params.draw, s->cfg->random.seed);
        for (int i = 0; i < s->labels.nterms; ++i)
            exact_cell(out, outlen, &at, set_labels_total(&s->labels, info->coeff_units, i));
    }
    const set_segterms *st = &s->segterms; /* each (segment, j)'s total (segterms.h) */
    for (int i = 0; info->seg_units && i < st->nlabels; ++i)
        exact_cell(out, outlen, &at, info->seg_units[st->label_index[i]]);
    double fx, fy; /* the table's detector positions */
    if (field_grid_position(&s->axes, info->params.index, &fx, &fy)) {
        exact_cell(out, outlen, &at, fx);
        exact_cell(out, outlen, &at, fy);
    }
    if (field_grid_h(&s->axes, info->params.index, &fx, &fy)) {
        exact_cell(out, outlen, &at, fx);
        exact_cell(out, outlen, &at, fy);
    }
    out[at] = '\0';
}

/* The swept Zernike terms' cells, whole: their j, ';'-separated, a comma,
 * then their swept values. */
static void swept_terms(FILE *fp, const psf_config *cfg, const psf_image_params *p)
{
    for (int i = 0; i < cfg->n_sweep_zernike; ++i)
        fprintf(fp, "%s%d", i ? ";" : "", cfg->sweep_zernike[i].j);
    fputc(',', fp);
    for (int i = 0; i < cfg->n_sweep_zernike; ++i) {
        char num[32];
        csv_number(num, sizeof num, p->sweep_zernike[i]);
        fprintf(fp, "%s%s", i ? ";" : "", num);
    }
}

int manifest_add(manifest_writer *w, const image_set *s, long long k, const image_info *info,
                 const image_result *res, const char *labels, char *err, size_t errlen)
{
    const psf_config *cfg = s->cfg;
    const psf_image_params *p = &info->params;
    char strehl[32], axial[32];
    csv_number(strehl, sizeof strehl, res->strehl);
    csv_number(axial, sizeof axial, res->axial_intensity);
    FILE *fp = journal_fp(&w->j);
    fprintf(fp, "%lld,%s,%s,%s,%s,%s,", k, res->png, res->fits,
            csv_cell_text(&w->cells[0], image_info_wavelength_nm(info), 0),
            csv_cell_text(&w->cells[1], p->sweep_defocus, 0),
            csv_cell_text(&w->cells[2], p->sweep_focus_shift_um, 0));
    swept_terms(fp, cfg, p); /* any number of terms: no cell is cut */
    fprintf(fp, ",%d,%d,%s,%s,%s,%s,%s,%s,%s", s->samp.pupil_samples, s->samp.npix,
            csv_cell_text(&w->cells[3], info->pixel_lambda_d, 0),
            csv_cell_text(&w->cells[4], info->pixel_arcsec, 0),
            csv_cell_text(&w->cells[5], info->pixel_um, 0), strehl, axial, res->backend, w->hash);
    if (labels) {
        fputs(labels, fp);
    } else {
        char *text = malloc(manifest_label_bytes(s));
        if (!text) {
            snprintf(err, errlen, "out of memory for a manifest row");
            return -1;
        }
        manifest_label_text(s, info, text, manifest_label_bytes(s));
        fputs(text, fp);
        free(text);
    }
    if (cfg->normalization == NORM_PUPIL) { /* captured_fraction, after the label cells */
        char cf[32];
        csv_number(cf, sizeof cf, info->captured_fraction);
        fprintf(fp, ",%s", cf);
    }
    fputc('\n', fp);
    if (ferror(fp)) {
        snprintf(err, errlen, "writing the manifest %s failed", w->j.af.final_path);
        return -1;
    }
    w->rows++;
    return 0;
}

int manifest_flush(manifest_writer *w, char *err, size_t errlen)
{
    return journal_flush(&w->j, err, errlen);
}

int manifest_close(manifest_writer *w, char *err, size_t errlen)
{
    return journal_close(&w->j, err, errlen);
}

int manifest_set_fits(int dirfd, const char *dir, const char *name, const char *cube, char *err,
                      size_t errlen)
{
    FILE *in = journal_read_open(dirfd, name);
    if (!in) {
        snprintf(err, errlen, "cannot read %s/%s back: %s", dir, name, strerror(errno));
        return -1;
    }
    atomic_file af;
    if (atomic_open_at(&af, dirfd, dir, name, err, errlen) != 0) {
        fclose(in);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    for (long long n = 0; getline(&line, &cap, in) > 0; ++n) {
        char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        if (n == 0 || !c2) { /* the header, or not a row: as it is */
            fputs(line, af.fp);
            continue;
        }
        /* index,png,<fits>,rest: the fits cell is between the 2nd and 3rd comma */
        char *c3 = strchr(c2 + 1, ',');
        fprintf(af.fp, "%.*s%s%s", (int)(c2 + 1 - line), line, cube, c3 ? c3 : "\n");
    }
    free(line);
    fclose(in);
    return atomic_commit(&af, err, errlen);
}
