#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 7's benchmark: one image set on 1 GPU against 2 GPUs of one host
# (--gpus 0 vs --gpus 0,1), whole psfsim processes, and whether the images
# are the same. Two sets:
#   png100k:   IMAGES (100,000) images of 256x256, 16-bit PNG (the issue's
#              case), with the PNG-encode ceiling of the same images through
#              the same writer pool (no compute) beside it;
#   mft16:     BB_IMAGES (20,000) broadband images of 16 wavelengths, each
#              by MFT from a 512-sample pupil onto a 128x128 detector stamp
#              at 0.5 lambda/D (a broadband PSF library), 8-bit PNG: much
#              compute per byte written, so the GPUs rather than the writers
#              bound it.
# SETS picks them (default "png100k mft16"; IMAGES sizes png100k, BB_IMAGES
# mft16). Each run twice, the two GPU counts alternating (0; 0,1; 0; 0,1), so that
# a slower file system at one moment does not favour one of them. Output to
# BENCH_TMP (default: /dev/shm when it has 24 GiB free, else /tmp).
# CSV to $1; BUILD names the build dir. Rows: set,gpus,images,seconds,
# images_per_s, then "# set gpus: lane_G ..." rows from the timing log and
# "# set: identical ..." rows.
set -uo pipefail
csv="$1"
tmp=/tmp
shm_free=$(df -k --output=avail /dev/shm 2>/dev/null | tail -1)
[ "${shm_free:-0}" -gt $((24 * 1024 * 1024)) ] && tmp=/dev/shm
work=$(mktemp -d -p "${BENCH_TMP:-$tmp}")
echo "# output to $(dirname "$work") ($(df -h --output=fstype,avail "$(dirname "$work")" | tail -1))" >"$csv.head"
images=${IMAGES:-100000}
bb_images=${BB_IMAGES:-20000}
export PSFSIM_CACHE_DIR="${PSFSIM_CACHE_DIR:-$work/cache}"
python3 - "$work" "$images" "$bb_images" <<'PY'
import sys
work, k, kb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def sweep(k):
    d = [f"{-1 + 2 * i / 99:.5f}" for i in range(100)]
    z = [f"{0.2 * i / max(1, k // 100 - 1):.6f}" for i in range(max(1, k // 100))]
    return f'sweep: {{ defocus = [{", ".join(d)}]; zernike = ((8, [{", ".join(z)}])); }};'
pupil = '''aperture: { diameter_m = 2.4; obscuration = 0.33;
  spiders: { count = 4; width_m = 0.0264; angle_deg = 45.0; }; };'''
open(f"{work}/png100k.cfg", "w").write(f'''name = "set";
optics: {{ wavelength_nm = 550.0; {pupil} }};
sampling: {{ pupil_samples = 128; padding = 2.0; }};
{sweep(k)}
output: {{ png: {{ bits = 16; }}; }};
''')
wl = [f"{500 + 100 * i / 15:.3f}" for i in range(16)]
open(f"{work}/mft16.cfg", "w").write(f'''name = "set";
optics: {{ wavelengths_nm = [{", ".join(wl)}]; {pupil} }};
sampling: {{ pupil_samples = 512; padding = 2.0; }};
{sweep(kb)}
output: {{ npix = 128; pixel_scale = 0.5; png: {{ bits = 8; }}; }};
''')
PY
{ cat "$csv.head"; echo "set,gpus,images,seconds,images_per_s"; } >"$csv"
rm -f "$csv.head"
"$BUILD/psfsim" -q --probe -o "$work" >"$work/probe.txt" 2>&1 || true
grep -E "^GPU" "$work/probe.txt" | sed 's/^/# probe: /' >>"$csv"
ceiling() {
  "$BUILD/bench/psfsim_bench_writers" "$work/png100k.cfg" "$work/ceiling" "$images" |
    awk -F, 'NR > 0 { printf "png100k,ceiling,%s,%s,%.1f\n", $3, $4, $3 / $4 }' >>"$csv"
  rm -rf "$work/ceiling"
}
run() { # SET GPUS OUTDIR
  local set=$1 g=$2 out=$3 t0 t1 n
  t0=$(date +%s.%N)
  if "$BUILD/psfsim" -q --force --backend gpu --gpus "$g" -c "$work/$set.cfg" -o "$out"; then
    t1=$(date +%s.%N)
    n=$(($(wc -l <"$out/set_manifest.csv") - 1))
    awk -v s="$set" -v g="$g" -v n="$n" -v t0="$t0" -v t1="$t1" \
      'BEGIN { printf "%s,\"%s\",%d,%.3f,%.1f\n", s, g, n, t1 - t0, n / (t1 - t0) }' >>"$csv"
    grep -E "^(compute_us|png_encode_write_us|wait_for_writers_us|wall_us|lane_[0-9]+)," \
      "$out/set_timing.csv" | sed "s/^/# $set $g: /" >>"$csv"
  else
    echo "$set,\"$g\",0,nan,nan" >>"$csv"
  fi
}
same() { # SET DIR1 DIR2: manifests equal, and every 50th image
  local bad=0 checked=0 f
  diff -q "$2/set_manifest.csv" "$3/set_manifest.csv" >/dev/null || bad=1
  for f in $(tail -n +2 "$2/set_manifest.csv" | awk -F, 'NR % 50 == 1 { print $2 }'); do
    checked=$((checked + 1))
    cmp -s "$2/$f" "$3/$f" || bad=$((bad + 1))
  done
  echo "# $1: identical manifests and $checked sampled images: $([ $bad -eq 0 ] && echo yes || echo "NO ($bad)")" >>"$csv"
}
sets=${SETS:-png100k mft16}
[[ " $sets " == *" png100k "* ]] && ceiling
for set in $sets; do
  run "$set" 0 "$work/one"
  run "$set" 0,1 "$work/two"
  same "$set" "$work/one" "$work/two"
  rm -rf "$work/one" "$work/two"
  run "$set" 0 "$work/one"
  rm -rf "$work/one"
  run "$set" 0,1 "$work/two"
  rm -rf "$work/two"
done
rm -rf "$work"
