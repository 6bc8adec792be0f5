/* SPDX-License-Identifier: BSD-3-Clause */
/* A psfsim config file, loaded with libconfig and validated against the
 * public contract of keys, types, units, defaults and ranges that
 * docs/config.md documents. */
#ifndef PSFSIM_CONFIG_H
#define PSFSIM_CONFIG_H

#include <stddef.h>

#include "optics/aperture.h"
#include "optics/zernike.h"
#include "app/formats/png_io.h" /* png_stretch */

#define CFG_PATH_MAX 4096
/* Most wavelengths in one broadband image; the set model holds the backend
 * interface's PSF_MAX_COMPONENTS to at least this (app/set/image_set.c). */
#define CFG_MAX_WAVELENGTHS 64
/* Largest |RMS coefficient| of a Zernike term, a swept, listed (sweep.table)
 * or drawn value, a focus shift's defocus, and largest |OPD| of a map, in
 * waves at the set's shortest wavelength (nm: this many wavelengths). Not a
 * physical limit: whether a wavefront is resolved is the sampling's to say
 * (app/set/set_checks.h warns when a step between pupil samples may pass
 * half a wave; its largest resolved coefficient is a tilt of n/8 waves,
 * 8,192 at n = 65,536). This is a sanity bound far past that, so that the
 * sums of terms, draws and gradient bounds stay finite and the phase,
 * reduced to one wave in double (cpu/pupil_field.c, gpu/pupil.cu), keeps
 * its fraction of a wave to 1e-10: 1e300 has no fraction left and read as
 * a flat wavefront (docs/config.md). */
#define CFG_MAX_WAVES 1.0e6
/* The wavelengths psfsim takes, nm, wherever they are given (optics,
 * sweep.wavelength_nm, sweep.random.wavelength_nm, a table's column): the
 * far UV to the far IR. */
#define CFG_MIN_WAVELENGTH_NM 1.0
#define CFG_MAX_WAVELENGTH_NM 1e6

/* pupil: unit power through the entrance pupil, so a finite field sums to the
 * fraction of it captured (POPPY's and WebbPSF's convention). */
typedef enum { NORM_PEAK = 0, NORM_SUM = 1, NORM_PUPIL = 2 } psf_normalization;
typedef enum { ZUNITS_WAVES = 0, ZUNITS_NM = 1 } zernike_units;
typedef enum { BACKEND_AUTO = 0, BACKEND_CPU = 1, BACKEND_GPU = 2 } backend_choice;
/* output.hdf5.dtype: float32 images as computed, or uint16 PNG stretch levels. */
typedef enum { HDF5_FLOAT32 = 0, HDF5_UINT16 = 1 } hdf5_dtype;
/* detector.write: which images a set with a detector group writes. */
/* BOTH: FITS files hold the oversampled image (primary HDU) and the detector
 * image (extension DET_SAMP), WebbPSF's pair; PNG and metrics are the
 * detector image's. */
typedef enum { DET_WRITE_DETECTOR = 0, DET_WRITE_OVERSAMPLED = 1, DET_WRITE_BOTH = 2 } det_write;

/* The detector group (docs/config.md, "Detector"; app/config/config_detector.c).
 * Without it (enabled 0) the images are the computed grid's, as before. */
typedef struct {
    int enabled;          /* the group is written */
    int oversample;       /* detector.oversample s, 1..CFG_MAX_OVERSAMPLE, default 1 */
    int pixel_response;   /* detector.pixel_response, default true when s > 1 */
    double jitter_mas[2]; /* detector.jitter_mas, [x, y] milliarcseconds; 0 = none */
    double jitter_ld[2];  /* detector.jitter_lambda_d, [x, y] lambda_ref/D; 0 = none */
    double diffusion_px;  /* detector.charge_diffusion_px, detector pixels; 0 = none */
    int ipc;              /* detector.ipc given */
    double ipc_kernel[9]; /* row-major 3x3, summing to 1 */
    det_write write;      /* detector.write, default "detector" */
} cfg_detector;
/* output.hdf5.compression. */
typedef enum { HDF5_NONE = 0, HDF5_GZIP = 1 } hdf5_compression;
/* output.orientation (docs/conventions.md): psfsim's images, or POPPY's:
 * turned 180 degrees, the axis at ((M-1)/2, (M-1)/2) (between pixels for
 * even M, computed there by the MFT). */
