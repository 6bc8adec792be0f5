/* SPDX-License-Identifier: BSD-3-Clause */
/* The disk space of a set's files (set_limits_disk.h: limits_disk_need), from
 * their formats. */
#include "app/run/set_limits_disk.h"

#include <string.h>

#include "app/output/cube_writer.h"
#include "app/output/fits_header.h"
#include "app/dataset/hdf5_writer.h"

#define KIB 1024ULL

/* FITS: cards in one 2880-byte block; the cards cfitsio writes before
 * psfsim's keywords in an image header (SIMPLE, BITPIX, NAXIS, NAXIS1,
 * NAXIS2, EXTEND and its two COMMENT cards naming the standard; a cube
 * has NAXIS3 too) and in a binary table's (XTENSION, BITPIX, NAXIS,
 * NAXIS1, NAXIS2, PCOUNT, GCOUNT, TFIELDS, EXTNAME). */
#define FITS_BLOCK 2880ULL
#define FITS_CARDS_PER_BLOCK 36ULL
#define FITS_IMAGE_CARDS 8ULL
#define FITS_TABLE_CARDS 9ULL
/* libpng's IDAT chunks: its zlib buffer (PNG_ZBUF_SIZE, 8 KiB). */
#define PNG_IDAT_BYTES 8192ULL
/* The journals' header lines and the timing log's summary rows. */
#define LOG_FIXED_BYTES (16 * KIB)

/* PNG: the file's bytes for an M x M image of bytes_per_sample, at zlib
 * level: the rows (a filter byte, then the samples) deflated, at worst
 * stored (level 0: 5 bytes per stored block of at most 65535 bytes) or as
 * zlib's compressBound (zlib.h: the most deflate makes of any data at the
 * default window and memory level, which libpng uses), with zlib's 2-byte
 * header and 4-byte check; libpng writes that in IDAT chunks of its 8 KiB
 * buffer (12 bytes each: length, type, CRC), after the signature (8) and
 * IHDR (25), and IEND (12) ends it (PNG specification, 5.2-5.3, 11.2). */
static unsigned long long png_file_bytes(unsigned long long mpix,
                                         unsigned long long bytes_per_sample, int level)
{
    unsigned long long raw = bytes_mul(mpix, bytes_add(1, bytes_mul(mpix, bytes_per_sample)));
    unsigned long long z = level == 0
                               ? bytes_add(raw, 6 + 5 * ((raw + 65534) / 65535))
                               : bytes_add(raw, (raw >> 12) + (raw >> 14) + (raw >> 25) + 13);
    return bytes_add(z, 12 * ((z + PNG_IDAT_BYTES - 1) / PNG_IDAT_BYTES) + 8 + 25 + 12);
}

/* FITS: the header's 80-byte cards, 36 to a 2880-byte block (FITS
 * standard 4.0, 3.3 and 4.1): cards, and the END card. */
static unsigned long long fits_header_bytes(unsigned long long cards)
{
    return FITS_BLOCK * ((cards + 1 + FITS_CARDS_PER_BLOCK - 1) / FITS_CARDS_PER_BLOCK);
}

/* The keywords of one image's header (fits_header_build's, for this set). */
static unsigned long long fits_image_keys(const image_set *s)
{
    image_info info;
    image_set_common_info(s, &info);
    double zero[FITS_HEADER_MAX] = {0};
    info.coeff_units = zero;
    image_result res = {.backend = "cpu"};
    fits_kv kvs[FITS_HEADER_MAX];
    char zkeys[FITS_HEADER_MAX][12];
    return (unsigned long long)fits_header_build(s, &info, &res, kvs, zkeys);
}

/* The cube: its primary header (one more axis, the common keywords), its
 * planes, and the PLANES extension: XTENSION .. TFIELDS, per column TTYPE,
 * TFORM and TUNIT (but INDEX, STREHL and AXIALINT, which have no unit:
 * cfitsio writes no TUNIT for an empty one), EXTNAME; K rows of doubles. */
