#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Whole psfsim processes at N = 64 .. 4096, one image and a batch, with
# --backend cpu, gpu and auto (warm probe cache), wall time of each process.
# Also: a 64x64 single image with a warm cache, checking CUDA is never loaded
# (LD_DEBUG shows no libcuda). REPEATS (default 3) runs per cell and backend,
# in six orders that balance which backend ran before which, each into a
# fresh directory, GPU_SETTLE_S (default 0.3) seconds' pause after a run
# that used the GPU; CELLS (NPIX:IMAGES ...) picks cells. Writes CSV to $1.
set -uo pipefail
csv="$1"
psfsim="$BUILD/psfsim"
work=$(mktemp -d)
export PSFSIM_CACHE_DIR="$work/cache"
"$psfsim" --probe -o "$work" >"$work/probe.txt" || echo "psfsim --probe failed: $?" >&2
cp "$work/probe.txt" "$(dirname "$csv")/probe_table.txt"
cp "$work/psfsim_probe.csv" "$(dirname "$csv")/probe.csv"
cp "$work/psfsim_probe.png" "$(dirname "$csv")/probe.png" 2>/dev/null || true
echo "npix,images,backend,wall_s,chosen" >"$csv"
config() { # npix images
  local n=$(($1 / 2)) k=$2 list
  list=$(python3 -c "print(', '.join(f'{-1 + 2 * i / max(1, $k - 1):.6f}' for i in range($k)))")
  cat <<CFG
name = "b$1_$k";
optics: { wavelength_nm = 550.0; aperture: { diameter_m = 2.4; obscuration = 0.33;
  spiders: { count = 4; width_m = 0.0264; angle_deg = 45.0; }; }; };
sampling: { pupil_samples = $n; padding = 2.0; };
aberrations: { zernike = ((7, 0.05)); };
sweep: { defocus = [ $list ]; };
output: { png: { bits = 16; }; };
CFG
}
for spec in ${CELLS:-64:1 64:1000 128:1 128:1000 256:1 256:1000 512:1 512:1000 1024:1 1024:100 2048:1 2048:20 4096:1 4096:5}; do
  npix=${spec%:*} k=${spec#*:}
  config "$npix" "$k" >"$work/c.cfg"
  # REPEATS (default 3) rounds in the six orders in turn, so that each
  # backend runs after each other backend equally often (carry-over
  # balanced: run 26 found a process right after a GPU process 2-3 ms
  # slower at 128^2 and 256^2, and the three rotations had auto follow gpu
  # in two rounds of three, cpu in one).
  orders=("cpu gpu auto" "gpu auto cpu" "auto cpu gpu" "auto gpu cpu" "gpu cpu auto" "cpu auto gpu")
  for ((rep = 0; rep < ${REPEATS:-3}; ++rep)); do for be in ${orders[$((rep % 6))]}; do
    # A fresh directory each run: files renamed over a set's old ones cost
    # ext4 a flush each (~20 ms more for 1,000 PNGs), which favoured
    # whichever backend ran first in a cell.
    rm -rf "$work/o"
    t0=$(date +%s.%N)
    "$psfsim" -q --backend "$be" -c "$work/c.cfg" -o "$work/o" >/dev/null || {
      echo "$npix,$k,$be,nan,failed" >>"$csv"; continue; }
    t1=$(date +%s.%N)
    chosen=$(grep -m1 -o 'backend [a-z]*' "$work/o/b${npix}_${k}_timing.csv" | awk '{print $2}')
    echo "$npix,$k,$be,$(awk "BEGIN { print $t1 - $t0 }"),$chosen" >>"$csv"
    # After a process that ran the GPU the driver is still tearing its
    # context down: the next process starts once it is done (untimed).
    [ "$chosen" = gpu ] && sleep "${GPU_SETTLE_S:-0.3}"
  done; done
done
# 64x64, one image, warm cache: wall time and whether libcuda was loaded.
config 64 1 >"$work/c.cfg"
for i in 1 2 3 4 5; do
  rm -rf "$work/o"
  t0=$(date +%s.%N)
  LD_DEBUG=libs "$psfsim" -q -c "$work/c.cfg" -o "$work/o" 2>"$work/lddebug" >/dev/null
  t1=$(date +%s.%N)
  cuda=$(grep -c "libcuda.so" "$work/lddebug" || true)
  echo "64,1,auto-warm-ld_debug,$(awk "BEGIN { print $t1 - $t0 }"),libcuda_lines=$cuda" >>"$csv"
done
for i in 1 2 3 4 5; do
  rm -rf "$work/o"
  t0=$(date +%s.%N)
  "$psfsim" -q -c "$work/c.cfg" -o "$work/o" >/dev/null
  t1=$(date +%s.%N)
  echo "64,1,auto-warm,$(awk "BEGIN { print $t1 - $t0 }"),$(tail -1 "$work/o/b64_1_manifest.csv" | awk -F, '{print $16}')" >>"$csv"
done
rm -rf "$work"