typedef enum { ORIENT_PSFSIM = 0, ORIENT_POPPY = 1 } image_orientation;

/* A map given in memory for a map file key (the library's psfsim_map,
 * lib/psfsim.h; docs/config.md "Maps"): rows x cols float32 values,
 * row-major, row 0 where a file's row 0 goes (the FITS file's first stored
 * row, the PNG's top row: y = -D/2). The caller keeps it alive during the
 * load; the load copies it. */
typedef struct {
    const char *key; /* the file key it stands for: "optics.aperture.file" or
                        "aberrations.opd_map.file" */
    const float *values;
    int rows, cols;
} cfg_map_input;

/* Largest map, in pixels: the FITS and PNG readers' cap (2^28). */
#define CFG_MAX_MAP_PIXELS (1LL << 28)

/* A map the config holds in memory (a copy of its cfg_map_input). */
typedef struct {
    float *values; /* NULL: none (the file key, if any, names the map) */
    int rows, cols;
} cfg_map_array;

typedef struct {
    int j;        /* index in the config's convention */
    int n, m;     /* radial order, signed azimuthal frequency */
    double coeff; /* RMS, in units */
} cfg_zernike_term;

typedef struct {
    int j, n, m;
    int nvalues;
    double *values; /* added to that term's coefficient, in units */
} cfg_zernike_sweep;

/* A per-segment Zernike term of a segmented aperture (docs/config.md,
 * "Segmented apertures"): optics.aperture.segments.zernike (coeff) or
 * sweep.segment_zernike (values). Terms over the segment's circumscribed
 * circle (optics/seg_wavefront.h), j of radial order <= CFG_SEG_MAX_ORDER. */
#define CFG_SEG_MAX_ORDER 4
typedef struct {
    int segment;  /* a present segment's index */
    int j, n, m;  /* j in the config's convention */
    double coeff; /* fixed terms: RMS, in units */
    int nvalues;  /* swept terms: the values added, in units */
    double *values;
} cfg_segment_term;

/* A term of sweep.random.zernike: drawn per image, added to term j. */
typedef enum { CFG_DRAW_NORMAL = 0, CFG_DRAW_UNIFORM = 1 } cfg_draw_dist;

typedef struct {
    int j, n, m;
    cfg_draw_dist dist;
    double width; /* normal: sigma; uniform: half-width; in units, finite, 0..1e6 */
} cfg_random_term;

/* sweep.random (docs/config.md): `count` seeded draws, the innermost axis;
 * app/set/draws.h computes each value from (seed, draw index, term). */
typedef struct {
    long long count;         /* 1..10,000,000; 0 = no random axis */
    unsigned long long seed; /* 0..2^63-1 */
    int nzernike;
    cfg_random_term *zernike;           /* [nzernike], in the order written, distinct j */
    int spectrum;                       /* 1: sweep.random.spectrum given */
    int spectrum_j_min, spectrum_j_max; /* indices of the convention, past piston */
    double spectrum_total_rms;          /* in units, 0..1e6 */
    double spectrum_power;              /* -50..50 */
    int n_focus_shift;
    double *focus_shift_um; /* [n_focus_shift] um, one chosen per draw */
    int nseg_zernike;
    cfg_random_term *seg_zernike; /* [nseg_zernike] sweep.random.segment_zernike: term j drawn
                                     for every present segment, distinct j */
    int n_wavelength;
    double *wavelength_nm; /* [n_wavelength] nm, one chosen per draw */
} cfg_random;

/* field (docs/config.md, "Field-dependent aberrations"): the detector
 * positions of the set's field axis (the outermost) and the model of the
 * aberrations over them. A position (x, y), detector pixels, has the
 * normalised field coordinates (hx, hy) = ((x, y) - centre_px) / radius_px.
 * Term j's polynomial is sum over its monomials of c hx^p hy^q, in the
 * config's units; app/set/field_model.c evaluates it (and interpolates the
 * table) at each position. */