static unsigned long long fits_cube_bytes(const image_set *s, unsigned long long k,
                                          unsigned long long plane_bytes)
{
    fits_kv kvs[FITS_HEADER_MAX];
    char zkeys[FITS_HEADER_MAX][12];
    unsigned long long keys = (unsigned long long)cube_writer_common_keys(s, kvs, zkeys);
    unsigned long long cols = (unsigned long long)cube_writer_columns(s);
    unsigned long long head = fits_header_bytes(FITS_IMAGE_CARDS + 1 + keys);
    unsigned long long data = limits_round_up(bytes_mul(k, plane_bytes), FITS_BLOCK);
    unsigned long long table = fits_header_bytes(FITS_TABLE_CARDS + 3 * cols - 3);
    return bytes_add(
        bytes_add(head, data),
        bytes_add(table, limits_round_up(bytes_mul(bytes_mul(k, cols), 8), FITS_BLOCK)));
}

/* The longest manifest row of set s: the cells' widest forms (index and
 * pupil/npix digits, the file names, ten %.10g numbers of at most 17
 * characters, the swept terms' j and values, the backend, the hash), and
 * the timing row (its numbers %.3f of at most 24 characters). */
static unsigned long long log_row_bytes(const image_set *s)
{
    const psf_config *cfg = s->cfg;
    unsigned long long name = strlen(cfg->name) + 1 + 20 + 5; /* NAME_<k>.fits */
    unsigned long long terms = (unsigned long long)cfg->n_sweep_zernike;
    unsigned long long manifest = 20 + 2 * name + 8 * 17 + terms * (6 + 18) + 2 * 11 + 3 + 16 + 17;
    /* A table or random set's label cells: ,draw,seed (20 digits each) and
     * a z<j> total per label term (csv_exact: at most 24 characters). */
    if (axes_is_dataset(&s->axes))
        manifest += 2 * 21 + 25ULL * (unsigned long long)s->labels.nterms;
    unsigned long long timing = 20 + 3 + 5 * 24 + 8;
    return manifest + timing;
}

/* A directory entry's bytes (ext4: 8 and the name, to 4 bytes); the
 * directory grows by whole blocks as the entries come. */
static unsigned long long dirent_bytes(const image_set *s)
{
    return (8 + strlen(s->cfg->name) + 1 + 20 + 5 + 3) / 4 * 4;
}

void limits_disk_need(const image_set *s, long long todo, unsigned long long block, limits_disk *d)
{
    memset(d, 0, sizeof *d);
    const psf_config *cfg = s->cfg;
    const unsigned long long mpix = (unsigned long long)s->samp.npix;
    const unsigned long long k = todo > 0 ? (unsigned long long)todo : 0;
    if (block < 1) block = 1;
    if (cfg->png_enabled)
        d->png_bytes =
            png_file_bytes(mpix, (unsigned long long)(cfg->png_bits / 8), cfg->png_compression);
    unsigned long long plane = 4ULL * mpix * mpix;
    if (cfg->fits_enabled)
        d->fits_bytes = bytes_add(fits_header_bytes(FITS_IMAGE_CARDS + fits_image_keys(s)),
                                  limits_round_up(plane, FITS_BLOCK));
    unsigned long long total = 0, files = 0;
    if (d->png_bytes) {
        total = bytes_mul(k, limits_round_up(d->png_bytes, block));
        files = k;
    }
    if (d->fits_bytes && cfg->fits_cube) {
        total = bytes_add(total, limits_round_up(fits_cube_bytes(s, k, plane), block));
        files += 1;
    } else if (d->fits_bytes) {
        total = bytes_add(total, bytes_mul(k, limits_round_up(d->fits_bytes, block)));
        files += k;
    }
    d->hdf5_bytes = hdf5_writer_disk_need(s);
    if (d->hdf5_bytes) { /* NAME.h5, NAME.json and the sidecar's temp file */
        total = bytes_add(total, bytes_add(limits_round_up(d->hdf5_bytes, block), 3 * block));
        files += 3;
    }
    /* The journals, twice: sorting one (several lanes, --resume, MPI) or
     * naming the cube in the manifest rewrites it beside itself. */
    unsigned long long logs = bytes_add(bytes_mul(k, log_row_bytes(s)), LOG_FIXED_BYTES);
    total = bytes_add(total, 2 * limits_round_up(logs, block) + 2 * block);
    total = bytes_add(total, limits_round_up(bytes_mul(files + 3, dirent_bytes(s)), block));
    d->total = total;
    d->files = files + 2 + 5; /* manifest, timing, the lock file and temp files */
}
