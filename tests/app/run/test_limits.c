/* SPDX-License-Identifier: BSD-3-Clause */
/* limits: the memory and disk needs of an image set, computed by hand here
 * from the terms limits.h lists (with output.hdf5: NAME.h5's disk space and
 * its writer's memory from app/dataset/hdf5_writer.h's terms), and the refusals
 * (message with both numbers, the config file, line and key) against a
 * machine given as numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/config/config.h"
#include "app/set/image_set.h"
#include "app/run/set_limits.h"
#include "app/output/writer_pool.h"
#include "tests/support/testutil.h"

#define MIB (1024ULL * 1024)
#define GIB (1024ULL * MIB)

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("limits");
    return g_dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmtree(g_dir);
    free(g_dir);
    g_dir = NULL;
    return 0;
}

typedef struct {
    psf_config cfg;
    image_set set;
    char path[4200];
} loaded;

/* Config text -> loaded config and image set (asserts success). */
static void load(const char *text, loaded *l)
{
    snprintf(l->path, sizeof l->path, "%s/limits.cfg", g_dir);
    assert_int_equal(tu_write_file(l->path, text), 0);
    char err[1024] = "";
    if (config_load(l->path, &l->cfg, err, sizeof err) != 0) fail_msg("config: %s", err);
    if (image_set_init(&l->set, &l->cfg, err, sizeof err) != 0) fail_msg("image set: %s", err);
}

static void unload(loaded *l)
{
    image_set_free(&l->set);
    config_free(&l->cfg);
}

/* N = 128 (n = 64, Q = 2), monochromatic, no aberrations, PNG 16-bit + FITS;
 * "sampling" on line 3 and "sweep" on line 4. */
static const char *const small_cfg = "name = \"lim\";\n"
                                     "optics: { wavelength_nm = 550.0; aperture: { diameter_m = "
                                     "1.0; }; };\n"
                                     "sampling: { pupil_samples = 64; padding = 2.0; };\n"
                                     "sweep: { defocus = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, "
                                     "0.8, 0.9]; };\n"
                                     "output: { fits: { enabled = true; }; };\n";

static void test_memory_need_by_hand(void **state)
{
    (void)state;
    loaded l;
    load(small_cfg, &l);
    assert_int_equal(l.set.samp.npix, 128);
    assert_int_equal(l.set.modes.nterms, 1); /* Noll 4, swept */
    limits_memory m;
    limits_memory_need(&l.set, 1, 10, &m);
    assert_int_equal(m.fft, 16ULL * 128 * 128);
    /* 512 MiB / 64 KiB = 8192 > 64 (the CPU's batch) > 10 images to do. */
    assert_int_equal(m.batch, 10);
    assert_int_equal(m.images, (unsigned long long)WRITER_SLOTS * 10 * 4 * 128 * 128);
    /* open samples <= (64 + 2)^2 = 4356 < 128^2; index, amplitude, OPD, 1 mode: 16 bytes. */
    assert_int_equal(m.pupils, 4356ULL * 4 * (3 + 1));
    assert_int_equal(m.scratch, 2 * 4ULL * 128 * 128); /* the build's grid + the kept one */
    assert_int_equal(m.nwriters, 1);
    assert_int_equal(m.writers, 2ULL * 128 * 128 + 128 + MIB);
    assert_int_equal(m.base, 64 * MIB);
    assert_int_equal(m.total, m.fft + m.images + m.pupils + m.scratch + m.writers + m.base);
    /* Four writers: three more PNG buffers and states. */
    limits_memory m4;
    limits_memory_need(&l.set, 4, 10, &m4);
    assert_int_equal(m4.total - m.total, 3 * (2ULL * 128 * 128 + 128 + MIB));
    unload(&l);
}

static void test_memory_batch_bounds(void **state)
{
    (void)state;
    /* N = 16384 (n = 8192, Q = 2): one image is 1 GiB, over the 512 MiB a
     * batch may take, so a batch holds one image; the FFT 4 GiB. */
    loaded l;
    load("name = \"big\";\n"
         "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
         "sampling: { pupil_samples = 8192; };\n",
         &l);
    limits_memory m;
    limits_memory_need(&l.set, 2, 1000, &m);
    assert_int_equal(m.batch, 1);
    assert_int_equal(m.fft, 4 * GIB);
    assert_int_equal(m.images, (unsigned long long)WRITER_SLOTS * GIB);
    assert_int_equal(m.pupils, 8194ULL * 8194 * 12);
    unload(&l);
}

/* The MFT (output.npix other than N): no FFT buffers but twiddle tables,
 * the pupil box and the transform's scratch, on a pupil grid of n + 4. */
