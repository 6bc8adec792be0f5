# SPDX-License-Identifier: BSD-3-Clause
# psfsim --retrieve DATA.fits -c MODEL.cfg (issue 28): a through-focus set
# with known Noll 4..11 written as a FITS cube (output.fits.cube) by
# psfsim itself is fitted with the same config without the aberrations:
# the coefficients come back (to 1e-3 waves), NAME_retrieve.json and
# NAME_residuals.fits are written to -o DIR; --fit-opd-map fits a model's
# OPD map too (in the JSON); a cube of the wrong shape,
# a bad --terms and retrieval options without --retrieve are usage errors
# that write nothing.
source "$(dirname "$0")/lib_e2e.sh"
expect_message() { # DESCRIPTION MESSAGE: the last command's first stderr line is "psfsim: MESSAGE"
  if [ "$(head -n 1 "$SCRATCH/stderr")" = "psfsim: $2" ]; then pass "$1: message"; else
    fail "$1: stderr $(head -n 1 "$SCRATCH/stderr"), expected psfsim: $2"; fi
}

base='optics: { wavelength_nm = 600.0; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; padding = 2.0; };
sweep: { defocus = [-0.5, 0.0, 0.5]; };'
printf 'name = "truth";\n%s\naberrations: { zernike = ( (4, 0.03), (5, -0.05), (6, 0.04), (7, 0.02), (8, -0.03), (9, 0.025), (10, -0.02), (11, 0.015) ); };\noutput: { dir = "truth"; png: { enabled = false; }; fits: { enabled = true; cube = true; }; };\n' "$base" >truth.cfg
printf 'name = "model";\n%s\n' "$base" >model.cfg
expect_exit 0 "the measured cube" -- "$PSFSIM" -c truth.cfg -q
[ -f truth/truth_cube.fits ] && pass "truth_cube.fits" || fail "no truth/truth_cube.fits"

expect_exit 0 "--retrieve" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --terms 4-11 -o fit
grep -q "Z5 *-0.0500" "$SCRATCH/stdout" && pass "Z5 printed" || fail "stdout: $(cat "$SCRATCH/stdout")"
[ -f fit/model_retrieve.json ] && [ -f fit/model_residuals.fits ] && pass "the JSON and the residuals" ||
  fail "fit/: $(ls fit 2>&1 | tr '\n' ' ')"
if command -v python3 >/dev/null; then
  python3 - fit/model_retrieve.json <<'PY' && pass "the JSON's coefficients within 1e-3 waves" || fail "the JSON's coefficients"
import json, sys
r = json.load(open(sys.argv[1]))
truth = [0.03, -0.05, 0.04, 0.02, -0.03, 0.025, -0.02, 0.015]
assert r["terms"] == list(range(4, 12)), r["terms"]
err = sum((a - b) ** 2 for a, b in zip(r["coefficients"], truth)) ** 0.5
assert err < 1e-3, err
assert len(r["uncertainties"]) == 8 and len(r["covariance"]) == 8 and len(r["flux"]) == 3
assert r["history"] and r["history"][-1] < r["history"][0] and r["iterations"] == len(r["history"])
PY
fi

# --fit-opd-map: a model with an OPD map (16 x 16 FITS, 0 but for a corner
# outside the aperture: the config refuses a map of zeros) fitted too; the
# JSON holds the map and its regularisation.
if command -v python3 >/dev/null; then
  python3 - <<'PY'
import struct
cards = ["SIMPLE  = %20s" % "T", "BITPIX  = %20d" % -32, "NAXIS   = %20d" % 2,
         "NAXIS1  = %20d" % 16, "NAXIS2  = %20d" % 16, "END"]
head = "".join(c.ljust(80) for c in cards).encode()
head += b" " * (-len(head) % 2880)
data = struct.pack(">256f", *([1e-6] + [0.0] * 255))
open("zero16.fits", "wb").write(head + data + b"\0" * (-len(data) % 2880))
PY
  printf 'name = "mapfit";\n%s\naberrations: { opd_map: { file = "zero16.fits"; units = "nm"; }; };\n' "$base" >mapfit.cfg
  expect_exit 0 "--fit-opd-map" -- "$PSFSIM" -c mapfit.cfg --retrieve truth/truth_cube.fits --terms 4-11 --fit-opd-map 1e-3 -o fitmap -q
  python3 - fitmap/mapfit_retrieve.json <<'PY' && pass "the JSON's map" || fail "the JSON's map"
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["opd_map"]) == 16 and len(r["opd_map"][0]) == 16
assert r["options"]["opd_regularization"] == 1e-3
assert max(abs(v) for row in r["opd_map"] for v in row) > 0
PY
  expect_exit 2 "--fit-opd-map without a map" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --fit-opd-map 1 -o bad
  expect_stderr "fit_opd_map: the set has no aberrations.opd_map" "--fit-opd-map without a map: message"
