/* limits with output.hdf5: NAME.h5's disk space and its writer's memory,
 * computed by hand from the terms app/hdf5_writer.h lists; the temp file
 * already there counted as free; an image over an HDF5 chunk's 4 GiB
 * refused with the config's file, line and key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/config/config.h"
#include "app/set/image_set.h"
#include "app/set_limits.h"
#include "tests/support/testutil.h"

#define MIB (1024ULL * 1024)
#define GIB (1024ULL * MIB)

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp("limits_hdf5");
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

static void load(const char *text, loaded *l)
{
    snprintf(l->path, sizeof l->path, "%s/h5.cfg", g_dir);
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

/* 10 images of 128 x 128 (n = 64, Q = 2), HDF5 alone; one label term
 * (Noll 4, from the defocus sweep). */
#define H5_CFG(output)                                                                             \
    "name = \"h\";\n"                                                                              \
    "optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n"                       \
    "sampling: { pupil_samples = 64; padding = 2.0; };\n"                                          \
    "sweep: { defocus = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]; };\n"                  \
    "output: { png: { enabled = false; }; hdf5: { enabled = true; " output " }; };\n"

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

static void test_disk_by_hand(void **state)
{
    (void)state;
    loaded l;
    load(H5_CFG(""), &l);
    assert_int_equal(l.set.modes.nterms, 1);
    limits_disk d;
    limits_disk_need(&l.set, 10, 4096, &d);
    /* 10 images of 65536 bytes, labels (1 term + 10 columns) x 8 + 1 flag,
     * one chunk (16 images would fit in 1 MiB: all 10) of 256 bytes of
     * index, 1 MiB of metadata and 1 MiB for the sidecar. */
    unsigned long long h5 = 10 * 65536ULL + 10 * 89 + 256 + 2 * MIB;
    assert_int_equal(d.hdf5_bytes, h5);
    assert_int_equal(d.png_bytes, 0);
    unsigned long long logs = 28672 + 8192;
    assert_int_equal(d.total, logs + ((h5 + 4095) / 4096) * 4096 + 3 * 4096);
    assert_int_equal(d.files, 3 + 6);
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

static void test_memory_by_hand(void **state)
{
    (void)state;
    loaded l;
    load(H5_CFG(""), &l);
    limits_memory m;
    limits_memory_need(&l.set, 1, 10, &m);
    assert_int_equal(m.batch, 10);
    /* Queue: 2 batches of 10 rows (image, labels, 2 x 8 bytes of backend);
     * stages: (2 slots + 2) chunks of 10 images; 3 flag bytes an image. */
    unsigned long long row = 65536 + 89 + 16;
    assert_int_equal(m.hdf5, 2 * 10 * row + 4 * 655360ULL + 30);
    assert_int_equal(m.total,
                     m.fft + m.images + m.pupils + m.scratch + m.writers + m.base + m.hdf5);
    unload(&l);
    /* uint16 with gzip: half the bytes, the deflate buffers (8 threads, a
     * chunk twice each; a chunk is now all 10 images of 32768) and the
     * slots' levels. */
    load(H5_CFG("dtype = \"uint16\"; compression = \"gzip\";"), &l);
    limits_memory_need(&l.set, 1, 10, &m);
    row = 32768 + 89 + 16;
    assert_int_equal(m.hdf5, 2 * 10 * row + 4 * 327680ULL + 16 * 327680ULL + 30 + 2 * 10 * 32768);
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

static void test_image_over_a_chunk(void **state)
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
        cmocka_unit_test(test_disk_by_hand),
        cmocka_unit_test(test_memory_by_hand),
        cmocka_unit_test(test_image_over_a_chunk),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
