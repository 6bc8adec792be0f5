#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 17's benchmark: the PNG-encode ceiling of a 256x256 16-bit set
# (psfsim_bench_writers: the images computed once, then IMAGES written by
# THREADS writer threads, no compute) for the log (dr 1e5) and linear
# stretches, REPS rounds each alternating the original writer's build
# (ORIG, optional: a build of commit 53cb6e0, before issue 17) and this
# one; then one image's time and bytes per size, the writer before issue
# 17 (bench/png_ref.c) against psfsim's (psfsim_bench_png, best of REPS).
#   BUILD=build [ORIG=orig-build] [THREADS=2] [IMAGES=4000] [REPS=5] \
#     [DIR=/dev/shm/pngbench] bench/png_bench.sh OUT.csv
# CSV: ceiling rows "ceiling,build,stretch,threads,images,wall_s,images_per_s,cpu_s"
# (cpu_s: user + sys of the process, /usr/bin/time; empty without it),
# then psfsim_bench_png's header and rows.
set -uo pipefail
csv="$1"
threads=${THREADS:-2}
images=${IMAGES:-4000}
reps=${REPS:-5}
dir=${DIR:-/dev/shm/pngbench}
work=$(mktemp -d)
for s in log linear; do
  cat >"$work/$s.cfg" <<EOF
name = "defocus";
optics: { wavelength_nm = 550.0; f_number = 24.0; aperture: { shape = "circular";
  diameter_m = 2.4; obscuration = 0.33; spiders: { count = 4; width_m = 0.0264; angle_deg = 45.0; }; }; };
sampling: { pupil_samples = 128; padding = 2.0; };
sweep: { focus_shift_um = [-2000.0, -1500.0, -1000.0, -500.0, 0.0, 500.0, 1000.0, 1500.0, 2000.0]; };
output: { png: { bits = 16; stretch = "$s"; dynamic_range = 1.0e5; }; fits: { enabled = false; }; };
EOF
done
builds=("new:$BUILD")
[ -n "${ORIG:-}" ] && builds=("orig:$ORIG" "new:$BUILD")
echo "ceiling,build,stretch,threads,images,wall_s,images_per_s,cpu_s" >"$csv"
for ((r = 0; r < reps; ++r)); do
  for b in "${builds[@]}"; do
    for s in log linear; do
      rm -rf "$dir"
      cpu=""
      if [ -x /usr/bin/time ]; then
        row=$(/usr/bin/time -f "%U %S" -o "$work/time" "${b#*:}/bench/psfsim_bench_writers" \
          "$work/$s.cfg" "$dir" "$images" "$threads")
        cpu=$(awk '{ printf "%.3f", $1 + $2 }' "$work/time")
      else
        row=$("${b#*:}/bench/psfsim_bench_writers" "$work/$s.cfg" "$dir" "$images" "$threads")
      fi
      wall=$(echo "$row" | cut -d, -f4)
      awk -v b="${b%%:*}" -v s="$s" -v t="$threads" -v n="$images" -v w="$wall" -v c="$cpu" \
        'BEGIN { printf "ceiling,%s,%s,%d,%d,%.4f,%.0f,%s\n", b, s, t, n, w, n / w, c }' >>"$csv"
    done
  done
done
rm -rf "$dir"
"$BUILD/bench/psfsim_bench_png" "$dir" "$reps" >>"$csv"
rm -rf "$dir" "$work"