#define CFG_FIELD_MAX_POWER 10     /* p, q of a monomial */
#define CFG_FIELD_MAX_PX 1e7       /* |x|, |y|, |centre| and radius, pixels */
#define CFG_FIELD_MAX_MONOMIALS 66 /* per term: every (p, q) with p + q <= 10 */
typedef struct {
    int p, q;
    double c; /* in units */
} cfg_field_monomial;

typedef struct {
    int j, n, m; /* j in the config's convention */
    int nmono;
    cfg_field_monomial *mono; /* [nmono], distinct (p, q) */
} cfg_field_term;

/* A segment's term over the field (field.segment_zernike): segmented
 * apertures, j of radial order <= CFG_SEG_MAX_ORDER. */
typedef struct {
    int segment; /* a present segment */
    int j, n, m; /* j in the config's convention */
    int nmono;
    cfg_field_monomial *mono; /* [nmono], distinct (p, q) */
} cfg_field_segterm;

typedef struct {
    int enabled;         /* 1: the field group is given */
    int grid;            /* 1: field.grid, 0: field.positions_px */
    int nx, ny;          /* field.grid's counts (x fastest); 0 with positions_px */
    long long npos;      /* positions, >= 1 */
    double *x_px, *y_px; /* [npos] detector positions, pixels, grid x fastest */
    double centre_px[2]; /* the optical axis on the detector, pixels */
    double radius_px;    /* > 0: the pixel distance of |h| = 1 */
    int nterms;
    cfg_field_term *terms; /* [nterms] field.zernike, distinct j, as written */
    int nsegterms;
    cfg_field_segterm *segterms;   /* [nsegterms] field.segment_zernike, distinct (segment, j) */
    char table_file[CFG_PATH_MAX]; /* field.table resolved, "" = none */
} cfg_field;

/* Where a key of the config is written, recorded by config_load. */
/* detector.noise (docs/config.md): a simulated exposure of each image,
 * app/set/noise.h's model. */
typedef struct {
    int enabled;           /* 1: detector.noise given */
    double flux_photons;   /* source electrons per unit of the image's normalisation */
    double background_e;   /* electrons per pixel */
    double read_noise_e;   /* RMS electrons per pixel */
    double gain_e_per_adu; /* electrons per ADU */
    int bits;              /* ADC bits, 1..16: ADU in 0 .. 2^bits - 1 */
    unsigned long long seed;
} cfg_noise;

typedef struct {
    char *key;   /* dotted path: "sampling.pupil_samples", or a group: "sweep" */
    char *where; /* "FILE:LINE", FILE the @include'd file that holds the key */
} cfg_key_where;

