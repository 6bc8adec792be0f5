/* SPDX-License-Identifier: BSD-3-Clause */
/* FITS structure check before cfitsio (fits_scan.h). */
#include "app/formats/fits_scan.h"

#include "app/formats/fits_source.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FITS_BLOCK 2880
#define FITS_CARD 80
/* Headers longer than this many blocks are refused (100,000 cards). */
#define FITS_MAX_HEADER_BLOCKS 2800
#define FITS_MAX_BYTES (1LL << 62)

/* What one header says about its HDU. */
typedef struct {
    int primary;       /* SIMPLE (1) or XTENSION (0) */
    char xtension[24]; /* the extension type, trimmed */
    long long bitpix, naxis, naxes[999];
    unsigned char seen_axis[999];
    long long pcount, gcount;
    int zimage; /* ZIMAGE = T: a tile-compressed image */
    int bunit;  /* BUNIT: 1 a string (in bunit_text), -1 not a string, 0 absent */
    char bunit_text[FITS_CARD];
    fits_scan_scale puplscal, pixelscl; /* the pupil scales a map may state */
    int pixunit;                        /* PIXUNIT, as bunit */
    char pixunit_text[FITS_CARD];
    int seen_bitpix, seen_naxis, seen_pcount, seen_gcount, seen_tfields;
    long long tfields;
    int extname, named; /* EXTNAME and the card asked for (scan_ctx.named): as bunit */
    char extname_text[FITS_CARD], named_text[FITS_CARD];
} fits_hdu_info;

typedef struct {
    const char *path;
    int hdu;           /* 1-based, for messages */
    const char *named; /* a string card to report (fits_scan_layout_fd), or NULL */
    int cube;          /* 1: the image may be 3-D (fits_scan_first_cube) */
    char *err;
    size_t errlen;
} scan_ctx;

/* The card's value field (columns 11..80) up to a comment, trimmed, for
 * parsing only: messages never show what a file holds but keywords and
 * the numbers read (the file may be anything, a secret given as a map). */
static void value_field(const char *card, char *out, size_t outlen)
{
    size_t n = 0;
    for (int i = 10; i < FITS_CARD && card[i] != '/' && n + 1 < outlen; ++i)
        out[n++] = (card[i] >= 32 && card[i] <= 126) ? card[i] : '?';
    while (n > 0 && out[n - 1] == ' ')
        --n;
    size_t start = 0;
    while (start < n && out[start] == ' ')
        ++start;
    memmove(out, out + start, n - start);
    out[n - start] = '\0';
}

