/* SPDX-License-Identifier: BSD-3-Clause */
/* PNG output (stretched 8/16-bit grayscale PSFs) and grayscale map input.
 * Written files are assembled in memory by png_encode.c and written in one
 * piece; libpng streams only images too large for that, and reads maps.
 * libpng reports errors by longjmp: each setjmp lives in a small *_body
 * function whose resources belong to its caller, so nothing the caller
 * frees is an automatic variable changed between setjmp and longjmp.
 * libpng warnings are dropped (no printing from the library). */
#include "app/formats/png_io.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/formats/atomic_file.h"
#include "app/formats/png_encode.h"

/* Largest map psf_png_read_gray accepts, in pixels (16384 x 16384). */
#define PNG_READ_MAX_PIXELS ((size_t)1 << 28)
/* Largest buffer libpng may allocate for one ancillary chunk (its own
 * default when built with limits, PNG_USER_CHUNK_MALLOC_MAX). */
#define PNG_READ_CHUNK_MAX ((png_alloc_size_t)8000000)

typedef struct {
    char msg[256]; /* libpng's error text */
    int sys;       /* errno when libpng gave up: a failed fwrite's reason */
} png_err_ctx;

static void on_png_error(png_structp png, png_const_charp msg)
{
    png_err_ctx *ctx = (png_err_ctx *)png_get_error_ptr(png);
    if (ctx) {
        ctx->sys = errno;
        snprintf(ctx->msg, sizeof ctx->msg, "%s", msg ? msg : "unknown error");
    }
    png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg)
{
    (void)png, (void)msg;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

/* What png_write_body works on; owned by write_levels. */
typedef struct {
    FILE *fp;
    const unsigned short *levels;
    unsigned char *row8; /* npix bytes, 8-bit only */
    int npix, bits, compression;
} png_write_job;

/* An image too large for png_encode_levels streams row by row through
 * libpng's zlib. */
static int png_write_body(png_structp png, png_infop info, const png_write_job *job)
{
    if (setjmp(png_jmpbuf(png))) return -1;
    png_init_io(png, job->fp);
    png_set_IHDR(png, info, (png_uint_32)job->npix, (png_uint_32)job->npix, job->bits,
                 PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, job->compression);
    /* No row filter: on PSFs (256^2, 16-bit, log or linear) it gave both
     * the smallest files and the fastest writes at every level tried; the
     * adaptive default was ~1.5x slower and 10-15% larger. */
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    png_write_info(png, info);
    if (job->bits == 16 && host_is_little_endian()) png_set_swap(png);
    const size_t w = (size_t)job->npix;
    for (size_t r = 0; r < w; ++r) {
        const unsigned short *src = job->levels + r * w;
        if (job->bits == 16) {
            png_write_row(png, (png_const_bytep)src);
        } else {
            for (size_t c = 0; c < w; ++c)
                job->row8[c] = (unsigned char)(src[c] > 255 ? 255 : src[c]);
            png_write_row(png, job->row8);
        }
    }
    png_write_end(png, NULL);
    return 0;
}

/* Where a PNG goes: path (atomic_open), or name in the directory dirfd
 * (atomic_open_at; dir names it in messages). shown: the file as messages
 * name it. */
typedef struct {
    const char *path;
    int dirfd;
    const char *dir, *name;
    char shown[4200];
} png_dest;

static png_dest dest_path(const char *path)
{
    png_dest d = {.path = path, .dirfd = -1};
    snprintf(d.shown, sizeof d.shown, "%s", path);
    return d;
}

static png_dest dest_at(int dirfd, const char *dir, const char *name)
{
    png_dest d = {.dirfd = dirfd, .dir = dir, .name = name};
    snprintf(d.shown, sizeof d.shown, "%s/%s", dir, name);
    return d;
}

/* The checks both writers make before anything is created. */
static int check_size_bits(const char *path, int npix, int bits, char *err, size_t errlen)
{
    if (npix <= 0 || npix > 1000000) {
        snprintf(err, errlen, "%s: cannot write a PNG of %d x %d pixels", path, npix, npix);
        return -1;
    }
    if (bits != 8 && bits != 16) {
        snprintf(err, errlen, "%s: PNG bit depth must be 8 or 16 (got %d)", path, bits);
        return -1;
    }
    return 0;
}

static int write_levels(const png_dest *d, const unsigned short *levels, int npix, int bits,
                        int compression, char *err, size_t errlen)
{
    const char *path = d->shown;
    if (check_size_bits(path, npix, bits, err, errlen) != 0) return -1;
    if (compression < 0 || compression > 9) {
        snprintf(err, errlen, "%s: PNG compression level must be 0..9 (got %d)", path, compression);
        return -1;
    }
    unsigned char *bytes = NULL;
    size_t len = 0;
    char why[160] = "";
    int enc = png_encode_levels(levels, npix, bits, compression, &bytes, &len, why, sizeof why);
    if (enc == PNG_ENCODE_FAILED) /* once more: a moment's shortage gives the same bytes then */
        enc = png_encode_levels(levels, npix, bits, compression, &bytes, &len, why, sizeof why);
    if (enc == PNG_ENCODE_FAILED) {
        /* Not streamed through libpng instead: a valid file, but other
         * bytes than every other run's (a PNG of e2e_gpu_fallback's once). */
        snprintf(err, errlen, "%s: cannot encode the PNG: %s", path, why);
        return -1;
    }
    const int whole = enc == 0;
    png_write_job job = {.levels = levels, .npix = npix, .bits = bits, .compression = compression};
    if (!whole && bits == 8 && !(job.row8 = malloc((size_t)npix))) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    atomic_file af;
    if (d->path ? atomic_open(&af, d->path, err, errlen)
                : atomic_open_at(&af, d->dirfd, d->dir, d->name, err, errlen)) {
        free(job.row8);
        free(bytes);
        return -1;
    }
    if (whole) { /* one write, then flush, close and rename */
        int rc = atomic_write_all(&af, bytes, len, err, errlen);
        free(bytes);
        return rc;
    }
    job.fp = af.fp;

    png_err_ctx ectx = {{0}, 0};
    png_structp png =
        png_create_write_struct(PNG_LIBPNG_VER_STRING, &ectx, on_png_error, on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int rc = -1;
    if (!png || !info)
        snprintf(ectx.msg, sizeof ectx.msg, "cannot initialise libpng (out of memory?)");
    else {
        errno = 0; /* what a failed fwrite leaves here is the reason to give */
        rc = png_write_body(png, info, &job);
    }
    if (png) png_destroy_write_struct(&png, info ? &info : NULL);
    free(job.row8);
    if (rc) {
        atomic_abort(&af);
        if (ectx.sys && strcmp(ectx.msg, "Write Error") == 0) /* libpng's failed fwrite */
            snprintf(err, errlen, "cannot write %s: %s", path, strerror(ectx.sys));
        else
            snprintf(err, errlen, "cannot write %s: %s", path, ectx.msg);
        return -1;
    }
    return atomic_commit(&af, err, errlen);
}

int psf_png_write_levels(const char *path, const unsigned short *levels, int npix, int bits,
                         int compression, char *err, size_t errlen)
{
    png_dest d = dest_path(path);
    return write_levels(&d, levels, npix, bits, compression, err, errlen);
}

int psf_png_write_levels_at(int dirfd, const char *dir, const char *name,
                            const unsigned short *levels, int npix, int bits, int compression,
                            char *err, size_t errlen)
{
    png_dest d = dest_at(dirfd, dir, name);
    return write_levels(&d, levels, npix, bits, compression, err, errlen);
}

static int write_image(const png_dest *d, const float *img, int npix, int bits, png_stretch stretch,
                       double dynamic_range, int compression, char *err, size_t errlen)
{
    if (check_size_bits(d->shown, npix, bits, err, errlen) != 0) return -1;
    unsigned short *levels = malloc((size_t)npix * (size_t)npix * sizeof *levels);
    if (!levels) {
        snprintf(err, errlen, "%s: out of memory for a %d x %d image", d->shown, npix, npix);
        return -1;
    }
    psf_png_stretch_levels(img, npix, bits, stretch, dynamic_range, levels);
    int rc = write_levels(d, levels, npix, bits, compression, err, errlen);
    free(levels);
    return rc;
}

int psf_png_write_image(const char *path, const float *img, int npix, int bits, png_stretch stretch,
                        double dynamic_range, int compression, char *err, size_t errlen)
{
    png_dest d = dest_path(path);
    return write_image(&d, img, npix, bits, stretch, dynamic_range, compression, err, errlen);
}

int psf_png_write_image_at(int dirfd, const char *dir, const char *name, const float *img, int npix,
                           int bits, png_stretch stretch, double dynamic_range, int compression,
                           char *err, size_t errlen)
{
    png_dest d = dest_at(dirfd, dir, name);
    return write_image(&d, img, npix, bits, stretch, dynamic_range, compression, err, errlen);
}

/* What png_read_body fills; owned and freed by psf_png_read_gray. */
typedef struct {
    FILE *fp;
    unsigned char *raw; /* rows * rowbytes */
    png_bytep *rowp;    /* rows pointers into raw */
    float *out;         /* rows * cols */
    png_uint_32 w, h;
    int depth;        /* 8 or 16 after expansion */
    char refuse[256]; /* set when the file is a PNG we do not accept */
} png_read_job;

static const char *color_type_name(int ct)
{
    switch (ct) {
    case PNG_COLOR_TYPE_GRAY:
        return "grayscale";
    case PNG_COLOR_TYPE_GRAY_ALPHA:
        return "grayscale with alpha";
    case PNG_COLOR_TYPE_PALETTE:
        return "palette (indexed colour)";
    case PNG_COLOR_TYPE_RGB:
        return "RGB";
    case PNG_COLOR_TYPE_RGB_ALPHA:
        return "RGBA";
    default:
        return "unknown";
    }
}

static int png_read_body(png_structp png, png_infop info, png_read_job *job)
{
    if (setjmp(png_jmpbuf(png))) return -1;
    png_init_io(png, job->fp);
    png_set_sig_bytes(png, 8);
    /* libpng 1.6.39 allocates what a text or profile chunk's length claims
     * before reading it: a 100-byte file with a zTXt of "1.4 GB" asked for
     * that much (fuzz_png_map). A map needs none of them: skip them unread
     * (PNG_HANDLE_CHUNK_NEVER), and cap what other chunks may take. */
    static const png_byte skipped[] = "zTXt\0iTXt\0tEXt\0iCCP\0sPLT\0eXIf";
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, skipped, 6);
    png_set_chunk_malloc_max(png, PNG_READ_CHUNK_MAX);
    png_read_info(png, info);
    png_uint_32 w, h;
    int depth, ctype, interlace;
    png_get_IHDR(png, info, &w, &h, &depth, &ctype, &interlace, NULL, NULL);
    if (ctype != PNG_COLOR_TYPE_GRAY) {
        snprintf(job->refuse, sizeof job->refuse,
                 "PNG colour type %s is not supported (a map must be 8- or 16-bit "
                 "grayscale without alpha)",
                 color_type_name(ctype));
        return -1;
    }
    if ((size_t)w * (size_t)h > PNG_READ_MAX_PIXELS) {
        snprintf(job->refuse, sizeof job->refuse,
                 "PNG of %lu x %lu pixels is too large (at most %zu pixels)", (unsigned long)w,
                 (unsigned long)h, PNG_READ_MAX_PIXELS);
        return -1;
    }
    /* deflate packs at most 1032 bytes into one (RFC 1951: a 258-byte match
     * in 2 bits at best): a file too short for its rows is truncated, found
     * before a buffer is allocated for the image it claims. */
    struct stat st;
    double raw = (double)h * (1.0 + ((double)w * depth + 7) / 8);
    if (fstat(fileno(job->fp), &st) == 0 && raw > 1032.0 * (double)st.st_size + 65536.0) {
        snprintf(job->refuse, sizeof job->refuse,
                 "truncated PNG: %lu x %lu pixels cannot fit in %lld bytes", (unsigned long)w,
                 (unsigned long)h, (long long)st.st_size);
        return -1;
    }
    if (depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    (void)png_set_interlace_handling(png);
    png_read_update_info(png, info);
    const size_t rowbytes = png_get_rowbytes(png, info);
    job->depth = depth == 16 ? 16 : 8;
    if (rowbytes != (size_t)w * (size_t)(job->depth / 8)) {
        snprintf(job->refuse, sizeof job->refuse, "unexpected PNG row layout");
        return -1;
    }
    job->w = w;
    job->h = h;
    job->raw = malloc(rowbytes * h);
    job->rowp = malloc(sizeof *job->rowp * h);
    job->out = malloc(sizeof *job->out * (size_t)w * h);
    if (!job->raw || !job->rowp || !job->out) {
        snprintf(job->refuse, sizeof job->refuse, "out of memory for %lu x %lu pixels",
                 (unsigned long)w, (unsigned long)h);
        return -1;
    }
    for (png_uint_32 r = 0; r < h; ++r)
        job->rowp[r] = job->raw + (size_t)r * rowbytes;
    png_read_image(png, job->rowp);
    png_read_end(png, NULL);
    return 0;
}

int psf_png_read_gray(const char *path, float **data, int *rows, int *cols, int *maxval, char *err,
                      size_t errlen)
{
    *data = NULL;
    *rows = *cols = 0;
    *maxval = 0;
    png_read_job job = {0};
    job.fp = fopen(path, "rb");
    if (!job.fp) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char sig[8];
    if (fread(sig, 1, sizeof sig, job.fp) != sizeof sig || png_sig_cmp(sig, 0, sizeof sig)) {
        fclose(job.fp);
        snprintf(err, errlen, "%s: not a PNG file", path);
        return -1;
    }
    png_err_ctx ectx = {{0}, 0};
    png_structp png =
        png_create_read_struct(PNG_LIBPNG_VER_STRING, &ectx, on_png_error, on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int rc = -1;
    if (!png || !info)
        snprintf(ectx.msg, sizeof ectx.msg, "cannot initialise libpng (out of memory?)");
    else
        rc = png_read_body(png, info, &job);
    if (png) png_destroy_read_struct(&png, info ? &info : NULL, NULL);
    fclose(job.fp);
    free(job.rowp);
    if (rc) {
        if (job.refuse[0])
            snprintf(err, errlen, "%s: %s", path, job.refuse);
        else
            snprintf(err, errlen, "%s: truncated or corrupt PNG (libpng: %s)", path, ectx.msg);
        free(job.raw);
        free(job.out);
        return -1;
    }
    const size_t n = (size_t)job.w * job.h;
    if (job.depth == 16) {
        for (size_t i = 0; i < n; ++i) /* PNG samples are big-endian */
            job.out[i] = (float)((unsigned)job.raw[2 * i] << 8 | job.raw[2 * i + 1]);
    } else {
        for (size_t i = 0; i < n; ++i)
            job.out[i] = (float)job.raw[i];
    }
    free(job.raw);
    *data = job.out;
    *rows = (int)job.h;
    *cols = (int)job.w;
    *maxval = job.depth == 16 ? 65535 : 255;
    return 0;
}
