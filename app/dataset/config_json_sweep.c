/* SPDX-License-Identifier: BSD-3-Clause */
/* sweep.random and sweep.table as JSON (app/dataset/config_json_priv.h), in the
 * schema's key names (docs/config.md, "Random sets", "Listed sets"). */
#include "app/dataset/config_json_priv.h"

/* Terms of sweep.random.zernike or .segment_zernike as written:
 * [[j, "normal" | "uniform", width], ...] (j in the config's convention,
 * width in the config's units), or null without terms. */
static json_t *random_terms(const cfg_random_term *t, int n)
{
    if (n == 0) return json_null();
    json_t *a = json_array();
    for (int i = 0; a && i < n; ++i)
        if (json_array_append_new(a, json_pack("[i, s, f]", t[i].j,
                                               t[i].dist == CFG_DRAW_UNIFORM ? "uniform" : "normal",
                                               t[i].width)) != 0) {
            json_decref(a);
            a = NULL;
        }
    return a;
}

/* sweep.random.spectrum {j_min, j_max, total_rms, power}, or null. */
static json_t *spectrum(const cfg_random *r)
{
    if (!r->spectrum) return json_null();
    return json_pack("{s:i, s:i, s:f, s:f}", "j_min", r->spectrum_j_min, "j_max", r->spectrum_j_max,
                     "total_rms", r->spectrum_total_rms, "power", r->spectrum_power);
}

json_t *cj_sweep_random(const psf_config *cfg)
{
    const cfg_random *r = &cfg->random;
    if (r->count == 0) return json_null();
    return json_pack("{s:I, s:I, s:o, s:o, s:o, s:o, s:o}", "count", (json_int_t)r->count, "seed",
                     (json_int_t)r->seed, "zernike", random_terms(r->zernike, r->nzernike),
                     "segment_zernike", random_terms(r->seg_zernike, r->nseg_zernike), "spectrum",
                     spectrum(r), "focus_shift_um",
                     cj_list_or_null(r->focus_shift_um, r->n_focus_shift), "wavelength_nm",
                     cj_list_or_null(r->wavelength_nm, r->n_wavelength));
}

/* The resolved path; the table's columns are the sidecar's labels.columns
 * (app/dataset/sidecar.c), read from the file, not the config. */
json_t *cj_sweep_table(const psf_config *cfg)
{
    return cfg->table_file[0] ? json_string(cfg->table_file) : json_null();
}