static void test_memory_need_mft(void **state)
{
    (void)state;
    loaded l;
    load("name = \"mft\";\n"
         "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
         "sampling: { pupil_samples = 64; };\n"
         "output: { npix = 100; };\n",
         &l);
    assert_int_equal(l.set.mft, 1);
    assert_int_equal(l.set.samp.npix, 100);
    assert_int_equal(l.set.pupil_npix, 68);
    limits_memory m;
    limits_memory_need(&l.set, 1, 1, &m);
    /* One table 8 P M, the box 8 P^2, scratch 8 P M + 8 M^2. */
    assert_int_equal(m.fft, 8ULL * 68 * 100 * 2 + 8ULL * 68 * 68 + 8ULL * 100 * 100);
    assert_int_equal(m.images, (unsigned long long)WRITER_SLOTS * 4 * 100 * 100);
    assert_int_equal(m.pupils, 4356ULL * 4 * 3);     /* (64 + 2)^2 < 68^2 open samples */
    assert_int_equal(m.scratch, 2 * 4ULL * 68 * 68); /* the build's grid + the kept one */
    assert_int_equal(m.writers, 2ULL * 100 * 100 + 100 + MIB);
    unload(&l);
}

static void test_disk_need_by_hand(void **state)
{
    (void)state;
    loaded l;
    load(small_cfg, &l);
    limits_disk d;
    limits_disk_need(&l.set, 10, 4096, &d);
    /* PNG: 128 rows of 1 + 256 bytes = 32896, deflated at worst to
     * compressBound = 32896 + 8 + 2 + 13 = 32919, in 5 IDAT chunks of 12
     * bytes, + signature, IHDR and IEND (45). */
    assert_int_equal(d.png_bytes, 32919 + 5 * 12 + 45);
    /* FITS: 8 + 34 keywords (33, with the WCS, DATE, CFGHASH and WAVE0, and
     * Z4) + END in 2 blocks; 65536 data bytes padded to 23 blocks: the file
     * psfsim writes, exactly. */
    assert_int_equal(d.fits_bytes, 2 * 2880 + 23 * 2880);
    /* Each file to 4 KiB blocks; the logs (rows of at most 272 + 151
     * bytes, 16 KiB more) twice, and 2 blocks; 23 directory entries of 40
     * bytes in one block. */
    unsigned long long png = 36864, fits = 73728, logs = 2 * 24576 + 8192, dirents = 4096;
    assert_int_equal(d.total, 10 * png + 10 * fits + logs + dirents);
    assert_int_equal(d.files, 10 + 10 + 7);
    unload(&l);
}

static void test_disk_need_8bit_cube(void **state)
{
    (void)state;
    loaded l;
    load("name = \"cube\";\n"
         "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
         "sampling: { pupil_samples = 32; padding = 1.0; };\n"
         "sweep: { zernike = ( (5, [0.0, 0.1, 0.2]) ); };\n"
         "output: { png: { bits = 8; }; fits: { enabled = true; cube = true; }; };\n",
         &l);
    limits_disk d;
    limits_disk_need(&l.set, 3, 512, &d);
    /* 32 rows of 1 + 32 bytes: 1056 + 13, one IDAT chunk, 45. */
    assert_int_equal(d.png_bytes, 1069 + 12 + 45);
    /* One cube file, as psfsim writes it: the primary header (8 cards,
     * NAXIS3, 10 common keywords, END: 1 block), 3 planes of 4096 bytes
     * padded to 14400, the PLANES header (9 cards, TTYPE, TFORM for 9
     * columns and TUNIT for 6, END: 1 block) and its 3 rows of 72 bytes
     * (1 block). */
    unsigned long long cube = 2880 + 14400 + 2880 + 2880;
    unsigned long long png = ((d.png_bytes + 511) / 512) * 512;
    unsigned long long logs = 2 * (((3 * (298 + 151) + 16384 + 511) / 512) * 512) + 1024;
    unsigned long long dirents = 512; /* 7 of 40 bytes */
    assert_int_equal(d.total, 3 * png + ((cube + 511) / 512) * 512 + logs + dirents);
    assert_int_equal(d.files, 3 + 1 + 7);
    unload(&l);
}

/* A machine with plenty of everything. */
static limits_machine roomy(void)
{
    limits_machine mc;
    memset(&mc, 0, sizeof mc);
    mc.mem_physical = 64 * GIB;
    mc.mem_available = 60 * GIB;
    mc.disk_free = 1000 * GIB;
    mc.inodes_free = 1000000;
    mc.block = 4096;
    snprintf(mc.fs_path, sizeof mc.fs_path, "/data");
    return mc;
}

