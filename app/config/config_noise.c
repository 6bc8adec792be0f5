/* SPDX-License-Identifier: BSD-3-Clause */
/* detector.noise { flux_photons, background_e, read_noise_e, gain_e_per_adu,
 * bits, seed }: the noise of a simulated exposure (docs/config.md,
 * "detector.noise"; the model is app/set/noise.h's). */
#include <stdint.h>

#include "app/config/config_priv.h"

/* Bounds where the model means something in binary64: a pixel's mean
 * (flux x value + background) stays far below 2^53, so Poisson counts are
 * exact integers. */
#define NOISE_MAX_FLUX 1e15
#define NOISE_MAX_BACKGROUND 1e12
#define NOISE_MAX_READ 1e6
#define NOISE_MIN_GAIN 1e-6
#define NOISE_MAX_GAIN 1e6

static int read_bounded(cfg_ctx *c, const char *key, double lo, int lo_open, double hi, double *v)
{
    int r = cfg_read_float(c, key, lo, lo_open, v);
    if (r < 0) return -1;
    return r == 1 ? cfg_bound_key(c, key, *v, lo, hi, NULL) : 0;
}

int config_noise_read(cfg_ctx *c, psf_config *cfg)
{
    cfg_noise *n = &cfg->noise;
    n->enabled = cfg_get(c, "detector.noise") != NULL;
    n->flux_photons = 1e5;
    n->background_e = 10.0;
    n->read_noise_e = 5.0;
    n->gain_e_per_adu = 2.0;
    n->bits = 16;
    n->seed = 1;
    if (!n->enabled) return 0;
    if (read_bounded(c, "detector.noise.flux_photons", 0.0, 0, NOISE_MAX_FLUX, &n->flux_photons) ||
        read_bounded(c, "detector.noise.background_e", 0.0, 0, NOISE_MAX_BACKGROUND,
                     &n->background_e) ||
        read_bounded(c, "detector.noise.read_noise_e", 0.0, 0, NOISE_MAX_READ, &n->read_noise_e) ||
        read_bounded(c, "detector.noise.gain_e_per_adu", NOISE_MIN_GAIN, 0, NOISE_MAX_GAIN,
                     &n->gain_e_per_adu))
        return -1;
    long long bits = 16, seed = 1;
    if (cfg_read_int(c, "detector.noise.bits", 1, 16, &bits) < 0) return -1;
    if (cfg_read_int(c, "detector.noise.seed", 0, INT64_MAX, &seed) < 0) return -1;
    n->bits = (int)bits;
    n->seed = (unsigned long long)seed;
    if (!cfg->fits_enabled && !cfg->hdf5_enabled)
        return cfg_error(c, cfg_get(c, "detector.noise"), "detector.noise",
                         "needs output.fits.enabled = true or output.hdf5.enabled = true: the "
                         "noisy images are each image's FITS file's NOISY extension and "
                         "NAME.h5's noisy dataset (not written to PNG)");
    /* The cube is one float32 HDU of the planes and the PLANES table, the
     * layout --resume checks before it keeps a cube and --retrieve reads:
     * the noisy ADU would be a second image HDU every reader must be told
     * of. The two files that hold them say where to go instead. */
    if (cfg->fits_cube)
        return cfg_error(c, cfg_get(c, "detector.noise"), "detector.noise",
                         "not with output.fits.cube (the cube holds the noiseless float32 "
                         "images only): set output.fits.cube = false for each NAME_k.fits "
                         "with its noisy image as the NOISY extension, or output.hdf5.enabled "
                         "= true for all the noisy images in one file (NAME.h5's dataset "
                         "\"noisy\"); to fit them with psfsim --retrieve, stack them into one "
                         "cube (docs/config.md, \"Retrieving from noisy images\")");
    return 0;
}
