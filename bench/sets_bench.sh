#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 5's benchmark: 10,000 images of 256x256 as 16-bit PNG. psfsim's
# whole run (auto, and each backend forced) against the PNG-encode ceiling
# (the same images through the same writer pool, no compute) and against a
# one-process loop over the NumPy reference writing the same PNGs (timed on
# a subset, the rate extrapolated). CSV to $1; BUILD names the build dir.
set -uo pipefail
csv="$1"
root="$(cd "$(dirname "$0")/.." && pwd)"
work=$(mktemp -d)
images=${IMAGES:-10000}
export PSFSIM_CACHE_DIR="${PSFSIM_CACHE_DIR:-$work/cache}"
python3 - "$work/set.cfg" "$images" <<'PY'
import sys
path, k = sys.argv[1], int(sys.argv[2])
d = [f"{-1 + 2 * i / 99:.5f}" for i in range(100)]
z = [f"{0.2 * i / max(1, k // 100 - 1):.5f}" for i in range(max(1, k // 100))]
open(path, "w").write(f'''name = "set";
optics: {{ wavelength_nm = 550.0; aperture: {{ diameter_m = 2.4; obscuration = 0.33;
  spiders: {{ count = 4; width_m = 0.0264; angle_deg = 45.0; }}; }}; }};
sampling: {{ pupil_samples = 128; padding = 2.0; }};
sweep: {{ defocus = [{", ".join(d)}]; zernike = ((8, [{", ".join(z)}])); }};
output: {{ png: {{ bits = 16; }}; }};
''')
PY
echo "pipeline,npix,images,seconds_total,us_per_psf" >"$csv"
"$BUILD/bench/psfsim_bench_writers" "$work/set.cfg" "$work/ceiling" "$images" >>"$csv"
rm -rf "$work/ceiling"
"$BUILD/psfsim" -q --probe -o "$work" >/dev/null 2>&1
for be in auto gpu cpu; do
  t0=$(date +%s.%N)
  if "$BUILD/psfsim" -q --force --backend "$be" -c "$work/set.cfg" -o "$work/run"; then
    t1=$(date +%s.%N)
    n=$(($(wc -l <"$work/run/set_manifest.csv") - 1))
    chosen=$(awk -F, 'NR == 2 { print $16 }' "$work/run/set_manifest.csv")
    awk -v b="$be" -v c="$chosen" -v n="$n" -v t0="$t0" -v t1="$t1" \
      'BEGIN { printf "psfsim_%s(%s),256,%d,%.6f,%.2f\n", b, c, n, t1 - t0, (t1 - t0) / n * 1e6 }' >>"$csv"
    grep -E "^(compute_us|png_encode_write_us|wait_for_writers_us|wall_us)," "$work/run/set_timing.csv" |
      sed "s/^/# $be: /" >>"$csv"
  fi
  rm -rf "$work/run"
done
python3 "$root/bench/reference_numpy_png.py" "$work/np" --pupil 128 --images "${NUMPY_IMAGES:-300}" >>"$csv"
rm -rf "$work"
