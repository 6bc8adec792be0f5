# SPDX-License-Identifier: BSD-3-Clause
# The levels path (issue 17): a set whose every image output is grey levels
# (PNG, output.hdf5 dtype uint16) takes its images from the backend as
# levels and measures (psf_backend_ops.run_levels) instead of floats. On
# the CPU that path runs only with PSFSIM_LEVELS=on (a GPU lane takes it by
# default, PSFSIM_LEVELS=off keeps the floats): every file of the set is
# byte for byte the float path's (the timing log aside), for linear, log
# and sqrt at 8 and 16 bits, output.orientation "poppy" (the levels turned
# by the backend) and normalization "pupil" (the manifest's
# captured_fraction from the backend's total); a set with a FITS file keeps
# the float path.
source "$(dirname "$0")/lib_e2e.sh"
export PSFSIM_CACHE_DIR="$SCRATCH/cache"
vals=$(awk 'BEGIN { for (i = 0; i < 150; ++i) printf "%s%.5f", (i ? ", " : ""), -1 + 2 * i / 149 }')
mk() { # name, output group, top-level extra
  cat >"$1.cfg" <<CFG
name = "$1";
$3
optics: { wavelength_nm = 600; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; padding = 2.0; };
aberrations: { zernike = ((8, 0.05)); };
sweep: { defocus = [ $vals ]; };
output: { $2 };
CFG
}
same() { # name: the set with and without the levels path, every file but the timing log
  # and the run's date in NAME.json and NAME.h5
  expect_exit 0 "$1: float path" -- env PSFSIM_LEVELS=off "$PSFSIM" -q --backend cpu -c "$1.cfg" -o "f_$1"
  expect_exit 0 "$1: levels path" -- env PSFSIM_LEVELS=on "$PSFSIM" -q --backend cpu -c "$1.cfg" -o "l_$1"
  local bad=0 n=0
  for f in "f_$1"/*; do
    case "$f" in *timing*) continue ;; esac
    n=$((n + 1))
    case "$f" in
    *.json) # NAME.json's "date" is the run's (the clock's second)
      diff -q <(grep -v '"date"' "$f") <(grep -v '"date"' "l_$1/${f#f_$1/}") >/dev/null ||
        bad=$((bad + 1)) ;;
    *.h5) # so is NAME.h5's date attribute: the rest byte for byte
      python3 - "$f" "l_$1/${f#f_$1/}" <<'PY' || bad=$((bad + 1))
import re, sys
d = [re.sub(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", b"DATE", open(p, "rb").read()) for p in sys.argv[1:]]
sys.exit(0 if d[0] == d[1] else 1)
PY
      ;;
    *) cmp -s "$f" "l_$1/${f#f_$1/}" || bad=$((bad + 1)) ;;
    esac
  done
  [ "$bad" -eq 0 ] && [ "$n" -gt 2 ] && pass "$1: all $n files identical" || fail "$1: $bad of $n files differ"
}
mk png16log 'png: { bits = 16; stretch = "log"; dynamic_range = 1.0e5; };' ''
same png16log
mk png8lin 'png: { bits = 8; stretch = "linear"; };' ''
same png8lin
mk png16sqrt 'png: { bits = 16; stretch = "sqrt"; }; orientation = "poppy";' ''
same png16sqrt
mk h5u16 'png: { bits = 8; stretch = "log"; dynamic_range = 1.0e3; }; hdf5: { enabled = true; dtype = "uint16"; };' 'normalization = "pupil";'
same h5u16
mk h5only 'png: { enabled = false; stretch = "sqrt"; bits = 16; }; hdf5: { enabled = true; dtype = "uint16"; }; orientation = "poppy";' ''
same h5only
[ -z "$(ls l_h5only | grep '\.png$')" ] && [ -f l_h5only/h5only.h5 ] &&
  pass "h5only: NAME.h5 and no PNG" || fail "h5only: $(ls l_h5only)"
grep -q 'captured_fraction' l_h5u16/h5u16_manifest.csv && pass "pupil: captured_fraction in the manifest" ||
  fail "pupil: no captured_fraction column"

# A set with a FITS file needs the floats: PSFSIM_LEVELS=on leaves it on
# the float path (image_set_levels_out refuses it; tests/app/set checks
# that), its files unchanged.
mk fits 'png: { bits = 16; }; fits: { enabled = true; };' ''
same fits
finish
