# SPDX-License-Identifier: BSD-3-Clause
# Map files as a user gives them: a FITS OPD map's BUNIT is honoured (a map
# in m gives the PSF of the same map in nm), the unit used is said with -v
# and in the timing log, and an unknown unit stops the run before any work;
# a gzip-compressed map reads as the map it holds; an OPD map PNG must be
# 16-bit; a non-square map is stretched, with a warning; a map placed at its
# pixel scale that does not cover D x D is refused.
source "$(dirname "$0")/lib_e2e.sh"

# fits_i16 FILE ROWS COLS CARD...: a 16-bit integer FITS image, pixel (r, c)
# = r*r + c*c, with the extra header cards given.
fits_i16() {
  local f=$1 rows=$2 cols=$3 card r c v
  shift 3
  {
    for card in "SIMPLE  =                    T" "BITPIX  =                   16" \
      "NAXIS   =                    2" "$(printf 'NAXIS1  = %20d' "$cols")" \
      "$(printf 'NAXIS2  = %20d' "$rows")" "$@" "END"; do
      printf '%-80s' "$card"
    done
  } >"$f"
  head -c $((2880 - $(stat -c %s "$f") % 2880)) /dev/zero | tr '\0' ' ' >>"$f"
  for ((r = 0; r < rows; ++r)); do
    for ((c = 0; c < cols; ++c)); do
      v=$((r * r + c * c))
      printf "\\$(printf %03o $((v >> 8)))\\$(printf %03o $((v & 255)))"
    done
  done >>"$f"
  head -c $((2880 - $(stat -c %s "$f") % 2880)) /dev/zero >>"$f"
}

# cfg NAME MAP: one 550 nm image with the OPD map MAP.
cfg() {
  cat <<CFG
name = "$1";
optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 32; };
aberrations: { opd_map: { file = "$2"; }; };
CFG
}

# strehl OUT NAME: the manifest's strehl of image 0.
strehl() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "strehl") k = i; next } { print $k; exit }' \
    "$1/$2_manifest.csv"
}

fits_i16 nm.fits 8 8 "BUNIT   = 'nm      '"
fits_i16 m.fits 8 8 "BSCALE  =               1.0E-9" "BUNIT   = 'meter   '"
fits_i16 none.fits 8 8
fits_i16 bad.fits 8 8 "BUNIT   = 'furlong '"
for u in nm m none; do
  cfg "$u" "$u.fits" >"$u.cfg"
  expect_exit 0 "OPD map $u.fits" -- "$PSFSIM" -c "$u.cfg" -o "out_$u" --backend cpu -v
  cp "$SCRATCH/stderr" "stderr_$u"
done
s_nm=$(strehl out_nm nm) s_m=$(strehl out_m m) s_none=$(strehl out_none none)
awk -v a="$s_nm" -v b="$s_m" 'BEGIN { exit !(a < 0.99 && a > 0 && (a - b) ^ 2 < 1e-12 * a * a) }' &&
  pass "BUNIT = 'meter': the Strehl of the same map in nm ($s_m, $s_nm)" ||
  fail "BUNIT = 'meter' gives Strehl $s_m, the map in nm $s_nm"
[ "$s_none" = "$s_nm" ] && pass "no BUNIT: nm, the config's default" ||
  fail "no BUNIT: Strehl $s_none, in nm $s_nm"
grep -q "m.fits: OPD map of 8 x 8 pixels, OPD = 1 x value in m (the map's BUNIT = 'meter')" stderr_m &&
  pass "-v names the unit and where it came from" || {
  fail "-v does not name the unit"
  sed 's/^/  stderr: /' stderr_m
}
grep -q "in nm (aberrations.opd_map.units; the map has no BUNIT)" stderr_none &&
  pass "-v: no BUNIT, the config's unit" || fail "-v: no BUNIT not said"
grep -q "^opd_map_units,,,,,,,\"m (the map's BUNIT = 'meter')\"" out_m/m_timing.csv &&
  pass "timing log: opd_map_units row" || {
  fail "timing log has no opd_map_units row"
  cat out_m/m_timing.csv
}
cfg flat none.fits | sed '/opd_map/d' >flat.cfg
expect_exit 0 "no OPD map" -- "$PSFSIM" -c flat.cfg -o out_flat --backend cpu
! grep -q "^opd_map_units," out_flat/flat_timing.csv && pass "timing log: no opd_map_units row without a map" ||
  fail "timing log: an opd_map_units row without a map"

# A gzip-compressed map (WebbPSF's .fits.gz) is the map it holds; a cut one
# is refused before any work.
gzip -c m.fits >m.fits.gz
cfg gz m.fits.gz >gz.cfg
expect_exit 0 "OPD map m.fits.gz" -- "$PSFSIM" -c gz.cfg -o out_gz --backend cpu
[ "$(strehl out_gz gz)" = "$s_m" ] && pass ".fits.gz: the Strehl of the map uncompressed" ||
  fail ".fits.gz: Strehl $(strehl out_gz gz), uncompressed $s_m"