fi
expect_exit 2 "--fit-opd-map 0" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --fit-opd-map 0
expect_stderr "--fit-opd-map: expected a regularisation > 0" "--fit-opd-map 0: message"

# A set of one image read from a 2-D FITS file (psfsim's own NAME_0.fits):
# coma alone, which an in-focus image fixes (odd terms have no twin).
one='optics: { wavelength_nm = 600.0; aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 32; padding = 2.0; };'
printf 'name = "coma";\n%s\naberrations: { zernike = ( (7, 0.05) ); };\noutput: { dir = "coma"; png: { enabled = false; }; fits: { enabled = true; }; };\n' "$one" >coma.cfg
printf 'name = "one";\n%s\n' "$one" >one.cfg
expect_exit 0 "one image" -- "$PSFSIM" -c coma.cfg -q
expect_exit 0 "--retrieve of one 2-D image" -- "$PSFSIM" -c one.cfg --retrieve coma/coma_0.fits --terms 7 -o fitone
grep -q "Z7 *+0.0500" "$SCRATCH/stdout" && pass "one image: Z7 0.05" || fail "one image: $(cat "$SCRATCH/stdout")"

# NAME_retrieve.json's options: the values given and those the fit used
# (uniform: sigma 0 means 1, no gain; photon: gain 0 means 1, the read
# noise as given, 2 passes).
if command -v python3 >/dev/null; then
  python3 - fit/model_retrieve.json <<'PY' && pass "options: uniform, nothing given" || fail "options: uniform"
import json, sys
o = json.load(open(sys.argv[1]))["options"]
assert o == {"noise": "uniform", "sigma_given": 0.0, "gain_given": 0.0, "sigma_used": 1.0,
             "gain_used": None, "variance": "sigma_used^2", "passes": 1, "fit_flux": True,
             "fit_background": False}, o
PY
  expect_exit 0 "--noise photon --gain 0" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --terms 4-11 --noise photon --sigma 0.5 --gain 0 --fit-background -o photon0 -q
  python3 - photon0/model_retrieve.json <<'PY' && pass "options: photon, gain 0 used as 1" || fail "options: photon"
import json, sys
o = json.load(open(sys.argv[1]))["options"]
assert o == {"noise": "photon", "sigma_given": 0.5, "gain_given": 0.0, "sigma_used": 0.5,
             "gain_used": 1.0,
             "variance": "max(model, 0) / gain_used + sigma_used^2, at least 1 / gain_used",
             "passes": 2, "fit_flux": True, "fit_background": True}, o
PY
  expect_exit 0 "--sigma 3" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --terms 4-11 --sigma 3 --gain 7 -o sigma3 -q
  python3 - sigma3/model_retrieve.json <<'PY' && pass "options: uniform --sigma 3 (--gain unused: null)" || fail "options: --sigma 3"
import json, sys
o = json.load(open(sys.argv[1]))["options"]
assert (o["sigma_given"], o["sigma_used"], o["gain_given"], o["gain_used"]) == (3.0, 3.0, 7.0, None), o
PY
fi

# An earlier retrieval is not replaced without --force (as a set is not):
# exit 2 before the fit, its files untouched; a symbolic link planted at
# either name is never followed, with --force replaced by the file.
cp fit/model_retrieve.json before.json
expect_exit 2 "a second retrieval into fit/" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --terms 4-5 -o fit
expect_message "a second retrieval into fit/" 'output directory fit already holds a retrieval of set "model" (model_retrieve.json and model_residuals.fits); use --force to overwrite it or -o to choose another directory'
cmp -s before.json fit/model_retrieve.json && [ ! -s "$SCRATCH/stdout" ] && pass "refused: the JSON untouched, nothing fitted" ||
  fail "refused: the JSON changed or a fit ran"
[ -z "$(find fit -name '.*.tmp.*')" ] && pass "refused: no temp file" || fail "refused: temp files in fit/"
rm fit/model_retrieve.json
expect_exit 2 "the residuals alone" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --terms 4-5 -o fit
expect_message "the residuals alone" 'output directory fit already holds a retrieval of set "model" (model_residuals.fits); use --force to overwrite it or -o to choose another directory'
expect_exit 0 "--force replaces it" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --terms 4-5 -o fit --force -q
if command -v python3 >/dev/null; then
  python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["terms"] == [4, 5]' fit/model_retrieve.json &&
    pass "--force: the new retrieval's JSON" || fail "--force: the JSON"
