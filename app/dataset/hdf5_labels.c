/* SPDX-License-Identifier: BSD-3-Clause */
/* NAME.h5's labels and attributes from the image set (app/dataset/hdf5_labels.h). */
#include "app/dataset/hdf5_labels.h"
#include "app/set/field_grid.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fftw3.h>

#include "app/select/gpu.h"
#include "app/set/set_detector.h"

int hdf5_label_terms(const image_set *s, int *term)
{
    for (int i = 0; term && i < s->labels.nterms; ++i)
        term[i] = s->labels.mode[i];
    return s->labels.nterms;
}

void hdf5_set_versions(const image_set *s, int gpu, set_versions *v)
{
    memset(v, 0, sizeof *v);
    snprintf(v->psfsim, sizeof v->psfsim, "%s", PSFSIM_VERSION);
    snprintf(v->fftw, sizeof v->fftw, "%s", fftwf_version);
    h5set_library_version(v->hdf5, sizeof v->hdf5);
    if (gpu) snprintf(v->cuda, sizeof v->cuda, "%s", gpu_module_toolkit());
    if (s->date_utc[0]) snprintf(v->date, sizeof v->date, "%sZ", s->date_utc);
}

static const char *conv_name(zernike_convention c)
{
    return c == ZCONV_ANSI ? "ansi" : c == ZCONV_FRINGE ? "fringe" : "noll";
}

static const char *units_name(zernike_units u)
{
    return u == ZUNITS_NM ? "nm" : "waves";
}

int hdf5_set_conventions(const image_set *s, set_convention *out)
{
    const psf_config *cfg = s->cfg;
    int m = s->samp.npix, n = 0;
    const char *norm =
        cfg->normalization == NORM_SUM
            ? "sum: each image sums to 1 over the M x M field"
            : "peak: intensity over the unaberrated image's peak (Strehl = the image's peak)";
#define CONV(k, ...)                                                                               \
    do {                                                                                           \
        out[n].key = k;                                                                            \
        snprintf(out[n++].value, sizeof out[0].value, __VA_ARGS__);                                \
    } while (0)
    CONV("zernike_convention", "%s", conv_name(cfg->zconv));
    CONV("zernike_units", "%s: RMS wavefront error%s", units_name(cfg->zunits),
         cfg->zunits == ZUNITS_NM ? "" : " in waves at the wavelength computed");
    CONV("zernike_normalisation",
         "orthonormal over the unit disk (unit RMS), Noll 1976; rho = r / (D/2)");
    CONV("normalization", "%s", norm);
    if (cfg->orientation == ORIENT_POPPY) {
        CONV("centring",
             "poppy: optical axis at (row %.1f, column %.1f), 0-based: ((M-1)/2, "
             "(M-1)/2), between pixels for even M",
             0.5 * (m - 1), 0.5 * (m - 1));
        CONV("orientation", "poppy: psfsim's image turned 180 degrees: columns along -x, rows "
                            "along -y (a positive Noll 2 moves the PSF to smaller columns)");
    } else {
        CONV("centring",
             "optical axis at pixel (row %d, column %d), 0-based: (M/2, M/2), M/2 by "
             "integer division",
             m / 2, m / 2);
        CONV("orientation",
             "images[k, row, column]; row 0 is the first row (the PNG's top row, the "
             "FITS file's first stored row); columns along +x, rows along +y");
    }
    CONV("propagation", "%s", s->mft ? "mft" : "fft");
    CONV("propagation_sign", "PSF = |F{A exp(+i 2 pi W / lambda)}|^2, F the forward DFT "
                             "(exponent -): a positive Noll 2 moves the PSF towards larger "
                             "columns, a positive Noll 3 towards larger rows");
    CONV("pixel_scale", "%s",
         image_set_wavelength_per_image(s)
             ? "per image (labels/pixel_scale_*): each image has its own wavelength"
             : "the same for every image (the pixel_scale_* attributes, labels/pixel_scale_*)");
#undef CONV
    return n;
}

