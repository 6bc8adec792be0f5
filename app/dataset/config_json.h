/* SPDX-License-Identifier: BSD-3-Clause */
/* A loaded config as JSON (jansson), for the sidecar NAME.json: every key's
 * value as psf_config holds it after the defaults, in objects mirroring the
 * config's groups (docs/config.md): name, optics {wavelengths_nm, weights,
 * f_number, aperture {shape, diameter_m, obscuration, spiders {count,
 * width_m, angle_deg}, edge, file}}, sampling, aberrations {convention,
 * units, zernike [[j, coeff], ...], opd_map {file, units, scale}},
 * normalization, sweep {wavelength_nm, defocus, focus_shift_um, zernike
 * [[j, [values]], ...]}, output {dir, npix, pixel_scale, pixel_scale_um,
 * png {...}, fits {...}, hdf5 {...}}, backend, then the keys added after
 * (each at the end of its group, in the schema's names: aperture
 * {spiders.vanes, obscuration_shape, angle_deg, segments, pixel_scale_m},
 * sweep {segment_zernike, random {...}, table}, output
 * {pixel_scale_arcsec, orientation, psf_grid}, detector {..., noise {...}};
 * docs/config.md, "NAME.h5 and NAME.json"). A key the config leaves
 * unset where psf_config holds "not set" (f_number, output.npix,
 * pixel_scale, pixel_scale_um, file paths, a sweep axis, a group not
 * given) is null. */
#ifndef PSFSIM_CONFIG_JSON_H
#define PSFSIM_CONFIG_JSON_H

#include <jansson.h>

#include "app/config/config.h"

/* The new object (the caller json_decref's it), or NULL when out of memory. */
json_t *config_to_json(const psf_config *cfg);

#endif
