/* SPDX-License-Identifier: BSD-3-Clause */
/* An image set as one HDF5 file, NAME.h5 (the datasets issue): the images as
 * one chunked dataset [K, M, M], their labels as datasets of length K, and
 * attributes for pixel scales, units, conventions and provenance: what
 * psfsim calls. The code (app/formats/hdf5/) is the HDF5 module,
 * libpsfsim-hdf5.so, which these functions load on first use
 * (app/formats/hdf5_loader.c, the table hdf5_abi.h; h5set.h, as hdf5.h is
 * libhdf5's): a run without HDF5 output never maps libhdf5. When
 * it cannot be loaded h5set_open fails with err saying so ("cannot write
 * NAME.h5: cannot load HDF5 support: no libpsfsim-hdf5.so in ...").
 *
 * The file (h5py: f["images"][k] is image k, row 0 first as given):
 *   images          [K, M, M] float32 or uint16 (little-endian), chunks of
 *                   [c, M, M] whole images (c: chunk_images, the caller's,
 *                   or 0: h5set_auto_chunk_images, the whole images in
 *                   64 KiB, at least one, for shuffled readers); gzip: the shuffle
 *                   and deflate filters (h5py reads them with no plugin; a
 *                   chunk deflate cannot shrink is stored unfiltered, as
 *                   HDF5 itself does)
 *   labels/zernike  [K, J] float64, attribute noll_j [J] int32 (when J > 0)
 *   labels/NAME     [K] float64, int64 or fixed-length NUL-padded string
 *   written         [K] uint8: 1 = image k and its labels are in the file
 *   flushing        uint8: 1 while HDF5 writes its metadata (below)
 *   EXTRA           [K, m, m] (h5set_params.extra: e.g. oversampled, noisy),
 *                   chunked and filtered as images, c images a chunk
 *   attributes of the root group: psfsim_format = "psfsim image set",
 *   psfsim_format_version = 1, psfsim_layout (the parameters a resume must
 *   share), nimages, npix, dtype ("float32", "uint16"), compression
 *   ("none", "gzip"), gzip_level, chunk_images, resume_key, complete (1
 *   once every image is in); the caller's attributes are written when the
 *   set is completed.
 *
 * Crash safety: the set is written to a hidden temp file ".NAME.h5.part"
 * beside NAME.h5 and renamed to NAME.h5 only when complete, so a NAME.h5
 * is always a whole set. HDF5 1.10 may leave a file killed mid-write
 * unreadable; the temp file is kept consistent by writing every chunk once
 * (whole chunks only, staged in memory until complete), never letting HDF5
 * write metadata except in H5Fflush (metadata cache evictions off), and
 * marking the flush: flushing = 1, H5Fflush, flushing = 0, then the
 * images' written flags. After a kill -9 at any moment a temp file whose
 * flushing is 0 has consistent metadata and every image flagged written is
 * whole; one with flushing = 1, or that HDF5 cannot open, is rebuilt.
 * Uncompressed images have their space allocated at creation, so their
 * writes change no metadata at all. Nothing is fsync'ed (as
 * app/formats/atomic_file.h: a power loss is not covered).
 *
 * Names: the directory is opened once; the temp file is created in it with
 * O_CREAT|O_EXCL|O_NOFOLLOW (or reopened with O_NOFOLLOW) and HDF5 is given
 * /proc/self/fd/N, the file itself, so no symbolic link or renamed entry
 * can send HDF5 elsewhere (Linux: /proc must be mounted). What remains is
 * the moment between checking that the temp name is still our file and
 * renaming (or removing) it: someone who may write the directory could
 * swap the entry then, which they could do to NAME.h5 itself anyway. */
#ifndef PSFSIM_H5SET_H
#define PSFSIM_H5SET_H

#include <stddef.h>
#include <stdint.h>

typedef struct h5set h5set;

typedef enum { H5SET_FLOAT32 = 0, H5SET_UINT16 = 1 } h5set_dtype;

/* Types of label columns and attributes. */
typedef enum { H5SET_DOUBLE = 0, H5SET_INT64 = 1, H5SET_STRING = 2 } h5set_type;

/* A label column, dataset labels/NAME of length K. */
typedef struct {
    const char *name; /* 1..63 of A-Z a-z 0-9 _, not "zernike" */
    h5set_type type;
    int width;               /* H5SET_STRING: bytes per value, 1..255 */
    const char *units;       /* attribute "units"; NULL: none */
    const char *description; /* attribute "description"; NULL: none */
} h5set_column;

/* An attribute: on the root group (object NULL or "") or on a dataset of
 * the file ("images", "labels/strehl"). Strings are stored as variable-length
 * UTF-8 (h5py gives str). */