/* A copy of the formatted text in d's pool ("" when it is full). */
__attribute__((format(printf, 2, 3))) static const char *keep(hdf5_set_desc *d, const char *fmt,
                                                              ...)
{
    char *at = d->text + d->used;
    size_t room = sizeof d->text - d->used;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(at, room, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= room) return "";
    d->used += (size_t)w + 1;
    return at;
}

static void attr_s(hdf5_set_desc *d, const char *obj, const char *key, const char *v)
{
    if (d->p.nattrs < HDF5_MAX_ATTRS)
        d->attrs[d->p.nattrs++] =
            (h5set_attr){.object = obj, .key = key, .type = H5SET_STRING, .s = v};
}

static void attr_d(hdf5_set_desc *d, const char *obj, const char *key, double v)
{
    if (d->p.nattrs < HDF5_MAX_ATTRS)
        d->attrs[d->p.nattrs++] =
            (h5set_attr){.object = obj, .key = key, .type = H5SET_DOUBLE, .d = v};
}

static void attr_i(hdf5_set_desc *d, const char *obj, const char *key, long long v)
{
    if (d->p.nattrs < HDF5_MAX_ATTRS)
        d->attrs[d->p.nattrs++] =
            (h5set_attr){.object = obj, .key = key, .type = H5SET_INT64, .i = v};
}

/* The field group's axis and output.psf_grid (docs/config.md, "field" and
 * "PSF grids"): field_npos, field_centre_x_px, field_centre_y_px,
 * field_radius_px, field_grid_nx and field_grid_ny (a grid only); psf_grid
 * (1) and psf_grid_oversampling (the images' pixels per detector pixel: s
 * for detector.write = "oversampled", else 1). */
static void field_attrs(const image_set *s, hdf5_set_desc *d)
{
    const psf_config *cfg = s->cfg;
    const cfg_field *f = &cfg->field;
    if (f->enabled) {
        attr_i(d, NULL, "field_npos", f->npos);
        attr_d(d, NULL, "field_centre_x_px", f->centre_px[0]);
        attr_d(d, NULL, "field_centre_y_px", f->centre_px[1]);
        attr_d(d, NULL, "field_radius_px", f->radius_px);
        if (f->grid) {
            attr_i(d, NULL, "field_grid_nx", f->nx);
            attr_i(d, NULL, "field_grid_ny", f->ny);
        }
    }
    if (!cfg->psf_grid) return;
    attr_i(d, NULL, "psf_grid", 1);
    int over = cfg->detector.enabled && cfg->detector.write == DET_WRITE_OVERSAMPLED;
    attr_i(d, NULL, "psf_grid_oversampling", over ? cfg->detector.oversample : 1);
}

/* The segment label terms' columns labels/s<k>_z<j> after the base ones. */
static void segment_columns(const image_set *s, hdf5_set_desc *d, const char *units)
{
    const set_segterms *st = &s->segterms;
    for (int i = 0; i < d->nseg; ++i) {
        snprintf(d->seg_names[i], sizeof d->seg_names[i], "s%d_z%d", st->label_segment[i],
                 st->label_j[i]);
        d->cols[HDF5_NCOLS + i] = (h5set_column){
            d->seg_names[i], H5SET_DOUBLE, 0, units,
            "the segment's total term j (aberrations.convention) over its circumscribed circle: "
            "fixed + swept + drawn; the manifest's column of that name"};
    }
}

