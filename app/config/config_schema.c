/* SPDX-License-Identifier: BSD-3-Clause */
/* The table of known config keys (docs/config.md) and the walk that holds
 * a parsed file to it: unknown keys (with the nearest known key suggested)
 * and values of the wrong kind are rejected before anything is read. */
#include "app/config/config_priv.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *path; /* dotted, from the root */
    cfg_kind kind;
} cfg_key;

/* Every key of docs/config.md, parents before children. */
static const cfg_key schema[] = {
    {"name", CFG_K_STRING},
    {"optics", CFG_K_GROUP},
    {"optics.wavelength_nm", CFG_K_FLOAT},
    {"optics.wavelengths_nm", CFG_K_NUMBERS},
    {"optics.weights", CFG_K_NUMBERS},
    {"optics.f_number", CFG_K_FLOAT},
    {"optics.aperture", CFG_K_GROUP},
    {"optics.aperture.shape", CFG_K_STRING},
    {"optics.aperture.diameter_m", CFG_K_FLOAT},
    {"optics.aperture.obscuration", CFG_K_FLOAT},
    {"optics.aperture.obscuration_shape", CFG_K_STRING},
    {"optics.aperture.angle_deg", CFG_K_FLOAT},
    {"optics.aperture.spiders", CFG_K_GROUP},
    {"optics.aperture.spiders.count", CFG_K_INT},
    {"optics.aperture.spiders.width_m", CFG_K_FLOAT},
    {"optics.aperture.spiders.angle_deg", CFG_K_FLOAT},
    {"optics.aperture.spiders.vanes", CFG_K_GROUPS},
    {"optics.aperture.segments", CFG_K_GROUP},
    {"optics.aperture.segments.flat_to_flat_m", CFG_K_FLOAT},
    {"optics.aperture.segments.gap_m", CFG_K_FLOAT},
    {"optics.aperture.segments.rings", CFG_K_INT},
    {"optics.aperture.segments.missing", CFG_K_NUMBERS},
    {"optics.aperture.segments.angle_deg", CFG_K_FLOAT},
    {"optics.aperture.segments.outer_diameter_m", CFG_K_FLOAT},
    {"optics.aperture.segments.zernike", CFG_K_SEGTERMS},
    {"optics.aperture.edge", CFG_K_STRING},
    {"optics.aperture.file", CFG_K_STRING},
    {"optics.aperture.pixel_scale_m", CFG_K_FLOAT},
    {"sampling", CFG_K_GROUP},
    {"sampling.pupil_samples", CFG_K_INT},
    {"sampling.padding", CFG_K_FLOAT},
    {"aberrations", CFG_K_GROUP},
    {"aberrations.convention", CFG_K_STRING},
    {"aberrations.units", CFG_K_STRING},
    {"aberrations.zernike", CFG_K_PAIRS},
    {"aberrations.opd_map", CFG_K_GROUP},
    {"aberrations.opd_map.file", CFG_K_STRING},
    {"aberrations.opd_map.units", CFG_K_STRING},
    {"aberrations.opd_map.scale", CFG_K_FLOAT},
    {"aberrations.opd_map.pixel_scale_m", CFG_K_FLOAT},
    {"normalization", CFG_K_STRING},
    {"sweep", CFG_K_GROUP},
    {"sweep.wavelength_nm", CFG_K_NUMBERS},
    {"sweep.defocus", CFG_K_NUMBERS},
    {"sweep.focus_shift_um", CFG_K_NUMBERS},
    {"sweep.zernike", CFG_K_PAIRS},
    {"sweep.segment_zernike", CFG_K_SEGTERMS},
    {"sweep.random", CFG_K_GROUP},
    {"sweep.random.count", CFG_K_INT},
    {"sweep.random.seed", CFG_K_INT},
    {"sweep.random.zernike", CFG_K_TRIPLES},
    {"sweep.random.segment_zernike", CFG_K_TRIPLES},
    {"sweep.random.spectrum", CFG_K_GROUP},
    {"sweep.random.spectrum.j_min", CFG_K_INT},
    {"sweep.random.spectrum.j_max", CFG_K_INT},
    {"sweep.random.spectrum.total_rms", CFG_K_FLOAT},
    {"sweep.random.spectrum.power", CFG_K_FLOAT},
    {"sweep.random.focus_shift_um", CFG_K_NUMBERS},
    {"sweep.random.wavelength_nm", CFG_K_NUMBERS},
    {"sweep.table", CFG_K_STRING},
    {"detector.noise", CFG_K_GROUP},
    {"detector.noise.flux_photons", CFG_K_FLOAT},
    {"detector.noise.background_e", CFG_K_FLOAT},
    {"detector.noise.read_noise_e", CFG_K_FLOAT},
    {"detector.noise.gain_e_per_adu", CFG_K_FLOAT},
    {"detector.noise.bits", CFG_K_INT},
    {"detector.noise.seed", CFG_K_INT},
    {"output", CFG_K_GROUP},
    {"output.dir", CFG_K_STRING},
    {"output.npix", CFG_K_INT},
    {"output.pixel_scale", CFG_K_FLOAT},
    {"output.pixel_scale_um", CFG_K_FLOAT},
    {"output.pixel_scale_arcsec", CFG_K_FLOAT},
    {"output.orientation", CFG_K_STRING},
    {"output.psf_grid", CFG_K_BOOL},
    {"output.png", CFG_K_GROUP},
    {"output.png.enabled", CFG_K_BOOL},
    {"output.png.bits", CFG_K_INT},
    {"output.png.stretch", CFG_K_STRING},
    {"output.png.dynamic_range", CFG_K_FLOAT},
    {"output.png.compression", CFG_K_INT},
    {"output.fits", CFG_K_GROUP},
    {"output.fits.enabled", CFG_K_BOOL},
    {"output.fits.cube", CFG_K_BOOL},
    {"output.hdf5", CFG_K_GROUP},
    {"output.hdf5.enabled", CFG_K_BOOL},
    {"output.hdf5.dtype", CFG_K_STRING},
    {"output.hdf5.compression", CFG_K_STRING},
    {"output.hdf5.level", CFG_K_INT},
    {"output.hdf5.chunk_images", CFG_K_INT},
    {"backend", CFG_K_STRING},
    {"detector", CFG_K_GROUP},
    {"detector.oversample", CFG_K_INT},
    {"detector.pixel_response", CFG_K_BOOL},
    {"detector.jitter_mas", CFG_K_NUMBER_OR_NUMBERS},
    {"detector.jitter_lambda_d", CFG_K_NUMBER_OR_NUMBERS},
    {"detector.charge_diffusion_px", CFG_K_FLOAT},
    {"detector.ipc", CFG_K_NUMBERS},
    {"detector.write", CFG_K_STRING},
    {"field", CFG_K_GROUP},
    {"field.grid", CFG_K_GROUP},
    {"field.grid.nx", CFG_K_INT},
    {"field.grid.ny", CFG_K_INT},
    {"field.grid.x_px", CFG_K_NUMBERS},
    {"field.grid.y_px", CFG_K_NUMBERS},
    {"field.positions_px", CFG_K_POSITIONS},
    {"field.centre_px", CFG_K_NUMBERS},
    {"field.radius_px", CFG_K_FLOAT},
    {"field.zernike", CFG_K_FIELDTERMS},
    {"field.segment_zernike", CFG_K_FIELDTERMS},
    {"field.table", CFG_K_STRING},
};
#define NSCHEMA (sizeof schema / sizeof schema[0])

