/* SPDX-License-Identifier: BSD-3-Clause */
/* The disk space and inodes a set's files need (set_limits_disk.c), from
 * their formats: one part of the limits checked before any work
 * (app/run/set_limits.h), which holds them to the machine's free space. */
#ifndef PSFSIM_SET_LIMITS_DISK_H
#define PSFSIM_SET_LIMITS_DISK_H

#include "backend/bytes.h"
#include "app/set/image_set.h"

/* Disk space of the files a run writes into the output directory, bytes
 * (saturating), from their formats: exact where the size is known, the
 * format's own worst case where it is not, so a set that fits is not
 * refused and one that does not is:
 *  - PNG: M rows of 1 filter byte + M samples of bits/8 bytes, deflated at
 *    worst to zlib's compressBound (level 0: stored blocks, 5 bytes per
 *    65535), in libpng's IDAT chunks of 8 KiB (12 bytes each), with the
 *    signature, IHDR and IEND (45 bytes). The data are not assumed to
 *    compress: PSFs written by psfsim, measured at levels 1-9, reached 87%
 *    of that (16-bit) and 67% (8-bit) for smooth ones, 99% and 94% with
 *    strong aberrations or an OPD map's speckle, so a bound with a margin
 *    is this one;
 *  - FITS: exactly the file psfsim writes: the header's cards (cfitsio's 8,
 *    psfsim's keywords as fits_header_build makes them, END) in 2880-byte
 *    blocks of 36, and the float32 data padded to a multiple of 2880 bytes
 *    (FITS standard 4.0, 3.3); a cube (output.fits.cube): its header, every
 *    plane, the PLANES extension's header and rows (8 bytes a cell);
 *  - manifest and timing rows: the longest row each can be (every cell at
 *    its widest), twice (a sort, or naming the cube, rewrites a journal
 *    beside itself), and 16 KiB for headers and the summary;
 *  - NAME.h5 (output.hdf5): the whole file, every image of the set, as
 *    if uncompressed, with its labels, metadata and the sidecar NAME.json
 *    (hdf5_writer_disk_need, app/dataset/hdf5_writer.h); its temp file already in
 *    the directory is counted as free (limits_machine.hdf5_part);
 *  - each file rounded up to the file system's block; the directory's
 *    entries (8 bytes and the name, to 4 bytes), to blocks. */
typedef struct {
    unsigned long long png_bytes;  /* one image's PNG, 0 without PNG */
    unsigned long long fits_bytes; /* one image's FITS (a cube: one plane), 0 without FITS */
    unsigned long long hdf5_bytes; /* NAME.h5 and NAME.json, 0 without output.hdf5 */
    unsigned long long total;      /* every image to do, the logs, block-rounded */
    unsigned long long files;      /* files created (inodes) */
} limits_disk;

/* The disk space and files s's todo images need (block: the file system's
 * block size, bytes, >= 1). No I/O. */
void limits_disk_need(const image_set *s, long long todo, unsigned long long block, limits_disk *d);

/* v rounded up to a multiple of unit (unit <= 1: v), saturating
 * (backend/bytes.h) as every estimate here (set_limits.c,
 * set_limits_disk.c). */
static inline unsigned long long limits_round_up(unsigned long long v, unsigned long long unit)
{
    if (unit <= 1) return v;
    unsigned long long r = v % unit;
    return r ? bytes_add(v, unit - r) : v;
}

#endif
