/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim --retrieve's --terms (app/retrieve/retrieve_command.h): the j a
 * list gives, in its order; every malformed list refused whole with a
 * message naming the option and the text; the config's convention's
 * range, piston left out. tests/e2e/e2e_retrieve.sh checks the command's
 * exact messages and exit status. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "app/retrieve/retrieve_command.h"

static void test_lists(void **state)
{
    (void)state;
    int j[16];
    char err[512];
    assert_int_equal(retrieve_parse_terms("4-15", j, 16, err, sizeof err), 12);
    for (int i = 0; i < 12; ++i)
        assert_int_equal(j[i], 4 + i);
    static const int want[] = {4, 5, 7, 8, 9, 10, 11, 2};
    assert_int_equal(retrieve_parse_terms("4,5,7-11,2", j, 16, err, sizeof err), 8);
    assert_memory_equal(j, want, sizeof want);
    assert_int_equal(retrieve_parse_terms("0", j, 16, err, sizeof err), 1); /* the syntax's; */
    assert_int_equal(j[0], 0); /* the convention's check refuses it (below) */
    assert_int_equal(retrieve_parse_terms("6-6", j, 16, err, sizeof err), 1);
    assert_int_equal(j[0], 6);
}

static void test_malformed(void **state)
{
    (void)state;
    int j[16];
    char err[512];
    static const struct {
        const char *list, *why;
    } bad[] = {
        {"4,", "an empty entry after the last comma (got \"4,\")"},
        {"4,,5", "an empty entry between two commas (got \"4,,5\")"},
        {",4", "an empty entry before the first comma (got \",4\")"},
        {",", "an empty entry before the first comma (got \",\")"},
        {"", "no terms (got \"\")"},
        {"4-", "the range \"4-\" has no end (got \"4-\")"},
        {"4-,5", "the range \"4-\" has no end (got \"4-,5\")"},
        {"5-4", "the range \"5-4\" runs backwards: write 4-5 (got \"5-4\")"},
        {"-4", "\"-4\" is not a whole number j >= 0 or a range a-b (got \"-4\")"},
        {"4x", "\"4x\" is not a whole number j >= 0 or a range a-b (got \"4x\")"},
        {"4, 5", "\" 5\" is not a whole number j >= 0 or a range a-b (got \"4, 5\")"},
        {"4-5-6", "\"4-5-6\" is not a whole number j >= 0 or a range a-b (got \"4-5-6\")"},
        {"1234567890", "\"1234567890\" is not a whole number j >= 0 or a range a-b"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
        err[0] = '\0';
        assert_int_equal(retrieve_parse_terms(bad[i].list, j, 16, err, sizeof err), -1);
        char want[300];
        snprintf(want, sizeof want, "--terms: %s", bad[i].why);
        if (strncmp(err, want, strlen(want)) != 0) fail_msg("%s: got %s", bad[i].list, err);
        assert_non_null(strstr(err, "; expected j and ranges a-b separated by commas, such as "
                                    "4-15 or 4,5,7-11"));
    }
    assert_int_equal(retrieve_parse_terms("4-6,5", j, 16, err, sizeof err), -1);
    assert_string_equal(err, "--terms: j = 5 listed twice (got \"4-6,5\")");
    assert_int_equal(retrieve_parse_terms("1-17", j, 16, err, sizeof err), -1);
    assert_string_equal(err, "--terms: more than 16 terms (got \"1-17\")");
}

static void test_convention(void **state)
{
    (void)state;
    char err[512];
    static const int tilt[] = {2, 3, 4}, zero[] = {0}, one[] = {1}, far[] = {5152};
    assert_int_equal(retrieve_check_terms(ZCONV_NOLL, "2-4", tilt, 3, err, sizeof err), 0);
    assert_int_equal(retrieve_check_terms(ZCONV_NOLL, "0", zero, 1, err, sizeof err), -1);
    assert_string_equal(err, "--terms: j = 0 is not a Noll index (got \"0\"): Noll indices start "
                             "at 1 (aberrations.convention = \"noll\"), and j = 1, piston, "
                             "changes no image: the terms fitted start at 2");
    assert_int_equal(retrieve_check_terms(ZCONV_FRINGE, "1", one, 1, err, sizeof err), -1);
    assert_string_equal(err, "--terms: j = 1 is piston in the Fringe convention "
                             "(aberrations.convention = \"fringe\"; got \"1\"): it changes no "
                             "image and cannot be fitted; the terms fitted start at 2");
    assert_int_equal(retrieve_check_terms(ZCONV_ANSI, "0", zero, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "j = 0 is piston in the ANSI convention"));
    assert_int_equal(retrieve_check_terms(ZCONV_ANSI, "1", one, 1, err, sizeof err), 0);
    /* Noll 5151 is the last of radial order 100 ((n + 1)(n + 2) / 2) */
    static const int last[] = {5151};
    assert_int_equal(retrieve_check_terms(ZCONV_NOLL, "5151", last, 1, err, sizeof err), 0);
    assert_int_equal(retrieve_check_terms(ZCONV_NOLL, "5152", far, 1, err, sizeof err), -1);
    assert_string_equal(err, "--terms: j = 5152 is beyond radial order 100, the largest supported "
                             "(Noll convention; got \"5152\")");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lists),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_convention),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
