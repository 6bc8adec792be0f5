/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the config loader (config_load on a file holding the
 * input, as psfsim -c reads it), then, for a valid config with a small
 * grid, the image set it describes (image_set_init, image_set_job for the
 * first and last image). Findings: memory errors (ASan), undefined
 * behaviour (UBSan), an error without a one-line message naming the file,
 * and a config accepted outside the ranges config.h promises. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app/config/config.h"
#include "app/set/image_set.h"
#include "app/base/log.h"
#include "fuzz/fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    log_set_level(LOG_QUIET);
    fuzz_dir();
    return 0;
}

/* What config.h promises of a loaded config. */
static void check_config(const psf_config *c)
{
    FUZZ_REQUIRE(c->name[0] &&
                     strspn(c->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789_.-") == strlen(c->name),
                 "name \"%s\"", c->name);
    FUZZ_REQUIRE(c->pupil_samples >= 8 && c->pupil_samples <= 65536, "n = %d", c->pupil_samples);
    FUZZ_REQUIRE(isfinite(c->padding) && c->padding >= 1.0, "padding %g", c->padding);
    FUZZ_REQUIRE(floor(c->padding * c->pupil_samples + 0.5) <= 65536, "N too large");
    FUZZ_REQUIRE(c->nwavelengths >= 1 && c->nwavelengths <= PSF_MAX_COMPONENTS, "%d wavelengths",
                 c->nwavelengths);
    double wsum = 0;
    for (int i = 0; i < c->nwavelengths; ++i) {
        FUZZ_REQUIRE(isfinite(c->wavelengths_nm[i]) && c->wavelengths_nm[i] > 0, "wavelength %g",
                     c->wavelengths_nm[i]);
        FUZZ_REQUIRE(c->weights[i] >= 0, "weight %g", c->weights[i]);
        wsum += c->weights[i];
    }
    FUZZ_REQUIRE(fabs(wsum - 1.0) < 1e-9, "weights sum to %.17g", wsum);
    long long k = config_image_count(c);
    FUZZ_REQUIRE(k >= 1 && k <= 10000000LL, "%lld images", k);
    FUZZ_REQUIRE(c->png_bits == 8 || c->png_bits == 16, "bits %d", c->png_bits);
    FUZZ_REQUIRE(c->png_enabled || c->fits_enabled || c->hdf5_enabled, "nothing to write");
    FUZZ_REQUIRE(isfinite(c->aperture.diameter_m) && c->aperture.diameter_m > 0, "D %g",
                 c->aperture.diameter_m);
    FUZZ_REQUIRE(c->aperture.obscuration >= 0 && c->aperture.obscuration < 1, "obscuration %g",
                 c->aperture.obscuration);
    for (int i = 0; i < c->nzernike; ++i)
        for (int j = 0; j < i; ++j)
            FUZZ_REQUIRE(c->zernike[i].j != c->zernike[j].j, "duplicate j %d", c->zernike[i].j);
}

/* The first and last image of a small set: jobs, coefficients and the
 * normalisation must come out finite for every accepted config. */
static void check_set(const psf_config *c)
{
    image_set s;
    char err[1024] = "";
    if (image_set_init(&s, c, err, sizeof err) != 0) {
        fuzz_check_message(err, NULL);
        image_set_free(&s);
        return;
    }
    size_t per = image_set_storage(&s);
    double *storage = calloc(per, sizeof *storage);
    psf_job *job = calloc(1, sizeof *job);
    image_info info;
    FUZZ_REQUIRE(storage && job, "out of memory");
    long long last[2] = {0, s.nimages - 1};
    for (int i = 0; i < 2; ++i) {
        err[0] = '\0';
        if (image_set_job(&s, last[i], storage, job, &info, err, sizeof err) != 0) {
            fuzz_check_message(err, NULL);
            continue;
        }
        FUZZ_REQUIRE(job->ncomp >= 1 && job->ncomp <= PSF_MAX_COMPONENTS, "%d components",
                     job->ncomp);
        for (int j = 0; j < job->ncomp; ++j)
            FUZZ_REQUIRE(isfinite(job->comp[j].scale) && job->comp[j].scale >= 0 &&
                             isfinite(job->comp[j].dx_m) && job->comp[j].dx_m > 0,
                         "component %d: scale %g, dx %g", j, job->comp[j].scale, job->comp[j].dx_m);
    }
    free(job);
    free(storage);
    image_set_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("fuzz.cfg", data, size);
    psf_config cfg;
    char err[1024] = "";
    if (config_load(path, &cfg, err, sizeof err) != 0) {
        fuzz_check_message(err, "fuzz.cfg");
    } else {
        check_config(&cfg);
        /* Grids up to 64 x 64 only: the aperture sums are N^2 work. */
        if (floor(cfg.padding * cfg.pupil_samples + 0.5) <= 64) check_set(&cfg);
    }
    config_free(&cfg);
    return 0;
}
