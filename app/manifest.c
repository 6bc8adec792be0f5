#include "app/manifest.h"

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

int manifest_open(manifest_writer *w, const char *path, const char *hash, int captured,
                  char *const *keep, long long nkeep, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    snprintf(w->hash, sizeof w->hash, "%s", hash);
    char header[sizeof manifest_header + 32];
    snprintf(header, sizeof header, "%.*s%s", (int)(sizeof manifest_header - 2), manifest_header,
             captured ? ",captured_fraction\n" : "\n");
    return journal_create(&w->j, path, header, keep, nkeep, err, errlen);
}

/* The swept Zernike terms, ';'-separated: their j and their swept values. */
static void swept_terms(const psf_config *cfg, const psf_image_params *p, char *js, size_t jlen,
                        char *cs, size_t clen)
{
    js[0] = cs[0] = '\0';
    size_t jn = 0, cn = 0;
    for (int i = 0; i < cfg->n_sweep_zernike; ++i) {
        char num[32];
        csv_number(num, sizeof num, p->sweep_zernike[i]);
        jn += (size_t)snprintf(js + jn, jn < jlen ? jlen - jn : 0, "%s%d", i ? ";" : "",
                               cfg->sweep_zernike[i].j);
        cn += (size_t)snprintf(cs + cn, cn < clen ? clen - cn : 0, "%s%s", i ? ";" : "", num);
    }
}

int manifest_add(manifest_writer *w, const image_set *s, long long k, const image_info *info,
                 const image_result *res, char *err, size_t errlen)
{
    const psf_config *cfg = s->cfg;
    const psf_image_params *p = &info->params;
    char f[9][32], js[512], cs[1024];
    csv_number(f[0], 32, info->wavelength_nm);
    csv_number(f[1], 32, p->sweep_defocus);
    csv_number(f[2], 32, p->sweep_focus_shift_um);
    csv_number(f[3], 32, info->pixel_lambda_d);
    csv_number(f[4], 32, info->pixel_arcsec);
    csv_number(f[5], 32, info->pixel_um);
    csv_number(f[6], 32, res->strehl);
    csv_number(f[7], 32, res->axial_intensity);
    int pupil = cfg->normalization == NORM_PUPIL;
    char cf[32] = "";
    if (pupil) csv_number(cf, sizeof cf, info->captured_fraction);
    swept_terms(cfg, p, js, sizeof js, cs, sizeof cs);
    FILE *fp = journal_fp(&w->j);
    fprintf(fp, "%lld,%s,%s,%s,%s,%s,%s,%s,%d,%d,%s,%s,%s,%s,%s,%s,%s", k, res->png, res->fits,
            f[0], f[1], f[2], js, cs, s->samp.pupil_samples, s->samp.npix, f[3], f[4], f[5], f[6],
            f[7], res->backend, w->hash);
    /* "pupil": the column captured_fraction after config_hash */
    fprintf(fp, "%s%s\n", pupil ? "," : "", pupil ? cf : "");
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

int manifest_set_fits(const char *path, const char *name, char *err, size_t errlen)
{
    FILE *in = fopen(path, "r");
    if (!in) {
        snprintf(err, errlen, "cannot read %s back: %s", path, strerror(errno));
        return -1;
    }
    atomic_file af;
    if (atomic_open(&af, path, err, errlen) != 0) {
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
        fprintf(af.fp, "%.*s%s%s", (int)(c2 + 1 - line), line, name, c3 ? c3 : "\n");
    }
    free(line);
    fclose(in);
    return atomic_commit(&af, err, errlen);
}
