/* SPDX-License-Identifier: BSD-3-Clause */
/* The probe cache: round trip, another machine's figures, corrupt and
 * truncated files, an unwritable directory, a FIFO, a link or a huge file
 * at its name, the directory's environment variables. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "app/select/probe_cache.h"
#include "tests/support/testutil.h"

static void figures(probe_figures *f)
{
    memset(f, 0, sizeof *f);
    f->nsizes = PROBE_NSIZES;
    f->cpu_threads = 2;
    f->have_gpu = 1;
    snprintf(f->gpu_name, sizeof f->gpu_name, "test");
    f->gpu_start_us = 123456.75;
    f->gpu_launch_us = 16.5;
    f->gpu_d2h_gbs = 40.25;
    for (int i = 0; i < PROBE_NSIZES; ++i) {
        f->npix[i] = 64 << i;
        f->big_batch[i] = 1024 >> i;
        f->cpu_us[i] = 10.0 * (i + 1) + 0.125;
        f->cpu_create_us[i] = 5;
        f->gpu_b1_us[i] = 30 + i;
        f->gpu_bb_us[i] = 300 + i / 3.0;
        f->gpu_create_us[i] = 2000;
    }
    f->gpu_count = 2; /* two devices, the second 5% slower */
    f->gpu_rel_speed[0] = 1.0;
    f->gpu_rel_speed[1] = 0.95;
}

static char *dir;

static int setup(void **state)
{
    (void)state;
    dir = tu_mkdtemp("cache");
    return dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmtree(dir);
    free(dir);
    return 0;
}

static void test_round_trip(void **state)
{
    (void)state;
    machine_key k;
    machine_key_read(&k);
    probe_figures f, g;
    figures(&f);
    char err[512], why[512];
    assert_int_equal(probe_cache_store(dir, &k, &f, err, sizeof err), 0);
    assert_int_equal(probe_cache_load(dir, &k, &g, why, sizeof why), 0);
    assert_int_equal(g.nsizes, f.nsizes);
    assert_int_equal(g.have_gpu, 1);
    assert_true(g.gpu_start_us == f.gpu_start_us); /* %.17g: exact */
    assert_int_equal(g.gpu_count, 2);
    assert_true(g.gpu_rel_speed[1] == 0.95 && g.gpu_rel_speed[2] == 0.0);
    for (int i = 0; i < PROBE_NSIZES; ++i) {
        assert_int_equal(g.npix[i], f.npix[i]);
        assert_int_equal(g.big_batch[i], f.big_batch[i]);
        assert_true(g.cpu_us[i] == f.cpu_us[i]);
        assert_true(g.gpu_bb_us[i] == f.gpu_bb_us[i]);
    }
    assert_int_equal(tu_count_entries(dir), 1); /* no temp file left */
}

static void test_other_machine(void **state)
{
    (void)state;
    machine_key k, other;
    machine_key_read(&k);
    other = k;
    snprintf(other.value[1], sizeof other.value[1], "999.99");
    probe_figures f, g;
    figures(&f);
    char err[512], why[512];
    assert_int_equal(probe_cache_store(dir, &other, &f, err, sizeof err), 0);
    assert_int_equal(probe_cache_load(dir, &k, &g, why, sizeof why), -1);
    assert_non_null(strstr(why, "another machine (machine.driver differs)"));
}

static void write_cache(const char *text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/probe.txt", dir);
    assert_int_equal(tu_write_file(path, text), 0);
}

