/* SPDX-License-Identifier: BSD-3-Clause */
/* The FITS header of a PSF image: the keywords docs/config.md lists. */
#ifndef PSFSIM_FITS_HEADER_H
#define PSFSIM_FITS_HEADER_H

#include "app/formats/fits.h"
#include "app/set/image_set.h"
#include "app/output/image_result.h"

#define FITS_HEADER_FIXED 54
/* Z<j> keywords one header holds: one per mode of the set (docs/config.md). */
#define FITS_HEADER_ZMAX 256
#define FITS_HEADER_MAX (FITS_HEADER_FIXED + FITS_HEADER_ZMAX + 2 * PSF_MAX_COMPONENTS)

/* Fill kvs (FITS_HEADER_MAX entries) for image info of set s with result
 * res: WAVELEN (m), DIAM (m), NPUPIL, NPIX (the image size), PADDING
 * (N/n; with the MFT 1/PIXSCLLD), PIXSCLLD, PIXELSCL (arcsec), PIXSCLUM
 * and FNUMBER (with f_number) (the pixel of the image's grid: info's pixel_*
 * and sampling_q, which image_set_job filled), PROPAG = "mft" (MFT sets only), NORMALIZ,
 * EEFIELD (normalization "pupil", when info has it: the captured fraction), STREHL, AXIALINT,
 * BACKEND, ZCONV, ZUNITS, CRPIX1/2 = N/2 + 1, a linear WCS in
 * arcsec from the axis (CTYPE1/2 = OFFSET_X/Y, CUNIT1/2 = arcsec, CDELT1/2 =
 * PIXELSCL, CRVAL1/2 = 0), DIFFLMT (lambda/D at REFWAVE, arcsec), FOV (NPIX *
 * PIXELSCL, arcsec), ORIGIN, CREATOR (psfsim and its version), DATE (s's
 * date_utc), CFGHASH (s's config_hash, when filled), BUNIT (blank: relative
 * intensity), OVERSAMP and DET_SAMP (1 and 1 without the detector group),
 * with the group EXTNAME (DET_SAMP | OVERSAMP), DETPIXR, DETJITX/Y,
 * DETDIFF, DETIPC, HISTORY cards
 * of the config and of s's command (when filled: not in the library), NWAVES, WAVE<i> (m), WGHT<i>
 * (the image's components, 0-based: not for the cube's common info), REFWAVE (info's wavelength_nm,
 * m: the pixel's reference) with WAVELEN the weighted mean wavelength, and Z<j> (j in the config's
 * convention) with each mode's total coefficient, for at most FITS_HEADER_ZMAX modes
 * (fits_header_check refuses a FITS set with more). zkeys (FITS_HEADER_MAX) holds the WAVE/WGHT
 * keys from FITS_HEADER_ZMAX on and the Z<j> key strings. Returns the number of entries. */
int fits_header_build(const image_set *s, const image_info *info, const image_result *res,
                      fits_kv *kvs, char (*zkeys)[12]);

/* Before any work, for a set with FITS output: its header holds a Z<j>
 * for every mode, and the cube's PLANES table a column for each too, so
 * a set of more than FITS_HEADER_ZMAX modes is refused, not cut: -1 with
 * "FILE:LINE: KEY: the set has N Zernike terms (...); a FITS header holds
 * at most 256 ..." (KEY: aberrations.zernike or sweep.zernike, the one
 * with more terms), else 0. */
int fits_header_check(const image_set *s, char *err, size_t errlen);

/* Keywords of the NOISY extension (detector.noise, docs/config.md): EXTNAME
 * = 'NOISY', BUNIT = 'adu', then the model's parameters NFLUX (source
 * electrons per unit of the image), NBACKGR (e-/pixel), NREADN (e- RMS),
 * NGAIN (e-/ADU), NBITS, NSEED, and NIMAGE (the image index k of the
 * draws). kvs holds FITS_NOISE_KEYS entries; returns the number filled. */
#define FITS_NOISE_KEYS 9
int fits_header_noise(const psf_config *cfg, long long k, fits_kv *kvs);

#endif