int cfg_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 255) la = 255;
    if (lb > 255) lb = 255;
    /* Three rows of the dynamic-programming table suffice for OSA. */
    int r0[256], r1[256], r2[256];
    int *pp = r0, *p = r1, *cur = r2;
    for (size_t jb = 0; jb <= lb; ++jb)
        p[jb] = (int)jb;
    for (size_t ia = 1; ia <= la; ++ia) {
        cur[0] = (int)ia;
        for (size_t jb = 1; jb <= lb; ++jb) {
            int ca = tolower((unsigned char)a[ia - 1]), cb = tolower((unsigned char)b[jb - 1]);
            int cost = ca != cb;
            int best = p[jb] + 1;
            if (cur[jb - 1] + 1 < best) best = cur[jb - 1] + 1;
            if (p[jb - 1] + cost < best) best = p[jb - 1] + cost;
            if (ia > 1 && jb > 1 && ca == tolower((unsigned char)b[jb - 2]) &&
                tolower((unsigned char)a[ia - 2]) == cb && pp[jb - 2] + 1 < best)
                best = pp[jb - 2] + 1;
            cur[jb] = best;
        }
        int *t = pp;
        pp = p;
        p = cur;
        cur = t;
    }
    return p[lb];
}

/* The last component of a dotted path. */
static const char *leaf(const char *path)
{
    const char *d = strrchr(path, '.');
    return d ? d + 1 : path;
}

/* Whether path is a direct child of parent ("" = the root). */
static int is_child(const char *path, const char *parent)
{
    size_t lp = strlen(parent);
    if (lp == 0) return strchr(path, '.') == NULL;
    return strncmp(path, parent, lp) == 0 && path[lp] == '.' && !strchr(path + lp + 1, '.');
}

static const cfg_key *find_key(const char *path)
{
    for (size_t i = 0; i < NSCHEMA; ++i)
        if (strcmp(schema[i].path, path) == 0) return &schema[i];
    return NULL;
}

/* "unknown key" with a suggestion: the same name at the one other place it
 * is valid, else the nearest sibling by edit distance when it is close
 * enough to be a typo, else the list of keys valid here. */
