/* SPDX-License-Identifier: BSD-3-Clause */
/* Internals of config loading, shared by config.c (the sections and their
 * ranges), config_schema.c (the table of known keys, the tree walk that
 * rejects unknown keys and wrong types, the nearest-key suggestion) and
 * config_read.c (messages, typed getters, range checks, file paths).
 * Not part of the public interface: include config.h instead. */
#ifndef PSFSIM_CONFIG_PRIV_H
#define PSFSIM_CONFIG_PRIV_H

#include <libconfig.h>
#include <stddef.h>
#include <sys/types.h>

#include "app/config/config.h"

/* Limits of the contract (docs/config.md) and of this implementation. */
#define CFG_MAX_PUPIL_SAMPLES 65536
#define CFG_MAX_FFT_SIZE 65536
#define CFG_MAX_SPIDERS 1000
#define CFG_MAX_IMAGES 10000000LL
#define CFG_MAX_OVERSAMPLE 16 /* detector.oversample */
/* The most bytes a config may hold (a stream is read up to it, then
 * refused), config.h. */
#define CFG_MAX_TEXT_BYTES ((size_t)16 << 20)
/* @include caps for one config (config_include.c): libconfig reads an
 * included file again at each @include of it, so at most this many
 * inclusions in all, CFG_MAX_TEXT_BYTES read in all (the config's bytes
 * and every inclusion's), and this many distinct included files. */
#define CFG_MAX_INCLUSIONS 1024
#define CFG_MAX_INCLUDED_FILES 64
/* Where the computation means something (docs/config.md, the key tables):
 * apertures from a micrometre
 * pinhole to 10 km, focal ratios from NA = 1 up, vanes of a nanometre and
 * more, angles within a turn (fmod keeps them exact; 1e300 degrees has no
 * digit left of the turn), output pixels from 1e-6 lambda/D to half a
 * period of the sampled pupil's transform (n/2 lambda/D), log stretches
 * within float32's normal range. Wavelengths and aberrations:
 * CFG_MIN_WAVELENGTH_NM, CFG_MAX_WAVES (config.h). */
#define CFG_MIN_DIAMETER_M 1e-6
#define CFG_MAX_DIAMETER_M 1e4
#define CFG_MIN_F_NUMBER 0.5
#define CFG_MAX_F_NUMBER 1e5
#define CFG_MIN_SPIDER_WIDTH_M 1e-9
#define CFG_MAX_ANGLE_DEG 360.0
#define CFG_MIN_PIXEL_LD 1e-6
#define CFG_MAX_DYNAMIC_RANGE 1e38

/* One load in progress: the parsed tree and where messages go. */
typedef struct {
    const char *file;       /* the config path as given, for messages */
    char dir[CFG_PATH_MAX]; /* its directory, "" when the path has no '/' */
    config_t lc;
    char *err;
    size_t errlen;
    const cfg_map_input *maps; /* config_load_maps' maps in memory, nmaps of them */
    int nmaps;
} cfg_ctx;

/* What a key holds (config_schema.c checks it before anything reads it). */
typedef enum {
    CFG_K_GROUP,             /* { ... } */
    CFG_K_INT,               /* integer (32- or 64-bit literal) */
    CFG_K_FLOAT,             /* any number; integers accepted */
    CFG_K_STRING,            /* "..." */
    CFG_K_BOOL,              /* true | false */
    CFG_K_NUMBERS,           /* [a, b, ...] or (a, b, ...) of numbers */
    CFG_K_PAIRS,             /* ( (j, x), ... ): elements checked by the reader */
    CFG_K_TRIPLES,           /* ( (j, "name", x), ... ): elements checked by the reader */
    CFG_K_GROUPS,            /* ( { ... }, ... ): elements checked by the reader */
    CFG_K_SEGTERMS,          /* ( (segment, j, x), ... ): elements checked by the reader */
    CFG_K_NUMBER_OR_NUMBERS, /* a number, or a list of numbers as CFG_K_NUMBERS */
    CFG_K_POSITIONS,         /* ( (x, y), ... ): elements checked by the reader */
    CFG_K_FIELDTERMS         /* ( (j, ( (p, q, c), ... )), ... ): checked by the reader */
} cfg_kind;

