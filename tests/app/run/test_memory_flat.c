/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory stays flat for any set size: a 20,000-image set runs in a peak RSS
 * (getrusage of the child, ru_maxrss) under a stated bound, and within a few
 * MiB of a 2,000-image set of the same images. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/testutil.h"

#define BOUND_KIB (64 * 1024) /* the stated bound: 64 MiB */

/* A set of n 64x64 images: n defocus values. */
static void write_config(const char *path, int n)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "name = \"m\";\noptics: { wavelength_nm = 500; aperture: { diameter_m = 1; }; };\n"
               "sampling: { pupil_samples = 32; padding = 2.0; };\n"
               "output: { png: { bits = 8; compression = 0; }; };\nsweep: { defocus = [");
    for (int i = 0; i < n; ++i)
        fprintf(f, "%s%.6f", i ? ", " : "", -1.0 + 2.0 * i / (n - 1));
    fprintf(f, "]; };\n");
    fclose(f);
}

/* Run psfsim on a set of n images; return the child's peak RSS in KiB. */
static long run_set(const char *dir, int n)
{
    char cfg[4200], out[4200];
    snprintf(cfg, sizeof cfg, "%s/m%d.cfg", dir, n);
    snprintf(out, sizeof out, "%s/out%d", dir, n);
    write_config(cfg, n);
    const char *bin = getenv("PSFSIM_BIN");
    assert_non_null(bin);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(bin, bin, "-q", "--backend", "cpu", "-c", cfg, "-o", out, (char *)NULL);
        _exit(127);
    }
    int status;
    struct rusage ru;
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(tu_count_entries(out), n + 2); /* images + manifest + timing */
    return ru.ru_maxrss;
}

static void test_rss_flat(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("memory");
    assert_non_null(dir);
    long small = run_set(dir, 2000), big = run_set(dir, 20000);
    printf("peak RSS: 2,000 images %ld KiB, 20,000 images %ld KiB (bound %d KiB)\n", small, big,
           BOUND_KIB);
    assert_true(big < BOUND_KIB);
    assert_true(big - small < 8 * 1024); /* flat: not proportional to the set */
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
#if defined(__SANITIZE_ADDRESS__)
    puts("skipped: AddressSanitizer's shadow memory makes RSS meaningless");
    return 77;
#endif
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_rss_flat)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