static int unknown_key(cfg_ctx *c, const config_setting_t *s, const char *path, const char *parent)
{
    const char *name = leaf(path);
    const cfg_key *elsewhere = NULL;
    int nelsewhere = 0;
    for (size_t i = 0; i < NSCHEMA; ++i) {
        if (strcmp(leaf(schema[i].path), name) == 0) {
            elsewhere = &schema[i];
            ++nelsewhere;
        }
    }
    if (nelsewhere == 1)
        return cfg_error(c, s, path, "unknown key (did you mean %s?)", elsewhere->path);

    const cfg_key *best = NULL;
    int bestd = 1 << 30;
    for (size_t i = 0; i < NSCHEMA; ++i) {
        if (!is_child(schema[i].path, parent)) continue;
        int d = cfg_edit_distance(name, leaf(schema[i].path));
        if (d < bestd) {
            bestd = d;
            best = &schema[i];
        }
    }
    /* A typo: at most 2 edits, or at most a third of the known name. */
    if (best && (bestd <= 2 || 3 * bestd <= (int)strlen(leaf(best->path))))
        return cfg_error(c, s, path, "unknown key (did you mean %s?)", best->path);

    char list[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < NSCHEMA && used < sizeof list; ++i) {
        if (!is_child(schema[i].path, parent)) continue;
        int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                         leaf(schema[i].path));
        if (w < 0) break;
        used += (size_t)w;
    }
    return cfg_error(c, s, path, "unknown key (known keys here: %s)", list);
}

static const char *kind_expected(cfg_kind k)
{
    switch (k) {
    case CFG_K_GROUP:
        return "a group { ... }";
    case CFG_K_INT:
        return "an integer";
    case CFG_K_FLOAT:
        return "a number";
    case CFG_K_STRING:
        return "a string";
    case CFG_K_BOOL:
        return "true or false";
    case CFG_K_NUMBERS:
        return "a list of numbers [a, b, ...]";
    case CFG_K_PAIRS:
        return "a list of pairs ( (j, value), ... )";
    case CFG_K_GROUPS:
        return "a list of groups ( { ... }, ... )";
    case CFG_K_TRIPLES:
        return "a list of triples ( (j, \"normal\" | \"uniform\", width), ... )";
    case CFG_K_SEGTERMS:
        return "a list of triples ( (segment, j, value), ... )";
    case CFG_K_NUMBER_OR_NUMBERS:
        return "a number or a list of numbers [a, b, ...]";
    case CFG_K_POSITIONS:
        return "a list of positions ( (x, y), ... )";
    case CFG_K_FIELDTERMS:
        return "a list of terms ( (j, ( (p, q, c), ... )), ... ) (segment_zernike: ( (segment, "
               "j, ( (p, q, c), ... )), ... ))";
    }
    return "?";
}

static int kind_matches(cfg_kind k, const config_setting_t *s)
{
    int t = config_setting_type(s);
    switch (k) {
    case CFG_K_GROUP:
        return t == CONFIG_TYPE_GROUP;
    case CFG_K_INT:
        return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64;
    case CFG_K_FLOAT:
        return cfg_is_number(s);
    case CFG_K_STRING:
        return t == CONFIG_TYPE_STRING;
    case CFG_K_BOOL:
        return t == CONFIG_TYPE_BOOL;
    case CFG_K_NUMBERS:
    case CFG_K_PAIRS:
    case CFG_K_TRIPLES:
    case CFG_K_SEGTERMS:
        return t == CONFIG_TYPE_ARRAY || t == CONFIG_TYPE_LIST;
    case CFG_K_POSITIONS:
    case CFG_K_FIELDTERMS:
        return t == CONFIG_TYPE_LIST || t == CONFIG_TYPE_ARRAY;
    case CFG_K_GROUPS:
        return t == CONFIG_TYPE_LIST;
    case CFG_K_NUMBER_OR_NUMBERS:
        return cfg_is_number(s) || t == CONFIG_TYPE_ARRAY || t == CONFIG_TYPE_LIST;
    }
    return 0;
}

static int walk(cfg_ctx *c, psf_config *cfg, const config_setting_t *group, const char *prefix)
{
    int n = config_setting_length(group);
    for (int i = 0; i < n; ++i) {
        const config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        char path[512];
        snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", config_setting_name(s));
        const cfg_key *k = find_key(path);
        if (!k) return unknown_key(c, s, path, prefix);
        if (!kind_matches(k->kind, s))
            return cfg_error(c, s, path, "expected %s (got %s)", kind_expected(k->kind),
                             cfg_type_name(config_setting_type(s)));
        if (cfg_record_key(c, cfg, s, path)) return -1;
        if (k->kind == CFG_K_GROUP && walk(c, cfg, s, path)) return -1;
        if (k->kind == CFG_K_NUMBERS || (k->kind == CFG_K_NUMBER_OR_NUMBERS && !cfg_is_number(s))) {
            int len = config_setting_length(s);
            for (int e = 0; e < len; ++e) {
                const config_setting_t *el = config_setting_get_elem(s, (unsigned)e);
                if (cfg_is_number(el)) continue;
                char key[540];
                snprintf(key, sizeof key, "%s[%d]", path, e);
                return cfg_error(c, el, key, "expected a number (got %s)",
                                 cfg_type_name(config_setting_type(el)));
            }
        }
    }
    return 0;
}

int cfg_schema_check(cfg_ctx *c, psf_config *cfg)
{
    return walk(c, cfg, config_root_setting(&c->lc), "");
}
