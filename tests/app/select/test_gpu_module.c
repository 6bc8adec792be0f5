/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU module's versioned table (backend/gpu_abi.h): a module
 * whose table is of another psfsim version is refused with a message that
 * names it, and nothing of it is used. The module is loaded once per
 * process, hence a program of its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/module_loader.h"
#include "app/select/gpu.h"

static void test_stale_module_refused(void **state)
{
    (void)state;
    const char *stale = getenv("PSFSIM_STALE_GPU_MODULE"); /* tests/CMakeLists.txt */
    assert_non_null(stale);
    setenv("PSFSIM_GPU_MODULE", stale, 1);
    assert_true(gpu_module_present()); /* the file is there... */
    assert_null(psf_backend_gpu());    /* ...but its table is not taken */
    char want[MODULE_PATH_MAX + 100], err[1024] = "";
    snprintf(want, sizeof want, "cannot load the CUDA backend: %s is of another psfsim version",
             stale);
    assert_string_equal(gpu_module_error(), want);
    gpu_basics gb;
    assert_int_equal(gpu_module_probe(&gb, err, sizeof err), -1);
    assert_string_equal(err, want);
    unsetenv("PSFSIM_GPU_MODULE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stale_module_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