head -c 100 m.fits.gz >cut.fits.gz
cfg cut cut.fits.gz >cut.cfg
expect_exit 2 "a cut .fits.gz" -- "$PSFSIM" -c cut.cfg -o out_cut
expect_stderr "cut.fits.gz: the gzip data end early \(truncated\?\)" "a cut .fits.gz: message"
[ ! -e out_cut ] && pass "a cut .fits.gz: nothing written" || fail "a cut .fits.gz: out_cut written"

# PNG maps: an OPD map must be 16-bit (8 bits give 256 levels, too coarse);
# an aperture map may be 8-bit. psfsim's own PSF PNGs serve as maps.
for bits in 8 16; do
  { sed "s/name = \"flat\"/name = \"png$bits\"/" flat.cfg
    echo "output: { png: { bits = $bits; stretch = \"linear\"; }; };"; } >"png$bits.cfg"
  "$PSFSIM" -c "png$bits.cfg" -o out_png -q --backend cpu || fail "writing a $bits-bit PNG"
done
cfg opd8 out_png/png8_0.png >opd8.cfg
expect_exit 2 "an 8-bit PNG OPD map" -- "$PSFSIM" -c opd8.cfg -o out_opd8
expect_stderr "png8_0.png: an OPD map PNG must be 16-bit grayscale" "an 8-bit PNG OPD map: message"
[ ! -e out_opd8 ] && pass "an 8-bit PNG OPD map: nothing written" || fail "out_opd8 written"
cfg opd16 out_png/png16_0.png >opd16.cfg
expect_exit 0 "a 16-bit PNG OPD map" -- "$PSFSIM" -c opd16.cfg -o out_opd16 --backend cpu
sed 's|diameter_m = 1.0;|diameter_m = 1.0; shape = "file"; file = "out_png/png8_0.png";|' flat.cfg >ap8.cfg
expect_exit 0 "an 8-bit PNG aperture map" -- "$PSFSIM" -c ap8.cfg -o out_ap8 --backend cpu
# A non-square map is stretched over D x D, with a warning naming it.
fits_i16 wide.fits 4 8
cfg wide wide.fits >wide.cfg
expect_exit 0 "a non-square OPD map" -- "$PSFSIM" -c wide.cfg -o out_wide --backend cpu
expect_stderr "wide.fits: the map is 4 rows x 8 columns, not square: it is stretched over D x D" \
  "a non-square map: warned"
expect_exit 0 "a square map" -- "$PSFSIM" -c nm.cfg -o out_nm2 --backend cpu
! grep -q "not square" "$SCRATCH/stderr" && pass "a square map: no warning" || fail "a square map warned"

cfg bad bad.fits >bad.cfg
expect_exit 2 "unknown BUNIT" -- "$PSFSIM" -c bad.cfg -o out_bad
expect_stderr "bad.cfg: aberrations.opd_map.file: .*bad.fits: BUNIT = 'furlong' is not a unit of OPD" \
  "unknown BUNIT: the message names the file and the unit"
[ ! -e out_bad ] && pass "unknown BUNIT: nothing written" || fail "unknown BUNIT: out_bad written"

# A map placed at its pixel scale (PUPLSCAL, or the config key, which wins)
# must cover D x D: 8 pixels of 0.1 m do not cover D = 1 m.
fits_i16 small.fits 8 8 "BUNIT   = 'nm      '" "PUPLSCAL=                  0.1"
cfg small small.fits >small.cfg
expect_exit 2 "a map smaller than D" -- "$PSFSIM" -c small.cfg -o out_small
expect_stderr "small.cfg:4: aberrations.opd_map.file: .*small.fits: the map covers 0.8 m x 0.8 m [(]8 x 8 pixels of 0.1 m, from the map.s PUPLSCAL[)], the aperture needs 1 m" \
  "a map smaller than D: the message names file:line:key and both extents"
[ ! -e out_small ] && pass "a map smaller than D: nothing written" || fail "out_small written"
sed 's|file = "small.fits";|file = "small.fits"; pixel_scale_m = 0.125;|' small.cfg >big.cfg
expect_exit 0 "the key overrides PUPLSCAL: 8 pixels of 0.125 m cover D" -- \
  "$PSFSIM" -c big.cfg -o out_big --backend cpu -v
expect_stderr "small.fits: placed at 0.125 m per pixel [(]aberrations.opd_map.pixel_scale_m[)]: 8 x 8 pixels cover 1 m x 1 m" \
  "a placed map: said with -v"
finish