typedef struct {
    const char *object;
    const char *key; /* not one of the psfsim_ or layout names above */
    h5set_type type;
    double d;
    long long i;
    const char *s;
} h5set_attr;

/* Most image datasets beside images (h5set_params.extra). */
#define H5SET_MAX_EXTRA 2

/* The automatic chunk (chunk_images 0): the whole images that fit in
 * 64 KiB, at least one (issue 27). A shuffled reader (h5py f["images"][k]
 * over a random permutation) reads, and with gzip inflates, a whole chunk
 * per image: for 64 x 64 float32, 64 KiB chunks read single images
 * shuffled at 0.5-0.8x the rate of one-image chunks (the 1 MiB chunks of
 * before: 0.04-0.09x; 128 KiB: 0.2-0.45x), while the uncompressed writer,
 * one H5Dwrite_chunk a chunk, keeps 0.5-0.8x its rate with 1 MiB chunks
 * (one-image chunks: 0.35-0.6x) and gzip's the same CPU time
 * (bench/RESULTS.md, "Issue 27: the default chunk"). */
#define H5SET_CHUNK_AUTO_BYTES ((size_t)64 << 10)

/* With gzip each thread deflates a run of consecutive chunks of about
 * this many bytes (at least one chunk, at most 64) before they are written:
 * a thread holds a chunk shuffled and its run deflated, at most
 * 2 max(chunk, H5SET_GZIP_RUN_BYTES) bytes and zlib's compressBound margin
 * (under 1/1024 of them and 1 KiB). */
#define H5SET_GZIP_RUN_BYTES ((size_t)1 << 20)

/* Images per chunk for chunk_images 0, the one rule the module and the
 * command's sizing (app/dataset/hdf5_writer.c) share: largest_image the
 * bytes of one image of the largest image dataset (images or an extra;
 * M^2 x 4 for float32, x 2 for uint16), nimages the set's K >= 1;
 * max(1, H5SET_CHUNK_AUTO_BYTES / largest_image), at most K. 64 x 64
 * float32 (16 KiB): 4; 64 x 64 uint16: 8; 128 x 128 float32 and larger: 1.
 * No errors (largest_image 0 counts as 1 byte). */
static inline long long h5set_auto_chunk_images(size_t largest_image, long long nimages)
{
    size_t c = H5SET_CHUNK_AUTO_BYTES / (largest_image ? largest_image : 1);
    long long n = c < 1 ? 1 : (long long)c;
    return n < nimages ? n : nimages;
}

/* A second image dataset [K, npix, npix] at the root, chunked as images
 * (the same c images a chunk, its own filters as images'), written with
 * images: image k's written flag covers it too. */
typedef struct {
    const char *name; /* 1..63 of A-Z a-z 0-9 _; not images, written, flushing, labels */
    int npix;         /* >= 1 (an image < 4 GiB) */
    h5set_dtype dtype;
} h5set_images;

typedef struct {
    int dir_fd;                /* the directory name is relative to, or AT_FDCWD */
    const char *name;          /* "psf.h5" or "sub/psf.h5": the final file */
    const char *shown;         /* the name in messages; NULL: name */
    long long nimages;         /* K >= 1 */
    int npix;                  /* M >= 1 (an image < 4 GiB) */
    h5set_dtype dtype;         /* uint16: the PNG stretch values, as given */
    int gzip;                  /* 0: none; 1..9: shuffle + deflate at that level */
    int chunk_images;          /* c, 1..K; 0: h5set_auto_chunk_images (the whole
                                  images of the largest of images and extra in
                                  64 KiB, at least 1) */
    int threads;               /* gzip threads; 0: the online CPUs, at most 8 */
    int nzernike;              /* J >= 0 */
    const int *noll_j;         /* J Noll indices j >= 1, the columns of labels/zernike */
    const char *zernike_units; /* attribute units of labels/zernike; NULL: none */
    int ncolumns;
    const h5set_column *columns;
    int nattrs;
    const h5set_attr *attrs;   /* written when the set is completed (copied) */
    const char *resume_key;    /* the run's identity (a config hash): a temp file
                                  is resumed only with the same key; NULL: "" */
    int nextra;                /* 0..H5SET_MAX_EXTRA image datasets beside images */
    const h5set_images *extra; /* [nextra] (copied) */
} h5set_params;

/* One block of images and their labels. */
typedef struct {
    const void *images;                 /* count x M x M, float or uint16_t (dtype), row-major */
    const double *zernike;              /* count x J row-major; NULL when J == 0 */
    const void *const *columns;         /* ncolumns arrays of count values: double,
                                           int64_t or const char * (<= width bytes) */
    const void *extra[H5SET_MAX_EXTRA]; /* [nextra]: count x npix x npix of each
                                           extra dataset, its dtype, row-major */
} h5set_rows;

