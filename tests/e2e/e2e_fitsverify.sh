# SPDX-License-Identifier: BSD-3-Clause
# FITS headers against the standard: fitsverify (HEASARC's, Debian package
# fitsverify) reports no warning and no error on the files psfsim writes: an
# FFT image, an MFT image with the arcsec pixel and "pupil" normalisation
# (EEFIELD), a broadband image (NWAVES, WAVE<i>, WGHT<i>) and a FITS cube
# with its PLANES table, detector-sampled and oversampled images (the
# detector group's keywords, BUNIT, HISTORY); DATE follows SOURCE_DATE_EPOCH (lib_e2e.sh). Skips
# (77) without fitsverify.
source "$(dirname "$0")/lib_e2e.sh"
command -v fitsverify >/dev/null || { echo "skip: no fitsverify"; exit 77; }
cat >fft.cfg <<CFG
name = "a";
optics: { wavelength_nm = 600; f_number = 10; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; };
aberrations: { zernike = ((4, 0.1), (8, 0.05)); };
output: { png: { enabled = false; }; fits: { enabled = true; }; };
CFG
cat >mft.cfg <<CFG
name = "b";
optics: { wavelength_nm = 1650; aperture: { diameter_m = 8.2; }; };
sampling: { pupil_samples = 32; };
normalization = "pupil";
output: { npix = 40; pixel_scale_arcsec = 0.01225; png: { enabled = false; }; fits: { enabled = true; }; };
CFG
cat >broad.cfg <<CFG
name = "w";
optics: { wavelengths_nm = [500.0, 600.0, 700.0]; weights = [1.0, 2.0, 1.0]; aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 32; };
output: { png: { enabled = false; }; fits: { enabled = true; }; };
CFG
cat >cube.cfg <<CFG
name = "c";
optics: { wavelength_nm = 600; aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 32; };
sweep: { defocus = [0.0, 0.1, 0.2]; };
output: { png: { enabled = false; }; fits: { enabled = true; cube = true; }; };
CFG
cat >det.cfg <<CFG
name = "d";
optics: { wavelength_nm = 600; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; };
output: { png: { enabled = false; }; fits: { enabled = true; }; };
detector: { oversample = 4; jitter_mas = [5.0, 8.0]; charge_diffusion_px = 0.25;
            ipc = [0.0, 0.02, 0.0, 0.02, 0.92, 0.02, 0.0, 0.02, 0.0]; };
CFG
sed 's/name = "d"/name = "o"/; s/ipc =/write = "oversampled"; ipc =/' det.cfg >over.cfg
for c in fft mft broad cube det over; do
  expect_exit 0 "$c set" -- "$PSFSIM" -q --backend cpu -c $c.cfg -o out_$c
  for f in out_$c/*.fits; do
    log=$(fitsverify "$f" 2>&1)
    if echo "$log" | grep -q "found 0 warning(s) and 0 error(s)"; then
      pass "fitsverify: $(basename "$f") clean"
    else
      fail "fitsverify: $(basename "$f")"; echo "$log" | tail -20
    fi
  done
done
# A header card's value: key=value text from the first 36 cards x 4 blocks.
card() { head -c 11520 "$1" | fold -w 80 | sed -n "s/^$2 *= *\([^/]*\).*/\1/p" | tr -d "' " | head -1; }
[ "$(card out_fft/a_0.fits DATE)" = "2023-11-14T22:13:20" ] && pass "DATE from SOURCE_DATE_EPOCH" ||
  fail "DATE: $(card out_fft/a_0.fits DATE)"
h=$(cut -d, -f17 out_fft/a_manifest.csv | tail -1)
[ -n "$h" ] && [ "$(card out_fft/a_0.fits CFGHASH)" = "$h" ] && pass "CFGHASH = the manifest's config_hash" ||
  fail "CFGHASH $(card out_fft/a_0.fits CFGHASH), manifest $h"
[ "$(card out_broad/w_0.fits NWAVES)" = 3 ] && [ "$(card out_broad/w_0.fits WGHT1)" = 0.5 ] &&
  pass "broadband NWAVES, WGHT1" || fail "NWAVES $(card out_broad/w_0.fits NWAVES) WGHT1 $(card out_broad/w_0.fits WGHT1)"
awk -v w="$(card out_broad/w_0.fits WAVELEN)" -v r="$(card out_broad/w_0.fits REFWAVE)" \
  'BEGIN { exit !(w > 5.99e-7 && w < 6.01e-7 && r > 4.99e-7 && r < 5.01e-7) }' &&
  pass "WAVELEN the weighted mean, REFWAVE the shortest" || fail "WAVELEN/REFWAVE"
# The detector keywords (docs/config.md, "Detector"), BUNIT and HISTORY.
[ "$(card out_det/d_0.fits EXTNAME)" = DET_SAMP ] && [ "$(card out_det/d_0.fits OVERSAMP)" = 1 ] &&
  [ "$(card out_det/d_0.fits DET_SAMP)" = 4 ] && [ "$(card out_det/d_0.fits NAXIS1)" = 64 ] &&
  pass "detector image: EXTNAME DET_SAMP, OVERSAMP 1, DET_SAMP 4, 64 pixels" ||
  fail "detector image: $(card out_det/d_0.fits EXTNAME) $(card out_det/d_0.fits OVERSAMP) $(card out_det/d_0.fits NAXIS1)"
[ "$(card out_over/o_0.fits EXTNAME)" = OVERSAMP ] && [ "$(card out_over/o_0.fits OVERSAMP)" = 4 ] &&
  [ "$(card out_over/o_0.fits NAXIS1)" = 256 ] &&
  pass "oversampled image: EXTNAME OVERSAMP, OVERSAMP 4, 256 pixels" ||
  fail "oversampled image: $(card out_over/o_0.fits EXTNAME) $(card out_over/o_0.fits OVERSAMP)"
head -c 2880 out_det/d_0.fits | fold -w 80 | grep -aq "^BUNIT   = '        '" && pass "BUNIT '' (blank)" || fail "no BUNIT"
head -c 11520 out_det/d_0.fits | fold -w 80 | grep -aq "^HISTORY psfsim config: det.cfg" &&
  head -c 11520 out_det/d_0.fits | fold -w 80 | grep -aq "^HISTORY psfsim command: psfsim -c det.cfg" &&
  pass "HISTORY: the config and the command" || fail "HISTORY cards"
finish