static void test_corrupt_and_truncated(void **state)
{
    (void)state;
    machine_key k;
    machine_key_read(&k);
    probe_figures f, g;
    char err[512], why[512];
    write_cache("\x01\x02 not a cache at all\n");
    assert_int_equal(probe_cache_load(dir, &k, &g, why, sizeof why), -1);
    assert_non_null(strstr(why, "not a psfsim probe cache"));
    /* A good file cut at every length: always a clean miss, never a crash. */
    figures(&f);
    assert_int_equal(probe_cache_store(dir, &k, &f, err, sizeof err), 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/probe.txt", dir);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char text[8192];
    size_t len = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[len] = '\0';
    for (size_t cut = 0; cut + 2 < len; cut += 7) {
        char part[8192];
        memcpy(part, text, cut);
        part[cut] = '\0';
        write_cache(part);
        assert_int_equal(probe_cache_load(dir, &k, &g, why, sizeof why), -1);
    }
    /* A bad number in a complete file. */
    char *bad = strstr(text, "cpu_us.2 ");
    assert_non_null(bad);
    memcpy(bad + 9, "-5", 2);
    write_cache(text);
    assert_int_equal(probe_cache_load(dir, &k, &g, why, sizeof why), -1);
    assert_non_null(strstr(why, "corrupt"));
}

static void test_missing_and_unwritable(void **state)
{
    (void)state;
    machine_key k;
    machine_key_read(&k);
    probe_figures f;
    figures(&f);
    char err[512], why[512], sub[4200];
    snprintf(sub, sizeof sub, "%s/none", dir);
    assert_int_equal(probe_cache_load(sub, &k, &f, why, sizeof why), -1);
    assert_non_null(strstr(why, "no cached figures"));
    /* A cache directory below a regular file cannot be made (also as root). */
    char file[4200];
    snprintf(file, sizeof file, "%s/afile", dir);
    assert_int_equal(tu_write_file(file, "x"), 0);
    snprintf(sub, sizeof sub, "%s/afile/cache", dir);
    assert_int_equal(probe_cache_store(sub, &k, &f, err, sizeof err), -1);
    assert_non_null(strstr(err, "afile"));
}

/* What sits at probe.txt in a shared directory: a FIFO must not block the
 * load (alarm: a blocked open ends the test), a symbolic link is not
 * followed, a file of megabytes is not read. Each is a miss naming the file. */
static void test_not_a_cache_file(void **state)
{
    (void)state;
    machine_key k;
    machine_key_read(&k);
    probe_figures g;
    char why[512], path[4200];
    snprintf(path, sizeof path, "%s/probe.txt", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(10);
    assert_int_equal(probe_cache_load(dir, &k, &g, why, sizeof why), -1);
    alarm(0);
    assert_non_null(strstr(why, "probe.txt: not a regular file (a FIFO)"));
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink("/dev/zero", path), 0);
    assert_int_equal(probe_cache_load(dir, &k, &g, why, sizeof why), -1);
    assert_non_null(strstr(why, "probe.txt: a symbolic link (not followed)"));
    assert_int_equal(unlink(path), 0);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("psfsim-probe 3\n", fp);
    for (int i = 0; i < 70000; ++i) /* 1.1 MB of lines */
        fputs("machine.gpus xxx\n", fp);
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(probe_cache_load(dir, &k, &g, why, sizeof why), -1);
    assert_non_null(strstr(why, "probe.txt: larger than 1 MiB"));
}

static void test_cache_dir_environment(void **state)
{
    (void)state;
    char buf[4096];
    setenv("PSFSIM_CACHE_DIR", "/x/own", 1);
    setenv("XDG_CACHE_HOME", "/x/xdg", 1);
    assert_string_equal(probe_cache_dir(buf, sizeof buf), "/x/own");
    unsetenv("PSFSIM_CACHE_DIR");
    assert_string_equal(probe_cache_dir(buf, sizeof buf), "/x/xdg/psfsim");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/x/home", 1);
    assert_string_equal(probe_cache_dir(buf, sizeof buf), "/x/home/.cache/psfsim");
}

static void test_machine_key_fields(void **state)
{
    (void)state;
    machine_key k;
    machine_key_read(&k);
    for (int i = 0; i < MACHINE_KEY_FIELDS; ++i) {
        assert_true(strlen(k.value[i]) > 0);
        assert_null(strchr(k.value[i], ' ')); /* one token each */
    }
    assert_non_null(strstr(k.value[4], "fftw-3"));
}

/* The probe counted and compared the devices CUDA showed it: another
 * CUDA_VISIBLE_DEVICES is another machine for the cache. */
static void test_visible_devices_in_key(void **state)
{
    (void)state;
    unsetenv("CUDA_VISIBLE_DEVICES");
    machine_key k, k1;
    machine_key_read(&k);
    probe_figures f, g;
    figures(&f);
    char err[512], why[512];
    assert_int_equal(probe_cache_store(dir, &k, &f, err, sizeof err), 0);
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    machine_key_read(&k1);
    assert_int_equal(probe_cache_load(dir, &k1, &g, why, sizeof why), -1);
    assert_non_null(strstr(why, "machine.visible"));
    setenv("CUDA_VISIBLE_DEVICES", "", 1); /* set but empty: no device, also a key */
    machine_key_read(&k1);
    assert_string_equal(k1.value[8], "empty");
    unsetenv("CUDA_VISIBLE_DEVICES");
    machine_key_read(&k1);
    assert_int_equal(probe_cache_load(dir, &k1, &g, why, sizeof why), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_machine, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_and_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_and_unwritable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_cache_file, setup, teardown),
        cmocka_unit_test(test_cache_dir_environment),
        cmocka_unit_test(test_machine_key_fields),
        cmocka_unit_test_setup_teardown(test_visible_devices_in_key, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