static int columns(const image_set *s, hdf5_set_desc *d)
{
    const char *zu = units_name(s->cfg->zunits);
    static const h5set_column base[HDF5_NCOLS] = {
        {"index", H5SET_INT64, 0, NULL, "image index k, the manifest's index"},
        {"wavelength_nm", H5SET_DOUBLE, 0, "nm",
         "the image's wavelength (broadband: the weighted mean, as FITS WAVELEN)"},
        {"defocus", H5SET_DOUBLE, 0, NULL, "the swept sweep.defocus value; NaN when not swept"},
        {"focus_shift_um", H5SET_DOUBLE, 0, "um",
         "the swept sweep.focus_shift_um value; NaN when not swept"},
        {"pixel_scale_lambda_d", H5SET_DOUBLE, 0, "lambda/D",
         "image pixel in lambda/D at the reference wavelength (broadband: the shortest, as "
         "FITS REFWAVE)"},
        {"pixel_scale_arcsec", H5SET_DOUBLE, 0, "arcsec", "image pixel on the sky"},
        {"pixel_scale_um", H5SET_DOUBLE, 0, "um",
         "image pixel in the focal plane; NaN without optics.f_number"},
        {"strehl", H5SET_DOUBLE, 0, NULL, "image peak / unaberrated peak"},
        {"axial_intensity", H5SET_DOUBLE, 0, NULL, "pixel (M/2, M/2) / unaberrated peak"},
        {"backend", H5SET_STRING, HDF5_BACKEND_WIDTH, NULL, "cpu or gpu: which computed it"},
    };
    d->nseg = s->segterms.nlabels;
    double fx, fy;
    d->nfc =
        2 * field_grid_position(&s->axes, 0, &fx, &fy) + 2 * field_grid_h(&s->axes, 0, &fx, &fy);
    d->cols = calloc((size_t)(HDF5_NCOLS + d->nseg + d->nfc), sizeof *d->cols);
    d->seg_names = calloc((size_t)(d->nseg > 0 ? d->nseg : 1), sizeof *d->seg_names);
    if (!d->cols || !d->seg_names) return -1;
    memcpy(d->cols, base, sizeof base);
    d->cols[HDF5_COL_DEFOCUS].units = zu;
    segment_columns(s, d, zu);
    static const h5set_column field[4] = {
        {"field_x_px", H5SET_DOUBLE, 0, "pixel", "the PSF's detector position x"},
        {"field_y_px", H5SET_DOUBLE, 0, "pixel", "the PSF's detector position y"},
        {"field_hx", H5SET_DOUBLE, 0, NULL,
         "normalised field x: (field_x_px - field.centre_px[0]) / field.radius_px"},
        {"field_hy", H5SET_DOUBLE, 0, NULL,
         "normalised field y: (field_y_px - field.centre_px[1]) / field.radius_px"}};
    memcpy(d->cols + HDF5_NCOLS + d->nseg, field, (size_t)d->nfc * sizeof *field);
    d->p.ncolumns = HDF5_NCOLS + d->nseg + d->nfc;
    d->p.columns = d->cols;
    return 0;
}

/* The label terms' Noll j and their j in the config's convention. */
static int terms(const image_set *s, hdf5_set_desc *d)
{
    int nt = s->modes.nterms;
    d->term = malloc((size_t)(nt ? nt : 1) * sizeof *d->term);
    d->noll_j = malloc((size_t)(nt ? nt : 1) * sizeof *d->noll_j);
    d->conv_j = malloc((size_t)nt * 12 + 1);
    if (!d->term || !d->noll_j || !d->conv_j) return -1;
    d->nterms = hdf5_label_terms(s, d->term);
    size_t used = 0;
    d->conv_j[0] = '\0';
    for (int i = 0; i < d->nterms; ++i) {
        int t = d->term[i];
        d->noll_j[i] = s->modes.noll[t];
        used += (size_t)sprintf(d->conv_j + used, "%s%d", i ? "," : "",
                                zernike_nm_to_index(s->cfg->zconv, s->modes.n[t], s->modes.m[t]));
    }
    d->p.nzernike = d->nterms;
    d->p.noll_j = d->noll_j;
    d->p.zernike_units = units_name(s->cfg->zunits);
    return 0;
}

