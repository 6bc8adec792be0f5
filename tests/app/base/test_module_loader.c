/* SPDX-License-Identifier: BSD-3-Clause */
/* module_loader: where modules are looked for, and a clear reason for each
 * way loading one fails (missing, not a library, not a psfsim module); the
 * build tree's FITS module loads from tests/ (one directory up). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/formats/fits.h"
#include "app/formats/fits_abi.h"
#include "app/base/module_loader.h"
#include "backend/gpu_abi.h"
#include "app/select/plot_abi.h"
#include "tests/support/testutil.h"

#define ENV "PSFSIM_TEST_MODULE"

static void exe_dir(char *dir, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", dir, len - 1);
    assert_true(n > 0);
    dir[n] = '\0';
    *strrchr(dir, '/') = '\0';
}

static void test_missing_module(void **state)
{
    (void)state;
    unsetenv(ENV);
    char path[MODULE_PATH_MAX], err[2 * PATH_MAX + 300] = "", dir[PATH_MAX],
                                                   want[2 * PATH_MAX + 100];
    assert_int_equal(module_find("libpsfsim-nosuch.so", ENV, path, sizeof path), -1);
    const char *sym[] = {"x"};
    void *entry = NULL;
    module_status st = MODULE_OK;
    assert_null(module_load("libpsfsim-nosuch.so", ENV, sym, &entry, 1, &st, path, sizeof path, err,
                            sizeof err));
    assert_int_equal(st, MODULE_NOT_FOUND);
    assert_string_equal(path, "");
    /* Where it looked: beside the executable, its parent, ../lib/psfsim. */
    exe_dir(dir, sizeof dir);
    snprintf(want, sizeof want, "no libpsfsim-nosuch.so in %s, %s/..", dir, dir);
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(err, "/../lib/psfsim"));
    assert_null(strchr(err, '\n'));

    /* The environment's path comes first and is named. */
    setenv(ENV, "/nonexistent/libx.so", 1);
    assert_null(
        module_load("libpsfsim-nosuch.so", ENV, sym, &entry, 1, &st, NULL, 0, err, sizeof err));
    assert_int_equal(st, MODULE_NOT_FOUND);
    assert_non_null(strstr(err, "at /nonexistent/libx.so ($" ENV ")"));
    unsetenv(ENV);
}

static void test_not_a_library(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("module");
    assert_non_null(dir);
    char file[4200], path[MODULE_PATH_MAX], err[1024] = "";
    snprintf(file, sizeof file, "%s/libfake.so", dir);
    assert_int_equal(tu_write_file(file, "not an ELF file\n"), 0);
    setenv(ENV, file, 1);
    const char *sym[] = {"x"};
    void *entry = NULL;
    module_status st = MODULE_OK;
    assert_null(module_load("libpsfsim-nosuch.so", ENV, sym, &entry, 1, &st, path, sizeof path, err,
                            sizeof err));
    assert_int_equal(st, MODULE_LOAD_FAILED);
    assert_string_equal(path, file);
    assert_non_null(strstr(err, "libfake.so")); /* dlerror names the file */
    unsetenv(ENV);
    tu_rmtree(dir);
    free(dir);
}

static void test_missing_entry(void **state)
{
    (void)state;
    char path[MODULE_PATH_MAX], err[MODULE_PATH_MAX + 100] = "", want[MODULE_PATH_MAX + 100];
    unsetenv(ENV);
    assert_int_equal(module_find(FITS_MODULE_NAME, ENV, path, sizeof path), 0);
    setenv(ENV, path, 1);
    const char *sym[] = {FITS_MODULE_ENTRY, "psf_no_such_entry"};
    void *entries[2] = {NULL, NULL};
    module_status st = MODULE_OK;
    assert_null(
        module_load("libpsfsim-nosuch.so", ENV, sym, entries, 2, &st, NULL, 0, err, sizeof err));
    assert_int_equal(st, MODULE_NO_ENTRY);
    snprintf(want, sizeof want, "%s: no psf_no_such_entry", path);
    assert_string_equal(err, want);
    unsetenv(ENV);
}

static void test_fits_module_loads(void **state)
{
    (void)state;
    unsetenv("PSFSIM_FITS_MODULE");
    char path[MODULE_PATH_MAX], err[1024] = "", dir[PATH_MAX], want[PATH_MAX + 100];
    const char *sym[] = {FITS_MODULE_ENTRY};
    void *entry = NULL;
    module_status st = MODULE_NOT_FOUND;
    assert_non_null(module_load(FITS_MODULE_NAME, "PSFSIM_FITS_MODULE", sym, &entry, 1, &st, path,
                                sizeof path, err, sizeof err));
    assert_int_equal(st, MODULE_OK);
    exe_dir(dir, sizeof dir); /* build/tests: the module is in build/ */
    snprintf(want, sizeof want, "%s/../" FITS_MODULE_NAME, dir);
    assert_string_equal(path, want);
    const fits_module_ops *ops = entry;
    assert_int_equal(ops->abi, FITS_MODULE_ABI);
    assert_int_equal(ops->size, sizeof *ops);
    assert_int_equal(fits_module_load(err, sizeof err), 0);
    /* Only the table is exported: the module's own helpers stay hidden. */
    entry = NULL;
    const char *hidden[] = {"fits_scan_first_image"};
    assert_null(module_load(FITS_MODULE_NAME, "PSFSIM_FITS_MODULE", hidden, &entry, 1, &st, NULL, 0,
                            err, sizeof err));
    assert_int_equal(st, MODULE_NO_ENTRY);
}

