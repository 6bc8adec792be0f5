/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: FITS maps. The input, written to a .fits file, goes
 * through psf_fits_read_image, maps_load_transmission and maps_load_opd
 * (the readers psfsim uses for optics.aperture.file and
 * aberrations.opd_map). Findings: memory errors, undefined behaviour, a
 * message that is not one line naming the file, and accepted data outside
 * the promised ranges. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "app/formats/fits.h"
#include "app/base/log.h"
#include "app/set/maps.h"
#include "fuzz/fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    log_set_level(LOG_QUIET);
    fuzz_dir();
    /* Load the FITS module (fits.h) before fuzzing starts, so that
     * libFuzzer registers its coverage counters with the target's. */
    char err[1024];
    if (fits_module_load(err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_fits_map: %s\n", err);
        exit(1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("map.fits", data, size);
    float *img = NULL;
    int rows = -1, cols = -1;
    char err[1024] = "";
    if (psf_fits_read_image(path, &img, &rows, &cols, err, sizeof err) != 0) {
        fuzz_check_message(err, "map.fits");
        FUZZ_REQUIRE(!img && rows == 0 && cols == 0, "outputs set on error");
    } else {
        FUZZ_REQUIRE(rows > 0 && cols > 0 && (long long)rows * cols <= (1LL << 28), "%d x %d", rows,
                     cols);
    }
    free(img);

    img = NULL;
    err[0] = '\0';
    if (maps_load_transmission(path, &img, &rows, &cols, err, sizeof err) != 0) {
        fuzz_check_message(err, "map.fits");
    } else {
        for (long long i = 0; i < (long long)rows * cols; ++i)
            FUZZ_REQUIRE(img[i] >= 0 && img[i] <= 1, "transmission %g", img[i]);
    }
    free(img);

    img = NULL;
    err[0] = '\0';
    maps_opd_units units;
    if (maps_load_opd(path, 1e35, ZUNITS_NM, &img, &rows, &cols, &units, err, sizeof err) != 0) {
        fuzz_check_message(err, "map.fits");
    } else {
        for (long long i = 0; i < (long long)rows * cols; ++i)
            FUZZ_REQUIRE(isfinite(img[i]), "OPD %g", img[i]);
    }
    free(img);
    return 0;
}