/* The set's constants: sampling, aperture, wavelengths, the pixel. */
static void constants(const image_set *s, hdf5_set_desc *d)
{
    const psf_config *cfg = s->cfg;
    attr_i(d, NULL, "pupil_samples", s->samp.pupil_samples);
    attr_i(d, NULL, "fft_size", s->fft_npix);
    attr_d(d, NULL, "padding", s->samp.padding);
    attr_d(d, NULL, "diameter_m", s->samp.diameter_m);
    if (cfg->f_number > 0) attr_d(d, NULL, "f_number", cfg->f_number);
    if (cfg->orientation == ORIENT_POPPY) { /* (M-1)/2: between pixels for even M */
        attr_d(d, NULL, "axis_row", 0.5 * (s->samp.npix - 1));
        attr_d(d, NULL, "axis_column", 0.5 * (s->samp.npix - 1));
    } else {
        attr_i(d, NULL, "axis_row", s->samp.npix / 2);
        attr_i(d, NULL, "axis_column", s->samp.npix / 2);
    }
    set_wavelength_list w; /* per image: labels/wavelength_nm, no list here */
    image_set_wavelengths(s, &w);
    if (w.n > 0) {
        char *wl = d->text + d->used;
        for (int i = 0; i < w.n; ++i)
            keep(d, "%.10g", w.nm[i]);
        for (char *c = wl; c < d->text + d->used - 1; ++c) /* the values' NULs become commas */
            if (!*c) *c = ',';
        attr_s(d, NULL, "wavelengths_nm", wl);
    }
    if (cfg->random.count > 0) { /* image k's draw: k mod count (axes.h) */
        attr_i(d, NULL, "random_count", cfg->random.count);
        attr_i(d, NULL, "random_seed", (long long)cfg->random.seed);
    }
    field_attrs(s, d);
    if (w.per_image) return; /* the pixel is per image */
    image_info info;
    image_set_common_info(s, &info);
    attr_d(d, NULL, "pixel_scale_lambda_d", info.pixel_lambda_d);
    attr_d(d, NULL, "pixel_scale_arcsec", info.pixel_arcsec);
    if (cfg->f_number > 0) attr_d(d, NULL, "pixel_scale_um", info.pixel_um);
}

static void provenance(const image_set *s, const hdf5_provenance *pv, hdf5_set_desc *d)
{
    set_versions v;
    hdf5_set_versions(s, pv->gpu, &v);
    attr_s(d, NULL, "name", s->cfg->name);
    attr_s(d, NULL, "psfsim_version", keep(d, "%s", v.psfsim));
    attr_s(d, NULL, "fftw_version", keep(d, "%s", v.fftw));
    attr_s(d, NULL, "hdf5_version", keep(d, "%s", v.hdf5));
    if (v.cuda[0]) attr_s(d, NULL, "cuda_toolkit", keep(d, "%s (runtime and cuFFT)", v.cuda));
    attr_s(d, NULL, "config_file", s->cfg->path);
    attr_s(d, NULL, "config_hash", pv->config_hash);
    attr_s(d, NULL, "backend", pv->backend);
    attr_s(d, NULL, "date", keep(d, "%s", v.date));
}

/* The images' units and, for uint16, the stretch that made the levels. */
static void image_attrs(const image_set *s, hdf5_set_desc *d)
{
    const psf_config *cfg = s->cfg;
    static const char *const stretch[] = {"linear", "log", "sqrt"};
    attr_s(d, "images", "normalization", cfg->normalization == NORM_SUM ? "sum" : "peak");
    if (cfg->hdf5_dtype != HDF5_UINT16) return;
    attr_s(
        d, "images", "levels",
        keep(d, "PNG stretch grey levels 0..%d of I / the image's peak", (1 << cfg->png_bits) - 1));
    attr_i(d, "images", "bits", cfg->png_bits);
    attr_s(d, "images", "stretch", stretch[cfg->png_stretch]);
    attr_d(d, "images", "dynamic_range", cfg->png_dynamic_range);
}

/* The pixel of set s's images as attributes of dataset obj (the set's
 * pixel; with a wavelength per image it is per image: labels/pixel_scale_*
 * over OVERSAMP). */