fi
mkdir planted
echo "not psfsim's" >victim.txt
ln -s ../victim.txt planted/model_retrieve.json
ln -s ../nowhere.fits planted/model_residuals.fits
expect_exit 2 "links planted" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --terms 4-5 -o planted
expect_message "links planted" 'output directory planted already holds a retrieval of set "model" (model_retrieve.json, a symbolic link and model_residuals.fits, a symbolic link); use --force to overwrite it or -o to choose another directory'
[ -L planted/model_retrieve.json ] && [ -L planted/model_residuals.fits ] && pass "links planted: left as they are" || fail "links planted: touched"
expect_exit 0 "links planted, --force" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --terms 4-5 -o planted --force -q
[ "$(cat victim.txt)" = "not psfsim's" ] && [ ! -e nowhere.fits ] && pass "--force: the links' targets untouched, none made" ||
  fail "--force wrote through a link"
[ -f planted/model_retrieve.json ] && [ ! -L planted/model_retrieve.json ] && [ -f planted/model_residuals.fits ] &&
  [ ! -L planted/model_residuals.fits ] && pass "--force: the links replaced by psfsim's files" || fail "--force: $(ls -l planted)"
touch plainfile
expect_exit 2 "-o a file, --force" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits -o plainfile --force
expect_message "-o a file, --force" 'output directory plainfile: Not a directory'
[ ! -s "$SCRATCH/stdout" ] && pass "-o a file: refused before the fit" || fail "-o a file: a fit ran"
expect_exit 2 "--retrieve --resume" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --resume
expect_message "--retrieve --resume" '--retrieve fits images and takes no --resume'

# detector.noise has no cube: a noisy set as separate FITS files (the
# config's message says so), stacked into one cube by docs/config.md's
# command ("Retrieving from noisy images") and fitted with its options:
# photon weights of gain_e_per_adu, read noise read_noise_e / gain in ADU.
noisy='detector: { noise: { flux_photons = 4.0e4; background_e = 20.0; read_noise_e = 5.0; gain_e_per_adu = 2.0; seed = 7; }; };'
printf 'name = "noisy";\n%s\naberrations: { zernike = ( (4, 0.03), (5, -0.05), (6, 0.04), (7, 0.02), (8, -0.03), (9, 0.025), (10, -0.02), (11, 0.015) ); };\n%s\noutput: { dir = "noisy"; png: { enabled = false; }; fits: { enabled = true; cube = true; }; };\n' "$base" "$noisy" >noisy_cube.cfg
expect_exit 2 "detector.noise with a cube" -- "$PSFSIM" -c noisy_cube.cfg -q
expect_message "detector.noise with a cube" 'noisy_cube.cfg:6: detector.noise: not with output.fits.cube (the cube holds the noiseless float32 images only): set output.fits.cube = false for each NAME_k.fits with its noisy image as the NOISY extension, or output.hdf5.enabled = true for all the noisy images in one file (NAME.h5'"'"'s dataset "noisy"); to fit them with psfsim --retrieve, stack them into one cube (docs/config.md, "Retrieving from noisy images")'
sed 's/ cube = true;//' noisy_cube.cfg >noisy.cfg
expect_exit 0 "the noisy images" -- "$PSFSIM" -c noisy.cfg -q
if e2e_python numpy astropy >/dev/null; then
  py=$(e2e_python numpy astropy)
  "$py" -c 'import sys, numpy as np; from astropy.io import fits
fits.writeto("noisy.fits", np.stack([fits.getdata(f, "NOISY") for f in sys.argv[1:]]).astype(np.float32))' noisy/noisy_*.fits
  expect_exit 0 "--retrieve of the stacked noisy images" -- "$PSFSIM" -c model.cfg --retrieve noisy.fits --terms 4-11 --noise photon --gain 2 --sigma 2.5 --fit-background -o fitnoisy -q
  "$py" - fitnoisy/model_retrieve.json <<'PY' && pass "noisy: chi2/dof near 1, each coefficient and background within 5 sigma" || fail "noisy: the fit"
import json, sys
r = json.load(open(sys.argv[1]))
truth = [0.03, -0.05, 0.04, 0.02, -0.03, 0.025, -0.02, 0.015]
assert r["fisher_ok"], r
assert abs(r["chi2"] / r["dof"] - 1) < 0.05, r["chi2"] / r["dof"]
for c, s, t in zip(r["coefficients"], r["uncertainties"], truth):
    assert abs(c - t) < 5 * s, (c, s, t)
