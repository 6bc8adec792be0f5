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

# usage errors: nothing written
printf 'name = "two";\n%s\n' "${base/-0.5, 0.0, 0.5/-0.5, 0.5}" >two.cfg
expect_exit 2 "a cube of 3 for a set of 2" -- "$PSFSIM" -c two.cfg --retrieve truth/truth_cube.fits -o bad
expect_stderr "truth/truth_cube.fits: 3 image.s. of 64 x 64 pixels, but the set two has 2 of 64 x 64" "the shape: message"
expect_exit 2 "a bad --terms" -- "$PSFSIM" -c model.cfg --retrieve truth/truth_cube.fits --terms 4-x -o bad
expect_stderr "--terms: expected j, ranges a-b" "a bad --terms: message"
expect_exit 2 "--terms without --retrieve" -- "$PSFSIM" -c model.cfg --terms 4-11
expect_stderr "go with --retrieve" "--terms without --retrieve: message"
[ ! -e bad ] && pass "usage errors: nothing written" || fail "bad/ written"
finish
