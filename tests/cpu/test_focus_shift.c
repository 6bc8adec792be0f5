/* SPDX-License-Identifier: BSD-3-Clause */
/* Which way sweep.focus_shift_um moves the detector (docs/design.md,
 * "Aberrations"). The image is |F{A exp(+i 2 pi W/lambda)}|^2 with F the
 * forward transform, the Fraunhofer form of Goodman's Fresnel integral
 * (Introduction to Fourier Optics, 4.2, 5.2: time factor exp(-i 2 pi nu t),
 * pupil and image coordinates on the same axes). By stationary phase the
 * ray from pupil point x reaches the detector at angle theta = dW/dx, so
 * the intensity centroid is the pupil average of dW/dx (exact for the
 * continuous transform). With only the x > 0 half of the pupil open and a
 * positive defocus W = W020 rho^2, the light lands at x > 0: the rays have
 * not yet crossed the axis, the detector is between the pupil and the
 * focus. So a positive focus shift, which gives a positive Noll 4
 * coefficient, is the detector moved towards the pupil (inside focus),
 * as Goodman's W = (1/2)(1/z_detector - 1/z_focus) r^2 (6.4) says. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "optics/wavefront.h"
#include "tests/support/psf_harness.h"
#include "tests/support/testutil.h"

/* F = 10 at 500 nm: dz = 800 um is W020 = dz/(8 F^2) = 1 um = 2 waves. */
#define FOCUS_SHIFT_UM 800.0
#define W020_WAVES 2.0

/* Intensity centroid (row, col) of img relative to the axis pixel (N/2, N/2). */
static void centroid(const float *img, int npix, double *row, double *col)
{
    double s = 0, sr = 0, sc = 0;
    for (int i = 0; i < npix; ++i)
        for (int j = 0; j < npix; ++j) {
            double v = img[(size_t)i * npix + j];
            s += v;
            sr += v * (i - npix / 2);
            sc += v * (j - npix / 2);
        }
    *row = sr / s;
    *col = sc / s;
}

/* One vane of width 0.9999 D pointing to -x closes the x <= 0 half of the
 * pupil (docs/design.md, "Aperture"). The centroid is <dW/dx> over the half
 * disk, 2 W020 <x>/R^2 with <x> = 4R/(3 pi): 16 W020/(3 pi D) radians,
 * 16 w Q/(3 pi) pixels of lambda/(N dx) for w waves at Q = N/n. */
static void test_half_pupil_focus_shift(void **state)
{
    (void)state;
    const char *text = tu_format(
        "name = \"t\"; optics: { wavelength_nm = 500; f_number = 10; aperture: { diameter_m = 1; "
        "spiders: { count = 1; width_m = 0.9999; angle_deg = 180; }; }; }; "
        "sampling: { pupil_samples = 128; padding = 2; }; "
        "sweep: { focus_shift_um = [%.1f, 0.0, %.1f]; };",
        FOCUS_SHIFT_UM, -FOCUS_SHIFT_UM);
    long long nimg;
    int npix;
    float *imgs = harness_compute_all(text, NULL, &nimg, &npix);
    assert_non_null(imgs);
    assert_int_equal(nimg, 3);
    const double want = 16.0 * W020_WAVES * 2.0 / (3.0 * M_PI); /* 6.79 pixels */
    double row[3], col[3];
    for (int k = 0; k < 3; ++k) {
        centroid(imgs + (size_t)k * npix * npix, npix, &row[k], &col[k]);
        printf("focus shift %+.0f um: centroid (%+.3f, %+.3f) pixels\n", FOCUS_SHIFT_UM * (1 - k),
               row[k], col[k]);
        assert_true(fabs(row[k]) < 0.05);
    }
    /* In focus the half pupil's PSF is centred to a fraction of a pixel. */
    assert_true(fabs(col[1]) < 0.5);
    /* +dz: light on the open side, a point of the pupil on its own side of
     * the axis (inside focus); -dz: the rays have crossed (beyond focus). */
    assert_true(fabs(col[0] - col[1] - want) < 0.02 * want);
    assert_true(fabs(col[1] - col[2] - want) < 0.02 * want);
    free(imgs);
}

/* The focus shift is a positive Noll 4 coefficient of W020/(2 sqrt 3):
 * with astigmatism breaking the +/- symmetry of pure defocus, +dz gives the
 * image of +a, not of -a. */
static void test_focus_shift_is_positive_defocus(void **state)
{
    (void)state;
    const double a = wavefront_focus_shift_to_z4_um(FOCUS_SHIFT_UM / 8.0, 10.0) / 0.5; /* waves */
    assert_true(a > 0);
    const char *base = "name = \"t\"; optics: { wavelength_nm = 500; f_number = 10; "
                       "aperture: { diameter_m = 1; }; }; sampling: { pupil_samples = 64; "
                       "padding = 2; };";
    const char *shift = tu_format("%s aberrations: { zernike = ((6, 0.1)); }; "
                                  "sweep: { focus_shift_um = [%.1f]; };",
                                  base, FOCUS_SHIFT_UM / 8.0);
    const char *plus = tu_format("%s aberrations: { zernike = ((4, %.17g), (6, 0.1)); };", base, a);
    const char *minus =
        tu_format("%s aberrations: { zernike = ((4, %.17g), (6, 0.1)); };", base, -a);
    psf_result s, p, m;
    assert_int_equal(harness_compute(shift, 0, NULL, &s), 0);
    assert_int_equal(harness_compute(plus, 0, NULL, &p), 0);
    assert_int_equal(harness_compute(minus, 0, NULL, &m), 0);
    size_t n = (size_t)s.npix * s.npix;
    double dp = tu_rel_l2(s.img, p.img, n), dm = tu_rel_l2(s.img, m.img, n);
    printf("Noll 4 = %.4f waves: relative L2 to +a %.3g, to -a %.3g\n", a, dp, dm);
    assert_true(dp < 1e-5);
    assert_true(dm > 0.1);
    harness_free(&s);
    harness_free(&p);
    harness_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_pupil_focus_shift),
        cmocka_unit_test(test_focus_shift_is_positive_defocus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