for b, s in zip(r["background"], r["background_sigma"]):
    assert abs(b - 10.0) < 5 * s, (b, s)  # background_e / gain_e_per_adu ADU
PY
else
  echo "skip: the noisy retrieval's stacking needs numpy and astropy"
fi

# usage errors: nothing written
printf 'name = "two";\n%s\n' "${base/-0.5, 0.0, 0.5/-0.5, 0.5}" >two.cfg
expect_exit 2 "a cube of 3 for a set of 2" -- "$PSFSIM" -c two.cfg --retrieve truth/truth_cube.fits -o bad
expect_stderr "truth/truth_cube.fits: 3 image.s. of 64 x 64 pixels, but the set two has 2 of 64 x 64" "the shape: message"
# A malformed --terms is refused whole, its message naming the option and
# the text given (first line exactly, then psfsim's usage hint).
hint='; expected j and ranges a-b separated by commas, such as 4-15 or 4,5,7-11'
bad_terms() { # LIST MESSAGE
  expect_exit 2 "--terms \"$1\"" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --terms "$1" -o bad
  expect_message "--terms \"$1\"" "$2"
}
bad_terms "4," "--terms: an empty entry after the last comma (got \"4,\")$hint"
bad_terms "4,,5" "--terms: an empty entry between two commas (got \"4,,5\")$hint"
bad_terms ",4" "--terms: an empty entry before the first comma (got \",4\")$hint"
bad_terms "" "--terms: no terms (got \"\")$hint"
bad_terms "4-" "--terms: the range \"4-\" has no end (got \"4-\")$hint"
bad_terms "4,6-" "--terms: the range \"6-\" has no end (got \"4,6-\")$hint"
bad_terms "5-4" "--terms: the range \"5-4\" runs backwards: write 4-5 (got \"5-4\")$hint"
bad_terms "4-x" "--terms: \"4-x\" is not a whole number j >= 0 or a range a-b (got \"4-x\")$hint"
bad_terms "4,+5" "--terms: \"+5\" is not a whole number j >= 0 or a range a-b (got \"4,+5\")$hint"
bad_terms " 4" "--terms: \" 4\" is not a whole number j >= 0 or a range a-b (got \" 4\")$hint"
bad_terms "4-5-6" "--terms: \"4-5-6\" is not a whole number j >= 0 or a range a-b (got \"4-5-6\")$hint"
bad_terms "4-6,5" '--terms: j = 5 listed twice (got "4-6,5")'
# The range the config's convention allows: Noll j >= 1, piston (1) not fitted.
bad_terms "0-3" '--terms: j = 0 is not a Noll index (got "0-3"): Noll indices start at 1 (aberrations.convention = "noll"), and j = 1, piston, changes no image: the terms fitted start at 2'
bad_terms "1-5" '--terms: j = 1 is piston in the Noll convention (aberrations.convention = "noll"; got "1-5"): it changes no image and cannot be fitted; the terms fitted start at 2'
bad_terms "4,6000" '--terms: j = 6000 is beyond radial order 100, the largest supported (Noll convention; got "4,6000")'
printf 'name = "ansi";\n%s\naberrations: { convention = "ansi"; };\n' "$base" >ansi.cfg
expect_exit 2 "ANSI j = 0" -- "$PSFSIM" -c ansi.cfg --retrieve truth/truth_cube.fits --terms 0-5 -o bad
expect_message "ANSI j = 0" '--terms: j = 0 is piston in the ANSI convention (aberrations.convention = "ansi"; got "0-5"): it changes no image and cannot be fitted; the terms fitted start at 1'
# Tip and tilt move the image: they are fitted (Noll 2, 3; ANSI 1, 2).
expect_exit 0 "--terms 2-11 (tip, tilt)" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --terms 2-11 -o tilt -q
if command -v python3 >/dev/null; then
  python3 - tilt/model_retrieve.json <<'PY' && pass "tip and tilt fitted: 0 (the truth has none), Z4..Z11 the truth's" || fail "tip and tilt"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["terms"] == list(range(2, 12)), r["terms"]
c = r["coefficients"]
truth = [0.0, 0.0, 0.03, -0.05, 0.04, 0.02, -0.03, 0.025, -0.02, 0.015]
assert max(abs(a - b) for a, b in zip(c, truth)) < 1e-3, c
PY
fi
expect_exit 2 "--terms without --retrieve" -- "$PSFSIM" -c model.cfg --terms 4-11
expect_stderr "go with --retrieve" "--terms without --retrieve: message"
[ ! -e bad ] && pass "usage errors: nothing written" || fail "bad/ written"
finish
