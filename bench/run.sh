#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One command that builds, checks and times, on the GPU machine, in one run:
# psfsim's GPU and CPU backends, the NumPy and CuPy reference pipelines, the
# cuFFT + |.|^2 ceiling, and whole psfsim processes (cpu / gpu / auto).
# Writes CSV files and RESULTS-run.md into OUTDIR (default bench/out).
#   bench/run.sh [OUTDIR]            (on the GPU machine: source .gpu/on-device.sh first)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/bench/out}"
mkdir -p "$out"
build="${BUILD:-/tmp/psfsim-bench-build}"
log() { echo "[bench $(date +%T)] $*" >&2; }
# Whatever happens, bring back what was measured (the device tool returns at
# most 8 files: one archive and the report).
save() { [ -n "${OUT:-}" ] && tar czf "$OUT/bench.tgz" -C "$out" . 2>/dev/null; true; }
trap save EXIT

# PARTS: all (default) or a comma list of backends,refs,micro,auto,sets,ranks.
parts="${PARTS:-all}"
want() { [ "$parts" = all ] || [[ ",$parts," == *",$1,"* ]]; }
log "build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPSFSIM_WERROR=ON >/dev/null
cmake --build "$build" >/dev/null
log "check: GPU tests"
ctest --test-dir "$build" --output-on-failure -R "gpu|mft|psf_physics" >"$out/ctest_gpu.txt" 2>&1 || {
  cat "$out/ctest_gpu.txt"; exit 1; }
tail -3 "$out/ctest_gpu.txt" >&2

{
  echo "date,$(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu,/'
  echo "cpu,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'),$(nproc) threads"
  echo "cuda,$(nvcc --version | tail -1)"
} >"$out/machine.csv"

sizes_pupil="32,64,128,256,512,1024,2048"
if want backends; then
log "psfsim backends"
{
  echo "pipeline,npix,images,seconds_total,us_per_psf"
  "$build/bench/psfsim_bench_backends" gpu 64:1000 128:1000 256:1000 512:1000 1024:1000 2048:100 4096:20
  "$build/bench/psfsim_bench_backends" cpu 64:1000 128:1000 256:1000 512:200 1024:50 2048:10 4096:3
} >"$out/psfsim.csv"
log "MFT against FFT, GPU MFT against CPU MFT"
"$build/bench/psfsim_bench_mft" >"$out/mft.txt"
log "ceiling"
"$build/bench/psfsim_ceiling" 64 1000 128 1000 256 1000 512 1000 1024 1000 2048 100 4096 1 4096 20 \
  >"$out/ceiling.csv"
fi
if want micro; then
log "GPU backend stages (CUDA events)"
"$build/bench/psfsim_gpu_micro" >"$out/gpu_micro.txt"
fi
if want refs; then
log "reference: CuPy"
python3 "$root/bench/reference_cupy.py" --sizes "$sizes_pupil" --batch 1000 >"$out/cupy.csv"
log "reference: NumPy"
python3 "$root/bench/reference_numpy.py" --sizes "$sizes_pupil" --batch 1000 --max-seconds 8 \
  >"$out/numpy.csv"
fi
if want auto; then
log "whole processes: cpu / gpu / auto"
BUILD="$build" bash "$root/bench/auto_bench.sh" "$out/auto.csv" 2>"$out/auto_stderr.txt" ||
  { log "whole-process bench failed:"; tail -5 "$out/auto_stderr.txt" >&2; }
fi
if want sets; then
log "image sets: 10,000 PNGs"
BUILD="$build" bash "$root/bench/sets_bench.sh" "$out/sets.csv" 2>"$out/sets_stderr.txt" ||
  log "image-set bench failed"
fi
if want ranks; then
  # Issue 7: 1, 2 and 4 MPI ranks sharing the one GPU (bench/ranks_bench.sh;
  # IMAGES, default 20000). Needs Open MPI: on the GPU machine source
  # .gpu/on-device-mpi.sh after .gpu/on-device.sh (bench/device/).
  if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
    mpibuild="${MPI_BUILD:-$build-mpi}"
    log "ranks: MPI build ($(command -v mpicc))"
    echo "mpi,$(mpirun --version 2>&1 | head -1),$(command -v mpirun)" >>"$out/machine.csv"
    if cmake -S "$root" -B "$mpibuild" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPSFSIM_WERROR=ON \
      -DPSFSIM_MPI=ON -DMPI_C_COMPILER="$(command -v mpicc)" -DPSFSIM_BENCH=OFF -DBUILD_TESTING=OFF \
      >"$out/ranks_build.txt" 2>&1 && cmake --build "$mpibuild" --target psfsim >>"$out/ranks_build.txt" 2>&1; then
      grep -h "Found MPI_C" "$out/ranks_build.txt" >&2 || true
      log "ranks: mpirun -n 1, 2, 4 on one GPU"
      BUILD="$mpibuild" bash "$root/bench/ranks_bench.sh" "$out/ranks.csv" 2>"$out/ranks_stderr.txt" ||
        { log "ranks bench failed:"; tail -5 "$out/ranks_stderr.txt" >&2; }
    else
      log "ranks: the MPI build failed:"
      tail -20 "$out/ranks_build.txt" >&2
    fi
  else
    log "ranks: skipped: no mpicc/mpirun (source .gpu/on-device-mpi.sh)"
  fi
fi
log "report"
python3 "$root/bench/report.py" "$out" >"$out/RESULTS-run.md"
cat "$out/RESULTS-run.md"
[ -n "${OUT:-}" ] && cp "$out/RESULTS-run.md" "$OUT/"
true
