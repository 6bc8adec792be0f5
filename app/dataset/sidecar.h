/* SPDX-License-Identifier: BSD-3-Clause */
/* NAME.json, the sidecar of NAME.h5 (output.hdf5): what a program reading
 * the set needs besides the images and labels, machine-readable (jansson).
 * Written atomically (app/formats/atomic_file.h) at the end of a complete
 * run, a resumed one too. One object:
 *   format "psfsim image set sidecar", format_version 1, name, config_file,
 *   config_hash (the manifest's), date (ISO 8601 UTC),
 *   files {hdf5, manifest, timing},
 *   config      the resolved config (app/dataset/config_json.h),
 *   conventions {zernike_convention, zernike_units, zernike_normalisation,
 *                normalization, centring, orientation, propagation,
 *                propagation_sign, pixel_scale} (app/dataset/hdf5_labels.h's text),
 *   versions    {psfsim, fftw, hdf5, cuda (the toolkit: runtime and cuFFT;
 *                null when the run did not use the GPU)},
 *   machine     {hostname, cpu, cpus, gpus [names the driver lists; empty
 *                when the run did not use the GPU], gpu_devices [CUDA
 *                indices used]},
 *   backend     the backend decision,
 *   set         {nimages, pupil_samples, fft_size, npix, padding,
 *                propagation, diameter_m, f_number (null when unset),
 *                wavelengths_nm, weights, pixel_scale_lambda_d,
 *                pixel_scale_arcsec, pixel_scale_um (the set's pixel at
 *                pixel_wavelength_nm; null where per image or unset)},
 *   labels      {zernike_noll_j [J], zernike_j [J] (in zernike_convention),
 *                zernike_units, columns [labels/NAME of NAME.h5]}. */
#ifndef PSFSIM_SIDECAR_H
#define PSFSIM_SIDECAR_H

#include <stddef.h>

#include "app/dataset/hdf5_labels.h"

/* The devices and decision of the run, beside hdf5_provenance. */
typedef struct {
    hdf5_provenance pv;
    int ndevices; /* CUDA devices the run used (pv.gpu) */
    const int *devices;
} sidecar_run;

/* Write NAME.json for set s in the directory dirfd (dir: its name for
 * messages), atomically through that descriptor (atomic_open_at). 0, or
 * -1 with err (nothing left behind). */
int sidecar_write(const image_set *s, int dirfd, const char *dir, const sidecar_run *run, char *err,
                  size_t errlen);

/* The config_hash of NAME.json in the directory dirfd (not followed when
 * a symbolic link) into out (outlen bytes). 0, or -1 when there is no such
 * file or it holds no config_hash string. */
int sidecar_config_hash(int dirfd, const char *name, char *out, size_t outlen);

#endif
