/* SPDX-License-Identifier: BSD-3-Clause */
/* The PNG file's bytes written here (PNG spec, 2nd ed., 5.2-5.6, 11.2):
 * the 8-byte signature, IHDR, one IDAT holding the zlib stream (RFC 1950)
 * of every scanline, IEND; each chunk's CRC by libdeflate_crc32 (the CRC-32
 * of ISO 3309 that PNG specifies, zlib's crc32). The deflate is a library's:
 * ISA-L's igzip at level 1 (psfsim's default: 4.4x faster than libdeflate's
 * level 1 on 256^2 16-bit PSFs, files within 3% of zlib's level 1), or
 * libdeflate at 0 (stored) and 2..9 (docs/design.md, "PNG encoding"). */
#include "app/formats/png_encode.h"

#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes before the IDAT's data: signature 8, IHDR 12 + 13, IDAT's length
 * and type 8; after it: its CRC 4 and IEND 12. */
#define PNG_HEAD_BYTES 41
#define PNG_TAIL_BYTES 16

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* A chunk's CRC: over its type and data (PNG spec 5.3), at p = its type. */
static void put_chunk_crc(unsigned char *p, size_t data_len)
{
    put_be32(p + 4 + data_len, libdeflate_crc32(0, p, 4 + data_len));
}

/* The scanlines of levels (filter type 0 "None", then the samples, 16-bit
 * big-endian or 8-bit clipped at 255: PNG spec 7.2, 9.2) into raw,
 * npix * (1 + npix * bits / 8) bytes. */
static void png_scanlines(const unsigned short *levels, size_t w, int bits, unsigned char *raw)
{
    const size_t stride = 1 + w * (size_t)(bits / 8);
    for (size_t r = 0; r < w; ++r) {
        const unsigned short *src = levels + r * w;
        unsigned char *dst = raw + r * stride;
        *dst++ = 0;
        if (bits == 16) {
            for (size_t c = 0; c < w; ++c) {
                dst[2 * c] = (unsigned char)(src[c] >> 8);
                dst[2 * c + 1] = (unsigned char)(src[c] & 0xffu);
            }
        } else {
            for (size_t c = 0; c < w; ++c)
                dst[c] = (unsigned char)(src[c] > 255 ? 255 : src[c]);
        }
    }
}

/* igzip's AVX2 and AVX-512 kernels return with the upper halves of the
 * vector registers dirty (no VZEROUPPER): every SSE instruction after them
 * then pays a state transition (Intel's optimisation manual, "Mixing AVX
 * code with SSE code"): the log stretch of the next image ran 4x slower. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
__attribute__((target("avx"))) static void vzeroupper_avx(void)
{
    __builtin_ia32_vzeroupper();
}
static void clear_upper_vector_state(void)
{
    if (__builtin_cpu_supports("avx")) vzeroupper_avx();
}
#else
static void clear_upper_vector_state(void) {}
#endif

/* raw deflated by ISA-L's igzip level 1 into out (cap bytes) as a zlib
 * stream, in one stateless call. Returns its length, or 0 with why (no
 * memory, or igzip's return code). */
static size_t deflate_isal(const unsigned char *raw, size_t raw_len, unsigned char *out, size_t cap,
                           char *why, size_t whylen)
{
    /* Zeroed, the level buffer too: isal_deflate_stateless_init leaves
     * fields as it finds them (ISA-L 2.30). A stale hist_bits of 9 from a
     * reused block of the heap gave a 512-byte window and a 64^2 image 1.7x
     * the bytes; other stale state gave the same pixels in another deflate
     * stream now and then (e2e_levels: one PNG of 150 a byte longer), so
     * the files were not the same bytes run to run. */
    struct isal_zstream *s = calloc(1, sizeof *s + ISAL_DEF_LVL1_DEFAULT);
    if (!s) {
        snprintf(why, whylen, "out of memory for igzip's state");
        return 0;
    }
    isal_deflate_stateless_init(s);
    s->level = 1;
    s->level_buf = (uint8_t *)(s + 1);
    s->level_buf_size = ISAL_DEF_LVL1_DEFAULT;
    s->gzip_flag = IGZIP_ZLIB;
    s->hist_bits = 0;                       /* the window: 32 KiB */
    s->next_in = (uint8_t *)(uintptr_t)raw; /* igzip only reads it */
    s->avail_in = (uint32_t)raw_len;
    s->next_out = out;
    s->avail_out = (uint32_t)cap;
    s->end_of_stream = 1;
    s->flush = NO_FLUSH;
    int rc = isal_deflate_stateless(s);
    size_t n = rc == COMP_OK ? (size_t)s->total_out : 0;
    if (rc != COMP_OK) snprintf(why, whylen, "igzip's isal_deflate_stateless returned %d", rc);
    free(s);
    clear_upper_vector_state();
    return n;
}