static void pixel_attrs(const image_set *s, hdf5_set_desc *d, const char *obj)
{
    if (image_set_wavelength_per_image(s)) return;
    image_info info;
    image_set_common_info(s, &info);
    attr_d(d, obj, "pixel_scale_lambda_d", info.pixel_lambda_d);
    attr_d(d, obj, "pixel_scale_arcsec", info.pixel_arcsec);
    if (s->cfg->f_number > 0) attr_d(d, obj, "pixel_scale_um", info.pixel_um);
}

/* detector.write = "both": images is the DET_SAMP HDU's image, oversampled
 * the OVERSAMP HDU's (s M x s M), each with the FITS keywords WebbPSF
 * names them by and its pixel; uint16: the stretch of each image's own
 * peak, as the PNG stretch makes it. */
static void both_attrs(const image_set *s, hdf5_set_desc *d)
{
    const psf_config *cfg = s->cfg;
    static const char *const stretch[] = {"linear", "log", "sqrt"};
    long long os = cfg->detector.oversample;
    attr_s(d, "images", "EXTNAME", "DET_SAMP");
    attr_i(d, "images", "OVERSAMP", 1);
    attr_i(d, "images", "DET_SAMP", os);
    pixel_attrs(s, d, "images");
    psf_config vcfg;
    image_set view;
    set_detector_oversampled_view(s, &vcfg, &view);
    attr_s(d, "oversampled", "EXTNAME", "OVERSAMP");
    attr_i(d, "oversampled", "OVERSAMP", os);
    attr_i(d, "oversampled", "DET_SAMP", os);
    attr_i(d, "oversampled", "npix", view.samp.npix);
    attr_s(d, "oversampled", "normalization", cfg->normalization == NORM_SUM ? "sum" : "peak");
    pixel_attrs(&view, d, "oversampled");
    if (cfg->hdf5_dtype != HDF5_UINT16) return;
    attr_s(d, "oversampled", "levels",
           keep(d, "PNG stretch grey levels 0..%d of I / the oversampled image's peak",
                (1 << cfg->png_bits) - 1));
    attr_i(d, "oversampled", "bits", cfg->png_bits);
    attr_s(d, "oversampled", "stretch", stretch[cfg->png_stretch]);
    attr_d(d, "oversampled", "dynamic_range", cfg->png_dynamic_range);
}

/* detector.noise: the NOISY HDU's keywords (app/output/fits_header.c) but NIMAGE,
 * which is the image's index k. */
static void noise_attrs(const image_set *s, hdf5_set_desc *d)
{
    const cfg_noise *nz = &s->cfg->noise;
    attr_s(d, "noisy", "EXTNAME", "NOISY");
    attr_s(d, "noisy", "BUNIT", "adu");
    attr_d(d, "noisy", "NFLUX", nz->flux_photons);
    attr_d(d, "noisy", "NBACKGR", nz->background_e);
    attr_d(d, "noisy", "NREADN", nz->read_noise_e);
    attr_d(d, "noisy", "NGAIN", nz->gain_e_per_adu);
    attr_i(d, "noisy", "NBITS", nz->bits);
    attr_i(d, "noisy", "NSEED", (long long)nz->seed);
    attr_s(d, "noisy", "description",
           "simulated exposure of each image (detector.noise), ADU; the draws of image k use "
           "NIMAGE = k; the FITS files' NOISY extension");
}

/* The image datasets beside images, and their attributes. */
static void extra_images(const image_set *s, hdf5_set_desc *d)
{
    const psf_config *cfg = s->cfg;
    d->over = d->noisy = -1;
    if (cfg->detector.enabled && cfg->detector.write == DET_WRITE_BOTH) {
        d->over = d->p.nextra;
        d->extra[d->p.nextra++] =
            (h5set_images){"oversampled", set_detector_backend_npix(s), d->p.dtype};
        both_attrs(s, d);
    }
    if (cfg->noise.enabled) {
        d->noisy = d->p.nextra;
        d->extra[d->p.nextra++] = (h5set_images){"noisy", s->samp.npix, H5SET_UINT16};
        noise_attrs(s, d);
    }
    d->p.extra = d->extra;
}

