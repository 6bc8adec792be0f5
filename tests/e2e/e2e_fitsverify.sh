# FITS headers against the standard: fitsverify (HEASARC's, Debian package
# fitsverify) reports no warning and no error on the files psfsim writes: an
# FFT image, an MFT image with the arcsec pixel and "pupil" normalisation
# (EEFIELD), and a FITS cube with its PLANES table. Skips (77) without it.
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
cat >cube.cfg <<CFG
name = "c";
optics: { wavelength_nm = 600; aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 32; };
sweep: { defocus = [0.0, 0.1, 0.2]; };
output: { png: { enabled = false; }; fits: { enabled = true; cube = true; }; };
CFG
for c in fft mft cube; do
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
finish