typedef struct {
    char path[CFG_PATH_MAX]; /* the config file as given, "<stdin>" for "-" (for messages) */
    /* The config's bytes as loaded (NUL-terminated; it may hold NULs): a
     * stream cannot be read twice, so a fingerprint hashes these. */
    char *text;
    size_t text_len;
    unsigned long long text_dev, text_ino; /* its identity (fstat), for include cycles */
    char include_dir[CFG_PATH_MAX];        /* where its @include names resolve; "": the current
                                              directory (a stream's) */
    char name[256];

    /* optics */
    /* 1 = monochromatic (optics.wavelength_nm); with only sweep.wavelength_nm
     * given, 1 holding the first swept value (each image's own wavelength
     * comes from jobs_image_params). */
    int nwavelengths;
    double *wavelengths_nm;           /* [nwavelengths], nm */
    double *weights;                  /* [nwavelengths], normalised to sum 1 (default equal) */
    double f_number;                  /* 0 = not set */
    psf_aperture aperture;            /* map/map_rows/map_cols left empty: app loads the file */
    char aperture_file[CFG_PATH_MAX]; /* shape = "file": resolved path; "" with an array */
    cfg_map_array aperture_array;     /* shape = "file": the map given in memory instead */
    /* optics.aperture.pixel_scale_m: metres per map pixel at the entrance
     * pupil (> 0), or 0 when not given (the map's FITS header, else the map
     * is stretched over D x D: app/set/map_place.h) */
    double aperture_pixel_scale_m;

    /* sampling */
    int pupil_samples;
    double padding;

    /* aberrations */
    zernike_convention zconv;
    zernike_units zunits;
    int nzernike;
    cfg_zernike_term *zernike; /* [nzernike], in the order written, distinct j */
    int nseg_zernike;
    cfg_segment_term *seg_zernike; /* [nseg_zernike] optics.aperture.segments.zernike */
    char opd_file[CFG_PATH_MAX];   /* "" = none (or opd_array); resolved path */
    cfg_map_array opd_array;       /* the OPD map given in memory instead of opd_file */
    zernike_units opd_units;       /* aberrations.opd_map.units: "nm" (default) or "waves" at
                                      each job's wavelength; a FITS map's BUNIT overrides it
                                      (app/set/maps.c) */
    /* aberrations.opd_map.scale (a key added to the schema; default 1.0):
     * OPD in opd_units = scale * file value (PNG counts or FITS values) */
    double opd_scale;
    double opd_pixel_scale_m; /* aberrations.opd_map.pixel_scale_m, as aperture_pixel_scale_m */

    psf_normalization normalization;

    /* sweep (nvalues 0 = not swept) */
    int n_sweep_wavelength;
    double *sweep_wavelength_nm;
    int n_sweep_defocus;
    double *sweep_defocus;
    int n_sweep_focus_shift;
    double *sweep_focus_shift_um;
    int n_sweep_zernike;
    cfg_zernike_sweep *sweep_zernike; /* [n_sweep_zernike], in the order written */
    int n_sweep_seg_zernike;
    cfg_segment_term *sweep_seg_zernike; /* [n_sweep_seg_zernike] sweep.segment_zernike */
    cfg_random random;                   /* sweep.random; random.count 0 without */
    /* sweep.table: the resolved path ("" = none); app/set/axes.c loads it. */
    char table_file[CFG_PATH_MAX];

    /* output */
    char output_dir[CFG_PATH_MAX];
    /* The output grid (README, "Conventions"). 0 = not set: npix defaults to
     * the FFT size N, the pixel to n/N lambda_ref/D. When the grid they
     * define differs from the FFT's, image_set computes every image by MFT. */
    int out_npix;              /* output.npix, 8..65536 */
    double out_pixel_scale;    /* output.pixel_scale, lambda_ref/D (lambda_ref: the
                                  image's shortest wavelength) */
    double out_pixel_scale_um; /* output.pixel_scale_um, focal-plane um (needs
                                  f_number; exclusive with out_pixel_scale) */

    /* output.pixel_scale_arcsec: arcsec on the sky, the same angle for every
     * wavelength (exclusive with the two above). */
    double out_pixel_scale_arcsec;
    /* Not a key: tests set it after config_load to compute by MFT even
     * where the FFT is exact (image_set_init reads it). */
    int mft_force;
    int png_enabled;
    int png_bits; /* 8 | 16 */
    png_stretch png_stretch;
    double png_dynamic_range;
    int png_compression; /* zlib level 0..9, default 1 (fast) */
    int fits_enabled;
    int fits_cube; /* with fits_enabled: one NAME_cube.fits, one plane per image,
                      instead of one FITS file per image */

    int hdf5_enabled; /* output.hdf5.enabled: the set as one NAME.h5 (and NAME.json) */
    hdf5_dtype hdf5_dtype;
    hdf5_compression hdf5_compression;
    int hdf5_level;                /* output.hdf5.level: the gzip level 1..9, default 4 */
    long long hdf5_chunk_images;   /* output.hdf5.chunk_images: images per HDF5 chunk, >= 1
                                      (more than the set's K: K), default 1 (shuffled reads) */
    image_orientation orientation; /* output.orientation, default psfsim */
    cfg_noise noise;               /* detector.noise; noise.enabled 0 without */
    int psf_grid; /* output.psf_grid: the cube in photutils' GriddedPSFModel layout */

    backend_choice backend;
    cfg_detector detector; /* the detector group */
    cfg_field field;       /* the field group; field.enabled 0 without */

    /* Every key of the file, in file order, and where it is: messages
     * after loading name the line without parsing the file again. */
    int nkeys;
    cfg_key_where *keys; /* [nkeys] */
} psf_config;