typedef enum {
    H5SET_NEW = 0,    /* start afresh: a temp file left behind is removed */
    H5SET_RESUME = 1, /* continue the temp file when it is usable */
} h5set_mode;

typedef struct {
    int resumed;        /* 1: an interrupted temp file is continued */
    long long nwritten; /* images already in it (h5set_written) */
    char note[512];     /* why a temp file found was not resumed, or "" */
} h5set_info;

/* Create the temp file of set p (or, mode H5SET_RESUME, reopen it) and
 * return its handle, with info (may be NULL) saying what was found; NAME.h5
 * itself is not looked at (whether a finished set is made again is the
 * caller's choice; H5SET_COMPLETE replaces it). A set is used by one
 * thread at a time; sets in different threads are independent. The temp
 * file is locked (flock) while the handle lives. A temp file is resumed
 * only when it has the same layout (K, M, dtype, gzip, c, Zernike j list,
 * columns) and resume_key; else, or when it cannot be read, it is removed
 * and a new one made (info->note says why). NULL with err ("cannot write
 * SHOWN: REASON") on bad parameters, a temp file locked by another run, a
 * directory that cannot be written, or a missing module. */
h5set *h5set_open(const h5set_params *p, h5set_mode mode, h5set_info *info, char *err,
                  size_t errlen);

/* The written flags, [K]: 1 when image k and its labels are in the file.
 * Valid until h5set_close. */
const unsigned char *h5set_written(const h5set *s);

/* Images per chunk, c. */
int h5set_chunk_images(const h5set *s);

/* Give images first .. first + count - 1 (none given before) with their
 * labels. Labels are written at once; images as whole chunks, compressed
 * by the gzip threads, each chunk one write (a chunk only partly given
 * waits in memory for the rest, so blocks need not be chunk-aligned).
 * Then the flush above, and the flags of the images written. 0, or -1
 * with err (bad range, an image given twice, a string longer than its
 * width, an I/O error: then only h5set_close may follow). */
int h5set_write(h5set *s, long long first, int count, const h5set_rows *rows, char *err,
                size_t errlen);

typedef enum {
    H5SET_COMPLETE = 0, /* all K images given: write the attributes, rename to NAME.h5 */
    H5SET_KEEP = 1,     /* interrupted: keep the temp file for H5SET_RESUME (images
                           of chunks not yet whole are dropped: given again on resume) */
    H5SET_DISCARD = 2,  /* remove the temp file */
} h5set_close_mode;

/* Close and free s (NULL is fine). 0, or -1 with err: for H5SET_COMPLETE
 * when an image is missing or a write fails (the temp file is then kept,
 * for a resume). */
int h5set_close(h5set *s, h5set_close_mode mode, char *err, size_t errlen);

/* 1 when p->name (NAME.h5 itself, in p->dir_fd; a symbolic link is not
 * followed) is a finished set of p: HDF5 opens it read-only, it has p's
 * layout (K, M, dtype, gzip, c, Zernike j list, columns, extra datasets)
 * and resume_key, its complete attribute is 1, its config_hash attribute
 * is p->resume_key, flushing is 0 and every image's written flag is 1.
 * Else 0 with why (a file cut short, another config's, a missing module)
 * in why. For --resume, which keeps such a file instead of making it
 * again. Loads the module. */
int h5set_check_complete(const h5set_params *p, char *why, size_t whylen);

/* The temp file beside NAME.h5 (printf format of the base name): the
 * module makes it, h5set_temp_name names it. */
#define H5SET_TEMP_FORMAT ".%s.part"

/* The temp file's name for name: "sub/.psf.h5.part" for "sub/psf.h5".
 * 0, or -1 when it does not fit in outlen. Needs no module. */
int h5set_temp_name(const char *name, char *out, size_t outlen);

/* 1 when libhdf5 is thread-safe (writer threads may write separate sets at
 * once; HDF5 serialises them), else 0 (also when the module cannot be
 * loaded). Loads the module. */
int h5set_thread_safe(void);

/* The libhdf5 version the module runs with ("1.10.10") into out (outlen
 * bytes); "" when the module cannot be loaded. Loads the module. */
void h5set_library_version(char *out, size_t outlen);

/* Load the HDF5 module now if it is not loaded yet (once per process;
 * thread-safe). Returns 0, or -1 with a one-line reason in err: "cannot
 * load HDF5 support: no libpsfsim-hdf5.so in ...", or "... PATH is of
 * another psfsim version" for a stale module. A caller may call it early
 * to fail before any work is done. */
int hdf5_module_load(char *err, size_t errlen);

#endif