const char *hdf5_set_detector_write(const image_set *s)
{
    static const char *const writes[] = {"detector", "oversampled", "both"}; /* det_write's order */
    return writes[s->cfg->detector.write];
}

/* With the detector group (docs/config.md, "detector"): its settings as
 * root attributes, the jitter as the stage used it (detector pixels, the
 * FITS DETJITX/DETJITY); without the group none, so the file is as before. */
static void detector_attrs(const image_set *s, hdf5_set_desc *d)
{
    const cfg_detector *g = &s->cfg->detector;
    if (!g->enabled) return;
    attr_i(d, NULL, "detector_oversample", g->oversample);
    attr_s(d, NULL, "detector_write", hdf5_set_detector_write(s));
    attr_i(d, NULL, "detector_pixel_response", g->pixel_response);
    attr_d(d, NULL, "detector_jitter_x_px", s->detector.jitter_px[0]);
    attr_d(d, NULL, "detector_jitter_y_px", s->detector.jitter_px[1]);
    attr_d(d, NULL, "detector_charge_diffusion_px", g->diffusion_px);
    if (!g->ipc) {
        attr_s(d, NULL, "detector_ipc", "none");
        return;
    }
    char *k = d->text + d->used; /* the kernel, row-major, comma-separated */
    for (int i = 0; i < 9; ++i)
        keep(d, "%.10g", g->ipc_kernel[i]);
    for (char *c = k; c < d->text + d->used - 1; ++c)
        if (!*c) *c = ',';
    attr_s(d, NULL, "detector_ipc", k);
}

int hdf5_set_describe(const image_set *s, int dirfd, const char *dir, const hdf5_provenance *pv,
                      hdf5_set_desc *d, char *err, size_t errlen)
{
    const psf_config *cfg = s->cfg;
    memset(d, 0, sizeof *d);
    outputs_set_file(NULL, cfg->name, SET_HDF5, d->name, sizeof d->name);
    outputs_set_file(dir, cfg->name, SET_HDF5, d->shown, sizeof d->shown);
    d->p = (h5set_params){
        .dir_fd = dirfd,
        .name = d->name,
        .shown = d->shown,
        .nimages = s->nimages,
        .npix = s->samp.npix,
        .dtype = cfg->hdf5_dtype == HDF5_UINT16 ? H5SET_UINT16 : H5SET_FLOAT32,
        .gzip = cfg->hdf5_compression == HDF5_GZIP ? cfg->hdf5_level : 0,
        /* 0: h5set_auto_chunk_images, as hdf5_writer_chunk_images's */
        .chunk_images =
            (int)(cfg->hdf5_chunk_images < s->nimages ? cfg->hdf5_chunk_images : s->nimages),
        .resume_key = pv->config_hash,
        .attrs = d->attrs};
    if (terms(s, d) != 0 || columns(s, d) != 0) {
        snprintf(err, errlen, "cannot write %s: out of memory", d->shown);
        return -1;
    }
    provenance(s, pv, d);
    set_convention conv[SET_CONVENTIONS];
    int nc = hdf5_set_conventions(s, conv);
    for (int i = 0; i < nc; ++i)
        attr_s(d, NULL, conv[i].key, keep(d, "%s", conv[i].value));
    constants(s, d);
    detector_attrs(s, d);
    image_attrs(s, d);
    extra_images(s, d);
    if (d->nterms > 0) {
        attr_s(d, "labels/zernike", "convention", conv_name(cfg->zconv));
        attr_s(d, "labels/zernike", "j", d->conv_j);
        attr_s(d, "labels/zernike", "description",
               "each label term's total RMS coefficient (config + sweep + focus shift); "
               "columns: noll_j, or j in the convention");
    }
    return 0;
}

void hdf5_set_desc_free(hdf5_set_desc *d)
{
    free(d->term);
    free(d->noll_j);
    free(d->conv_j);
    free(d->cols);
    free(d->seg_names);
    d->term = d->noll_j = NULL;
    d->conv_j = NULL;
    d->cols = NULL;
    d->seg_names = NULL;
}