/* Load and validate path. Relative file paths inside the config (aperture,
 * OPD map) resolve against the config's directory; output.dir is relative to
 * the current directory. On error returns -1 and writes one message naming
 * the file, line and key to err, e.g.
 *   "defocus.cfg:12: sampling.padding: must be >= 1 (got 0.5)"
 * and "defocus.cfg:7: optics.wavelenght_nm: unknown key (did you mean
 * optics.wavelength_nm?)"; a syntax error reads "FILE:LINE: syntax error:
 * TEXT" (libconfig's text; without ": TEXT" when that is just "syntax
 * error"), a missing key "FILE: key: required key missing", an unreadable
 * config "FILE: cannot read: REASON". List elements are named key[i],
 * 0-based. Files named in the config are checked to exist
 * and be readable (messages name the resolved path); @include resolves
 * against the config's directory too. path "-" reads standard input
 * (messages name "<stdin>"); a path that is not a regular file (a pipe,
 * -c <(...), a FIFO, a device) is read once as a stream; either has no
 * directory of its own: its @include and file names resolve against the
 * current directory. Caps: the config at most 16 MiB ("FILE: cannot read:
 * larger than the 16 MiB cap on a config (...)"), and with its @include'd
 * files (read again at each @include, as libconfig inlines them) at most
 * 16 MiB read, 1024 inclusions and 64 distinct included files in all. An
 * integer literal out of its range (32 bits, 64 with the L suffix) is
 * refused as written: "FILE:LINE: key: integer 4294967300 is out of the
 * 32-bit range ...". SIGINT/SIGTERM while it loads (app/base/interrupt.h):
 * "FILE: interrupted while loading the config". Limits: name at most 230
 * characters (its files must fit NAME_MAX), pupil_samples and
 * N = floor(padding * n + 0.5) <= 65536, output.npix in 8..65536,
 * spiders.count <= 1000, at most
 * CFG_MAX_WAVELENGTHS (64) broadband wavelengths, at most 10,000,000
 * images. Nothing is written. cfg is zeroed first; free it with
 * config_free also after an error. Returns 0 on success. */
int config_load(const char *path, psf_config *cfg, char *err, size_t errlen);

/* config_load for a config held in memory: text (NUL-terminated, the
 * same schema and checks, through the same @include walk, caps, integer
 * range check and parse), named name in messages ("NAME:12:
 * sampling.padding: ..."; NULL or "" = "<config>"), with @include and
 * the relative map paths resolved against base_dir (NULL or "" = the
 * current directory). cfg->path is name; a copy of text is kept in
 * cfg->text. Text past the 16 MiB cap: "NAME: larger than the 16 MiB cap
 * on a config (N bytes)". Errors and freeing as config_load. */
int config_load_text(const char *text, const char *name, const char *base_dir, psf_config *cfg,
                     char *err, size_t errlen);

/* config_load (path non-NULL) or config_load_text (path NULL: text, name,
 * base_dir) with nmaps maps given in memory for map file keys (the
 * library's psfsim_options.maps). Such a key is not written in the config:
 * the map stands for it, read as the file would be (its units, scale and
 * pixel-scale keys alike; docs/config.md "Maps"). After the schema check,
 * before the sections are read, each map is checked: "NAME: KEY: ..." for
 * a key that takes no array (not optics.aperture.file nor
 * aberrations.opd_map.file), a key given twice, NULL values, rows or cols
 * < 1, more than CFG_MAX_MAP_PIXELS; then, where the section reads it,
 * "NAME:LINE: KEY: given both as a file in the config and as an array
 * (...)" when the config writes the key too, and the file key's own
 * messages ("only used with shape = \"file\""). Each map is copied into
 * cfg (aperture_array, opd_array); an OPD map array stands for the group
 * aberrations.opd_map when the config has none. maps may be NULL when
 * nmaps is 0. Errors and freeing as config_load. */
int config_load_maps(const char *path, const char *text, const char *name, const char *base_dir,
                     const cfg_map_input *maps, int nmaps, psf_config *cfg, char *err,
                     size_t errlen);

