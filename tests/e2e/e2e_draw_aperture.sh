# SPDX-License-Identifier: BSD-3-Clause
# psfsim --draw-aperture PNG: after the config's checks, the config's
# sampled aperture as a PNG of pupil_samples + 1 pixels square (the
# picture of docs/config.md, "Segmented apertures", is made so); a bad
# config or map writes nothing (exit 2); usage errors; --help names it.
source "$(dirname "$0")/lib_e2e.sh"

# png_size FILE: "WIDTH HEIGHT" from the IHDR chunk (PNG 1.2 sec. 11.2.2).
png_size() {
  od -An -tu1 -j16 -N8 "$1" | awk '{ print $1*16777216 + $2*65536 + $3*256 + $4, $5*16777216 + $6*65536 + $7*256 + $8 }'
}

expect_exit 0 "docs/segments.cfg drawn" -- "$PSFSIM" -c "$SRC/docs/segments.cfg" --draw-aperture seg.png -v
[ "$(head -c 8 seg.png | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
  pass "a PNG signature" || fail "seg.png is not a PNG"
[ "$(png_size seg.png)" = "401 401" ] && pass "401 x 401 (pupil_samples + 1)" ||
  fail "seg.png is $(png_size seg.png)"
expect_stderr "wrote seg.png: the aperture's transmission, 401 x 401 pixels of 0.0165 m" "-v says what was written"
[ "$(ls | grep -vx 'stdout\|stderr')" = "seg.png" ] && pass "only the PNG written" ||
  fail "other files written: $(ls | tr '\n' ' ')"

# Without the plot module: the picture all the same, and a warning.
PSFSIM_PLOT_MODULE=/nonexistent/libpsfsim-plot.so expect_exit 0 "no plot module" -- \
  "$PSFSIM" -c "$SRC/docs/segments.cfg" --draw-aperture plain.png
expect_stderr "the segment numbers are not drawn" "no plot module: warned"
[ "$(png_size plain.png)" = "401 401" ] && pass "no plot module: the PNG" || fail "plain.png missing"

# A map that does not cover the aperture: the config's checks stop it.
printf 'name = "m";\noptics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0;\n  shape = "file"; file = "seg.png"; pixel_scale_m = 0.002; }; };\nsampling: { pupil_samples = 64; };\n' >map.cfg
expect_exit 2 "a map smaller than D" -- "$PSFSIM" -c map.cfg --draw-aperture map.png
expect_stderr "map.cfg:3: optics.aperture.pixel_scale_m: .*seg.png: the map covers 0.802 m x 0.802 m" \
  "a map smaller than D: the message"
[ ! -e map.png ] && pass "a map smaller than D: nothing written" || fail "map.png written"
# The PNG read back as the aperture map (401 pixels over D, stretched) draws again.
sed 's/ pixel_scale_m = 0.002;//' map.cfg >map2.cfg
expect_exit 0 "the picture as a map" -- "$PSFSIM" -c map2.cfg --draw-aperture map2.png

expect_exit 2 "--draw-aperture with -o" -- "$PSFSIM" -c map2.cfg --draw-aperture x.png -o out
expect_stderr "draw-aperture writes one PNG and takes no -o" "--draw-aperture with -o: message"
expect_exit 2 "--draw-aperture without -c" -- "$PSFSIM" --draw-aperture x.png
expect_stderr "no config file: give one with -c FILE" "--draw-aperture without -c: message"
[ ! -e x.png ] && [ ! -e out ] && pass "usage errors: nothing written" || fail "usage errors wrote files"
expect_exit 0 "--help" -- "$PSFSIM" --help
grep -q -- "--draw-aperture PNG" "$SCRATCH/stdout" && pass "--help names --draw-aperture" ||
  fail "--help lacks --draw-aperture"
grep -qF -- 'draw\-aperture' "$SRC/docs/psfsim.1" && pass "the manual page names it" || fail "psfsim.1 lacks it"
finish