/* ---- config_read.c ---- */

/* Write "FILE:LINE: key: message" to c->err (FILE:LINE from s, or just
 * "FILE: key: message" when s is NULL). Always returns -1. */
int cfg_error(cfg_ctx *c, const config_setting_t *s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Record in cfg->keys where key, the setting s, is written ("FILE:LINE",
 * FILE as cfg_error names it); nothing for a setting without a line.
 * Returns 0, or -1 with a message (out of memory). */
int cfg_record_key(cfg_ctx *c, psf_config *cfg, const config_setting_t *s, const char *key);
/* Replace control characters (a string value's "\n", say) by spaces, so a
 * message stays one line. */
void cfg_one_line(char *msg);
/* "FILE: key: required key missing" plus an optional note; returns -1. */
int cfg_missing(cfg_ctx *c, const char *key, const char *note);
/* "an integer", "a float", "a string", ... for a libconfig type. */
const char *cfg_type_name(int type);
/* Shortest text that reads back as v (%.15g, else %.17g). */
void cfg_fmt_double(double v, char *buf, size_t n);

/* The setting at a dotted path, or NULL when absent. */
const config_setting_t *cfg_get(const cfg_ctx *c, const char *path);
/* Value of a number setting (int, int64 or float) as a double. */
double cfg_number(const config_setting_t *s);
/* Value of an integer setting (int or int64). */
long long cfg_integer(const config_setting_t *s);
int cfg_is_number(const config_setting_t *s);
int cfg_is_integer(const config_setting_t *s);

/* Typed reads of an optional key that config_schema.c has type-checked.
 * Return 1 when present (value stored), 0 when absent (value untouched),
 * -1 on a range error (message written). */
/* Float: finite, and lo < v (lo_open) or lo <= v; no lower bound when
 * lo = -HUGE_VAL. */
int cfg_read_float(cfg_ctx *c, const char *path, double lo, int lo_open, double *v);
int cfg_read_int(cfg_ctx *c, const char *path, long long lo, long long hi, long long *v);
int cfg_read_bool(cfg_ctx *c, const char *path, int *v);
/* String of 1..maxlen-1 bytes copied to buf. */
int cfg_read_string(cfg_ctx *c, const char *path, char *buf, size_t maxlen);
/* One of names[0..count-1] (exact match): stores its index, or dflt when
 * the key is absent. */
int cfg_read_enum(cfg_ctx *c, const char *path, const char *const *names, int count, int dflt,
                  int *v);
/* Non-empty list of finite numbers, each > 0 when positive is set; *out is
 * malloc'd (caller frees), *n its length. -1 also on allocation failure. */
int cfg_read_numbers(cfg_ctx *c, const char *path, int positive, double **out, int *n);

/* Resolve a path written in the config against the config's directory and
 * check the file exists, is a regular file and can be opened for reading.
 * s/key name the setting for messages. Returns 0, or -1 with a message
 * naming the resolved path and the system's reason. */
int cfg_resolve_file(cfg_ctx *c, const config_setting_t *s, const char *key, const char *given,
                     char *resolved, size_t len);

/* ---- config_load.c: maps given in memory (config_load_maps) ---- */

/* Check c->maps: each key one that takes an array, given once, with
 * values, 1 x 1 .. CFG_MAX_MAP_PIXELS pixels. 0, or -1 with "NAME: KEY:
 * why" (NAME the config's). */
int cfg_check_maps(cfg_ctx *c);
/* The map given in memory for key, or NULL. */
const cfg_map_input *cfg_map_for(const cfg_ctx *c, const char *key);
/* The map for key copied into *out (nothing when none is given). s: the
 * setting of key when the config writes it too, refused ("given both").
 * 0, or -1 with a message (both, out of memory). */
int cfg_take_map(cfg_ctx *c, const config_setting_t *s, const char *key, cfg_map_array *out);

/* ---- config_text.c ---- */

/* A file's bytes as read, NUL-terminated (it may hold NULs too). */
typedef struct {
    char *text;
    size_t len;
    int stream; /* not a regular file: a pipe, a FIFO, a device */
    dev_t dev;  /* its identity (fstat) */
    ino_t ino;
} cfg_text;

/* Read path ("-" = standard input) into t: opened without blocking (a
 * FIFO without a writer does not stop the open), a directory refused, a
 * regular file of more than max bytes refused before reading, anything
 * else read as a stream (poll, then read) to its end or max bytes. shown
 * names the file in messages: "FILE: cannot read: REASON", "FILE: cannot
 * read: larger than the 16 MiB cap on a config (...)". Returns 0, or -1
 * with err (t then empty); free t with cfg_text_free. */
int cfg_text_read(const char *path, const char *shown, size_t max, cfg_text *t, char *err,
                  size_t errlen);
/* A config given in memory (config_load_text) as a cfg_text: text's
 * strlen bytes copied into t (no file: stream 0, dev and ino 0, which
 * match no file an @include names). Returns 0, or -1 with "NAME: larger
 * than the 16 MiB cap on a config (N bytes)" (more than max) or "NAME: out
 * of memory" in err (t then empty); free t with cfg_text_free. */
int cfg_text_copy(const char *text, const char *shown, size_t max, cfg_text *t, char *err,
                  size_t errlen);
void cfg_text_free(cfg_text *t);

/* ---- config_literal.c ---- */

/* An integer literal libconfig cannot hold as written: without the L
 * suffix past 32 bits (libconfig 1.5 keeps the low 32 bits: 4294967300
 * reads as 4), with it past 64 bits. */
typedef struct {
    size_t offset;     /* in its file's text */
    long long index;   /* the integer literals before it in that file */
    int line;          /* 1-based */
    int bits;          /* the range it is out of: 32 or 64 */
    long long held[2]; /* what libconfig may hold for it: wrapped, or whole */
    char text[48];     /* as written, shortened with "..." */
} cfg_wide_int;

/* The first such literal of a file's text, scanned as libconfig's lexer
 * scans it (comments, strings and @include lines skipped). 1 when found
 * (into out), 0 when none. */
int cfg_find_wide_int(const char *text, size_t len, cfg_wide_int *out);

/* Where the first one is in what libconfig reads (config_include.c finds
 * it in walk order, which is libconfig's reading order). */
typedef struct {
    int found;
    int in_config;             /* in the config itself, else in an @include'd file */
    char source[CFG_PATH_MAX]; /* that file's name as its @include writes it */
    cfg_wide_int lit;
} cfg_wide_site;

/* After the parse: refuse the literal at site when libconfig read it (a
 * setting from its file holds it), with "FILE:LINE: KEY: integer LITERAL
 * is out of the 32-bit range -2147483648..2147483647 (a 64-bit integer is
 * written with an L suffix)" (or "... of the 64-bit range ..."), KEY that
 * of the setting the literal made. Returns 0 when it was not read, else
 * -1. */
int cfg_wide_int_check(cfg_ctx *c, const cfg_wide_site *site);
/* ---- config_bounds.c ---- */

/* Hold v, the value of key (setting s, already read and finite), to
 * [lo, hi]: 0, or -1 with "FILE:LINE: key: [what ]must be <= HI[ (why)]
 * (got V)" (">= LO" below; "in [-H, H]" when lo = -hi). what: NULL, or the
 * element's name ("the coefficient", "the value 2"). */
int cfg_check_bounds(cfg_ctx *c, const config_setting_t *s, const char *key, const char *what,
                     double v, double lo, double hi, const char *why);
/* cfg_check_bounds for the key at path when it is written (its value v). */
int cfg_bound_key(cfg_ctx *c, const char *path, double v, double lo, double hi, const char *why);

/* ---- config_noise.c ---- */

/* detector.noise into cfg->noise (its defaults when the group is absent:
 * noise.enabled 0). After read_output (it refuses output.fits.cube).
 * Returns 0, or -1 with the message (FILE:LINE: key: ...). */
int config_noise_read(cfg_ctx *c, psf_config *cfg);
/* cfg_check_bounds for each of the n values of the list at path, named
 * path[i], when the list is written. */
int cfg_bound_list(cfg_ctx *c, const char *path, const double *v, int n, double lo, double hi,
                   const char *why);
/* x to 6 significant digits, so that a bound derived from other keys
 * (1000 waves at 632.8 nm) reads as the number the check uses. */
double cfg_round_bound(double x);

/* Why a fixed-angle output pixel is out of bounds, into why[whylen]: above
 * (1) n/2 = half lambda/D at the shortest wavelength wl_nm, or below the
 * smallest (CFG_MIN_PIXEL_LD) at the longest; via names how the pixel
 * becomes an angle ("through f_number 10", "with D = 1 m"). */
void cfg_pixel_bound_why(char *why, size_t whylen, int above, double half, double wl_nm,
                         const char *via);

/* output.pixel_scale_arcsec (arcsec, read into cfg) within [CFG_MIN_PIXEL_LD,
 * n/2] lambda/D at every wavelength of the set: the pixel is
 * p pi / (180 * 3600) D / lambda lambda/D. Returns 0, or -1 with the message
 * naming the key and the bound (cfg_bound_key). */
int cfg_bound_pixel_arcsec(cfg_ctx *c, const psf_config *cfg);

/* ---- config_include.c ---- */

/* Check every file an @include line of the config names (config: its name
 * for messages, t: its bytes; nested ones too, up to libconfig's depth of
 * 10), resolved against dir ("" = as written) as libconfig resolves them:
 * each must be a regular file, since libconfig 1.5 exits the process
 * (flex's "input in flex scanner failed") when one is a directory, no
 * file may include itself (directly or through others), and what libconfig
 * would read must stay within the caps above. Each distinct file is read
 * once. Returns 0, or -1 with "FILE:LINE: @include \"NAME\": REASON" in
 * err: "is a directory, not a config file", "is not a regular file", "the
 * file includes itself", "an include cycle (...)", "larger than the 16 MiB
 * cap on a config (N bytes)", "more than 1024 inclusions in all (the cap
 * for one config, CONFIG; ...)", "more than 16 MiB read in all (...)",
 * "more than 64 distinct files included (...)". Missing files are left to
 * libconfig ("cannot open include file"). The first integer literal out
 * of range in reading order goes to wide (wide->found). */
int cfg_check_includes(const char *config, const cfg_text *t, const char *dir, cfg_wide_site *wide,
                       char *err, size_t errlen);

/* ---- config.c ---- */

/* psf_config's defaults (docs/config.md), before any key is read. */
void cfg_set_defaults(psf_config *cfg);
/* Read and check every section of the parsed tree c->lc into cfg: the
 * schema, name, optics, sampling, aberrations, normalization, sweep,
 * output, backend, in that order. Returns 0, or -1 with the first error's
 * FILE:LINE: KEY message in c->err. */
int cfg_read_all(cfg_ctx *c, psf_config *cfg);

/* ---- config_sweep.c ---- */

/* The aberrations block (convention, units, Zernike terms, OPD map) and the
 * sweep block (after aberrations: swept terms use its convention, and after
 * the optics block: the focus shift needs f_number). Each returns 0 or -1
 * with a message; what they allocate is in cfg for config_free. */
int cfg_read_aberrations(cfg_ctx *c, psf_config *cfg);
int cfg_read_sweep(cfg_ctx *c, psf_config *cfg);
/* ---- config_detector.c ---- */
/* The detector group (docs/config.md, "Detector"), after the optics and the
 * output grid. Returns 0, or -1 with a FILE:LINE: key message. */
int cfg_read_detector(cfg_ctx *c, psf_config *cfg);
/* j in the config's convention -> (n, m) (optics/zernike.h's ranges); s
 * and key name the setting for messages. Returns 0, or -1 with a message. */
int cfg_zernike_j(cfg_ctx *c, const config_setting_t *s, const char *key, zernike_convention conv,
                  long long j, int *n, int *m);

/* ---- config_field.c ---- */
/* The field group (docs/config.md, "Field-dependent aberrations") into
 * cfg->field, after the sweep and the output (its bounds use the set's
 * wavelengths; its positions multiply the images). Returns 0, or -1 with a
 * FILE:LINE: key message; what it allocates is in cfg for config_free. */
int cfg_read_field(cfg_ctx *c, psf_config *cfg);

/* ---- config_segterms.c ---- */

/* optics.aperture.segments.zernike and sweep.segment_zernike (after the
 * aperture, aberrations.convention and the sweep's wavelengths, for the
 * bounds). Returns 0 or -1 with a message; what it allocates is in cfg. */
int cfg_read_segment_terms(cfg_ctx *c, psf_config *cfg);
/* config_coeff_limit at the config's shortest wavelength
 * (config_wavelength_span). */
double cfg_coeff_bound(const psf_config *cfg, char *why, size_t whylen);
/* The segment of a triple p (its element 0): an integer index of a present
 * segment of a's rings, into *segment. Returns 0 or -1 with a message. */
int cfg_read_segment(cfg_ctx *c, const psf_aperture *a, const config_setting_t *p, const char *key,
                     int *segment);
/* A segment term's index j at s: an integer j of the convention conv of
 * radial order <= CFG_SEG_MAX_ORDER, into *j, *n, *m. Returns 0 or -1. */
int cfg_segment_j(cfg_ctx *c, const config_setting_t *s, const char *key, zernike_convention conv,
                  int *j, int *n, int *m);

/* ---- config_dataset.c ---- */

/* sweep.random and sweep.table (after the Cartesian lists: the image limit
 * counts them, and a random list may not repeat a swept one). Returns 0 or
 * -1 with a message; what it allocates is in cfg->random for config_free. */
int cfg_read_dataset(cfg_ctx *c, psf_config *cfg);
/* Whether the wavelength may come from the sweep block other than
 * sweep.wavelength_nm: sweep.random.wavelength_nm, or a sweep.table (whose
 * wavelength_nm column app/set/axes.c requires then). */
int cfg_wavelength_elsewhere(const cfg_ctx *c);
/* Free what cfg_read_dataset allocated in r and zero it. */
void cfg_free_random(cfg_random *r);

/* ---- config_aperture.c ---- */

/* optics.aperture.segments into a->seg (a->shape read; have_diameter: 1
 * when diameter_m was given, else it is set to the segments' circumscribed
 * diameter, or the outer stop's if smaller). An error when the group is
 * given for another shape. Returns 0, or -1 with a message. */
int cfg_read_segments(cfg_ctx *c, psf_aperture *a, int have_diameter);
/* optics.aperture.spiders.vanes into a->vanes, a->nvanes (diameter_m
 * read): each { angle_deg; width_m; offset_m; r_start_m; r_end_m; }, the
 * first two required. Returns 0, or -1 with a message. */
int cfg_read_vanes(cfg_ctx *c, psf_aperture *a);
/* optics.aperture.angle_deg (shape = "hexagon" only) and
 * optics.aperture.obscuration_shape ("circle" | "hexagon") into a.
 * Returns 0, or -1 with a message. */
int cfg_read_aperture_extras(cfg_ctx *c, psf_aperture *a);

/* ---- config_schema.c ---- */

/* Walk the whole tree: every key must be in the schema table for its place
 * and hold the kind of value the table says (numbers lists: every element a
 * number); each is recorded in cfg->keys (cfg_record_key). Returns 0, or -1
 * with the first offence in file order. */
int cfg_schema_check(cfg_ctx *c, psf_config *cfg);

/* Optimal-string-alignment edit distance (insertions, deletions,
 * substitutions and swaps of adjacent characters each cost 1), ASCII case
 * ignored. Exposed for the tests. */
int cfg_edit_distance(const char *a, const char *b);

#endif