/* Free what config_load allocated (after success or an error) and zero cfg;
 * a second call is harmless. Does not free aperture.map (the app's). */
void config_free(psf_config *cfg);
/* Free f's arrays and zero it (config_free's part for the field group). */
void cfg_field_free(cfg_field *f);

/* Where key (a dotted path as in the messages, "output.npix", or a group,
 * "sweep"; not a list element) is written in the loaded config: "FILE:LINE"
 * into out, FILE named as config_load's messages name it (an @include'd
 * file as the config's directory joined to the included name). Returns 1,
 * or 0 with out = cfg->path when the config has no such key. */
int config_key_where(const psf_config *cfg, const char *key, char *out, size_t outlen);

/* Call visit(file, text, len, arg) for every inclusion the @include lines
 * of the loaded config cfg make, nested ones too, resolved as config_load
 * resolved them (cfg->include_dir), in the order libconfig reads them (an
 * include's own includes after it); a file included twice is visited
 * twice. text, len: the file's bytes as read now (NUL-terminated, valid
 * during the call). Each included file is read once; the config's own
 * bytes are cfg->text, not read again (a stream cannot be). visit returns
 * 0, or non-zero to stop (its own message in the arg it was given).
 * Returns 0, or -1 (an include config_load refuses now: err says so; or
 * visit stopped). */
int config_for_each_include(const psf_config *cfg,
                            int (*visit)(const char *file, const char *text, size_t len, void *arg),
                            void *arg, char *err, size_t errlen);

/* The shortest and longest wavelength of the set's images, nm: those of
 * sweep.wavelength_nm when it is given (they replace optics.wavelength_nm),
 * else optics.wavelength_nm or optics.wavelengths_nm. */
void config_wavelength_span(const psf_config *cfg, double *lo, double *hi);

/* The bound on |v| of a coefficient-like value in aberrations.units given
 * anywhere (a term, a swept, listed or drawn value): CFG_MAX_WAVES waves,
 * or in nm CFG_MAX_WAVES x wl_lo_nm, the set's shortest wavelength (not
 * finite: the set's wavelengths are not known yet, as when only a table
 * gives them; CFG_MIN_WAVELENGTH_NM stands in). why[whylen] says what the
 * bound is ("waves RMS", "1e+06 waves RMS at 500 nm, the shortest
 * wavelength"). The bound is rounded to 6 digits, as messages show it. */
double config_coeff_limit(const psf_config *cfg, double wl_lo_nm, char *why, size_t whylen);
/* The bound on |dz| of a focus shift, um: the dz whose defocus is
 * CFG_MAX_WAVES waves RMS at wl_lo_nm (as above) through cfg->f_number
 * (> 0), and its why. */
double config_focus_shift_limit(const psf_config *cfg, double wl_lo_nm, char *why, size_t whylen);

/* Number of images the config's sweep makes (product of the swept list
 * lengths and sweep.random.count; 1 without a sweep). Computed in 64 bits.
 * A sweep.table multiplies it by its rows (app/set/axes.h). */
long long config_image_count(const psf_config *cfg);

/* The fingerprint of every byte that decides the images of the loaded
 * config cfg: FNV-1a 64 (Fowler, Noll, Vo), as 16 hex digits, of the
 * config's bytes as parsed (cfg->text: read once, so -c - and a FIFO
 * work), then of each file its @include lines name, nested ones too
 * (config_for_each_include), of the aperture map (shape "file"), of the
 * OPD map and of the sweep.table CSV, each of those as its length (8
 * bytes, little-endian) and its bytes, then psfsim's version. A config
 * with no include, map or table has the fingerprint it had when only its
 * own bytes counted. A map given as an array (cfg_map_array) counts as
 * its rows, its cols (8 bytes each, little-endian) and its float32 values'
 * bytes counted as a file's, in the file's place, so that two arrays that
 * differ give different fingerprints. 0 or -1 with err (a file that cannot be read, or a
 * map or table that is not a regular file: "PATH: not a regular file"). */
int config_fingerprint(const psf_config *cfg, char out[24], char *err, size_t errlen);

#endif
