/* SPDX-License-Identifier: BSD-3-Clause */
/* configs/elt_segments.cfg (written by bench/pupil_bench.c --config): the
 * ELT-like primary of exactly 798 segments, 17 rings (the most rings a
 * segmented aperture takes), a central hole of the 37 innermost, and the
 * diameter holding every present segment; its analytic area is 798
 * hexagons of 1.2557 m flat to flat. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "app/config/config.h"
#include "optics/aperture.h"
#include "tests/support/testutil.h"

static void test_elt_segments(void **state)
{
    (void)state;
    char path[4200], err[2048];
    snprintf(path, sizeof path, "%s/configs/elt_segments.cfg", tu_source_dir());
    psf_config cfg;
    if (config_load(path, &cfg, err, sizeof err) != 0) fail_msg("%s", err);
    const psf_aperture *a = &cfg.aperture;
    assert_int_equal(a->shape, APERTURE_SEGMENTED);
    assert_int_equal(a->seg.rings, APERTURE_SEG_MAX_RINGS);
    int present = 0, hole = 0;
    for (int k = 0; k < aperture_segment_count(a->seg.rings); ++k) {
        int in = !((a->seg.missing[k / 64] >> (k % 64)) & 1ULL);
        present += in;
        hole += k < 37 && !in; /* rings 0..3: segments 0..36 */
    }
    assert_int_equal(present, 798);
    assert_int_equal(hole, 37);
    assert_true(fabs(a->diameter_m - 2.0 * aperture_segments_radius(&a->seg)) < 1e-9);
    assert_true(a->diameter_m > 39.0 && a->diameter_m < 40.0);
    const double f = 1.45 * sqrt(3.0) / 2.0; /* 1.45 m corner to corner */
    assert_true(fabs(a->seg.flat_to_flat_m - f) < 1e-6);
    assert_true(fabs(aperture_area_m2(a) - 798 * sqrt(3.0) / 2.0 * f * f) < 1e-3);
    config_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_elt_segments)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
