/* SPDX-License-Identifier: BSD-3-Clause */
/* The config's sections read and range-checked (docs/config.md, "Keys"),
 * after config_load.c has parsed the bytes and config_schema.c held the
 * tree to the schema. The aberrations and sweep sections are in
 * config_sweep.c, the dataset axes in config_dataset.c, the bounds in
 * config_bounds.c; messages and typed getters in config_read.c. */
#include "app/config/config_priv.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cfg_set_defaults(psf_config *cfg)
{
    cfg->f_number = 0.0;
    cfg->aperture.shape = APERTURE_CIRCULAR;
    cfg->aperture.obscuration = 0.0;
    cfg->aperture.spider_count = 0;
    cfg->aperture.edge = EDGE_GREY;
    cfg->padding = 2.0;
    cfg->zconv = ZCONV_NOLL;
    cfg->zunits = ZUNITS_WAVES;
    cfg->opd_units = ZUNITS_NM;
    cfg->opd_scale = 1.0;
    cfg->normalization = NORM_PEAK;
    cfg->png_enabled = 1;
    cfg->png_bits = 16;
    cfg->png_compression = 1;
    cfg->png_stretch = STRETCH_LOG;
    cfg->png_dynamic_range = 1.0e6;
    cfg->fits_enabled = 0;
    cfg->hdf5_enabled = 0;
    cfg->hdf5_dtype = HDF5_FLOAT32;
    cfg->hdf5_compression = HDF5_NONE;
    cfg->hdf5_level = 4;
    cfg->hdf5_chunk_images = 0; /* h5set_auto_chunk_images: whole images in 64 KiB */
    cfg->backend = BACKEND_AUTO;
}

/* The longest file name a set writes, whatever its outputs: NAME + 25
 * bytes, .NAME_manifest.csv.tmp.XXXXXX while the manifest is written
 * (app/formats/atomic_file.c: ".F.tmp.XXXXXX"), as long as an image's
 * .NAME_1234567.fits.tmp.XXXXXX (k has at most 7 digits, CFG_MAX_IMAGES);
 * the others are shorter: .NAME_cube.fits.tmp.XXXXXX (+22), .NAME.json.tmp.
 * XXXXXX (+17), .NAME.h5.part (+9, app/formats/h5set.h), .NAME.lock
 * (+6). Each within a file name's limit, NAME_MAX (255). */
#define CFG_NAME_MAX (NAME_MAX - 25)

