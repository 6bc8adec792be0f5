/* SPDX-License-Identifier: BSD-3-Clause */
/* --gpus: parsing "all" and device lists, resolving them against the
 * devices visible, and the command line around them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "app/run/cli.h"
#include "app/select/gpu_list.h"

static void test_parse(void **state)
{
    (void)state;
    gpu_list l;
    char err[256];
    assert_int_equal(gpu_list_parse("all", &l, err, sizeof err), 0);
    assert_true(l.all);
    assert_int_equal(gpu_list_parse("0,2", &l, err, sizeof err), 0);
    assert_false(l.all);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.dev[0], 0);
    assert_int_equal(l.dev[1], 2);
    assert_int_equal(gpu_list_parse("7", &l, err, sizeof err), 0);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.dev[0], 7);
    static const char *const bad[] = {"",   ",",  "0,", ",1",   "0,,1", "a",
                                      "1a", "-1", " 1", "1000", "ALL",  "0;1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
        err[0] = '\0';
        assert_int_equal(gpu_list_parse(bad[i], &l, err, sizeof err), -1);
        assert_non_null(strstr(err, "--gpus"));
    }
    assert_int_equal(gpu_list_parse("1,0,1", &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "device 1 listed twice"));
    assert_int_equal(
        gpu_list_parse("0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "at most 16"));
    assert_int_equal(gpu_list_parse("x\ty", &l, err, sizeof err), -1);
    assert_null(strchr(err, '\t')); /* one line of text */
}

static void test_resolve(void **state)
{
    (void)state;
    gpu_list l;
    int dev[GPU_LIST_MAX], n;
    char err[256], buf[64];
    gpu_list_all(&l);
    assert_int_equal(gpu_list_resolve(&l, 2, dev, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(gpu_list_format(dev, n, buf, sizeof buf), "0,1");
    assert_int_equal(gpu_list_resolve(&l, 40, dev, &n, err, sizeof err), 0);
    assert_int_equal(n, GPU_LIST_MAX); /* at most what one process drives */
    assert_int_equal(gpu_list_parse("3,1", &l, err, sizeof err), 0);
    assert_int_equal(gpu_list_resolve(&l, 4, dev, &n, err, sizeof err), 0);
    assert_string_equal(gpu_list_format(dev, n, buf, sizeof buf), "3,1");
    assert_int_equal(gpu_list_resolve(&l, 2, dev, &n, err, sizeof err), -1);
    assert_string_equal(err, "--gpus: device 3 asked for, but 2 are visible (0..1)");
    assert_int_equal(n, 0);
    assert_int_equal(gpu_list_parse("1", &l, err, sizeof err), 0);
    assert_int_equal(gpu_list_resolve(&l, 1, dev, &n, err, sizeof err), -1);
    assert_string_equal(err, "--gpus: device 1 asked for, but 1 is visible (0..0)");
}

static void test_command_line(void **state)
{
    (void)state;
    cli_options o;
    char err[256];
    char *a1[] = {"psfsim", "-c", "x.cfg", NULL};
    assert_int_equal(cli_parse(3, a1, &o, err, sizeof err), 0);
    assert_true(o.gpus.all); /* the default: every visible GPU */
    assert_false(o.gpus_given);
    char *a2[] = {"psfsim", "-c", "x.cfg", "--gpus", "0,1", NULL};
    assert_int_equal(cli_parse(5, a2, &o, err, sizeof err), 0);
    assert_true(o.gpus_given);
    assert_int_equal(o.gpus.n, 2);
    char *a3[] = {"psfsim", "-c", "x.cfg", "--gpus=x", NULL};
    assert_int_equal(cli_parse(4, a3, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad entry \"x\""));
    /* With the CPU backend the list is simply not used (also when the
     * config says backend = "cpu"): no error. */
    char *a4[] = {"psfsim", "-c", "x.cfg", "-g", "1", "--backend", "cpu", NULL};
    assert_int_equal(cli_parse(7, a4, &o, err, sizeof err), 0);
    assert_int_equal(o.gpus.dev[0], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_command_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