/* raw deflated by libdeflate at level into out; its length or 0. */
static size_t deflate_libdeflate(const unsigned char *raw, size_t raw_len, int level,
                                 unsigned char *out, size_t cap, char *why, size_t whylen)
{
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
    if (!c) {
        snprintf(why, whylen, "out of memory for libdeflate's compressor");
        return 0;
    }
    size_t n = libdeflate_zlib_compress(c, raw, raw_len, out, cap);
    libdeflate_free_compressor(c);
    if (n == 0) snprintf(why, whylen, "libdeflate's stream did not fit in %zu bytes", cap);
    return n;
}

/* The most a zlib stream of raw_len bytes may take: stored blocks (5 bytes
 * per 65535, RFC 1951 3.2.4) or igzip's largest header and a block, plus
 * zlib's 2-byte header and 4-byte Adler-32. */
static size_t zlib_bound(size_t raw_len)
{
    return raw_len + 5 * (raw_len / 65535 + 1) + ISAL_DEF_MAX_HDR_SIZE + 64;
}

int png_encode_levels(const unsigned short *levels, int npix, int bits, int compression,
                      unsigned char **png, size_t *len, char *why, size_t whylen)
{
    const size_t w = (size_t)npix, stride = 1 + w * (size_t)(bits / 8);
    if (stride > PNG_ONE_PIECE_MAX_BYTES / w) return PNG_ENCODE_TOO_LARGE;
    const size_t raw_len = w * stride, cap = zlib_bound(raw_len);
    unsigned char *raw = malloc(raw_len);
    unsigned char *f = malloc(PNG_HEAD_BYTES + cap + PNG_TAIL_BYTES);
    size_t z = 0;
    if (raw && f) {
        png_scanlines(levels, w, bits, raw);
        unsigned char *idat = f + PNG_HEAD_BYTES;
        z = compression == 1
                ? deflate_isal(raw, raw_len, idat, cap, why, whylen)
                : deflate_libdeflate(raw, raw_len, compression, idat, cap, why, whylen);
    } else {
        snprintf(why, whylen, "out of memory for %zu bytes of scanlines", raw_len + cap);
    }
    free(raw);
    if (z > 0x7fffffffu) { /* a chunk's length has 31 bits (PNG spec 5.3) */
        free(f);
        return PNG_ENCODE_TOO_LARGE;
    }
    if (z == 0) {
        free(f);
        return PNG_ENCODE_FAILED;
    }
    static const unsigned char sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
    memcpy(f, sig, 8);
    unsigned char *p = f + 8; /* IHDR: width, height, depth, grey, deflate, adaptive, none */
    put_be32(p, 13);
    memcpy(p + 4, "IHDR", 4);
    put_be32(p + 8, (uint32_t)npix);
    put_be32(p + 12, (uint32_t)npix);
    p[16] = (unsigned char)bits;
    p[17] = p[18] = p[19] = p[20] = 0;
    put_chunk_crc(p + 4, 13);
    p = f + 33;
    put_be32(p, (uint32_t)z);
    memcpy(p + 4, "IDAT", 4);
    put_chunk_crc(p + 4, z);
    p = f + PNG_HEAD_BYTES + z + 4;
    put_be32(p, 0);
    memcpy(p + 4, "IEND", 4);
    put_chunk_crc(p + 4, 0);
    *png = f;
    *len = PNG_HEAD_BYTES + z + PNG_TAIL_BYTES;
    return 0;
}
