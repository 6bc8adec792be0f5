#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 7's benchmark: several MPI ranks on ONE GPU. A set of IMAGES
# (default 20,000) 256x256 PSFs, run as
#   mpirun -n R --bind-to none psfsim --backend $BACKEND -c set.cfg -o DIR
# for R in RANKS (default 1 2 4), REPEATS times (default 3, the order of R
# rotated per repeat), plus psfsim started without mpirun (launcher none) as
# the baseline. With one GPU every rank uses GPU 0 (psfsim: local rank mod
# the visible devices). Two cases: 16-bit PNG (encode-bound) and FITS only
# (psfsim cannot write no image at all; FITS is a byte swap and a write, so
# the compute and copy side weighs more); CASES may add mft, a compute-bound
# broadband MFT set (16 wavelengths, 512-sample pupil, 128x128 stamps). Records wall seconds, images/s, the
# backend of every image (manifest), and the stage totals of psfsim's timing
# log; checks that every R > 1 (and the plain run) wrote the same image files
# as R = 1, byte for byte (md5 of each file), and the same manifest.
#   BUILD=build-mpi bench/ranks_bench.sh OUT.csv    (BACKEND=cpu IMAGES=500 to try it without a GPU)
# The image sets go to a temp dir under WORKDIR (default $TMPDIR or /tmp):
# FITS needs 256 KiB per image, twice (the R = 1 reference is kept).
set -euo pipefail
csv="$1"
images=${IMAGES:-20000}
backend=${BACKEND:-gpu}
ranks_list=${RANKS:-1 2 4}
repeats=${REPEATS:-3}
mpirun=${MPIRUN:-mpirun}
psfsim="$BUILD/psfsim"
# Open MPI in a container, as root, without a network (.gpu/on-device-mpi.sh
# sets these too): shared memory between the ranks only.
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
work=$(mktemp -d "${WORKDIR:-${TMPDIR:-/tmp}}/psfsim-ranks.XXXXXX")
trap 'rm -rf "$work"' EXIT
export PSFSIM_CACHE_DIR="${PSFSIM_CACHE_DIR:-$work/cache}"
log() { echo "[ranks $(date +%T)] $*" >&2; }
"$psfsim" --version | grep -q '^MPI' || { echo "ranks_bench: $psfsim is built without MPI" >&2; exit 1; }
command -v "$mpirun" >/dev/null || { echo "ranks_bench: no $mpirun" >&2; exit 1; }