static void test_evaluate_memory(void **state)
{
    (void)state;
    loaded l;
    load(small_cfg, &l);
    limits_options o = {.writers = 1};
    char err[2048] = "";
    limits_machine mc = roomy();
    assert_int_equal(limits_evaluate(&l.set, "out", &o, 10, &mc, err, sizeof err), 0);

    limits_memory m;
    limits_memory_need(&l.set, 1, 10, &m);
    mc.mem_available = m.total - 1; /* one byte short */
    assert_int_equal(limits_evaluate(&l.set, "out", &o, 10, &mc, err, sizeof err), -1);
    char want[4400], need[32], have[32];
    snprintf(want, sizeof want, "%s:3: sampling.pupil_samples: a 128 x 128 FFT grid", l.path);
    assert_non_null(strstr(err, want));
    limits_format_bytes(m.total, need, sizeof need);
    limits_format_bytes(m.total - 1, have, sizeof have);
    snprintf(want, sizeof want, "needs %s of memory", need);
    assert_non_null(strstr(err, want));
    snprintf(want, sizeof want, "%s available (MemAvailable) of 64.0 GiB physical", have);
    assert_non_null(strstr(err, want));
    assert_null(strchr(err, '\n'));

    /* The smallest bound counts: an address-space limit below MemAvailable. */
    mc = roomy();
    mc.mem_rlimit = 32 * MIB;
    assert_int_equal(limits_evaluate(&l.set, "out", &o, 10, &mc, err, sizeof err), -1);
    assert_non_null(strstr(err, "address space limited to 32.0 MiB (ulimit -v)"));
    mc = roomy();
    mc.mem_cgroup = 16 * MIB;
    assert_int_equal(limits_evaluate(&l.set, "out", &o, 10, &mc, err, sizeof err), -1);
    assert_non_null(strstr(err, "16.0 MiB left under the cgroup's memory limit"));
    /* Unknown memory (all 0): no memory check. */
    mc = roomy();
    mc.mem_physical = mc.mem_available = 0;
    assert_int_equal(limits_evaluate(&l.set, "out", &o, 10, &mc, err, sizeof err), 0);
    unload(&l);
}