static int bad(scan_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "PATH: not a valid FITS file: HDU k: MESSAGE" into c->err; returns -1. */
static int bad(scan_ctx *c, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s: not a valid FITS file: HDU %d: %s", c->path, c->hdu, msg);
    return -1;
}

/* The 8-character keyword of card, trimmed, into key[9]; bytes outside
 * printable ASCII become '?'. Only keys psfsim knows go into messages. */
static void card_key(const char *card, char *key)
{
    int n = 8;
    for (int i = 0; i < 8; ++i)
        key[i] = (card[i] >= 32 && card[i] <= 126) ? card[i] : '?';
    while (n > 0 && key[n - 1] == ' ')
        --n;
    key[n] = '\0';
}

/* The integer value of a value card ("KEY     = " then spaces, an optional
 * sign, digits, spaces, then the end or a '/' comment). */
static int card_integer(scan_ctx *c, const char *card, const char *key, long long *v)
{
    if (card[8] != '=' || card[9] != ' ') return bad(c, "%s has no value", key);
    int i = 10;
    while (i < FITS_CARD && card[i] == ' ')
        ++i;
    int neg = 0;
    if (i < FITS_CARD && (card[i] == '+' || card[i] == '-')) neg = card[i++] == '-';
    long long x = 0;
    int digits = 0;
    for (; i < FITS_CARD && card[i] >= '0' && card[i] <= '9'; ++i, ++digits) {
        if (x > (FITS_MAX_BYTES - 9) / 10) return bad(c, "%s is too large (2^62 or more)", key);
        x = 10 * x + (card[i] - '0');
    }
    while (i < FITS_CARD && card[i] == ' ')
        ++i;
    if (!digits || (i < FITS_CARD && card[i] != '/')) return bad(c, "%s is not an integer", key);
    *v = neg ? -x : x;
    return 0;
}

/* A string value card ("KEY     = 'text'", '' for a quote, FITS 4.0 sec.
 * 4.2.1.1) into out without its trailing blanks: 0, or -1 when the value is
 * not such a string of printable ASCII. */
static int card_string(const char *card, char *out)
{
    if (card[8] != '=') return -1;
    int i = 10, n = 0;
    while (i < FITS_CARD && card[i] == ' ')
        ++i;
    if (i == FITS_CARD || card[i++] != '\'') return -1;
    for (; i < FITS_CARD; ++i) {
        if (card[i] < 32 || card[i] > 126) return -1;
        if (card[i] == '\'') {
            if (i + 1 < FITS_CARD && card[i + 1] == '\'') {
                out[n++] = card[++i];
                continue;
            }
            while (n > 0 && out[n - 1] == ' ')
                --n;
            out[n] = '\0';
            return 0;
        }
        out[n++] = card[i];
    }
    return -1; /* no closing quote */
}

/* A real value card (FITS 4.0 sec. 4.2.4: an integer or a floating-point
 * number, exponent E or D) into s: seen 1 and the value, or seen -1 when
 * the value is not such a number (or not finite). */
static void card_real(const char *card, fits_scan_scale *s)
{
    char v[FITS_CARD];
    value_field(card, v, sizeof v);
    for (char *p = v; *p; ++p)
        if (*p == 'D' || *p == 'd') *p = 'E';
    char *end = NULL;
    errno = 0;
    double x = card[8] == '=' && v[0] ? strtod(v, &end) : NAN;
    s->seen = end && end != v && *end == '\0' && errno == 0 && isfinite(x) ? 1 : -1;
    s->value = s->seen > 0 ? x : 0.0;
}

/* A logical value card: 1 for T, 0 for F, -1 (message) otherwise. */
static int card_logical(scan_ctx *c, const char *card, const char *key)
{
    char v[80];
    value_field(card, v, sizeof v);
    if (card[8] == '=' && !strcmp(v, "T")) return 1;
    if (card[8] == '=' && !strcmp(v, "F")) return 0;
    return bad(c, "%s is not T or F", key);
}

/* The extension type as messages show it: a standard one (FITS 4.0 sec.
 * 7 and appendix F), else "non-standard" (not echoed). */
static const char *xtension_shown(const char *x)
{
    static const char *const known[] = {"IMAGE",    "TABLE",   "BINTABLE", "IUEIMAGE",
                                        "A3DTABLE", "FOREIGN", "DUMP"};
    for (size_t i = 0; i < sizeof known / sizeof *known; ++i)
        if (!strcmp(x, known[i])) return known[i];
    return "non-standard";
}

static int nonneg(scan_ctx *c, const char *key, long long v, long long max)
{
    if (v >= 0 && v <= max) return 0;
    return bad(c, "%s = %lld (must be 0..%lld)", key, v, max);
}

/* One card of a header into h. */
static int take_card(scan_ctx *c, const char *card, int index, fits_hdu_info *h)
{
    char key[9];
    card_key(card, key);
    if (index == 0) {
        if (c->hdu == 1) {
            char v[80];
            value_field(card, v, sizeof v);
            if (strcmp(key, "SIMPLE") != 0 || card[8] != '=' || strcmp(v, "T") != 0) {
                snprintf(c->err, c->errlen,
                         "%s: not a FITS file (it does not begin with SIMPLE = T)", c->path);
                return -1;
            }
            h->primary = 1;
            return 0;
        }
        if (strcmp(key, "XTENSION") != 0) return bad(c, "the header does not begin with XTENSION");
        char v[FITS_CARD];
        if (card_string(card, v)) return bad(c, "XTENSION is not a string");
        snprintf(h->xtension, sizeof h->xtension, "%.23s", v); /* longer: non-standard */
        return 0;
    }
    if (c->named && !strcmp(key, c->named))
        h->named = card_string(card, h->named_text) == 0 ? 1 : -1;
    long long v = 0;
    if (!strcmp(key, "BITPIX")) {
        if (card_integer(c, card, key, &v)) return -1;
        if (v != 8 && v != 16 && v != 32 && v != 64 && v != -32 && v != -64)
            return bad(c, "BITPIX = %lld (must be 8, 16, 32, 64, -32 or -64)", v);
        h->bitpix = v;
        h->seen_bitpix = 1;
    } else if (!strcmp(key, "NAXIS")) {
        if (card_integer(c, card, key, &v) || nonneg(c, key, v, 999)) return -1;
        h->naxis = v;
        h->seen_naxis = 1;
    } else if (!strncmp(key, "NAXIS", 5) && key[5] >= '1' && key[5] <= '9') {
        char *end;
        long n = strtol(key + 5, &end, 10);
        if (*end == '\0' && n >= 1 && n <= 999) {
            if (card_integer(c, card, key, &v) || nonneg(c, key, v, FITS_MAX_BYTES)) return -1;
            h->naxes[n - 1] = v;
            h->seen_axis[n - 1] = 1;
        }
    } else if (!strcmp(key, "PCOUNT")) {
        if (card_integer(c, card, key, &v) || nonneg(c, key, v, FITS_MAX_BYTES)) return -1;
        h->pcount = v;
        h->seen_pcount = 1;
    } else if (!strcmp(key, "GCOUNT")) {
        if (card_integer(c, card, key, &v) || nonneg(c, key, v, FITS_MAX_BYTES)) return -1;
        h->gcount = v;
        h->seen_gcount = 1;
    } else if (!strcmp(key, "TFIELDS")) {
        if (card_integer(c, card, key, &v) || nonneg(c, key, v, 999)) return -1;
        h->tfields = v;
        h->seen_tfields = 1;
    } else if (!strcmp(key, "BUNIT")) {
        h->bunit = card_string(card, h->bunit_text) == 0 ? 1 : -1;
    } else if (!strcmp(key, "PUPLSCAL")) {
        card_real(card, &h->puplscal);
    } else if (!strcmp(key, "PIXELSCL")) {
        card_real(card, &h->pixelscl);
    } else if (!strcmp(key, "PIXUNIT")) {
        h->pixunit = card_string(card, h->pixunit_text) == 0 ? 1 : -1;
    } else if (!strcmp(key, "EXTNAME")) {
        h->extname = card_string(card, h->extname_text) == 0 ? 1 : -1;
    } else if (!strcmp(key, "ZIMAGE")) {
        int z = card_logical(c, card, key);
        if (z < 0) return -1;
        h->zimage = z;
    }
    return 0;
}

/* Bytes of the HDU's data (FITS 4.0 eq. 1 and 2), or -1 past 2^62. */
static long long data_bytes(const fits_hdu_info *h)
{
    if (h->naxis == 0) return 0;
    long long n = 1;
    for (long long i = 0; i < h->naxis; ++i) {
        long long a = h->naxes[i];
        if (a != 0 && n > FITS_MAX_BYTES / a) return -1;
        n *= a;
    }
    long long g = h->primary ? 1 : h->gcount, p = h->primary ? 0 : h->pcount;
    if (n > FITS_MAX_BYTES - p) return -1;
    n += p;
    long long b = (h->bitpix < 0 ? -h->bitpix : h->bitpix) / 8;
    if (g != 0 && n > FITS_MAX_BYTES / (b * g)) return -1;
    return n * b * g;
}

/* The HDU's header is complete: are the mandatory keywords there, and does
 * its data size fit in 2^62 bytes? */
static int check_hdu(scan_ctx *c, const fits_hdu_info *h)
{
    if (!h->seen_bitpix) return bad(c, "BITPIX is missing");
    if (!h->seen_naxis) return bad(c, "NAXIS is missing");
    for (long long i = 0; i < h->naxis; ++i) {
        if (!h->seen_axis[i]) {
            char key[32];
            snprintf(key, sizeof key, "NAXIS%lld", i + 1);
            return bad(c, "%s is missing", key);
        }
    }
    if (!h->primary && (!h->seen_pcount || !h->seen_gcount))
        return bad(c, "PCOUNT or GCOUNT is missing in a %s extension", xtension_shown(h->xtension));
    if (data_bytes(h) < 0) return bad(c, "the data size overflows");
    return 0;
}

/* check_hdu, and what a map's HDUs up to its image must be besides. */
static int check_map_hdu(scan_ctx *c, const fits_hdu_info *h)
{
    if (check_hdu(c, h)) return -1;
    if (!h->primary) {
        /* cfitsio's tile decompression (4.2) reads past its buffers on a
         * crafted tile (fits_rdecomp_short, found by fuzz_fits_map): psfsim
         * takes no compressed image. */
        if (h->zimage)
            return bad(c, "a tile-compressed image (ZIMAGE = T): psfsim reads uncompressed "
                          "images only (funpack uncompresses it)");
        if (strcmp(h->xtension, "IMAGE") != 0)
            return bad(c, "a %s extension before any image (a map must be an image)",
                       xtension_shown(h->xtension));
    }
    /* A map is 2-D; cfitsio 4.2 frees a wild pointer inside fits_open_file
     * on a header with NAXIS >= 104 (an 11.5 kB file), so no other image
     * header reaches it, the empty HDUs before the image included. */
    if (h->naxis > 2 + c->cube) {
        snprintf(c->err, c->errlen, "%s: image HDU %d has NAXIS = %lld; %s", c->path, c->hdu,
                 h->naxis, c->cube ? "images must be 2-D or a 3-D cube" : "a map must be 2-D");
        return -1;
    }
    return 0;
}

/* Read the header of HDU c->hdu from src, whose next byte is *pos, into h
 * (zeroed first), *pos then past it. 0; 1 when src has no byte left there
 * (nothing read); -1 with a message. */
static int read_header(scan_ctx *c, fits_source *src, long long *pos, fits_hdu_info *h)
{
    char block[FITS_BLOCK];
    memset(h, 0, sizeof *h);
    h->gcount = 1;
    int index = 0;
    for (int b = 0;; ++b) {
        if (b == FITS_MAX_HEADER_BLOCKS)
            return bad(c, "the header has no END in %d blocks", FITS_MAX_HEADER_BLOCKS);
        size_t got = fits_source_read(src, block, FITS_BLOCK);
        if (got != FITS_BLOCK) {
            if (c->hdu > 1 && b == 0 && got == 0) return 1;
            return bad(c, "the file ends inside the header (truncated?)");
        }
        *pos += FITS_BLOCK;
        for (int k = 0; k < FITS_BLOCK / FITS_CARD; ++k, ++index) {
            const char *card = block + k * FITS_CARD;
            if (!memcmp(card, "END     ", 8)) return 0;
            if (take_card(c, card, index, h)) return -1;
        }
    }
}

int fits_scan_first_image(const char *path, int *hdu, char *err, size_t errlen)
{
    fits_scan_result r;
    int rc = fits_scan_image(path, &r, err, errlen);
    *hdu = r.hdu;
    return rc;
}

static int scan_image(const char *path, int cube, fits_scan_result *res, char *err, size_t errlen);

int fits_scan_image(const char *path, fits_scan_result *res, char *err, size_t errlen)
{
    return scan_image(path, 0, res, err, errlen);
}

int fits_scan_first_cube(const char *path, int *hdu, char *err, size_t errlen)
{
    fits_scan_result r;
    int rc = scan_image(path, 1, &r, err, errlen);
    *hdu = r.hdu;
    return rc;
}

static int scan_image(const char *path, int cube, fits_scan_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    scan_ctx c = {.path = path, .hdu = 1, .cube = cube, .err = err, .errlen = errlen};
    fits_source src;
    if (fits_source_open(&src, path, err, errlen)) return -1;
    const long long size = src.size;
    fits_hdu_info h; /* 9 KB */
    long long pos = 0;
    int rc = -1;
    for (;; ++c.hdu) {
        int got = read_header(&c, &src, &pos, &h);
        if (got == 1) snprintf(err, errlen, "%s: no image in this FITS file", path);
        if (got != 0 || check_map_hdu(&c, &h)) goto out;
        long long bytes = data_bytes(&h);
        if (h.naxis > 0) { /* the primary or an image extension (check_map_hdu) */
            int empty = 0;
            for (long long i = 0; i < h.naxis; ++i)
                empty |= h.naxes[i] == 0;
            if (!empty) {
                /* Its data must be in the file: else psfsim would allocate
                 * for an image the file cannot hold (a 16384^2 header in a
                 * few bytes) before cfitsio finds it short. */
                if (bytes > size - pos) {
                    bad(&c,
                        "the file ends inside the data (truncated?): %lld bytes of data in "
                        "%lld",
                        bytes, size - pos);
                    goto out;
                }
                res->hdu = c.hdu;
                res->bunit = h.bunit;
                if (h.bunit > 0)
                    snprintf(res->bunit_text, sizeof res->bunit_text, "%s", h.bunit_text);
                res->puplscal = h.puplscal;
                res->pixelscl = h.pixelscl;
                res->pixunit = h.pixunit;
                if (h.pixunit > 0)
                    snprintf(res->pixunit_text, sizeof res->pixunit_text, "%s", h.pixunit_text);
                rc = 0;
                goto out;
            }
        }
        long long padded = (bytes + FITS_BLOCK - 1) / FITS_BLOCK * FITS_BLOCK;
        if (padded > size - pos) {
            snprintf(err, errlen, "%s: no image in this FITS file", path);
            goto out;
        }
        pos += padded;
        if (fits_source_seek(&src, pos) != 0) {
            snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
            goto out;
        }
    }
out:
    fits_source_close(&src);
    return rc;
}

/* h as fits_scan_layout_fd reports it. */
static void report_hdu(const fits_hdu_info *h, long long header_bytes, fits_scan_hdu *out)
{
    memset(out, 0, sizeof *out);
    if (!h->primary)
        snprintf(out->xtension, sizeof out->xtension, "%s", xtension_shown(h->xtension));
    out->bitpix = h->bitpix;
    out->naxis = h->naxis;
    for (int i = 0; i < FITS_SCAN_MAX_AXES && i < h->naxis; ++i)
        out->naxes[i] = h->naxes[i];
    out->pcount = h->primary ? 0 : h->pcount;
    out->gcount = h->primary ? 1 : h->gcount;
    out->header_bytes = header_bytes;
    out->data_bytes = data_bytes(h);
    out->extname = h->extname;
    if (h->extname > 0)
        snprintf(out->extname_text, sizeof out->extname_text, "%s", h->extname_text);
    out->named = h->named;
    if (h->named > 0) snprintf(out->named_text, sizeof out->named_text, "%s", h->named_text);
}

int fits_scan_layout_fd(int fd, const char *shown, const char *named, fits_scan_layout *out,
                        char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    scan_ctx c = {.path = shown, .hdu = 1, .named = named, .err = err, .errlen = errlen};
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", shown, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", shown);
        return -1;
    }
    int own = dup(fd); /* src.f's own, closed with it */
    fits_source src = {.f = own >= 0 ? fdopen(own, "rb") : NULL, .size = st.st_size};
    if (!src.f || fseeko(src.f, 0, SEEK_SET) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", shown, strerror(errno));
        if (src.f)
            fclose(src.f);
        else if (own >= 0)
            close(own);
        return -1;
    }
    out->size = src.size;
    fits_hdu_info h; /* 9 KB */
    long long pos = 0;
    int rc = -1;
    for (;; ++c.hdu) {
        long long at = pos;
        /* Fewer bytes than a block after the last HDU: no HDU, not exact. */
        if (c.hdu > 1 && src.size - pos < FITS_BLOCK) break;
        if (read_header(&c, &src, &pos, &h) != 0 || check_hdu(&c, &h)) goto out;
        long long bytes = data_bytes(&h);
        long long padded = (bytes + FITS_BLOCK - 1) / FITS_BLOCK * FITS_BLOCK;
        if (bytes > src.size - pos) {
            bad(&c, "the file ends inside the data (truncated?): %lld bytes of data in %lld", bytes,
                src.size - pos);
            goto out;
        }
        if (out->nhdus < FITS_SCAN_MAX_HDUS) report_hdu(&h, pos - at, &out->hdus[out->nhdus]);
        out->nhdus++;
        pos += padded; /* past the end when the last block's fill is missing: not exact */
        if (pos >= src.size) break;
        if (fits_source_seek(&src, pos) != 0) {
            snprintf(err, errlen, "cannot read %s: %s", shown, strerror(errno));
            goto out;
        }
    }
    out->total = pos;
    out->exact = pos == src.size;
    rc = 0;
out:
    fits_source_close(&src);
    return rc;
}