config() { # case: the same sweep as bench/sets_bench.sh (defocus x Noll 8)
  python3 - "$images" "$1" <<'PY'
import sys
k, case = int(sys.argv[1]), sys.argv[2]
d = [f"{-1 + 2 * i / 99:.5f}" for i in range(100)]
z = [f"{0.2 * i / max(1, k // 100 - 1):.5f}" for i in range(max(1, k // 100))]
out = ("png: { bits = 16; };" if case == "png" else
       "npix = 128; pixel_scale = 0.5; png: { bits = 8; };" if case == "mft" else
       "png: { enabled = false; }; fits: { enabled = true; };")
# mft: 16 wavelengths by MFT from a 512-sample pupil onto a 128x128 stamp
# (bench/gpus_bench.sh's mft16): compute-bound, the GPU's work dominates.
wl = ("wavelengths_nm = [" + ", ".join(f"{500 + 100 * i / 15:.3f}" for i in range(16)) + "];"
      if case == "mft" else "wavelength_nm = 550.0;")
n = 512 if case == "mft" else 128
print(f'''name = "set";
optics: {{ {wl} aperture: {{ diameter_m = 2.4; obscuration = 0.33;
  spiders: {{ count = 4; width_m = 0.0264; angle_deg = 45.0; }}; }}; }};
sampling: {{ pupil_samples = {n}; padding = 2.0; }};
sweep: {{ defocus = [{", ".join(d)}]; zernike = ((8, [{", ".join(z)}])); }};
output: {{ {out} }};''')
PY
}
tstat() { # timing file, quantity: its value (column 7)
  awk -F, -v q="$2" '$1 == q { print $7; exit }' "$1"
}
export LC_ALL=C # sort and join agree on the order
sums() { # dir: md5 of every image file, sorted by name
  (cd "$1" && find . -maxdepth 1 -type f \( -name 'set_*.png' -o -name 'set_*.fits' \) -print0 |
    xargs -0 -r -n 256 -P "$(nproc)" md5sum | sort -k 2)
}
gpu_sampler() { # file: the compute processes on the GPU, polled until $work/stop exists
  while [ ! -e "$work/stop" ]; do
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>/dev/null | sort >"$1.now" || true
    if [ "$(wc -l <"$1.now")" -gt "$(wc -l <"$1")" ]; then cp "$1.now" "$1"; fi
    sleep 0.2
  done
}

echo "case,launcher,ranks,rep,images,wall_s,images_per_s,backends,backend_create_us,compute_us,metrics_us,png_encode_write_us,fits_encode_write_us,wait_for_writers_us,log_wall_us,max_rank_wall_us,bound" >"$csv"
nr=$(wc -w <<<"$ranks_list")
for case in ${CASES:-png fits}; do
  config "$case" >"$work/set.cfg"
  # Orders: 1 2 4 none, 2 4 none 1, ... (each R first once).
  read -r -a runs <<<"$ranks_list none"
  for rep in $(seq 1 "$repeats"); do
    for i in $(seq 0 "$nr"); do
      r=${runs[$(((i + rep - 1) % (nr + 1)))]}
      dir="$work/run"
      rm -rf "$dir" "$work/stop"
      if [ "$r" = none ]; then
        cmd=("$psfsim" -q --force --backend "$backend" -c "$work/set.cfg" -o "$dir")
        launcher=none ranks=1
      else
        cmd=("$mpirun" -n "$r" --oversubscribe --bind-to none
          "$psfsim" -q --force --backend "$backend" -c "$work/set.cfg" -o "$dir")
        launcher=mpirun ranks=$r
      fi
      sampler=""
      if [ "$backend" = gpu ] && [ "$rep" = 1 ] && command -v nvidia-smi >/dev/null; then
        : >"$work/gpu_apps"
        gpu_sampler "$work/gpu_apps" &
        sampler=$!
      fi
      log "$case $launcher R=$ranks rep $rep"
      t0=$(date +%s.%N)
      rc=0
      "${cmd[@]}" >"$work/stdout" 2>"$work/stderr" || rc=$?
      t1=$(date +%s.%N)
      if [ -n "$sampler" ]; then
        touch "$work/stop"
        wait "$sampler" || true
        echo "# gpu: $case $launcher R=$ranks: $(wc -l <"$work/gpu_apps") compute processes on the GPU at once (pid used_memory): $(tr '\n,' '; ' <"$work/gpu_apps")" >>"$csv.gpu"
      fi
      if [ $rc -ne 0 ]; then
        log "failed (exit $rc):"
        tail -5 "$work/stderr" >&2
        echo "$case,$launcher,$ranks,$rep,0,nan,nan,failed_exit_$rc,,,,,,,,," >>"$csv"
        continue
      fi
      tim="$dir/set_timing.csv" man="$dir/set_manifest.csv"
      n=$(($(wc -l <"$man") - 1))
      backends=$(tail -n +2 "$man" | awk -F, '{ c[$16]++ } END { for (b in c) printf "%s%s=%d", s++ ? ";" : "", b, c[b] }')
      maxrank=$(awk -F, '$1 ~ /^rank_[0-9]+$/ && $7 + 0 > m { m = $7 + 0 } END { if (m > 0) printf "%.0f", m }' "$tim")
      bound=$(awk -F, '$1 == "wall_us" { gsub(/"/, "", $8); print $8 }' "$tim")
      echo "$case,$launcher,$ranks,$rep,$n,$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'),$(awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN { printf "%.0f", n / (b - a) }'),$backends,$(tstat "$tim" backend_create_us),$(tstat "$tim" compute_us),$(tstat "$tim" metrics_us),$(tstat "$tim" png_encode_write_us),$(tstat "$tim" fits_encode_write_us),$(tstat "$tim" wait_for_writers_us),$(tstat "$tim" wall_us),$maxrank,$bound" >>"$csv"
      if [ "$rep" = 1 ]; then # byte-for-byte check of the first repeat against R = 1's
        cp "$tim" "$(dirname "$csv")/ranks_timing_${case}_${launcher}_$ranks.csv" 2>/dev/null || true
        if [ "$launcher" = mpirun ] && [ "$ranks" = 1 ]; then
          sums "$dir" >"$work/ref_$case.md5"
          cut -d, -f1-16 "$man" >"$work/ref_$case.manifest"
        else
          sums "$dir" >"$work/this.md5"
          cut -d, -f1-16 "$man" >"$work/this.manifest"
          cp "$work/this.md5" "$work/cmp_${case}_${launcher}_$ranks.md5"
          cp "$work/this.manifest" "$work/cmp_${case}_${launcher}_$ranks.manifest"
        fi
      fi
    done
  done
  rm -rf "$work/run"
  # The comparisons (R = 1 may run after the others in later orders; in
  # repeat 1 it runs first, but compare at the end to be safe).
  for f in "$work"/cmp_"$case"_*.md5; do
    [ -e "$f" ] || continue
    what=${f#"$work/cmp_${case}_"}; what=${what%.md5}
    if [ ! -s "$work/ref_$case.md5" ]; then
      echo "# check: $case $what: no R=1 reference" >>"$csv"; continue
    fi
    total=$(wc -l <"$work/ref_$case.md5")
    same=$(join -1 2 -2 2 <(sort -k 2 "$work/ref_$case.md5") <(sort -k 2 "$f") | awk '$2 == $3' | wc -l)
    cmp -s "$work/ref_$case.manifest" "${f%.md5}.manifest" && mf="identical" || mf="DIFFERENT"
    echo "# check: $case ${what/_/ R=} vs mpirun R=1: $same of $total image files identical (md5); manifest columns 1-16 $mf" >>"$csv"
  done
  rm -f "$work"/cmp_"$case"_* "$work/ref_$case".*
done
[ -e "$csv.gpu" ] && cat "$csv.gpu" >>"$csv" && rm -f "$csv.gpu"
log "done: $csv"