static void test_evaluate_disk(void **state)
{
    (void)state;
    loaded l;
    load(small_cfg, &l);
    limits_options o = {.writers = 1};
    char err[2048] = "";
    limits_machine mc = roomy();
    limits_disk d;
    limits_disk_need(&l.set, 10, 4096, &d);

    mc.disk_free = d.total; /* exactly enough */
    assert_int_equal(limits_evaluate(&l.set, "out/x", &o, 10, &mc, err, sizeof err), 0);
    mc.disk_free = d.total - 1;
    assert_int_equal(limits_evaluate(&l.set, "out/x", &o, 10, &mc, err, sizeof err), -1);
    char want[4400], need[32], have[32];
    limits_format_bytes(d.total, need, sizeof need);
    limits_format_bytes(d.total - 1, have, sizeof have);
    snprintf(want, sizeof want,
             "%s:4: sweep: 10 image(s) of 128 x 128 (PNG 16-bit + FITS) need up to %s in out/x, "
             "but its file system (/data) has %s free",
             l.path, need, have);
    assert_string_equal(err, want);

    /* --force: the old set's files are freed as the new ones replace them. */
    mc.reclaim = 1;
    assert_int_equal(limits_evaluate(&l.set, "out/x", &o, 10, &mc, err, sizeof err), 0);

    /* Inodes: 27 files (10 PNG, 10 FITS, the logs, the lock, the temp files). */
    mc = roomy();
    mc.inodes_free = 26;
    assert_int_equal(limits_evaluate(&l.set, "out/x", &o, 10, &mc, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "%s:4: sweep: 10 image(s) (PNG 16-bit + FITS) need 27 files in out/x, but its file "
             "system (/data) has 26 free inodes",
             l.path);
    assert_string_equal(err, want);
    mc.inodes_free = 27;
    assert_int_equal(limits_evaluate(&l.set, "out/x", &o, 10, &mc, err, sizeof err), 0);
    unload(&l);
}

/* 10^7 images of 65536^2 (the largest set the config allows): every figure
 * stays exact in 64 bits, far past any disk. */
static void test_largest_set_no_overflow(void **state)
{
    (void)state;
    loaded l;
    load("name = \"huge\";\n"
         "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
         "sampling: { pupil_samples = 65536; padding = 1.0; };\n"
         "output: { fits: { enabled = true; }; };\n",
         &l);
    assert_int_equal(l.set.samp.npix, 65536);
    limits_disk d;
    limits_disk_need(&l.set, 10000000, 4096, &d);
    unsigned long long plane = 65536ULL * 65536;
    /* At least the raw data: 2 bytes (PNG) + 4 bytes (FITS) per pixel. */
    assert_true(d.total >= 10000000ULL * plane * 6);
    assert_true(d.total < 10000000ULL * plane * 7);
    limits_memory m;
    limits_memory_need(&l.set, 1024, 10000000, &m);
    assert_int_equal(m.fft, 16 * plane);
    assert_int_equal(m.writers, 1024 * (2 * plane + 65536 + MIB));
    unload(&l);
}

static void test_format_bytes(void **state)
{
    (void)state;
    char b[32];
    limits_format_bytes(0, b, sizeof b);
    assert_string_equal(b, "0 bytes");
    limits_format_bytes(1023, b, sizeof b);
    assert_string_equal(b, "1023 bytes");
    limits_format_bytes(1536, b, sizeof b);
    assert_string_equal(b, "1.5 KiB");
    limits_format_bytes(3 * GIB, b, sizeof b);
    assert_string_equal(b, "3.0 GiB");
    limits_format_bytes(UINT64_MAX, b, sizeof b);
    assert_string_equal(b, "16.0 EiB");
}

/* The real machine: memory and the file system of a directory that does
 * not exist yet (its nearest existing ancestor). */
static void test_probe_this_machine(void **state)
{
    (void)state;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/not/yet", g_dir);
    char old[4200];
    snprintf(old, sizeof old, "%s/lim_0.png", g_dir);
    assert_int_equal(tu_write_file(old, "0123456789"), 0);
    snprintf(old, sizeof old, "%s/lim_manifest.csv", g_dir); /* 15 + 13 bytes, naming lim_0.png */
    assert_int_equal(tu_write_file(old, "index,png,fits\n0,lim_0.png,\n"), 0);
    snprintf(old, sizeof old, "%s/other_0.png", g_dir);
    assert_int_equal(tu_write_file(old, "not ours"), 0);
    snprintf(old, sizeof old, "%s/lim_notes.png", g_dir); /* the user's, not the set's */
    assert_int_equal(tu_write_file(old, "notes"), 0);
    snprintf(old, sizeof old, "%s/lim_1.png", g_dir); /* not in the manifest: not the set's */
    assert_int_equal(tu_write_file(old, "one"), 0);
    loaded l;
    load("name = \"lim\";\n"
         "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
         "sampling: { pupil_samples = 32; };\n",
         &l);

    limits_machine mc;
    limits_probe(dir, &l.cfg, 1, &mc);
    assert_true(mc.mem_physical > 0);
    assert_string_equal(mc.fs_path, g_dir);
    assert_true(mc.disk_free > 0);
    assert_true(mc.block >= 512);
    assert_int_equal(mc.reclaim, 0); /* dir does not exist: nothing to replace */
    limits_probe(g_dir, &l.cfg, 1, &mc);
    assert_int_equal(mc.reclaim, 10 + 28); /* lim_0.png and lim_manifest.csv */
    limits_probe(g_dir, &l.cfg, 0, &mc);
    assert_int_equal(mc.reclaim, 0); /* without --force nothing is replaced */
    unload(&l);
}

/* 10 images of 128 x 128 (n = 64, Q = 2), HDF5 alone; one label term
 * (Noll 4, from the defocus sweep). */
#define H5_CFG(output)                                                                             \
    "name = \"h\";\n"                                                                              \
    "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"                       \
    "sampling: { pupil_samples = 64; padding = 2.0; };\n"                                          \
    "sweep: { defocus = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]; };\n"                  \
    "output: { png: { enabled = false; }; hdf5: { enabled = true; " output " }; };\n"

static void test_hdf5_disk_by_hand(void **state)
{
    (void)state;
    loaded l;
    load(H5_CFG(""), &l);
    assert_int_equal(l.set.modes.nterms, 1);
    limits_disk d;
    limits_disk_need(&l.set, 10, 4096, &d);
    /* 10 images of 65536 bytes, labels (1 term + 10 columns) x 8 + 1 flag,
     * 10 chunks (one 64 KiB image a chunk) of 256 bytes of index, 1 MiB of
     * metadata and 1 MiB for the sidecar. */
    unsigned long long h5 = 10 * 65536ULL + 10 * 89 + 10 * 256 + 2 * MIB;
    assert_int_equal(d.hdf5_bytes, h5);
    assert_int_equal(d.png_bytes, 0);
    /* The journals twice (set_limits_disk.c: 10 rows of at most 268 + 151
     * bytes and 16 KiB, to 4096-byte blocks, 24576), two blocks, and the
     * directory's entries (6 of 36 bytes: one block). */
    unsigned long long logs = 2 * 24576 + 2 * 4096 + 4096;
    assert_int_equal(d.total, logs + ((h5 + 4095) / 4096) * 4096 + 3 * 4096);
    assert_int_equal(d.files, 3 + 7); /* and the lock file */
    unload(&l);

    /* The temp file a --resume continues counts as free. */
    load(H5_CFG(""), &l);
    limits_machine mc = roomy();
    mc.disk_free = d.total - 1;
    char err[4096] = "";
    assert_int_equal(limits_evaluate(&l.set, "out/h", NULL, 10, &mc, err, sizeof err), -1);
    assert_non_null(strstr(err, "(HDF5 float32) need up to"));
    mc.hdf5_part = 1;
    assert_int_equal(limits_evaluate(&l.set, "out/h", NULL, 10, &mc, err, sizeof err), 0);
    unload(&l);
}

static void test_hdf5_memory_by_hand(void **state)
{
    (void)state;
    loaded l;
    load(H5_CFG(""), &l);
    limits_memory m;
    limits_memory_need(&l.set, 1, 10, &m);
    assert_int_equal(m.batch, 10);
    /* Queue: 2 batches of 10 rows (image, labels, 2 x 8 bytes of backend),
     * the batch being written and the group (all 10 rows: 16 MiB would
     * hold more than a batch); stages: (2 slots + 2) chunks of one 64 KiB
     * image; 3 flag bytes an image. */
    unsigned long long row = 65536 + 89 + 16;
    assert_int_equal(m.hdf5, (2 + 1 + 1) * 10 * row + 4 * 65536ULL + 30);
    assert_int_equal(m.total,
                     m.fft + m.images + m.pupils + m.scratch + m.writers + m.base + m.hdf5);
    unload(&l);
    /* uint16 with gzip: half the bytes, chunks of 2 images of 32768, the
     * deflate buffers (8 threads, each a chunk shuffled and a 1 MiB run
     * deflated: 2 MiB, and zlib's margin, 1/512 of a run and 1 KiB) and
     * the slots' levels. */
    load(H5_CFG("dtype = \"uint16\"; compression = \"gzip\";"), &l);
    limits_memory_need(&l.set, 1, 10, &m);
    row = 32768 + 89 + 16;
    assert_int_equal(m.hdf5, (2 + 1 + 1) * 10 * row + 4 * 65536ULL +
                                 8 * (2 * MIB + MIB / 512 + 1024) + 30 + 2 * 10 * 32768);
    unload(&l);
    /* Without output.hdf5: nothing. */
    load("name = \"n\";\n"
         "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
         "sampling: { pupil_samples = 64; };\n",
         &l);
    limits_memory_need(&l.set, 1, 1, &m);
    assert_int_equal(m.hdf5, 0);
    limits_disk d;
    limits_disk_need(&l.set, 1, 4096, &d);
    assert_int_equal(d.hdf5_bytes, 0);
    unload(&l);
}

static void test_hdf5_image_over_a_chunk(void **state)
{
    (void)state;
    loaded l;
    load("name = \"big\";\n"
         "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"
         "sampling: { pupil_samples = 64; };\n"
         "output: {\n"
         "  npix = 32768; hdf5: { enabled = true; }; };\n",
         &l);
    limits_machine mc = roomy();
    char err[4096] = "", want[4600];
    assert_int_equal(limits_evaluate(&l.set, "out", NULL, 1, &mc, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "%s:5: output.npix: an image of 32768 x 32768 float32 is 4.0 GiB, more than one "
             "HDF5 chunk holds (under 4 GiB): use output.hdf5.dtype = \"uint16\", smaller "
             "images, or turn output.hdf5 off",
             l.path);
    assert_string_equal(err, want);
    unload(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_need_by_hand),     cmocka_unit_test(test_memory_batch_bounds),
        cmocka_unit_test(test_disk_need_by_hand),       cmocka_unit_test(test_disk_need_8bit_cube),
        cmocka_unit_test(test_evaluate_memory),         cmocka_unit_test(test_evaluate_disk),
        cmocka_unit_test(test_largest_set_no_overflow), cmocka_unit_test(test_format_bytes),
        cmocka_unit_test(test_probe_this_machine),      cmocka_unit_test(test_memory_need_mft),
        cmocka_unit_test(test_hdf5_disk_by_hand),       cmocka_unit_test(test_hdf5_memory_by_hand),
        cmocka_unit_test(test_hdf5_image_over_a_chunk),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