/* module_open, the one helper every loader uses: the table when its head
 * matches the spec's version and size, else MODULE_STALE naming the file;
 * module_load's reasons otherwise, with the path tried. */
static void test_module_open(void **state)
{
    (void)state;
    unsetenv(ENV);
    char path[MODULE_PATH_MAX], want[MODULE_PATH_MAX + 100];
    assert_int_equal(module_find(FITS_MODULE_NAME, ENV, path, sizeof path), 0);
    setenv(ENV, path, 1);
    module_spec spec = {"libpsfsim-nosuch.so", ENV, FITS_MODULE_ENTRY, FITS_MODULE_ABI,
                        sizeof(fits_module_ops)};
    static module_opened m; /* static: MODULE_PATH_MAX and more */
    module_open(&spec, &m);
    assert_int_equal(m.status, MODULE_OK);
    assert_non_null(m.table);
    assert_string_equal(m.path, path);
    assert_int_equal(((const fits_module_ops *)m.table)->abi, FITS_MODULE_ABI);

    spec.abi = FITS_MODULE_ABI + 1; /* a module of another version */
    module_open(&spec, &m);
    assert_int_equal(m.status, MODULE_STALE);
    assert_null(m.table);
    snprintf(want, sizeof want, "%s is of another psfsim version", path);
    assert_string_equal(m.why, want);
    spec.abi = FITS_MODULE_ABI;
    spec.size = sizeof(fits_module_ops) + sizeof(void *); /* a table of another size */
    module_open(&spec, &m);
    assert_int_equal(m.status, MODULE_STALE);
    assert_string_equal(m.why, want);

    spec.size = sizeof(fits_module_ops);
    spec.entry = "psf_no_such_entry";
    module_open(&spec, &m);
    assert_int_equal(m.status, MODULE_NO_ENTRY);
    assert_null(m.table);
    assert_string_equal(m.path, path);
    snprintf(want, sizeof want, "%s: no psf_no_such_entry", path);
    assert_string_equal(m.why, want);

    unsetenv(ENV);
    module_open(&spec, &m);
    assert_int_equal(m.status, MODULE_NOT_FOUND);
    assert_null(m.table);
    assert_string_equal(m.path, "");
    assert_non_null(strstr(m.why, "no libpsfsim-nosuch.so in "));
}

static void test_plot_module(void **state)
{
    (void)state;
    char path[MODULE_PATH_MAX], err[1024] = "";
    unsetenv("PSFSIM_PLOT_MODULE");
    if (module_find(PLOT_MODULE_NAME, "PSFSIM_PLOT_MODULE", path, sizeof path) != 0)
        skip(); /* built without cairo */
    const char *sym[] = {PLOT_MODULE_ENTRY};
    void *entry = NULL;
    module_status st = MODULE_NOT_FOUND;
    assert_non_null(module_load(PLOT_MODULE_NAME, "PSFSIM_PLOT_MODULE", sym, &entry, 1, &st, NULL,
                                0, err, sizeof err));
    const plot_module_ops *ops = entry;
    assert_int_equal(ops->abi, PLOT_MODULE_ABI);
    assert_int_equal(ops->size, sizeof *ops);
}

/* The GPU module, when built: its one exported symbol is a table of this
 * psfsim's version (a stale one is refused: test_gpu_module). */
static void test_gpu_module(void **state)
{
    (void)state;
    char path[MODULE_PATH_MAX], err[1024] = "";
    unsetenv("PSFSIM_GPU_MODULE");
    if (module_find(GPU_MODULE_NAME, "PSFSIM_GPU_MODULE", path, sizeof path) != 0)
        skip(); /* built without CUDA */
    const char *sym[] = {GPU_MODULE_ENTRY};
    void *entry = NULL;
    module_status st = MODULE_NOT_FOUND;
    assert_non_null(module_load(GPU_MODULE_NAME, "PSFSIM_GPU_MODULE", sym, &entry, 1, &st, NULL, 0,
                                err, sizeof err));
    const gpu_module_ops *ops = entry;
    assert_int_equal(ops->abi, GPU_MODULE_ABI);
    assert_int_equal(ops->size, sizeof *ops);
    assert_string_equal(ops->backend->name, "gpu");
    entry = NULL;
    const char *hidden[] = {"gpu_probe_basics"};
    assert_null(module_load(GPU_MODULE_NAME, "PSFSIM_GPU_MODULE", hidden, &entry, 1, &st, NULL, 0,
                            err, sizeof err));
    assert_int_equal(st, MODULE_NO_ENTRY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_module), cmocka_unit_test(test_not_a_library),
        cmocka_unit_test(test_missing_entry),  cmocka_unit_test(test_fits_module_loads),
        cmocka_unit_test(test_plot_module),    cmocka_unit_test(test_gpu_module),
        cmocka_unit_test(test_module_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
