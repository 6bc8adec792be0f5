/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector group and detector.noise as JSON (app/dataset/config_json_priv.h),
 * in the schema's key names (docs/config.md, "Detector", "Noise"). */
#include "app/dataset/config_json_priv.h"

/* A jitter sigma [x, y] (the pair the config reads, one value given as
 * both), or null when none (both 0). */
static json_t *sigma_pair(const double v[2])
{
    return v[0] != 0.0 || v[1] != 0.0 ? cj_reals(v, 2) : json_null();
}

/* detector.noise {flux_photons, background_e, read_noise_e,
 * gain_e_per_adu, bits, seed} after its defaults, or null. */
static json_t *noise(const cfg_noise *n)
{
    if (!n->enabled) return json_null();
    return json_pack("{s:f, s:f, s:f, s:f, s:i, s:I}", "flux_photons", n->flux_photons,
                     "background_e", n->background_e, "read_noise_e", n->read_noise_e,
                     "gain_e_per_adu", n->gain_e_per_adu, "bits", n->bits, "seed",
                     (json_int_t)n->seed);
}

json_t *cj_detector(const psf_config *cfg)
{
    static const char *const writes[] = {"detector", "oversampled", "both"}; /* det_write's order */
    const cfg_detector *d = &cfg->detector;
    if (!d->enabled) return json_null();
    return json_pack("{s:i, s:b, s:o, s:o, s:o, s:o, s:s, s:o}", "oversample", d->oversample,
                     "pixel_response", d->pixel_response, "jitter_mas", sigma_pair(d->jitter_mas),
                     "jitter_lambda_d", sigma_pair(d->jitter_ld), "charge_diffusion_px",
                     cj_real_or_null(d->diffusion_px), "ipc",
                     d->ipc ? cj_reals(d->ipc_kernel, 9) : json_null(), "write", writes[d->write],
                     "noise", noise(&cfg->noise));
}