static int read_name(cfg_ctx *c, psf_config *cfg)
{
    int r = cfg_read_string(c, "name", cfg->name, sizeof cfg->name);
    if (r < 0) return -1;
    if (r == 0) return cfg_missing(c, "name", NULL);
    const config_setting_t *s = cfg_get(c, "name");
    size_t len = strlen(cfg->name);
    if (len > CFG_NAME_MAX)
        return cfg_error(c, s, "name",
                         "must be at most %d characters: the set's files, such as "
                         ".NAME_manifest.csv.tmp.XXXXXX while it is written, must fit a file "
                         "name's %d bytes (got %zu)",
                         CFG_NAME_MAX, NAME_MAX, len);
    if (strspn(cfg->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") !=
        strlen(cfg->name))
        return cfg_error(c, s, "name",
                         "must hold only letters, digits, '_', '.' and '-' (got \"%s\")",
                         cfg->name);
    if (strcmp(cfg->name, ".") == 0 || strcmp(cfg->name, "..") == 0)
        return cfg_error(c, s, "name", "must not be \".\" or \"..\"");
    return 0;
}

/* optics.wavelength_nm | optics.wavelengths_nm (+ weights), f_number. */
static int read_wavelengths(cfg_ctx *c, psf_config *cfg)
{
    const config_setting_t *one = cfg_get(c, "optics.wavelength_nm");
    const config_setting_t *set = cfg_get(c, "optics.wavelengths_nm");
    const config_setting_t *w = cfg_get(c, "optics.weights");
    const config_setting_t *swept = cfg_get(c, "sweep.wavelength_nm");
    if (one && set)
        return cfg_error(c, set, "optics.wavelengths_nm",
                         "give only one of optics.wavelength_nm and optics.wavelengths_nm");
    if (set && swept)
        return cfg_error(c, swept, "sweep.wavelength_nm",
                         "cannot be used with optics.wavelengths_nm (a broadband set): sweep "
                         "single wavelengths or give one broadband set");
    if (!one && !set && !swept && !cfg_wavelength_elsewhere(c))
        return cfg_missing(c, "optics.wavelength_nm",
                           "(or optics.wavelengths_nm, or sweep.wavelength_nm)");
    if (w && !set)
        return cfg_error(c, w, "optics.weights", "only allowed with optics.wavelengths_nm");
    if (one) {
        double v = 0;
        if (cfg_read_float(c, "optics.wavelength_nm", 0.0, 1, &v) < 0 ||
            cfg_bound_key(c, "optics.wavelength_nm", v, CFG_MIN_WAVELENGTH_NM,
                          CFG_MAX_WAVELENGTH_NM, NULL))
            return -1;
        cfg->wavelengths_nm = malloc(sizeof(double));
        cfg->weights = malloc(sizeof(double));
        if (!cfg->wavelengths_nm || !cfg->weights)
            return cfg_error(c, one, "optics.wavelength_nm", "out of memory");
        cfg->nwavelengths = 1;
        cfg->wavelengths_nm[0] = v;
        cfg->weights[0] = 1.0;
    } else if (set) {
        if (cfg_read_numbers(c, "optics.wavelengths_nm", 1, &cfg->wavelengths_nm,
                             &cfg->nwavelengths) < 0 ||
            cfg_bound_list(c, "optics.wavelengths_nm", cfg->wavelengths_nm, cfg->nwavelengths,
                           CFG_MIN_WAVELENGTH_NM, CFG_MAX_WAVELENGTH_NM, NULL))
            return -1;
        if (cfg->nwavelengths > CFG_MAX_WAVELENGTHS)
            return cfg_error(c, set, "optics.wavelengths_nm",
                             "must hold at most %d wavelengths (got %d)", CFG_MAX_WAVELENGTHS,
                             cfg->nwavelengths);
        int nw = 0;
        if (w) {
            if (cfg_read_numbers(c, "optics.weights", 0, &cfg->weights, &nw) < 0) return -1;
            if (nw != cfg->nwavelengths)
                return cfg_error(c, w, "optics.weights",
                                 "must have as many values as optics.wavelengths_nm (%d) (got %d)",
                                 cfg->nwavelengths, nw);
            double sum = 0;
            for (int i = 0; i < nw; ++i) {
                if (cfg->weights[i] < 0) {
                    char key[64], got[64];
                    snprintf(key, sizeof key, "optics.weights[%d]", i);
                    cfg_fmt_double(cfg->weights[i], got, sizeof got);
                    return cfg_error(c, config_setting_get_elem(w, (unsigned)i), key,
                                     "must be >= 0 (got %s)", got);
                }
                sum += cfg->weights[i];
            }
            if (!(sum > 0) || !isfinite(sum))
                return cfg_error(c, w, "optics.weights", "must have a positive, finite sum");
            for (int i = 0; i < nw; ++i)
                cfg->weights[i] /= sum;
        } else {
            cfg->weights = malloc((size_t)cfg->nwavelengths * sizeof(double));
            if (!cfg->weights) return cfg_error(c, set, "optics.wavelengths_nm", "out of memory");
            for (int i = 0; i < cfg->nwavelengths; ++i)
                cfg->weights[i] = 1.0 / cfg->nwavelengths;
        }
    }
    if (cfg_read_float(c, "optics.f_number", 0.0, 1, &cfg->f_number) < 0) return -1;
    return cfg_bound_key(c, "optics.f_number", cfg->f_number, CFG_MIN_F_NUMBER, CFG_MAX_F_NUMBER,
                         cfg->f_number < CFG_MIN_F_NUMBER ? "a numerical aperture of 1" : NULL);
}

static int read_aperture(cfg_ctx *c, psf_config *cfg)
{
    psf_aperture *a = &cfg->aperture;
    static const char *const shapes[] = {"circular", "hexagon", "file", "segmented"};
    static const char *const edges[] = {"grey", "binary"};
    int v = 0;
    if (!cfg_get(c, "optics.aperture")) return cfg_missing(c, "optics.aperture.diameter_m", NULL);
    if (cfg_read_enum(c, "optics.aperture.shape", shapes, 4, 0, &v) < 0) return -1;
    a->shape = (psf_aperture_shape)v; /* same order as psf_aperture_shape */
    int r = cfg_read_float(c, "optics.aperture.diameter_m", 0.0, 1, &a->diameter_m);
    if (r < 0) return -1;
    if (r == 0 && a->shape != APERTURE_SEGMENTED)
        return cfg_missing(c, "optics.aperture.diameter_m", NULL);
    if (r == 1 && cfg_bound_key(c, "optics.aperture.diameter_m", a->diameter_m, CFG_MIN_DIAMETER_M,
                                CFG_MAX_DIAMETER_M, NULL))
        return -1;
    if (cfg_read_segments(c, a, r == 1) || cfg_read_aperture_extras(c, a) ||
        cfg_bound_key(c, "optics.aperture.diameter_m", a->diameter_m, CFG_MIN_DIAMETER_M,
                      CFG_MAX_DIAMETER_M, NULL))
        return -1;
    if (cfg_read_float(c, "optics.aperture.obscuration", -HUGE_VAL, 0, &a->obscuration) < 0)
        return -1;
    if (!(a->obscuration >= 0.0 && a->obscuration < 1.0)) {
        char got[64];
        cfg_fmt_double(a->obscuration, got, sizeof got);
        return cfg_error(c, cfg_get(c, "optics.aperture.obscuration"),
                         "optics.aperture.obscuration", "must be in [0, 1) (got %s)", got);
    }
    if (cfg_get(c, "optics.aperture.spiders")) {
        long long count = 0;
        r = cfg_read_int(c, "optics.aperture.spiders.count", 0, CFG_MAX_SPIDERS, &count);
        if (r < 0) return -1;
        if (r == 0 && !cfg_get(c, "optics.aperture.spiders.vanes"))
            return cfg_missing(c, "optics.aperture.spiders.count",
                               "(optics.aperture.spiders is given)");
        a->spider_count = (int)count;
        const char *wkey = "optics.aperture.spiders.width_m";
        r = cfg_read_float(c, wkey, 0.0, 1, &a->spider_width_m);
        if (r < 0) return -1;
        if (r == 0 && count > 0) return cfg_missing(c, wkey, "(spiders.count is above 0)");
        if (r == 1 && a->spider_width_m >= a->diameter_m) {
            char got[64], d[64];
            cfg_fmt_double(a->spider_width_m, got, sizeof got);
            cfg_fmt_double(a->diameter_m, d, sizeof d);
            return cfg_error(c, cfg_get(c, wkey), wkey,
                             "must be < optics.aperture.diameter_m (%s) (got %s)", d, got);
        }
        if (r == 1 &&
            cfg_bound_key(c, wkey, a->spider_width_m, CFG_MIN_SPIDER_WIDTH_M, HUGE_VAL, NULL))
            return -1;
        const char *akey = "optics.aperture.spiders.angle_deg";
        if (cfg_read_float(c, akey, -HUGE_VAL, 0, &a->spider_angle_deg) < 0 ||
            cfg_bound_key(c, akey, a->spider_angle_deg, -CFG_MAX_ANGLE_DEG, CFG_MAX_ANGLE_DEG,
                          NULL) ||
            cfg_read_vanes(c, a))
            return -1;
    }
    if (cfg_read_enum(c, "optics.aperture.edge", edges, 2, 0, &v) < 0) return -1;
    a->edge = v == 1 ? EDGE_BINARY : EDGE_GREY;

    const char *fkey = "optics.aperture.file";
    const config_setting_t *fs = cfg_get(c, fkey);
    /* A map given in memory stands for the key (config_load_maps). */
    const int array = cfg_map_for(c, fkey) != NULL;
    if (cfg_take_map(c, fs, fkey, &cfg->aperture_array)) return -1;
    if (a->shape == APERTURE_FILE && !fs && !array)
        return cfg_missing(c, fkey, "(shape = \"file\")");
    if (a->shape != APERTURE_FILE && (fs || array))
        return cfg_error(c, fs, fkey, "only used with shape = \"file\" (shape is \"%s\")",
                         shapes[a->shape]);
    if (fs) {
        char given[CFG_PATH_MAX];
        if (cfg_read_string(c, fkey, given, sizeof given) < 0) return -1;
        if (cfg_resolve_file(c, fs, fkey, given, cfg->aperture_file, sizeof cfg->aperture_file))
            return -1;
    }
    const char *skey = "optics.aperture.pixel_scale_m";
    if (!fs && !array && cfg_get(c, skey))
        return cfg_error(c, cfg_get(c, skey), skey,
                         "only used with shape = \"file\" (shape is \"%s\")", shapes[a->shape]);
    if (cfg_read_float(c, skey, 0.0, 1, &cfg->aperture_pixel_scale_m) < 0) return -1;
    return 0;
}

static int read_sampling(cfg_ctx *c, psf_config *cfg)
{
    long long n = 0;
    int r = cfg_read_int(c, "sampling.pupil_samples", 8, CFG_MAX_PUPIL_SAMPLES, &n);
    if (r < 0) return -1;
    if (r == 0) return cfg_missing(c, "sampling.pupil_samples", NULL);
    cfg->pupil_samples = (int)n;
    if (cfg_read_float(c, "sampling.padding", 1.0, 0, &cfg->padding) < 0) return -1;
    double big = floor(cfg->padding * (double)n + 0.5);
    if (big > CFG_MAX_FFT_SIZE) {
        const char *key =
            cfg_get(c, "sampling.padding") ? "sampling.padding" : "sampling.pupil_samples";
        char pad[64];
        cfg_fmt_double(cfg->padding, pad, sizeof pad);
        return cfg_error(c, cfg_get(c, key), key,
                         "FFT size N = floor(padding * pupil_samples + 0.5) = floor(%s * %lld + "
                         "0.5) = %.0f must be <= %d",
                         pad, n, big, CFG_MAX_FFT_SIZE);
    }
    return 0;
}

/* Smallest output.npix: the same floor as pupil_samples. */
#define CFG_MIN_OUT_NPIX 8

/* output.pixel_scale_um within [CFG_MIN_PIXEL_LD, n/2] lambda/D at every
 * wavelength of the set: the pixel is p / (F lambda) lambda/D. */
static int bound_pixel_um(cfg_ctx *c, const psf_config *cfg, double p_um)
{
    double wl_lo, wl_hi, f = cfg->f_number, half = 0.5 * cfg->pupil_samples;
    config_wavelength_span(cfg, &wl_lo, &wl_hi);
    double lo = cfg_round_bound(CFG_MIN_PIXEL_LD * f * wl_hi * 1e-3);
    double hi = cfg_round_bound(half * f * wl_lo * 1e-3);
    char why[320], fs[64], via[96];
    cfg_fmt_double(f, fs, sizeof fs);
    snprintf(via, sizeof via, "through f_number %s", fs);
    cfg_pixel_bound_why(why, sizeof why, p_um > hi, half, p_um > hi ? wl_lo : wl_hi, via);
    return cfg_bound_key(c, "output.pixel_scale_um", p_um, lo, hi, why);
}

/* output.npix, output.pixel_scale, output.pixel_scale_um, output.pixel_scale_arcsec
 * (after the optics block: the micrometre pixel needs f_number, the angular one
 * D). Unset values stay 0. */
static int read_output_grid(cfg_ctx *c, psf_config *cfg)
{
    long long npix = 0;
    if (cfg_read_int(c, "output.npix", CFG_MIN_OUT_NPIX, CFG_MAX_FFT_SIZE, &npix) < 0) return -1;
    cfg->out_npix = (int)npix;
    if (cfg_read_float(c, "output.pixel_scale", 0.0, 1, &cfg->out_pixel_scale) < 0) return -1;
    double half = 0.5 * cfg->pupil_samples;
    if (cfg_bound_key(c, "output.pixel_scale", cfg->out_pixel_scale, CFG_MIN_PIXEL_LD, half,
                      cfg->out_pixel_scale > half ? "pupil_samples / 2: half a period of the "
                                                    "sampled pupil's transform"
                                                  : NULL))
        return -1;
    const char *ukey = "output.pixel_scale_um";
    int r = cfg_read_float(c, ukey, 0.0, 1, &cfg->out_pixel_scale_um);
    if (r < 0) return -1;
    if (r == 1 && cfg_get(c, "output.pixel_scale"))
        return cfg_error(c, cfg_get(c, ukey), ukey,
                         "give only one of output.pixel_scale, output.pixel_scale_um and "
                         "output.pixel_scale_arcsec");
    if (r == 1 && !(cfg->f_number > 0))
        return cfg_error(c, cfg_get(c, ukey), ukey,
                         "needs optics.f_number (a focal-plane pixel becomes an angle through "
                         "the focal length f_number * D)");
    if (r == 1 && bound_pixel_um(c, cfg, cfg->out_pixel_scale_um)) return -1;
    const char *akey = "output.pixel_scale_arcsec";
    r = cfg_read_float(c, akey, 0.0, 1, &cfg->out_pixel_scale_arcsec);
    if (r < 0) return -1;
    if (r == 1 && (cfg_get(c, "output.pixel_scale") || cfg_get(c, ukey)))
        return cfg_error(c, cfg_get(c, akey), akey,
                         "give only one of output.pixel_scale, output.pixel_scale_um and "
                         "output.pixel_scale_arcsec");
    return r == 1 ? cfg_bound_pixel_arcsec(c, cfg) : 0;
}

/* output.hdf5: enabled, dtype, compression, level (gzip only) and chunk_images. */
static int read_output_hdf5(cfg_ctx *c, psf_config *cfg)
{
    static const char *const dtypes[] = {"float32", "uint16"};
    static const char *const codecs[] = {"none", "gzip"};
    int v = 0;
    if (cfg_read_bool(c, "output.hdf5.enabled", &cfg->hdf5_enabled) < 0) return -1;
    if (cfg_read_enum(c, "output.hdf5.dtype", dtypes, 2, 0, &v) < 0) return -1;
    cfg->hdf5_dtype = (hdf5_dtype)v; /* same order as hdf5_dtype */
    if (cfg_read_enum(c, "output.hdf5.compression", codecs, 2, 0, &v) < 0) return -1;
    cfg->hdf5_compression = (hdf5_compression)v;
    const char *lkey = "output.hdf5.level";
    long long level = 4;
    int r = cfg_read_int(c, lkey, 1, 9, &level);
    if (r < 0) return -1;
    if (r == 1 && cfg->hdf5_compression != HDF5_GZIP)
        return cfg_error(c, cfg_get(c, lkey), lkey,
                         "only used with output.hdf5.compression = \"gzip\"");
    cfg->hdf5_level = (int)level;
    /* An int: HDF5's chunk dimension is stored with the image's, and the
     * module's chunk is an int (the 4 GiB bound is checked with the image
     * size, app/run/set_limits.c). */
    return cfg_read_int(c, "output.hdf5.chunk_images", 1, INT_MAX, &cfg->hdf5_chunk_images) < 0 ? -1
                                                                                                : 0;
}

static int read_output(cfg_ctx *c, psf_config *cfg)
{
    static const char *const stretches[] = {"linear", "log", "sqrt"};
    int r = cfg_read_string(c, "output.dir", cfg->output_dir, sizeof cfg->output_dir);
    if (r < 0) return -1;
    if (r == 0) snprintf(cfg->output_dir, sizeof cfg->output_dir, "out/%s", cfg->name);
    if (read_output_grid(c, cfg)) return -1;
    if (cfg_read_bool(c, "output.png.enabled", &cfg->png_enabled) < 0) return -1;
    long long bits = 16;
    if (cfg_read_int(c, "output.png.bits", 8, 16, &bits) < 0) return -1;
    if (bits != 8 && bits != 16)
        return cfg_error(c, cfg_get(c, "output.png.bits"), "output.png.bits",
                         "must be 8 or 16 (got %lld)", bits);
    cfg->png_bits = (int)bits;
    int v = 0;
    if (cfg_read_enum(c, "output.png.stretch", stretches, 3, 1, &v) < 0) return -1;
    cfg->png_stretch = (png_stretch)v; /* same order as png_stretch */
    if (cfg_read_float(c, "output.png.dynamic_range", 1.0, 1, &cfg->png_dynamic_range) < 0 ||
        cfg_bound_key(c, "output.png.dynamic_range", cfg->png_dynamic_range, 1.0,
                      CFG_MAX_DYNAMIC_RANGE, NULL))
        return -1;
    long long level = 1;
    if (cfg_read_int(c, "output.png.compression", 0, 9, &level) < 0) return -1;
    cfg->png_compression = (int)level;
    if (cfg_read_bool(c, "output.fits.enabled", &cfg->fits_enabled) < 0) return -1;
    if (cfg_read_bool(c, "output.fits.cube", &cfg->fits_cube) < 0) return -1;
    if (read_output_hdf5(c, cfg)) return -1;
    static const char *const orients[] = {"psfsim", "poppy"};
    if (cfg_read_enum(c, "output.orientation", orients, 2, 0, &v) < 0) return -1;
    cfg->orientation = (image_orientation)v; /* same order as image_orientation */
    if (cfg_read_bool(c, "output.psf_grid", &cfg->psf_grid) < 0) return -1;
    if (cfg->psf_grid && !(cfg->fits_enabled && cfg->fits_cube) && !cfg->hdf5_enabled)
        return cfg_error(c, cfg_get(c, "output.psf_grid"), "output.psf_grid",
                         "needs output.fits.enabled = true and output.fits.cube = true (the grid "
                         "is the set's cube, NAME_cube.fits) or output.hdf5.enabled = true (the "
                         "grid is NAME.h5)");
    if (!cfg->png_enabled && !cfg->fits_enabled && !cfg->hdf5_enabled) {
        const config_setting_t *s = cfg_get(c, "output.png.enabled");
        if (!s) s = cfg_get(c, "output.fits.enabled");
        return cfg_error(c, s ? s : cfg_get(c, "output.hdf5.enabled"), "output",
                         "nothing to write: output.png.enabled, output.fits.enabled or "
                         "output.hdf5.enabled must be true");
    }
    return 0;
}

int cfg_read_all(cfg_ctx *c, psf_config *cfg)
{
    static const char *const norms[] = {"peak", "sum", "pupil"};
    static const char *const backends[] = {"auto", "cpu", "gpu"};
    int v = 0;
    if (cfg_schema_check(c, cfg) || cfg_check_maps(c)) return -1;
    if (read_name(c, cfg)) return -1;
    if (read_wavelengths(c, cfg)) return -1;
    if (read_aperture(c, cfg)) return -1;
    if (read_sampling(c, cfg)) return -1;
    if (cfg_read_aberrations(c, cfg)) return -1;
    if (cfg_read_enum(c, "normalization", norms, 3, 0, &v) < 0) return -1;
    cfg->normalization = (psf_normalization)v; /* same order as psf_normalization */
    if (cfg_read_sweep(c, cfg)) return -1;
    if (read_output(c, cfg)) return -1;
    if (cfg_read_field(c, cfg)) return -1;
    if (config_noise_read(c, cfg)) return -1;
    if (cfg_read_enum(c, "backend", backends, 3, 0, &v) < 0) return -1;
    cfg->backend = (backend_choice)v; /* same order as backend_choice */
    return cfg_read_detector(c, cfg);
}

long long config_image_count(const psf_config *cfg)
{
    long long k = 1;
    if (cfg->n_sweep_wavelength > 0) k *= cfg->n_sweep_wavelength;
    if (cfg->n_sweep_defocus > 0) k *= cfg->n_sweep_defocus;
    if (cfg->n_sweep_focus_shift > 0) k *= cfg->n_sweep_focus_shift;
    for (int i = 0; i < cfg->n_sweep_zernike; ++i)
        if (cfg->sweep_zernike[i].nvalues > 0) k *= cfg->sweep_zernike[i].nvalues;
    for (int i = 0; i < cfg->n_sweep_seg_zernike; ++i)
        if (cfg->sweep_seg_zernike[i].nvalues > 0) k *= cfg->sweep_seg_zernike[i].nvalues;
    if (cfg->random.count > 0) k *= cfg->random.count;
    if (cfg->field.npos > 0) k *= cfg->field.npos; /* the field axis */
    return k;
}
