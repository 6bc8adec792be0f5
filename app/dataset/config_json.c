/* SPDX-License-Identifier: BSD-3-Clause */
/* psf_config as JSON (app/dataset/config_json.h). Objects are built with jansson's
 * "steal" calls, which take a NULL value as a failure: one NULL anywhere
 * makes the whole result NULL. */
#include "app/dataset/config_json.h"
#include "app/dataset/config_json_priv.h"

#include <math.h>

json_t *cj_real_or_null(double v)
{
    return v != 0.0 && isfinite(v) ? json_real(v) : json_null();
}

json_t *cj_reals(const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; ++i)
        if (json_array_append_new(a, json_real(v[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

json_t *cj_list_or_null(const double *v, int n)
{
    return n > 0 ? cj_reals(v, n) : json_null();
}

json_t *cj_set(json_t *o, const char *key, json_t *v)
{
    if (!o || !v || json_object_set_new(o, key, v) != 0) {
        json_decref(o);
        if (!o) json_decref(v); /* else json_object_set_new took it, also on failure */
        return NULL;
    }
    return o;
}

static json_t *path_or_null(const char *p)
{
    return p[0] ? json_string(p) : json_null();
}

static const char *zunits_name(zernike_units u)
{
    return u == ZUNITS_NM ? "nm" : "waves";
}

/* optics.aperture.segments of a segmented aperture: the lattice, the
 * segments left out and the fixed segment terms [segment, j, coefficient]. */
static json_t *segments(const psf_config *cfg)
{
    const psf_segments *s = &cfg->aperture.seg;
    json_t *missing = json_array(), *terms = json_array();
    for (int k = 0; missing && k < aperture_segment_count(s->rings); ++k)
        if ((s->missing[k / 64] >> (k % 64)) & 1ULL)
            json_array_append_new(missing, json_integer(k));
    for (int i = 0; terms && i < cfg->nseg_zernike; ++i)
        json_array_append_new(terms, json_pack("[i, i, f]", cfg->seg_zernike[i].segment,
                                               cfg->seg_zernike[i].j, cfg->seg_zernike[i].coeff));
    return json_pack("{s:f, s:f, s:i, s:f, s:f, s:o, s:o}", "flat_to_flat_m", s->flat_to_flat_m,
                     "gap_m", s->gap_m, "rings", s->rings, "angle_deg", s->angle_deg,
                     "outer_diameter_m", s->stop_diameter_m, "missing", missing, "zernike", terms);
}

/* optics.aperture.spiders.vanes: [{angle_deg, width_m, offset_m, r_start_m,
 * r_end_m}, ...] as read (r_end_m 0: no end), or null without listed vanes. */
static json_t *vanes(const psf_aperture *a)
{
    if (a->nvanes == 0) return json_null();
    json_t *v = json_array();
    for (int i = 0; v && i < a->nvanes; ++i) {
        const psf_vane *w = &a->vanes[i];
        if (json_array_append_new(v, json_pack("{s:f, s:f, s:f, s:f, s:f}", "angle_deg",
                                               w->angle_deg, "width_m", w->width_m, "offset_m",
                                               w->offset_m, "r_start_m", w->r_start_m, "r_end_m",
                                               w->r_end_m)) != 0) {
            json_decref(v);
            v = NULL;
        }
    }
    return v;
}

/* The keys added after the first sidecar, at the end of the group: the
 * obscuration's shape and angle, listed vanes, and null for a segments
 * group or a map pixel scale the config does not have. */
static json_t *aperture_more(json_t *o, const psf_config *cfg)
{
    const psf_aperture *a = &cfg->aperture;
    json_t *spiders = o ? json_object_get(o, "spiders") : NULL;
    /* spiders is o's (borrowed): not cj_set, which would free it on failure. */
    if (o && (!spiders || json_object_set_new(spiders, "vanes", vanes(a)) != 0)) {
        json_decref(o);
        return NULL;
    }
    o = cj_set(o, "obscuration_shape", json_string(a->obscuration_hexagon ? "hexagon" : "circle"));
    o = cj_set(o, "angle_deg", json_real(a->angle_deg));
    if (o && a->shape != APERTURE_SEGMENTED) o = cj_set(o, "segments", json_null());
    if (o && !(cfg->aperture_pixel_scale_m > 0)) o = cj_set(o, "pixel_scale_m", json_null());
    return o;
}

/* Without a segmented shape "segments" is null (aperture_more). */
static json_t *aperture(const psf_config *cfg)
{
    /* In psf_aperture_shape's order ("segmented" was missing: a read past
     * the table for a segmented aperture). */
    static const char *const shapes[] = {"circular", "hexagon", "file", "segmented"};
    const psf_aperture *a = &cfg->aperture;
    json_t *o = json_pack("{s:s, s:f, s:f, s:{s:i, s:f, s:f}, s:s, s:o}", "shape", shapes[a->shape],
                          "diameter_m", a->diameter_m, "obscuration", a->obscuration, "spiders",
                          "count", a->spider_count, "width_m", a->spider_width_m, "angle_deg",
                          a->spider_angle_deg, "edge", a->edge == EDGE_BINARY ? "binary" : "grey",
                          "file", path_or_null(cfg->aperture_file));
    if (o && a->shape == APERTURE_SEGMENTED) json_object_set_new(o, "segments", segments(cfg));
    /* Here when given (as the first sidecar), else null at the end. */
    if (o && cfg->aperture_pixel_scale_m > 0)
        json_object_set_new(o, "pixel_scale_m", json_real(cfg->aperture_pixel_scale_m));
    return aperture_more(o, cfg);
}

/* The keys as psf_config holds them, not the set's wavelengths
 * (image_set_wavelengths: the sidecar's set object and NAME.h5 state
 * those): this object records the config, whose optics list the images'
 * own wavelengths may replace. */
static json_t *optics(const psf_config *cfg)
{
    return json_pack("{s:o, s:o, s:o, s:o}", "wavelengths_nm",
                     cj_reals(cfg->wavelengths_nm, cfg->nwavelengths), "weights",
                     cj_reals(cfg->weights, cfg->nwavelengths), "f_number",
                     cj_real_or_null(cfg->f_number), "aperture", aperture(cfg));
}

static json_t *aberrations(const psf_config *cfg)
{
    static const char *const convs[] = {"noll", "ansi", "fringe"};
    json_t *terms = json_array();
    for (int i = 0; terms && i < cfg->nzernike; ++i)
        if (json_array_append_new(
                terms, json_pack("[i, f]", cfg->zernike[i].j, cfg->zernike[i].coeff)) != 0) {
            json_decref(terms);
            terms = NULL;
        }
    json_t *opd = cfg->opd_file[0] ? json_pack("{s:s, s:s, s:f}", "file", cfg->opd_file, "units",
                                               zunits_name(cfg->opd_units), "scale", cfg->opd_scale)
                                   : json_null();
    if (cfg->opd_file[0] && opd && cfg->opd_pixel_scale_m > 0)
        json_object_set_new(opd, "pixel_scale_m", json_real(cfg->opd_pixel_scale_m));
    else if (opd && cfg->opd_file[0])
        opd = cj_set(opd, "pixel_scale_m", json_null());
    return json_pack("{s:s, s:s, s:o, s:o}", "convention", convs[cfg->zconv], "units",
                     zunits_name(cfg->zunits), "zernike", terms, "opd_map", opd);
}

static json_t *sweep(const psf_config *cfg)
{
    json_t *z = json_array();
    for (int i = 0; z && i < cfg->n_sweep_zernike; ++i) {
        const cfg_zernike_sweep *t = &cfg->sweep_zernike[i];
        if (json_array_append_new(z, json_pack("[i, o]", t->j, cj_reals(t->values, t->nvalues))) !=
            0) {
            json_decref(z);
            z = NULL;
        }
    }
    if (z && cfg->n_sweep_zernike == 0) {
        json_decref(z);
        z = json_null();
    }
    json_t *o = json_pack(
        "{s:o, s:o, s:o, s:o}", "wavelength_nm",
        cj_list_or_null(cfg->sweep_wavelength_nm, cfg->n_sweep_wavelength), "defocus",
        cj_list_or_null(cfg->sweep_defocus, cfg->n_sweep_defocus), "focus_shift_um",
        cj_list_or_null(cfg->sweep_focus_shift_um, cfg->n_sweep_focus_shift), "zernike", z);
    if (o && cfg->n_sweep_seg_zernike > 0) { /* here (as before), else null */
        json_t *sz = json_array();
        for (int i = 0; sz && i < cfg->n_sweep_seg_zernike; ++i) {
            const cfg_segment_term *t = &cfg->sweep_seg_zernike[i];
            json_array_append_new(
                sz, json_pack("[i, i, o]", t->segment, t->j, cj_reals(t->values, t->nvalues)));
        }
        json_object_set_new(o, "segment_zernike", sz);
    } else if (o) {
        o = cj_set(o, "segment_zernike", json_null());
    }
    o = cj_set(o, "random", cj_sweep_random(cfg));
    return cj_set(o, "table", cj_sweep_table(cfg));
}

/* output's keys added after the first sidecar, at the end of the group. */
static json_t *output_more(json_t *o, const psf_config *cfg)
{
    o = cj_set(o, "pixel_scale_arcsec", cj_real_or_null(cfg->out_pixel_scale_arcsec));
    o = cj_set(o, "orientation",
               json_string(cfg->orientation == ORIENT_POPPY ? "poppy" : "psfsim"));
    return cj_set(o, "psf_grid", json_boolean(cfg->psf_grid));
}

static json_t *output(const psf_config *cfg)
{
    static const char *const stretches[] = {"linear", "log", "sqrt"};
    json_t *npix = cfg->out_npix > 0 ? json_integer(cfg->out_npix) : json_null();
    json_t *o = json_pack(
        "{s:s, s:o, s:o, s:o, s:{s:b, s:i, s:s, s:f, s:i}, s:{s:b, s:b}, s:{s:b, s:s, s:s, s:i}}",
        "dir", cfg->output_dir, "npix", npix, "pixel_scale", cj_real_or_null(cfg->out_pixel_scale),
        "pixel_scale_um", cj_real_or_null(cfg->out_pixel_scale_um), "png", "enabled",
        cfg->png_enabled, "bits", cfg->png_bits, "stretch", stretches[cfg->png_stretch],
        "dynamic_range", cfg->png_dynamic_range, "compression", cfg->png_compression, "fits",
        "enabled", cfg->fits_enabled, "cube", cfg->fits_cube, "hdf5", "enabled", cfg->hdf5_enabled,
        "dtype", cfg->hdf5_dtype == HDF5_UINT16 ? "uint16" : "float32", "compression",
        cfg->hdf5_compression == HDF5_GZIP ? "gzip" : "none", "level", cfg->hdf5_level);
    /* output.hdf5.chunk_images only when given: a config without it keeps
     * the sidecar it had before the key. */
    json_t *h5 = o ? json_object_get(o, "hdf5") : NULL;
    if (h5 && cfg->hdf5_chunk_images > 0)
        json_object_set_new(h5, "chunk_images", json_integer(cfg->hdf5_chunk_images));
    return output_more(o, cfg);
}

/* Monomials [[p, q, c], ...]. */
static json_t *monomials(const cfg_field_monomial *m, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; ++i)
        if (json_array_append_new(a, json_pack("[i, i, f]", m[i].p, m[i].q, m[i].c)) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* The field group in the schema's names: null without it; grid {nx, ny,
 * x_px, y_px} or positions_px [[x, y], ...], centre_px, radius_px, zernike
 * [[j, [[p, q, c], ...]], ...], segment_zernike [[segment, j, [...]], ...],
 * table (the resolved path) or null. */
static json_t *field(const psf_config *cfg)
{
    const cfg_field *f = &cfg->field;
    if (!f->enabled) return json_null();
    json_t *o = json_object(), *pos = NULL;
    if (f->grid) {
        double xs[2] = {f->x_px[0], f->x_px[f->npos - 1]},
               ys[2] = {f->y_px[0], f->y_px[f->npos - 1]};
        pos = json_pack("{s:i, s:i, s:o, s:o}", "nx", f->nx, "ny", f->ny, "x_px", cj_reals(xs, 2),
                        "y_px", cj_reals(ys, 2));
    } else {
        pos = json_array();
        for (long long k = 0; pos && k < f->npos; ++k)
            if (json_array_append_new(pos, json_pack("[f, f]", f->x_px[k], f->y_px[k])) != 0) {
                json_decref(pos);
                pos = NULL;
            }
    }
    o = cj_set(o, f->grid ? "grid" : "positions_px", pos);
    o = cj_set(o, "centre_px", cj_reals(f->centre_px, 2));
    o = cj_set(o, "radius_px", json_real(f->radius_px));
    json_t *z = json_array(), *sz = json_array();
    for (int i = 0; z && i < f->nterms; ++i)
        if (json_array_append_new(z, json_pack("[i, o]", f->terms[i].j,
                                               monomials(f->terms[i].mono, f->terms[i].nmono)))) {
            json_decref(z);
            z = NULL;
        }
    for (int i = 0; sz && i < f->nsegterms; ++i) {
        const cfg_field_segterm *t = &f->segterms[i];
        if (json_array_append_new(
                sz, json_pack("[i, i, o]", t->segment, t->j, monomials(t->mono, t->nmono)))) {
            json_decref(sz);
            sz = NULL;
        }
    }
    o = cj_set(o, "zernike", z);
    o = cj_set(o, "segment_zernike", sz);
    return cj_set(o, "table", path_or_null(f->table_file));
}

json_t *config_to_json(const psf_config *cfg)
{
    static const char *const backends[] = {"auto", "cpu", "gpu"};
    /* psf_normalization's order ("pupil" read as "peak" before). */
    static const char *const norms[] = {"peak", "sum", "pupil"};
    json_t *o = json_pack("{s:s, s:o, s:{s:i, s:f}, s:o, s:s, s:o, s:o, s:s}", "name", cfg->name,
                          "optics", optics(cfg), "sampling", "pupil_samples", cfg->pupil_samples,
                          "padding", cfg->padding, "aberrations", aberrations(cfg), "normalization",
                          norms[cfg->normalization], "sweep", sweep(cfg), "output", output(cfg),
                          "backend", backends[cfg->backend]);
    o = cj_set(o, "detector", cj_detector(cfg));
    return cj_set(o, "field", field(cfg));
}
