/* SPDX-License-Identifier: BSD-3-Clause */
/* The pieces config_to_json (app/dataset/config_json.c) shares with its groups
 * (app/dataset/config_json_sweep.c, app/dataset/config_json_detector.c). Each returns a new
 * jansson value, or NULL when out of memory (the "steal" calls that take
 * it then fail, so the whole result is NULL). */
#ifndef PSFSIM_CONFIG_JSON_PRIV_H
#define PSFSIM_CONFIG_JSON_PRIV_H

#include <jansson.h>

#include "app/config/config.h"

/* A number, or null where the field holds "not set" (0 or NaN). */
json_t *cj_real_or_null(double v);
/* v[0..n) as an array of reals. */
json_t *cj_reals(const double *v, int n);
/* A list the config may leave out: null when n is 0. */
json_t *cj_list_or_null(const double *v, int n);
/* o with key set to v (taken), or NULL (o and v freed) when o or v is NULL
 * or out of memory: chains of cj_set fail as a whole. */
json_t *cj_set(json_t *o, const char *key, json_t *v);
/* sweep.random and sweep.table in the schema's names: null without them. */
json_t *cj_sweep_random(const psf_config *cfg);
json_t *cj_sweep_table(const psf_config *cfg);
/* The detector group with detector.noise: null without it. */
json_t *cj_detector(const psf_config *cfg);

#endif
